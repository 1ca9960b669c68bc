"""socialjax.testing: the shared rollout, check_env on registered and deliberately
broken environments, and chex's retrace guard on the library's param sweep."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

import socialjax as sj
from socialjax import testing
from socialjax.core import Discrete, Environment, EnvParams

KEY = jax.random.key(0)


# --------------------------------------------------------------------------- rollout
@pytest.fixture(scope="module")
def ipd():
    return sj.make("ipd", num_rounds=3)


def test_rollout_shapes_and_the_documented_keys(ipd):
    T, B = 7, 3
    traj = jax.device_get(jax.jit(lambda keys: testing.rollout(ipd, keys, T))(jax.random.split(KEY, B)))
    chex.assert_shape([traj.obs, traj.state.round], [(B, T + 1, 2, 1), (B, T + 1)])
    chex.assert_shape([traj.actions, traj.reward], (B, T, 2))
    chex.assert_shape([traj.done, traj.info["terminated"]], (B, T))
    # the same steps by hand, from the keys the docstring names
    key = jax.random.split(KEY, B)[1]
    key_reset, key_run = jax.random.split(key)
    obs, state = ipd.reset(key_reset)
    np.testing.assert_array_equal(traj.obs[1, 0], obs)
    for t, k in enumerate(jax.random.split(key_run, T)):
        key_act, key_step = jax.random.split(k)
        actions = ipd.sample_actions(key_act)
        obs, state, reward, done, _ = ipd.step(key_step, state, actions)
        np.testing.assert_array_equal(traj.actions[1, t], actions)
        np.testing.assert_array_equal(traj.obs[1, t + 1], obs)
        np.testing.assert_array_equal(traj.state.round[1, t + 1], state.round)
        np.testing.assert_array_equal(traj.reward[1, t], reward)
        assert traj.done[1, t] == done
    np.testing.assert_array_equal(traj.done[0], [False, False, True] * 2 + [False])


def test_rollout_given_actions_and_policy(ipd):
    T = 4
    given = jnp.array([[0, 1], [1, 1], [0, 0], [1, 0]], jnp.int32)
    traj = jax.jit(lambda k: testing.rollout(ipd, k, T, actions=given))(KEY)
    np.testing.assert_array_equal(traj.actions, given)
    np.testing.assert_array_equal(traj.info["executed"], given)
    # a policy acts on the observation and state of its step: here TFT on the last
    # outcome's code for the first agent, the round's parity for the second
    def policy(key, obs, state):
        return jnp.stack([(obs[0, 0] == 2) | (obs[0, 0] == 4), state.round % 2]).astype(jnp.int32)

    traj = jax.jit(lambda k: testing.rollout(ipd, k, 9, policy=policy))(KEY)
    before = jax.tree_util.tree_map(lambda x: x[:-1], traj.state)
    np.testing.assert_array_equal(traj.actions, jax.vmap(policy, in_axes=(None, 0, 0))(KEY, traj.obs[:-1], before))
    np.testing.assert_array_equal(traj.actions[:, 1], [0, 1, 0] * 3)
    assert (traj.actions[:, 0] == 1).any()  # TFT answered a defection
    with pytest.raises(ValueError, match="not both"):
        testing.rollout(ipd, KEY, T, actions=given, policy=policy)
    with pytest.raises(ValueError, match="num_steps=5"):
        testing.rollout(ipd, KEY, 5, actions=given)
    with pytest.raises(ValueError, match="num_steps"):
        testing.rollout(ipd, KEY, -1)
    with pytest.raises(ValueError, match="batch of keys"):
        testing.rollout(ipd, jax.random.split(KEY, (2, 2)), T)


def test_rollout_of_zero_steps(ipd):
    traj = testing.rollout(ipd, KEY, 0)
    chex.assert_shape([traj.obs, traj.reward, traj.done], [(1, 2, 1), (0, 2), (0,)])


# --------------------------------------------------------------------------- check_env
def test_check_env_passes_on_a_matrix_game(ipd):
    traj = testing.check_env(ipd, num_steps=8)
    chex.assert_shape([traj.reward, traj.obs], [(4, 8, 2), (4, 9, 2, 1)])
    flagged = traj.info["invalid_action"]
    assert flagged.any() and not flagged.all()  # out-of-range actions were sent, and flagged
    np.testing.assert_array_equal(flagged, traj.actions == 2)


def test_check_env_passes_on_a_small_grid_game():
    env = sj.make("gathering", episode_length=6)
    traj = testing.check_env(env, num_envs=2, num_steps=8)
    assert traj.done[:, 5].all()


@struct.dataclass
class ToyParams(EnvParams):
    pass


@struct.dataclass
class ToyState:
    step: jax.Array  # () int32


class ToyEnv(Environment):
    """Two agents, actions 0..2 rewarded as they are, episodes of 3 steps; ``bug`` breaks
    one rule of the contract."""

    params_cls = ToyParams
    name = "toy"

    def __init__(self, bug=None):
        super().__init__(2)
        self.bug = bug

    def obs(self, state):
        dtype = jnp.int32 if self.bug == "obs_dtype" else jnp.float32
        value = 2.0 if self.bug == "obs_outside" else jnp.minimum(state.step, 3) / 3
        return jnp.full((2, 1), value, dtype)

    def get_obs(self, state, params):
        return self.obs(state)

    def global_observation(self, state, params=None):
        world = super().global_observation(state, params)  # (2,): both players' observations
        if self.bug == "global_shape":
            return world[None]
        if self.bug == "global_outside":
            return world + 2.0
        if self.bug == "global_trace_time_rng":
            return world * np.float32(np.random.default_rng().random())
        return world

    def initial_state(self, key, params):
        return ToyState(step=jnp.zeros((), jnp.int32))

    def transition(self, key, state, actions, params):
        state = ToyState(step=state.step + 1)
        done = state.step >= 3 if self.bug != "never_done" else jnp.zeros((), bool)
        if self.bug == "state_shape":
            state = ToyState(step=state.step[None])
        reward = actions.astype(jnp.float32)
        if self.bug == "reward_shape":
            reward = reward.sum(keepdims=True)
        if self.bug == "trace_time_rng":  # a constant baked in at trace time: differs per compile
            reward = reward + np.random.default_rng().random()
        if self.bug == "nan_reward":
            reward = reward / 0.0
        if self.bug == "concrete_branch" and not isinstance(state.step, jax.core.Tracer):
            reward = reward + 1.0  # a branch only concrete values take: eager calls differ from jitted ones
        info = {"terminated": done, "truncated": jnp.zeros((), bool)}
        if self.bug == "missing_info":
            del info["truncated"]
        if self.bug == "both_ends":
            info["truncated"] = done
        return state, reward, done, info

    def prepare_actions(self, actions, params):
        actions, invalid = super().prepare_actions(actions, params)
        return actions, (jnp.zeros_like(invalid) if self.bug == "unflagged" else invalid)

    def action_space(self, params=None):
        return Discrete(3)

    def observation_space(self, params=None):
        return sj.Box(0.0, 1.0, (1,), jnp.float32)


def test_check_env_passes_on_the_toy_env():
    testing.check_env(ToyEnv(), num_steps=7)
    testing.check_env(sj.EpisodeStats(ToyEnv()), num_steps=7)  # wrappers too


@pytest.mark.parametrize(
    "bug, match",
    [
        ("reward_shape", r"toy: step must return .* reward \(2,\) float32 \(one per agent\).* "
                         r"'reward': shapes: \(1,\) != \(2,\)"),
        ("missing_info", r"toy: info lacks \['truncated'\]"),
        ("obs_dtype", r"toy: reset's observation must be \(N=2, \*shape\) .* types: int32 != float32"),
        ("state_shape", r"toy: step must return reset's shapes and dtypes of obs and state.* "
                        r"toy: initial_state's state and transition's must have the same shapes and dtypes: "
                        r"at \.step, int32\[\] and int32\[1\]"),
        ("obs_outside", r"toy: an observation lies outside Box\(0.0, 1.0"),
        ("nan_reward", "rewards must be finite"),
        ("both_ends", "never both True"),
        ("never_done", "no episode ended within num_steps=7 steps"),
        ("unflagged", r'info\["invalid_action"\] must flag exactly the out-of-range actions'),
        ("trace_time_rng", "env 1 run alone must give env 1's trajectory of the batch"),
        ("global_shape", r"toy: the global observation must have the shapes and dtypes of "
                         r"Box\(0.0, 1.0, \(2,\), float32\) \(no agent axis\):.* shapes: \(1, 2\) != \(2,\)"),
        ("global_outside", r"toy: a global observation lies outside Box\(0.0, 1.0, \(2,\)"),
        ("global_trace_time_rng", "env 1 run alone must give env 1's trajectory of the batch"),
        ("concrete_branch", "toy: reset and 3 steps called without jit must give the jitted trajectory .* "
                            "'step 0/reward': \nNot equal to tolerance"),
    ],
)
def test_check_env_names_the_broken_rule(bug, match):
    with pytest.raises(AssertionError, match=match):
        testing.check_env(ToyEnv(bug), num_steps=7)


def test_check_env_options():
    with pytest.raises(AssertionError, match="num_envs >= 2"):
        testing.check_env(ToyEnv(), num_envs=1)
    with pytest.raises(AssertionError, match="eager_steps <= num_steps=7"):
        testing.check_env(ToyEnv(), num_steps=7, eager_steps=8)
    # eager_steps=0 skips the calls without jit, the only check the concrete branch breaks
    testing.check_env(ToyEnv("concrete_branch"), num_steps=7, eager_steps=0)
    # alone=False and eager_steps=0 skip the run alone and the calls without jit, the only
    # checks that trace-time randomness breaks
    testing.check_env(ToyEnv("trace_time_rng"), num_steps=7, alone=False, eager_steps=0)


# --------------------------------------------------------------------------- retrace guard
# chex.assert_max_traces counts the traces of a guard per place where it is made (the
# stack of function names there and the function's source), across calls: a test that
# makes guards clears the counts first.
def test_the_retrace_guard_passes_for_a_vmapped_param_sweep(ipd):
    """Swept env params are traced arguments: new values compile nothing new."""
    chex.clear_trace_counter()
    sweep = jax.jit(jax.vmap(chex.assert_max_traces(ipd.step, n=1)))
    B = 3
    keys = jax.random.split(KEY, B)
    _, states = jax.vmap(ipd.reset)(keys)
    actions = jnp.zeros((B, 2), jnp.int32)
    for noise in ([0.0, 0.1, 0.2], [0.3, 0.4, 0.5]):  # a second trace would raise
        params = jax.vmap(lambda e: ipd.default_params.replace(noise=e))(jnp.asarray(noise))
        sweep(keys, states, actions, params)


def scale(x, s):
    return x * s


def test_the_retrace_guard_catches_a_retrace(ipd):
    chex.clear_trace_counter()
    jstep = jax.jit(chex.assert_max_traces(ipd.step, n=1))
    _, state = ipd.reset(KEY)
    actions = jnp.zeros((2,), jnp.int32)
    jstep(KEY, state, actions, ipd.default_params)
    jstep(KEY, state, actions, ipd.default_params.replace(noise=0.1))  # new value, same type: no retrace
    # default params are built from Python numbers: weakly typed scalars; a strongly
    # typed float32 in their place is another signature, so jit traces (and compiles) again
    assert ipd.default_params.noise.weak_type
    with pytest.raises(AssertionError, match="traced > 1 times"):
        jstep(KEY, state, actions, ipd.default_params.replace(noise=jnp.float32(0.1)))
    # and a static argument that changes
    jscaled = jax.jit(chex.assert_max_traces(scale, n=1), static_argnums=1)
    jscaled(jnp.ones(2), 0.5)
    with pytest.raises(AssertionError, match="traced > 1 times"):
        jscaled(jnp.ones(2), 0.25)
