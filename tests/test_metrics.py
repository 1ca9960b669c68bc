"""Social outcome metrics (Perolat et al. 2017): the formulas on hand-made streams, the
accumulator against the formulas across auto-resets under vmap, the wrapper and
``summarize``. Sustainability counts steps from t = 1."""

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from support import tol

import socialjax as sj
from socialjax import metrics, testing
from socialjax.core import Discrete, Environment, EnvParams

NUM_ENVS = 8
KEY = jax.random.key(7)


def f32(x):
    return np.float32(x)


# --------------------------------------------------------------------------- formulas
def test_hand_made_two_agents():
    # steps t = 1..4; agent 0 earns at t = 1 and 3, agent 1 at t = 3
    rewards = np.array([[1, 0], [0, 0], [1, 1], [0, 0]], np.float32)
    out = jax.device_get(metrics.episode_metrics(rewards))
    np.testing.assert_array_equal(out["returns"], [2, 1])  # R = (2, 1)
    assert out["collective_return"] == 3
    assert out["efficiency"] == f32(3 / 4)  # U = 3 / T
    # E = 1 - (|2-1| + |1-2|) / (2 N sum R) = 1 - 2 / (2 * 2 * 3) = 5/6
    np.testing.assert_allclose(out["equality"], 5 / 6, rtol=1e-6)
    # S = ((1 + 3) / 2 + 3) / 2 = (2 + 3) / 2 = 2.5
    assert out["sustainability"] == 2.5
    assert out["peace"] == 2.0  # nobody removed: P = N
    assert out["episode_length"] == 4
    np.testing.assert_array_equal(out["removed_steps"], [0, 0])


def test_hand_made_three_agents_one_never_earns():
    # agent 1 never gets a positive reward; agent 2's -1 at t = 1 is not a reward arrival
    rewards = np.array([[2, 0, -1], [0, 0, 3]], np.float32)
    out = jax.device_get(metrics.episode_metrics(rewards))
    np.testing.assert_array_equal(out["returns"], [2, 0, 2])
    assert out["collective_return"] == 4 and out["efficiency"] == 2.0  # U = 4 / 2
    # pairs: |2-0| twice, |0-2| twice, |2-2| twice -> 8; E = 1 - 8 / (2 * 3 * 4) = 2/3
    np.testing.assert_allclose(out["equality"], 2 / 3, rtol=1e-6)
    # agent 0: t = 1; agent 2: t = 2; agent 1 left out: S = (1 + 2) / 2
    assert out["sustainability"] == 1.5
    assert out["peace"] == 3.0


@pytest.mark.parametrize(
    "returns",
    [[0.0, 0.0], [1.0, -1.0], [-1.0, -2.0], [0.0, 0.0, 0.0], [2.0, -3.0, 0.5]],
    ids=["zero", "zero-total", "negative", "zero-3", "negative-3"],
)
def test_equality_is_nan_when_total_not_positive(returns):
    assert np.isnan(metrics.equality(jnp.array(returns)))


def test_equality_values():
    assert metrics.equality(jnp.array([5.0, 5.0, 5.0])) == 1.0  # all equal
    # one of N has everything: sum |Ri - Rj| = 2 (N-1) R -> E = 1 - (N-1)/N = 1/N
    np.testing.assert_allclose(metrics.equality(jnp.array([0.0, 0.0, 0.0, 8.0])), 1 / 4, rtol=1e-6)
    # a negative return with a positive total: (4, -1): 1 - 10 / (2 * 2 * 3) = 1/6
    np.testing.assert_allclose(metrics.equality(jnp.array([4.0, -1.0])), 1 / 6, rtol=1e-6)
    # batched over leading axes
    np.testing.assert_allclose(
        metrics.equality(jnp.array([[1.0, 1.0], [0.0, 0.0], [3.0, 1.0]])), [1.0, np.nan, 1 - 4 / 16], rtol=1e-6
    )


def test_sustainability_nan_when_nobody_earns():
    assert np.isnan(metrics.sustainability(jnp.zeros((5, 3))))
    assert np.isnan(metrics.sustainability(-jnp.ones((5, 3))))
    # a reward at the last step only: S = T
    rewards = jnp.zeros((5, 2)).at[4, 1].set(1.0)
    assert metrics.sustainability(rewards) == 5.0


