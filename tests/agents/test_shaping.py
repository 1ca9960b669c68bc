"""Reward-shaping wrappers, checked number by number on scripted reward streams."""

import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

import socialjax as sj
from socialjax import testing
from socialjax.agents.shaping import (
    CommonReward,
    InequityAversion,
    InequityAversionState,
    RewardExchange,
    SocialValueOrientation,
)
from socialjax.core import Discrete, Environment, EnvParams

KEY = jax.random.key(0)


# --------------------------------------------------------------------------- fake env
@struct.dataclass
class ScriptParams(EnvParams):
    pass


@struct.dataclass
class ScriptState:
    step: jax.Array  # () int32: steps taken in this episode


class ScriptedEnv(Environment):
    """Rewards scripted by a table ``(L, N)`` indexed by the step within the episode
    (plus ``actions``, so that batch members can differ); ``done`` after ``L`` steps,
    after which the environment auto-resets and the table starts over."""

    params_cls = ScriptParams

    def __init__(self, table):
        table = np.asarray(table, np.float32)
        super().__init__(table.shape[1])
        self.table = table

    def initial_state(self, key, params):
        return ScriptState(step=jnp.zeros((), jnp.int32))

    def transition(self, key, state, actions, params):
        reward = jnp.asarray(self.table)[state.step] + actions.astype(jnp.float32)
        step = state.step + 1
        done = step >= self.table.shape[0]
        info = {"terminated": done, "truncated": jnp.zeros((), bool)}
        return ScriptState(step=step), reward, done, info

    def get_obs(self, state, params):
        return jnp.zeros((self.num_agents, 1))

    def action_space(self, params=None):
        return Discrete(3)

    def observation_space(self, params=None):
        return sj.Box(0.0, 1.0, (1,), jnp.float32)


def rollout(env, num_steps, actions=None):
    """``(rewards (T, N), dones (T,), infos)`` from ``num_steps`` steps of ``env``, the
    same ``actions (N,)`` (default zeros) every step."""
    n = env.num_agents
    actions = jnp.zeros((n,), jnp.int32) if actions is None else actions
    traj = testing.rollout(env, KEY, num_steps, actions=jnp.broadcast_to(actions, (num_steps, n)))
    chex.assert_shape([traj.reward, traj.done], [(num_steps, n), (num_steps,)])
    chex.assert_type([traj.reward, traj.done], [jnp.float32, jnp.bool_])
    return traj.reward, traj.done, traj.info


def run(env, num_steps, actions=None):
    return jax.device_get(jax.jit(lambda: rollout(env, num_steps, actions))())


TABLE = [[1.0, 2.0, 3.0], [0.0, -1.0, 4.0]]


# --------------------------------------------------------------------------- common
def test_common_reward_sum_default_and_mean():
    env = ScriptedEnv(TABLE)
    rewards, _, info = run(CommonReward(env), 4)
    np.testing.assert_array_equal(rewards, [[6.0] * 3, [3.0] * 3, [6.0] * 3, [3.0] * 3])
    np.testing.assert_array_equal(info["raw_reward"], np.tile(TABLE, (2, 1)))
    rewards, _, _ = run(CommonReward(env, mode="mean"), 2)
    np.testing.assert_allclose(rewards, [[2.0] * 3, [1.0] * 3])


# --------------------------------------------------------------------------- exchange
def test_reward_exchange_identity_zero_half():
    env = ScriptedEnv(TABLE)
    rewards, _, info = run(RewardExchange(env, 1.0), 2)
    np.testing.assert_array_equal(rewards, TABLE)
    rewards, _, _ = run(RewardExchange(env, 0.0), 2)
    # mean of the others: step 1 -> (5/2, 4/2, 3/2); step 2 -> (3/2, 4/2, -1/2)
    np.testing.assert_allclose(rewards, [[2.5, 2.0, 1.5], [1.5, 2.0, -0.5]])
    rewards, _, info = run(RewardExchange(env, 0.5), 2)
    np.testing.assert_allclose(rewards, [[1.75, 2.0, 2.25], [0.75, 0.5, 1.75]])
    np.testing.assert_array_equal(info["raw_reward"], TABLE)
    # s = 1/N: everyone gets the mean
    rewards, _, _ = run(RewardExchange(env, 1 / 3), 1)
    np.testing.assert_allclose(rewards, [[2.0, 2.0, 2.0]], rtol=1e-6)


# --------------------------------------------------------------------------- inequity
IA_TABLE = [[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 0.0]]


