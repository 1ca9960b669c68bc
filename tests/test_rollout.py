"""socialjax.rollout: the engine (scan_steps) under the rollout, and the step without
auto-reset the scripted runs step with."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import socialjax as sj
from socialjax import testing
from socialjax.rollout import Step, Trajectory, rollout_keys, scan_steps

KEY = jax.random.key(0)


@pytest.fixture(scope="module")
def ir():
    """A game whose transition draws from its key (errors, pairings), 3 steps an episode."""
    return sj.make("indirect_reciprocity", num_agents=4, episode_length=3)


def test_one_rollout_everywhere():
    assert sj.rollout is testing.rollout
    assert testing.Trajectory is Trajectory


def test_step_without_auto_reset_is_the_transition_with_the_whole_key(ir):
    params = ir.default_params.replace(execution_error=0.3)
    _, state = ir.reset(KEY, params)
    actions = jnp.array([1, 0, 1, 1], jnp.int32)
    for k in jax.random.split(jax.random.key(1), 4):  # past the episode's end: no reset
        obs, new, reward, done, info = jax.jit(lambda k, s: ir.step(k, s, actions, params, auto_reset=False))(k, state)
        want_state, want_reward, want_done, want_info = ir.transition(k, state, actions, params)
        for got, want in zip(jax.tree_util.tree_leaves((new, reward, done)),
                             jax.tree_util.tree_leaves((want_state, want_reward, want_done))):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(obs, ir.get_obs(want_state, params))
        np.testing.assert_array_equal(info["final_obs"], obs)
        assert set(info) == set(want_info) | {"invalid_action", "invalid_params", "final_obs"}
        state = new
    assert int(state.step) == 4 and bool(done)


def test_scan_steps_is_what_rollout_runs_on(ir):
    T = 7
    traj = jax.jit(lambda k: sj.rollout(ir, k, T))(KEY)
    key_reset, key_act, key_step = rollout_keys(KEY, T)

    def policy(k, obs, state):
        return ir.sample_actions(k)

    run = jax.jit(lambda: scan_steps(ir, ir.reset(key_reset), policy, keys=key_step, inputs=key_act))()
    obs, state, actions, reward, done, info = run.records
    np.testing.assert_array_equal(obs, traj.obs[1:])
    np.testing.assert_array_equal(actions, traj.actions)
    np.testing.assert_array_equal(reward, traj.reward)
    np.testing.assert_array_equal(run.obs, traj.obs[-1])
    assert traj.done.any()  # an auto-reset happened within the run


def test_scan_steps_records_and_carries(ir):
    T = 5
    keys = jax.random.split(jax.random.key(2), T)
    start = ir.reset(KEY)

    def everything(carry, step: Step):
        return carry + step.reward, step

    run = jax.jit(lambda: scan_steps(ir, start, lambda _, obs, s: jnp.ones(4, jnp.int32), keys=keys,
                                     record=everything, carry=jnp.zeros(4), auto_reset=False))()
    steps = run.records
    np.testing.assert_array_equal(run.carry, np.cumsum(steps.reward, axis=0)[-1])
    np.testing.assert_array_equal(steps.obs[1:], steps.next_obs[:-1])  # each step starts where the last ended
    np.testing.assert_array_equal(steps.obs[0], start[0])
    np.testing.assert_array_equal(run.state.step, T)  # no reset after the episode's 3 steps
    np.testing.assert_array_equal(steps.done, [False, False, True, True, True])