def test_peace_hand_made():
    # N = 3, T = 4: agent 1 removed at t = 1, 2, 4; agents 0 and 2 at t = 4: 5 agent-steps
    removed = np.array([[0, 1, 0], [0, 1, 0], [0, 0, 0], [1, 1, 1]], bool)
    assert metrics.peace(removed) == 1.75  # (N T - 5) / T = (12 - 5) / 4
    assert metrics.peace(np.zeros((4, 3), bool)) == 3.0
    assert metrics.peace(np.ones((4, 3), bool)) == 0.0
    out = metrics.episode_metrics(np.ones((4, 3), np.float32), removed=removed)
    assert out["peace"] == 1.75
    np.testing.assert_array_equal(out["removed_steps"], [1, 3, 1])


def test_efficiency_and_collective_return():
    assert metrics.collective_return(jnp.array([1.0, 2.0, -0.5])) == 2.5
    assert metrics.efficiency(jnp.array([1.0, 2.0, -0.5]), 5) == f32(0.5)


@pytest.mark.parametrize("length", [0, -3, jnp.array([4, 0])])
def test_efficiency_refuses_an_episode_of_no_steps(length):
    """A horizon below 1 step is an error where it is known, NaN (undefined) under jit;
    never inf."""
    returns = jnp.array([[1.0, 2.0], [3.0, 1.0]])
    with pytest.raises(ValueError, match="at least 1 step"):
        metrics.efficiency(returns, length)
    traced = np.asarray(jax.jit(metrics.efficiency)(returns, length))
    assert np.isnan(traced[-1]) and not np.isinf(traced).any()
    with pytest.raises(ValueError, match="at least one step"):
        metrics.episode_metrics(jnp.zeros((0, 2)))


# --------------------------------------------------------------------------- accumulator
@functools.partial(jax.jit, static_argnums=(0, 1))
def _scan_accumulator(num_agents, event_keys, rewards, dones, infos):
    def body(state, step):
        reward, done, info = step
        state, last, episode_done = metrics.update(state, reward, done, info)
        return state, (last, episode_done)

    return jax.lax.scan(body, metrics.init(num_agents, event_keys), (rewards, dones, infos))


def run_accumulator(num_agents, event_keys, rewards, dones, infos):
    """Feed a stream to ``update`` in one jitted scan; returns per-step outputs."""
    return jax.device_get(_scan_accumulator(num_agents, event_keys, rewards, dones, infos))


def test_accumulator_hand_made_two_episodes():
    # episode 1: the two-agent stream above (T = 4), with agent 1 removed at t = 2;
    # episode 2: T = 2, rewards [[0, 3], [0, 1]], nobody removed
    rewards = np.array([[1, 0], [0, 0], [1, 1], [0, 0], [0, 3], [0, 1]], np.float32)
    dones = np.array([0, 0, 0, 1, 0, 1], bool)
    removed = np.zeros((6, 2), bool)
    removed[1, 1] = True
    zaps = np.array([[1, 0], [0, 0], [0, 2], [0, 0], [1, 1], [0, 0]], np.int32)
    state, (last, episode_done) = run_accumulator(2, ("zaps",), rewards, dones, {"removed": removed, "zaps": zaps})
    np.testing.assert_array_equal(episode_done, dones)
    assert state.episode_count == 2
    # before the first episode ends nothing is defined
    assert np.isnan(last["equality"][:3]).all() and (last["episode_length"][:3] == 0).all()
    ep1 = jax.tree_util.tree_map(lambda x: x[3], last)
    assert ep1["collective_return"] == 3 and ep1["efficiency"] == 0.75
    np.testing.assert_allclose(ep1["equality"], 5 / 6, rtol=1e-6)
    assert ep1["sustainability"] == 2.5
    assert ep1["peace"] == 1.75  # (2 * 4 - 1) / 4
    np.testing.assert_array_equal(ep1["events/zaps"], [1, 2])
    np.testing.assert_array_equal(ep1["removed_steps"], [0, 1])
    # episode 1's values are kept until episode 2 ends
    assert last["collective_return"][4] == 3
    ep2 = jax.tree_util.tree_map(lambda x: x[5], last)
    # R = (0, 4): E = 1 - 8 / (2 * 2 * 4) = 1/2; agent 0 never earns: S = (1 + 2) / 2 of agent 1
    np.testing.assert_array_equal(ep2["returns"], [0, 4])
    assert ep2["episode_length"] == 2 and ep2["efficiency"] == 2.0
    assert ep2["equality"] == 0.5 and ep2["sustainability"] == 1.5 and ep2["peace"] == 2.0
    np.testing.assert_array_equal(ep2["events/zaps"], [1, 1])
    # the running sums restarted
    assert state.length == 0 and not state.returns.any() and not state.events["zaps"].any()