def ia_reference(table, num_steps, alpha, beta, decay):
    """Plain-Python reference, traces zeroed after each episode of len(table) steps."""
    n = len(table[0])
    e = [0.0] * n
    out, traces = [], []
    for t in range(num_steps):
        r = table[t % len(table)]
        e = [decay * e[i] + r[i] for i in range(n)]
        u = [
            r[i]
            - alpha / (n - 1) * sum(max(e[j] - e[i], 0.0) for j in range(n))
            - beta / (n - 1) * sum(max(e[i] - e[j], 0.0) for j in range(n))
            for i in range(n)
        ]
        out.append(u)
        traces.append(e)
        if (t + 1) % len(table) == 0:
            e = [0.0] * n
    return np.array(out), np.array(traces)


def test_inequity_aversion_by_hand_and_trace_reset():
    env = InequityAversion(ScriptedEnv(IA_TABLE), alpha=2.0, beta=0.5, gamma=0.5, lam=0.5)  # decay 0.25
    rewards, dones, info = run(env, 6)
    # traces: e1 = (1, 0, 0); e2 = (0.25, 2, 0); e3 = (0.0625, 0.5, 0); then reset
    expected = np.array(
        [
            [1 - 0.5 / 2 * 2, 0 - 2 / 2 * 1, 0 - 2 / 2 * 1],  # agent 0 ahead: 1 -> 0.5
            [-1.75 - 0.25 * 0.25, 2 - 0.25 * 3.75, -2.25],
            [-0.4375 - 0.25 * 0.0625, -0.25 * 0.9375, -0.5625],
        ]
    )
    np.testing.assert_allclose(rewards[:3], expected, rtol=1e-6)
    np.testing.assert_allclose(
        info["inequity_traces"][:3], [[1, 0, 0], [0.25, 2, 0], [0.0625, 0.5, 0]], rtol=1e-6
    )
    # the episode ends at step 3; the next episode starts from zero traces
    np.testing.assert_array_equal(dones, [False, False, True] * 2)
    np.testing.assert_allclose(rewards[3:], expected, rtol=1e-6)
    np.testing.assert_allclose(info["inequity_traces"][3], [1, 0, 0])
    np.testing.assert_array_equal(info["raw_reward"], np.tile(IA_TABLE, (2, 1)))
    ref, ref_traces = ia_reference(IA_TABLE, 6, 2.0, 0.5, 0.25)
    np.testing.assert_allclose(rewards, ref, rtol=1e-6)
    np.testing.assert_allclose(info["inequity_traces"], ref_traces, rtol=1e-6)


def test_inequity_aversion_beta_penalises_the_agent_ahead():
    env = ScriptedEnv([[1.0, 0.0]])
    rewards, _, _ = run(InequityAversion(env, alpha=0.0, beta=0.05), 1)
    np.testing.assert_allclose(rewards[0], [1.0 - 0.05, 0.0], rtol=1e-6)
    assert rewards[0, 0] < 1.0  # ahead: penalised, not rewarded
    rewards, _, _ = run(InequityAversion(env, alpha=5.0, beta=0.0), 1)
    np.testing.assert_allclose(rewards[0], [1.0, -5.0])


