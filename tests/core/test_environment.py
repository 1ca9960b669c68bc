"""The environment contract from the implementer's side: a minimal subclass that
defines ``initial_state``, ``transition`` and ``get_obs`` gets reset, step, the
auto-reset, ``final_obs`` and the handling of invalid actions from the base class."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

import socialjax as sj
from socialjax.core import Discrete, Environment, EnvParams

KEY = jax.random.key(0)
LENGTH = 3


@struct.dataclass
class CountState:
    start: jax.Array  # () int32, drawn from the reset key
    count: jax.Array  # () int32, steps taken


class Counter(Environment):
    """Two agents; the reward is the action; an episode is LENGTH steps; each agent
    observes ``start + count``. The no-op action is 1."""

    params_cls = EnvParams
    noop_action = 1

    def initial_state(self, key, params):
        return CountState(start=jax.random.randint(key, (), 0, 1000), count=jnp.zeros((), jnp.int32))

    def transition(self, key, state, actions, params):
        count = state.count + 1
        done = count >= LENGTH
        info = {"terminated": done, "truncated": jnp.zeros((), bool)}
        return state.replace(count=count), actions.astype(jnp.float32), done, info

    def get_obs(self, state, params):
        return jnp.full((self.num_agents, 1), state.start + state.count, jnp.int32)

    def action_space(self, params=None):
        return Discrete(3)

    def observation_space(self, params=None):
        return sj.Box(0, 2000, (1,), jnp.int32)


def test_reset_observes_the_initial_state():
    env = Counter(2)
    obs, state = env.reset(KEY)
    start = env.initial_state(KEY, env.default_params).start
    assert int(state.start) == int(start) and int(state.count) == 0
    np.testing.assert_array_equal(obs, [[start], [start]])


def test_step_steps_then_auto_resets_with_the_second_half_of_the_key():
    env = Counter(2)
    step = jax.jit(env.step)
    obs, state = env.reset(KEY)
    start = int(state.start)
    for t in range(1, LENGTH + 1):
        key = jax.random.fold_in(KEY, t)
        obs, state, reward, done, info = step(key, state, jnp.array([0, 2]))
        assert set(info) == {"terminated", "truncated", "invalid_action", "invalid_params", "final_obs"}
        np.testing.assert_array_equal(reward, [0.0, 2.0])
        np.testing.assert_array_equal(info["final_obs"], [[start + t]] * 2)
        assert bool(done) == (t == LENGTH)
    fresh = env.initial_state(jax.random.split(key)[1], env.default_params)
    assert int(state.count) == 0 and int(state.start) == int(fresh.start)
    np.testing.assert_array_equal(obs, [[fresh.start]] * 2)


def test_out_of_range_actions_become_the_noop_and_are_flagged():
    env = Counter(2)
    _, state = env.reset(KEY)
    _, _, reward, _, info = jax.jit(env.step)(KEY, state, jnp.array([-1, 5]))
    np.testing.assert_array_equal(reward, [1.0, 1.0])
    np.testing.assert_array_equal(info["invalid_action"], [True, True])


@pytest.mark.parametrize("actions", [
    np.array([2**63, 0], np.uint64),  # wraps to 0 in JAX's 32-bit cast
    np.array([2**40, 0], np.int64),  # wraps to 0 too
    np.array([-(2**40), 0], np.int64),
    [2**33, 0],  # Python ints
], ids=["uint64", "int64", "negative int64", "python int"])
def test_64_bit_actions_out_of_range_are_flagged_not_wrapped(actions):
    """With x64 off JAX casts host 64-bit integers to 32 bits, which can wrap a huge
    action onto a valid one: the range is checked on the host first. The same through
    the JaxMARL adapter's dict of actions."""
    env = Counter(2)
    _, state = env.reset(KEY)
    _, _, reward, _, info = env.step(KEY, state, actions)
    np.testing.assert_array_equal(info["invalid_action"], [True, False])
    np.testing.assert_array_equal(reward, [1.0, 0.0])  # the no-op (1) for the first agent
    ipd = sj.JaxMARLAdapter(sj.make("ipd"))
    _, st = ipd.reset(KEY)
    out = ipd.step(KEY, st, dict(zip(ipd.agents, np.asarray(actions))))
    assert bool(out[4]["invalid_action"][0]) and not bool(out[4]["invalid_action"][1])
    # in range, 64-bit actions are taken as they are
    _, _, reward, _, info = env.step(KEY, state, np.array([0, 1], np.int64))
    np.testing.assert_array_equal(info["invalid_action"], [False, False])
    np.testing.assert_array_equal(reward, [0.0, 1.0])


def test_vmapped_episodes_reset_independently():
    env = Counter(2)
    keys = jax.random.split(KEY, 2)
    _, state = jax.vmap(env.reset)(keys)
    state = state.replace(count=jnp.array([0, LENGTH - 1], jnp.int32))
    _, state, _, done, _ = jax.vmap(env.step)(keys, state, jnp.ones((2, 2), jnp.int32))
    np.testing.assert_array_equal(done, [False, True])
    np.testing.assert_array_equal(state.count, [1, 0])


def test_an_environment_must_implement_the_three_functions():
    class Empty(Environment):
        def action_space(self, params=None):
            return Discrete(2)

    with pytest.raises(NotImplementedError):
        Empty(1).reset(KEY)