def test_accumulator_errors():
    state = metrics.init(2, ("cooperated",))
    with pytest.raises(ValueError, match="cooperated"):
        metrics.update(state, jnp.zeros(2), jnp.array(False), {})
    with pytest.raises(ValueError, match="shape"):
        metrics.update(state, jnp.zeros(3), jnp.array(False), {"cooperated": jnp.zeros(2)})
    with pytest.raises(ValueError, match="removed"):
        metrics.update(metrics.init(2), jnp.zeros(2), jnp.array(False), {"removed": jnp.zeros(3, bool)})
    with pytest.raises(TypeError):
        metrics.init(2, "cooperated")
    with pytest.raises(ValueError):
        metrics.init(0)


def episodes_of(done):
    """``[(start, stop)]`` slices of the completed episodes in one env's done stream."""
    ends = np.flatnonzero(done)
    starts = np.concatenate([[0], ends[:-1] + 1])
    return list(zip(starts, ends + 1))


@given(
    rewards=hnp.arrays(np.int8, (12, 3), elements=st.integers(-2, 3)),
    dones=hnp.arrays(np.bool_, (12,)),
)
@settings(max_examples=40, deadline=None)
def test_accumulator_equals_formulas_on_any_stream(rewards, dones):
    rewards = rewards.astype(np.float32)  # integer-valued: every float32 sum is exact
    _, (last, _) = run_accumulator(3, (), rewards, dones, {})
    for start, stop in episodes_of(dones):
        expected = jax.device_get(metrics.episode_metrics(rewards[start:stop]))
        assert_metrics_agree(jax.tree_util.tree_map(lambda x: x[stop - 1], last), expected)


# --------------------------------------------------------------------------- envs
def rollout(env, params, key, num_steps):
    """Random actions in ``key.shape[0]`` envs; returns ``(T, B, ...)`` reward, done, info."""
    traj = testing.rollout(env, key, num_steps, params=params)  # (B, T, ...)
    return jax.tree_util.tree_map(lambda x: jnp.swapaxes(x, 0, 1), (traj.reward, traj.done, traj.info))


episode_metrics_jit = jax.jit(metrics.episode_metrics)  # one compile per episode length


# Sums and counts must agree bit for bit (integer-valued rewards: exact float32 sums,
# on any backend). Ratios agree to an ulp on the CPU: XLA may compile x / T as
# x * (1 / T) in one context and not in another (e.g. a constant T, or a scalar
# broadcast over an array). The two are different compiled programs, and off the CPU
# (e.g. a GPU's division and multiply-add contraction, with 1 - x in equality) they are
# held to a few ulp plus an absolute 1e-6 instead (no matrix product is involved).
INTEGER_VALUED = ("collective_return", "returns", "episode_length", "removed_steps")
RATIO_RTOL, RATIO_ATOL = tol(3e-7, 1e-6), tol(0.0, 1e-6)


def assert_metrics_agree(got, expected, exact_sums=True):
    assert set(got) == set(expected)
    for name in expected:
        if exact_sums and (name in INTEGER_VALUED or name.startswith(metrics.EVENT_PREFIX)):
            np.testing.assert_array_equal(got[name], expected[name], err_msg=name)
        elif exact_sums:
            np.testing.assert_allclose(got[name], expected[name], rtol=RATIO_RTOL, atol=RATIO_ATOL, err_msg=name)
        else:  # float rewards: the two sum them in different orders
            np.testing.assert_allclose(got[name], expected[name], rtol=1e-5, atol=1e-5, err_msg=name)