def test_inequity_aversion_defaults_match_reference():
    table = [[1.0, 0.0, 3.0, 0.5], [0.0, 2.0, 0.0, 1.0], [2.0, 2.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]]
    env = InequityAversion(ScriptedEnv(table))
    assert (env.alpha, env.beta, env.gamma, env.lam) == (5.0, 0.05, 0.99, 0.975)
    rewards, _, info = run(env, 8)
    ref, ref_traces = ia_reference(table, 8, 5.0, 0.05, 0.99 * 0.975)
    np.testing.assert_allclose(rewards, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(info["inequity_traces"], ref_traces, rtol=1e-5, atol=1e-6)


def test_inequity_aversion_state_and_equal_rewards():
    env = InequityAversion(ScriptedEnv([[2.0, 2.0, 2.0]]))
    _, state = env.reset(KEY)
    assert isinstance(state, InequityAversionState)
    np.testing.assert_array_equal(state.traces, np.zeros(3))
    rewards, _, _ = run(env, 3)
    np.testing.assert_array_equal(rewards, np.full((3, 3), 2.0))  # no inequity, no penalty


# --------------------------------------------------------------------------- SVO
def test_svo_angles_and_penalties():
    w = 0.7
    env = ScriptedEnv([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [2.0, 0.0, 4.0]])
    svo = SocialValueOrientation(env, jnp.array([45.0, 0.0, 90.0]), w)
    np.testing.assert_allclose(
        svo.angles(jnp.array([2.0, 0.0, 4.0])), [math.pi / 4, math.pi / 2, math.atan2(1.0, 4.0)], rtol=1e-6
    )
    rewards, _, info = run(svo, 3)
    # equal rewards: theta = 45 deg for everyone
    np.testing.assert_allclose(rewards[0], [1.0, 1.0 - w * math.pi / 4, 1.0 - w * math.pi / 4], rtol=1e-6)
    # all zero: atan2(0, 0) = 0
    np.testing.assert_allclose(rewards[1], [-w * math.pi / 4, 0.0, -w * math.pi / 2], rtol=1e-6)
    np.testing.assert_allclose(
        rewards[2],
        [2.0, 0.0 - w * math.pi / 2, 4.0 - w * abs(math.pi / 2 - math.atan2(1.0, 4.0))],
        rtol=1e-6,
    )
    np.testing.assert_array_equal(info["raw_reward"], env.table)
    # a scalar target applies to everyone
    rewards, _, _ = run(SocialValueOrientation(env, 45.0, w), 1)
    np.testing.assert_allclose(rewards[0], [1.0, 1.0, 1.0])


# --------------------------------------------------------------------------- jit / vmap
def test_vmap_over_envs_and_over_parameters():
    env = ScriptedEnv(IA_TABLE)
    actions = jnp.array([[0, 0, 0], [1, 0, 2], [2, 2, 0]], jnp.int32)
    for make in (
        CommonReward,
        lambda e: RewardExchange(e, 0.3),
        lambda e: InequityAversion(e, 2.0, 0.5, 0.5, 0.5),
        lambda e: SocialValueOrientation(e, jnp.array([0.0, 45.0, 90.0]), 0.5),
    ):
        wrapped = sj.EpisodeStats(make(env))
        batched = jax.device_get(jax.jit(jax.vmap(lambda a, w=wrapped: rollout(w, 5, a)))(actions))
        for b in range(actions.shape[0]):
            single = run(wrapped, 5, actions[b])
            np.testing.assert_allclose(batched[0][b], single[0], rtol=1e-6)
            np.testing.assert_array_equal(batched[2]["raw_reward"][b], single[2]["raw_reward"])
            # EpisodeStats outside sees the shaped reward
            np.testing.assert_allclose(
                single[2]["returned_episode_returns"][2], single[0][:3].sum(0), rtol=1e-5
            )

    # sweep parameters by constructing the wrapper inside the vmapped function
    s = jnp.array([0.0, 0.5, 1.0])
    swept = jax.jit(jax.vmap(lambda si: rollout(RewardExchange(env, si), 2)[0]))(s)
    for b in range(3):
        np.testing.assert_allclose(swept[b], run(RewardExchange(env, float(s[b])), 2)[0], rtol=1e-6)
    alphas = jnp.array([0.0, 5.0])
    swept = jax.jit(jax.vmap(lambda a: rollout(InequityAversion(env, alpha=a), 3)[0]))(alphas)
    for b in range(2):
        np.testing.assert_allclose(swept[b], run(InequityAversion(env, alpha=float(alphas[b])), 3)[0], rtol=1e-6)


def test_stacked_wrappers_keep_the_true_raw_reward():
    env = RewardExchange(CommonReward(ScriptedEnv(TABLE)), 0.5)
    rewards, _, info = run(env, 2)
    np.testing.assert_array_equal(info["raw_reward"], TABLE)
    np.testing.assert_allclose(rewards, [[6.0] * 3, [3.0] * 3])
    assert env.num_agents == 3 and "RewardExchange" in repr(env)


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "build, match",
    [
        (lambda e: CommonReward(e, mode="max"), "mode"),
        (lambda e: RewardExchange(e, 1.5), "self_interest"),
        (lambda e: RewardExchange(e, -0.1), "self_interest"),
        (lambda e: RewardExchange(e, float("nan")), "self_interest"),
        (lambda e: InequityAversion(e, alpha=-1.0), "alpha"),
        (lambda e: InequityAversion(e, beta=-0.05), "beta"),
        (lambda e: InequityAversion(e, gamma=1.01), "gamma"),
        (lambda e: InequityAversion(e, lam=-0.5), "lam"),
        (lambda e: SocialValueOrientation(e, 45.0, -1.0), "weight"),
        (lambda e: SocialValueOrientation(e, [0.0, 45.0], 1.0), "theta_target_degrees"),
    ],
)
def test_bad_input(build, match):
    with pytest.raises(ValueError, match=match):
        build(ScriptedEnv(TABLE))


def test_bad_input_message_names_value():
    with pytest.raises(ValueError, match=r"alpha.*-2"):
        InequityAversion(ScriptedEnv(TABLE), alpha=-2.0)


@pytest.mark.parametrize(
    "build",
    [
        lambda e: RewardExchange(e, 0.5),
        lambda e: InequityAversion(e),
        lambda e: SocialValueOrientation(e, 45.0, 1.0),
    ],
)
def test_single_agent_rejected(build):
    with pytest.raises(ValueError, match="num_agents"):
        build(ScriptedEnv([[1.0]]))
    CommonReward(ScriptedEnv([[1.0]]))  # fine with one agent