def check_against_formulas(rewards, dones, info, event_keys, exact_sums):
    """Every completed episode of every env: the wrapper's metrics at its last step
    equal the formulas on that episode's slice of the rollout."""
    last = info["episode_metrics"]
    np.testing.assert_array_equal(info["returned_episode"], dones)
    num_episodes = 0
    for b in range(dones.shape[1]):
        for start, stop in episodes_of(dones[:, b]):
            removed = info["removed"][start:stop, b] if "removed" in info else None
            events = {k: info[k][start:stop, b] for k in event_keys}
            expected = jax.device_get(episode_metrics_jit(rewards[start:stop, b], removed, events))
            got = jax.tree_util.tree_map(lambda x: x[stop - 1, b], last)
            assert_metrics_agree(got, expected, exact_sums)
            num_episodes += 1
    return num_episodes


IPD_ROUNDS = 5
IPD_STEPS = 23  # four whole episodes and part of a fifth at fixed length


@pytest.fixture(scope="module")
def ipd():
    return sj.SocialMetrics(sj.make("ipd", num_rounds=IPD_ROUNDS))


@pytest.fixture(scope="module")
def ipd_run(ipd):
    run = jax.jit(lambda key, params: rollout(ipd, params, key, IPD_STEPS))
    return lambda params: jax.device_get(run(jax.random.split(KEY, NUM_ENVS), params))


def test_ipd_fixed_length(ipd, ipd_run):
    rewards, dones, info = ipd_run(ipd.default_params)
    assert ipd.event_keys == ("cooperated",)
    assert check_against_formulas(rewards, dones, info, ipd.event_keys, exact_sums=True) == NUM_ENVS * 4
    last = info["episode_metrics"]
    # events: total cooperation = the executed C actions of the episode
    executed_c = (info["executed"][:20] == 0).reshape(4, IPD_ROUNDS, NUM_ENVS, 2).sum(axis=1)  # (episodes, B, N)
    np.testing.assert_array_equal(last["events/cooperated"][IPD_ROUNDS - 1 :: IPD_ROUNDS][:4], executed_c)
    assert (last["episode_length"][dones] == IPD_ROUNDS).all()
    assert (last["peace"][dones] == 2.0).all()  # nobody is removed in a matrix game
    # returns agree with EpisodeStats' bookkeeping: the sum of the episode's rewards
    per_episode = rewards[:20].reshape(4, IPD_ROUNDS, NUM_ENVS, 2).sum(axis=1)
    np.testing.assert_array_equal(last["returns"][IPD_ROUNDS - 1 :: IPD_ROUNDS][:4], per_episode)


def test_ipd_random_length_episodes(ipd, ipd_run):
    # continue_prob < 1: episodes end at random steps (a param: same compiled rollout)
    rewards, dones, info = ipd_run(ipd.default_params.replace(continue_prob=jnp.asarray(0.6)))
    lengths = {stop - start for b in range(NUM_ENVS) for start, stop in episodes_of(dones[:, b])}
    assert len(lengths) > 1, "expected episodes of several lengths"
    assert check_against_formulas(rewards, dones, info, ipd.event_keys, exact_sums=True) > NUM_ENVS * 4


def test_summarize_ipd(ipd, ipd_run):
    rewards, dones, info = ipd_run(ipd.default_params)
    summary = metrics.summarize(info["episode_metrics"], info["returned_episode"])
    assert summary.num_episodes == NUM_ENVS * 4 == int(dones.sum())
    steps, envs = summary.index
    np.testing.assert_array_equal(np.unique(steps), [4, 9, 14, 19])
    for name in ("efficiency", "equality", "sustainability", "returns", "events/cooperated"):
        np.testing.assert_array_equal(summary.episodes[name], info["episode_metrics"][name][steps, envs])
    chex.assert_shape(summary.episodes["returns"], (NUM_ENVS * 4, 2))
    np.testing.assert_allclose(summary.mean["efficiency"], summary.episodes["efficiency"].mean(), rtol=1e-6)
    chex.assert_shape(summary.mean["returns"], (2,))
    eq = summary.episodes["equality"]
    assert summary.defined["equality"] == np.sum(~np.isnan(eq))
    assert "efficiency" in str(summary)


def test_summarize_nan_aware_and_empty():
    em = {
        "equality": np.array([[np.nan, 0.5], [np.nan, 0.25]], np.float32),  # (T=2, B=2)
        "returns": np.zeros((2, 2, 3), np.float32),
    }
    done = np.array([[True, False], [True, True]])
    s = metrics.summarize(em, done)
    assert s.num_episodes == 3
    np.testing.assert_array_equal(s.episodes["equality"], [np.nan, np.nan, 0.25])
    assert s.mean["equality"] == 0.25 and s.defined["equality"] == 1
    chex.assert_shape(s.episodes["returns"], (3, 3))
    # only undefined values: the mean is NaN, without a warning
    s = metrics.summarize({"equality": em["equality"][:, :1]}, done[:, :1])
    assert np.isnan(s.mean["equality"]) and s.defined["equality"] == 0
    # no completed episode
    s = metrics.summarize(em, np.zeros((2, 2), bool))
    assert s.num_episodes == 0 and np.isnan(s.mean["equality"]) and s.mean["returns"].shape == (3,)
    with pytest.raises(ValueError, match="leading axes"):
        metrics.summarize(em, np.zeros((3,), bool))
    with pytest.raises(TypeError):
        metrics.summarize(em, np.zeros((2, 2), np.int32))


def test_donor_game():
    env = sj.SocialMetrics(sj.make("donor_game", num_agents=4))  # episodes of 2 x 4 = 8 steps
    rewards, dones, info = jax.device_get(
        jax.jit(lambda keys: rollout(env, env.default_params, keys, 19))(jax.random.split(KEY, 4))
    )
    assert env.event_keys == ("donated", "received", "punish_cost", "fine", "is_donor")
    # float rewards: only the summation order differs between the two computations
    assert check_against_formulas(rewards, dones, info, env.event_keys, exact_sums=False) == 4 * 2
    last = jax.tree_util.tree_map(lambda x: x[dones], info["episode_metrics"])
    np.testing.assert_array_equal(last["events/is_donor"], 4.0)  # donor in half of 8 rounds
    # what is given is received twice over (multiplier 2), so the total return is
    # the amount donated
    np.testing.assert_allclose(last["collective_return"], last["events/donated"].sum(-1), rtol=1e-5)
    np.testing.assert_allclose(last["events/received"].sum(-1), 2 * last["events/donated"].sum(-1), rtol=1e-5)


# --------------------------------------------------------------------------- removed
@struct.dataclass
class TagParams(EnvParams):
    pass


@struct.dataclass
class TagState:
    step: jax.Array


class TagEnv(Environment):
    """Tiny fake env with removals: action 1 "zaps" (reward 0, and the zapper is removed
    that step), action 0 earns 1. Episodes of 4 steps."""

    params_cls = TagParams
    event_keys = ("zaps",)
    LENGTH = 4

    def initial_state(self, key, params):
        return TagState(step=jnp.zeros((), jnp.int32))

    def transition(self, key, state, actions, params):
        step = state.step + 1
        done = step >= self.LENGTH
        zapped = actions == 1
        info = {"terminated": done, "truncated": jnp.zeros((), bool), "removed": zapped, "zaps": zapped}
        return TagState(step=step), (1 - actions).astype(jnp.float32), done, info

    def get_obs(self, state, params):
        return jnp.zeros((self.num_agents, 1))

    def action_space(self, params=None):
        return Discrete(2)

    def observation_space(self, params=None):
        return sj.Box(0.0, 1.0, (1,), jnp.float32)


def test_peace_from_info_removed_under_vmap():
    env = sj.SocialMetrics(TagEnv(3))
    rewards, dones, info = jax.device_get(
        jax.jit(lambda keys: rollout(env, env.default_params, keys, 12))(jax.random.split(KEY, NUM_ENVS))
    )
    assert check_against_formulas(rewards, dones, info, ("zaps",), exact_sums=True) == NUM_ENVS * 3
    last = jax.tree_util.tree_map(lambda x: x[dones], info["episode_metrics"])
    removed = info["removed"].reshape(3, 4, NUM_ENVS, 3).sum(axis=(1, 3)).reshape(-1)  # (episodes * B,) by step
    np.testing.assert_array_equal(last["peace"], (3 * 4 - removed) / 4)
    assert (last["peace"] < 3).any()
    np.testing.assert_array_equal(last["events/zaps"], last["removed_steps"])
    s = metrics.summarize(info["episode_metrics"], info["returned_episode"])
    assert s.num_episodes == NUM_ENVS * 3


def test_wrapper_composes_and_forwards():
    env = sj.SocialMetrics(sj.EpisodeStats(sj.make("ipd", num_rounds=3)), event_keys=())
    assert env.event_keys == () and env.num_agents == 2 and env.unwrapped.name == "ipd"
    assert "SocialMetrics" in repr(env)
    obs, state = env.reset(KEY)
    obs, state, reward, done, info = jax.jit(env.step)(KEY, state, jnp.array([0, 0]))
    assert "returned_episode_returns" in info and set(info["episode_metrics"]) == {
        *metrics.SCALAR_METRICS, "episode_length", "returns", "removed_steps"
    }
    noisy = env.with_params(noise=0.1)
    assert noisy.event_keys == () and float(noisy.default_params.noise) == pytest.approx(0.1)


@pytest.mark.parametrize("name", sj.registered_envs())
def test_every_env_declares_event_keys_present_in_info(name):
    """``event_keys`` name ``(N,)`` leaves of ``info`` (checked by tracing only)."""
    env = sj.make(name)
    n = env.num_agents

    def step(key):
        _, state = env.reset(key)
        return env.step(key, state, env.sample_actions(key))[4]

    info = jax.eval_shape(step, KEY)
    for key in env.event_keys:
        assert key in info, key
        chex.assert_shape(info[key], (n,), custom_message=key)
    if "removed" in info:
        chex.assert_shape(info["removed"], (n,))
        chex.assert_type(info["removed"], jnp.bool_)


# --------------------------------------------------------------------------- properties
returns_strategy = st.integers(1, 6).flatmap(
    lambda n: hnp.arrays(np.float32, (n,), elements=st.floats(0, 100, width=32))
)


@given(returns=returns_strategy, perm_seed=st.integers(0, 2**31 - 1))
@settings(max_examples=60, deadline=None)
def test_equality_range_and_permutation_invariance(returns, perm_seed):
    n = returns.shape[0]
    e = float(metrics.equality(returns))
    if returns.sum() < np.finfo(np.float32).tiny:  # zero, or a subnormal sum that XLA flushes to zero
        assert np.isnan(e) or 1 / n - 1e-5 <= e <= 1 + 1e-6
        return
    assert 1 / n - 1e-5 <= e <= 1 + 1e-6
    perm = np.random.default_rng(perm_seed).permutation(n)
    np.testing.assert_allclose(float(metrics.equality(returns[perm])), e, rtol=1e-5, atol=1e-6)
    # scale invariance
    np.testing.assert_allclose(float(metrics.equality(returns * 3)), e, rtol=1e-4, atol=1e-5)


@given(
    rewards=st.integers(1, 5).flatmap(
        lambda n: hnp.arrays(np.float32, (6, n), elements=st.sampled_from([-1.0, 0.0, 0.5, 2.0]))
    ),
    perm_seed=st.integers(0, 2**31 - 1),
)
@settings(max_examples=60, deadline=None)
def test_sustainability_range_and_permutation_invariance(rewards, perm_seed):
    s = float(metrics.sustainability(rewards))
    if not (rewards > 0).any():
        assert np.isnan(s)
        return
    assert 1 <= s <= rewards.shape[0]
    perm = np.random.default_rng(perm_seed).permutation(rewards.shape[1])
    np.testing.assert_allclose(float(metrics.sustainability(rewards[:, perm])), s, rtol=1e-6)
