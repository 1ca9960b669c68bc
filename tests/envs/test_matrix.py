"""Iterated matrix games (docs/environments.md, "Iterated matrix games").

The rules of a step (payoffs, codes, history, the episode's end, out-of-range actions)
are checked with and without jit (``chex.variants``). Statistical checks use a tolerance
of 5 standard errors (two-sided false-alarm rate about 6e-7 per check); every seed is
fixed, so the tests are deterministic.
"""

import functools
import itertools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from absl.testing import parameterized
from hypothesis import given, settings
from hypothesis import strategies as st

import socialjax as sj
from socialjax import testing
from socialjax.agents.memory_one import (
    ALLD,
    GTFT,
    TFT,
    WSLS,
    act,
    last_outcome,
    memory_one,
    policy,
    stationary_distribution,
    stationary_payoffs,
)

Z = 5.0  # standard errors allowed in statistical checks
C, D = 0, 1
CC, CD, DC, DD = 1, 2, 3, 4  # outcome codes, own action first
JOINT = [(C, C), (C, D), (D, C), (D, D)]

# The documented payoffs (docs/environments.md), written out independently of the environment's constants.
PD = {"R": 3.0, "S": 0.0, "T": 5.0, "P": 1.0}  # (T, R, P, S) = (5, 3, 1, 0)
CHICKEN = {"R": 3.0, "S": 1.0, "T": 4.0, "P": 0.0}  # (T, R, S, P) = (4, 3, 1, 0)
STAG_HUNT = {"R": 4.0, "S": 0.0, "T": 3.0, "P": 1.0}  # R=4, T=3, P=1, S=0


def row_payoff(g, own, other):
    return {(C, C): g["R"], (C, D): g["S"], (D, C): g["T"], (D, D): g["P"]}[(own, other)]


@functools.cache
def game(name, **static):
    """``(env, reset, step, step_rows)`` of one configuration, each function one object
    (``jit`` caches its compilation per function object). ``step_rows(key, actions (B, N),
    params)``: from a fresh reset, step every row of the action batch once."""
    env = sj.make(name, **static)

    def step_rows(key, actions, params):
        obs, state = env.reset(key, params)
        return jax.vmap(env.step, in_axes=(None, None, 0, None))(key, state, actions, params)

    return env, env.reset, env.step, step_rows


class StepRules(chex.TestCase):
    """The rules of a step, with and without jit."""

    # ------------------------------------------------------------------------- payoffs
    @chex.variants(with_jit=True, without_jit=True)
    @parameterized.named_parameters(("ipd", "ipd", PD), ("stag_hunt", "stag_hunt", STAG_HUNT),
                                    ("chicken", "chicken", CHICKEN))
    def test_payoffs_of_every_joint_action(self, name, game_payoffs):
        env, _, _, step_rows = game(name)
        _, _, reward, done, info = self.variant(step_rows)(jax.random.key(0), jnp.array(JOINT, jnp.int32),
                                                           env.default_params)
        expected = [[row_payoff(game_payoffs, a0, a1), row_payoff(game_payoffs, a1, a0)] for a0, a1 in JOINT]
        np.testing.assert_array_equal(reward, np.float32(expected))
        chex.assert_type(reward, jnp.float32)
        np.testing.assert_array_equal(info["executed"], JOINT)
        assert not np.any(done)

    @chex.variants(with_jit=True, without_jit=True)
    def test_custom_asymmetric_matrix_game(self):
        payoffs = np.array([[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]], np.float32)
        env, _, _, step_rows = game("matrix_game")
        params = env.default_params.replace(payoffs=payoffs)
        _, _, reward, _, _ = self.variant(step_rows)(jax.random.key(0), jnp.array(JOINT, jnp.int32), params)
        expected = [[payoffs[0, a0, a1], payoffs[1, a0, a1]] for a0, a1 in JOINT]
        np.testing.assert_array_equal(reward, expected)

    @chex.variants(with_jit=True, without_jit=True)
    @parameterized.named_parameters(("3_players", 3), ("4_players", 4))
    def test_nplayer_payoffs_and_codes(self, n):
        env, _, _, step_rows = game("nplayer_matrix", num_agents=n)
        run = self.variant(step_rows)
        joint = np.array(list(itertools.product([C, D], repeat=n)), np.int32)  # all 2^n
        others_coop = (joint == C).sum(1, keepdims=True) - (joint == C)
        others_defect = (n - 1) - others_coop

        # default: the PD with every other agent, paid the mean
        g = PD
        default = np.where(
            joint == C,
            (g["R"] * others_coop + g["S"] * others_defect) / (n - 1),
            (g["T"] * others_coop + g["P"] * others_defect) / (n - 1),
        )
        obs, _, reward, _, _ = run(jax.random.key(0), jnp.asarray(joint), env.default_params)
        np.testing.assert_allclose(reward, default, rtol=1e-6)
        np.testing.assert_array_equal(obs[..., -1], 1 + n * joint + others_defect)

        # custom table, every entry distinct: payoffs[a, k] for own action a, k other cooperators
        table = (10.0 * np.arange(2)[:, None] + np.arange(n)[None, :] + 0.5).astype(np.float32)
        params = env.default_params.replace(payoffs=table)
        _, _, reward, _, _ = run(jax.random.key(0), jnp.asarray(joint), params)
        np.testing.assert_array_equal(reward, table[joint, others_coop])

    # ------------------------------------------------------------------------- observations
    @chex.variants(with_jit=True, without_jit=True)
    def test_codes_from_each_players_view(self):
        env, _, _, step_rows = game("ipd")
        obs, _, _, _, _ = self.variant(step_rows)(jax.random.key(0), jnp.array(JOINT, jnp.int32), env.default_params)
        # (C, D): player 0 sees CD, player 1 sees DC
        np.testing.assert_array_equal(obs[:, :, 0], [[CC, CC], [CD, DC], [DC, CD], [DD, DD]])

    @chex.variants(with_jit=True, without_jit=True)
    def test_history_order_with_start_token(self):
        env, reset, step = game("ipd", memory=3, num_rounds=10)[:3]
        reset, step = self.variant(reset), self.variant(step)
        obs, state = reset(jax.random.key(0))
        np.testing.assert_array_equal(obs, [[0, 0, 0], [0, 0, 0]])
        assert env.observation_space().contains(obs)
        plays = [((C, D), (CD, DC)), ((D, D), (DD, DD)), ((D, C), (DC, CD)), ((C, C), (CC, CC))]
        seen = [[], []]
        for t, (actions, codes) in enumerate(plays):
            obs, state, _, done, _ = step(jax.random.key(t), state, jnp.array(actions, jnp.int32))
            for i in range(2):
                seen[i].append(codes[i])
                expected = ([0, 0, 0] + seen[i])[-3:]  # oldest first, start token padding
                np.testing.assert_array_equal(obs[i], expected)
            assert not done

    @chex.variants(with_jit=True, without_jit=True)
    def test_observe_round_and_reset_at_cap(self):
        env, reset, step = game("ipd", num_rounds=3, observe_round=True)[:3]
        reset, step = self.variant(reset), self.variant(step)
        obs, state = reset(jax.random.key(0))
        np.testing.assert_array_equal(obs, [[0, 0], [0, 0]])
        for t in range(1, 7):  # two episodes
            obs, state, _, done, info = step(jax.random.key(t), state, jnp.array([C, D], jnp.int32))
            assert int(info["round"]) == (t - 1) % 3 + 1
            if t % 3:
                np.testing.assert_array_equal(obs, [[CD, t % 3], [DC, t % 3]])
                assert not done
            else:  # auto-reset: start token, round 0
                np.testing.assert_array_equal(obs, [[0, 0], [0, 0]])
                assert done and info["terminated"] and not info["truncated"]
            assert env.observation_space().contains(obs)

    # ------------------------------------------------------------------------- bad actions
    @chex.variants(with_jit=True, without_jit=True)
    def test_out_of_range_action_is_defect_and_flagged(self):
        env, reset, step = game("ipd")[:3]
        _, state = reset(jax.random.key(0))
        step = self.variant(step)
        for actions, executed in (([2, C], [D, C]), ([C, -1], [C, D]), ([7, 9], [D, D]), ([C, D], [C, D])):
            obs, _, reward, _, info = step(jax.random.key(1), state, jnp.array(actions, jnp.int32))
            np.testing.assert_array_equal(info["invalid_action"], [a not in (C, D) for a in actions])
            np.testing.assert_array_equal(info["executed"], executed)
            a0, a1 = executed
            np.testing.assert_array_equal(reward, [row_payoff(PD, a0, a1), row_payoff(PD, a1, a0)])
            np.testing.assert_array_equal(obs[:, 0], [1 + 2 * a0 + a1, 1 + 2 * a1 + a0])


def test_bad_payoffs_and_actions_raise():
    payoffs = np.array([[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]], np.float32)
    env2 = sj.make("matrix_game", payoffs=payoffs)  # the payoffs given to make() as a param
    np.testing.assert_array_equal(env2.default_params.payoffs, payoffs)
    with pytest.raises(ValueError, match="payoffs"):
        sj.make("matrix_game", payoffs=np.zeros((2, 2)))
    n = 3
    env = sj.make("nplayer_matrix", num_agents=n)
    with pytest.raises(ValueError, match="payoffs"):
        env.step(jax.random.key(0), env.reset(jax.random.key(0))[1], jnp.zeros(n, jnp.int32),
                 env.default_params.replace(payoffs=np.zeros((2, n + 1), np.float32)))
    ipd = sj.make("ipd")
    _, state = ipd.reset(jax.random.key(0))
    with pytest.raises(TypeError, match="integer"):
        ipd.step(jax.random.key(1), state, jnp.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="shape"):
        ipd.step(jax.random.key(1), state, jnp.array([0, 1, 0], jnp.int32))


# ----------------------------------------------------------------------------- rollouts
def test_noise_flip_fraction():
    eps, envs, steps = 0.1, 1000, 50
    env = sj.make("ipd", num_rounds=steps)
    run = jax.jit(lambda keys, params: testing.rollout(env, keys, steps, params=params))  # random actions
    params = env.default_params.replace(noise=eps)
    traj = run(jax.random.split(jax.random.key(0), envs), params)
    reward, info = traj.reward, traj.info
    intended, executed, flipped = (np.asarray(info[k]) for k in ("intended", "executed", "flipped"))
    np.testing.assert_array_equal(flipped, executed != intended)
    np.testing.assert_array_equal(info["cooperated"], executed == C)
    # payoffs follow the executed actions
    table = np.array([[PD["R"], PD["S"]], [PD["T"], PD["P"]]], np.float32)
    np.testing.assert_array_equal(reward[..., 0], table[executed[..., 0], executed[..., 1]])
    np.testing.assert_array_equal(reward[..., 1], table[executed[..., 1], executed[..., 0]])

    # each flip ~ Bernoulli(eps), whatever was intended; the two players independently
    for mask in (intended == C, intended == D):
        n = mask.sum()
        assert abs(flipped[mask].mean() - eps) < Z * np.sqrt(eps * (1 - eps) / n)
    both = flipped.all(-1)
    assert abs(both.mean() - eps**2) < Z * np.sqrt(eps**2 * (1 - eps**2) / both.size)

    # no noise, no flips
    info0 = run(jax.random.split(jax.random.key(1), 10), env.default_params).info
    assert not np.any(info0["flipped"])


def test_continuation_probability_episode_length():
    cap, envs = 150, 3000
    env = sj.make("ipd", num_rounds=cap)

    def first_episode(key, w):
        params = env.default_params.replace(continue_prob=w)
        traj = testing.rollout(env, key, cap, params=params)
        done, info = traj.done, traj.info
        first = jnp.argmax(done)  # index of the first end
        return first + 1, done[first], info["terminated"][first], info["truncated"][first]

    ws = jnp.array([0.5, 0.9])
    keys = jax.random.split(jax.random.key(0), envs)
    run = jax.jit(jax.vmap(jax.vmap(first_episode, in_axes=(0, None)), in_axes=(None, 0)))
    length, done, terminated, truncated = (np.asarray(x) for x in run(keys, ws))
    assert done.all()  # w**cap is negligible: every episode ended by chance ...
    assert terminated.all() and not truncated.any()  # ... so it is terminated
    for w, lengths in zip(np.asarray(ws), length):
        # length ~ Geometric(1 - w): mean 1/(1-w) (up to w**cap), sd sqrt(w)/(1-w)
        mean = (1 - w**cap) / (1 - w)
        assert abs(lengths.mean() - mean) < Z * np.sqrt(w) / (1 - w) / np.sqrt(envs), (w, lengths.mean())
        assert abs((lengths == 1).mean() - (1 - w)) < Z * np.sqrt(w * (1 - w) / envs)


def test_terminated_vs_truncated_at_cap():
    cap, envs = 4, 2000
    env = sj.make("ipd", num_rounds=cap)

    def episode(key, w):
        params = env.default_params.replace(continue_prob=w)
        traj = testing.rollout(env, key, cap, params=params)
        return traj.done, traj.info

    run = jax.jit(jax.vmap(episode, in_axes=(0, None)))
    keys = jax.random.split(jax.random.key(0), envs)

    # fixed length (continue_prob = 1): the cap is the end of the game -> terminated
    done, info = run(keys, 1.0)
    np.testing.assert_array_equal(done, np.broadcast_to(np.arange(1, cap + 1) == cap, (envs, cap)))
    np.testing.assert_array_equal(info["terminated"], done)
    assert not np.any(info["truncated"])

    # continue_prob < 1: the cap cuts an infinitely repeated game short -> truncated
    w = 0.9
    done, info = jax.tree_util.tree_map(np.asarray, run(keys, w))
    term, trunc, rnd = info["terminated"], info["truncated"], info["round"]
    np.testing.assert_array_equal(done, term | trunc)
    assert not np.any(term & trunc)
    assert not np.any(trunc & (rnd < cap))  # only the cap truncates
    first = np.argmax(done, axis=1)
    at_cap = first == cap - 1
    np.testing.assert_array_equal(done[np.arange(envs), first], True)
    # reached the cap w.p. w**(cap-1); there it is truncated unless the chance end
    # (prob 1 - w) fell on that same round, which counts as terminated
    frac_cap = at_cap.mean()
    assert abs(frac_cap - w ** (cap - 1)) < Z * np.sqrt(w ** (cap - 1) * (1 - w ** (cap - 1)) / envs)
    frac_trunc = trunc[at_cap, cap - 1].mean()
    assert abs(frac_trunc - w) < Z * np.sqrt(w * (1 - w) / at_cap.sum())
    assert trunc[at_cap, cap - 1].any() and term[at_cap, cap - 1].any()

    # continue_prob = 0: one round per episode
    done, info = run(keys[:10], 0.0)
    assert np.all(done) and np.all(info["terminated"]) and np.all(info["round"] == 1)


# ----------------------------------------------------------------------------- memory-one play
def chain(p, q, eps):
    """The test's own Markov chain over the outcome from player 0's view (CC, CD, DC,
    DD): ``(M, v0)``. Player 1 reads the outcome from its own view (CD <-> DC)."""
    p, q = np.asarray(p, np.float64), np.asarray(q, np.float64)
    noisy = lambda x: x * (1 - eps) + (1 - x) * eps  # noqa: E731
    own_view = {CC: CC, CD: DC, DC: CD, DD: DD}
    outcomes = [(C, C), (C, D), (D, C), (D, D)]

    def next_dist(c0, c1):
        return np.array([(c0 if a == C else 1 - c0) * (c1 if b == C else 1 - c1) for a, b in outcomes])

    M = np.array([next_dist(noisy(p[s]), noisy(q[own_view[s]])) for s in (CC, CD, DC, DD)])
    return M, next_dist(noisy(p[0]), noisy(q[0]))


def eigen_stationary(M):
    vals, vecs = np.linalg.eig(M.T)
    v = np.real(vecs[:, np.argmin(np.abs(vals - 1))])
    return v / v.sum()


PAYOFF_0 = np.array([PD["R"], PD["S"], PD["T"], PD["P"]])  # player 0's payoff in CC, CD, DC, DD
PAYOFF_1 = np.array([PD["R"], PD["T"], PD["S"], PD["P"]])

MIXED = memory_one(0.8, 0.1, 0.6, 0.3, p_first=0.5)
PAIRS = {
    "tft-wsls": (TFT, WSLS),
    "wsls-wsls": (WSLS, WSLS),
    "gtft-alld": (GTFT, ALLD),
    "wsls-gtft": (WSLS, GTFT),
    "mixed-tft": (MIXED, TFT),
}
SWAP = np.array([0, 1, 3, 2, 4])  # exchange the CD and DC entries of a strategy


@functools.cache
def memory_one_play(num_rounds, memory, observe_round):
    """Jitted ``(keys, strategies (2, 5), noise) -> (reward, executed)`` over a batch of
    ipd games in which both players act on their own observations."""
    env = sj.make("ipd", num_rounds=num_rounds, memory=memory, observe_round=observe_round)
    if observe_round:  # through policy(), one agent at a time

        def act_fn(key, obs, strategies):
            keys = jax.random.split(key, 2)
            return jax.vmap(lambda s, k, o: policy(s, observe_round=True)(k, o))(strategies, keys, obs)
    else:  # through act() on both agents' last codes at once

        def act_fn(key, obs, strategies):
            return act(key, strategies, last_outcome(obs, env.memory))

    def one(key, strategies, noise):
        params = env.default_params.replace(noise=noise)
        traj = testing.rollout(env, key, num_rounds, params=params, policy=lambda k, obs, _: act_fn(k, obs, strategies))
        return traj.reward, traj.info["executed"]

    return jax.jit(jax.vmap(one, in_axes=(0, None, None)))


def test_memory_one_strategies_in_env_match_stationary_payoffs():
    """Long noisy games between memory-one strategies acting on the env's observations
    (through ``act`` and ``last_outcome``) reach the Markov chain's stationary law.

    Each env's average over the measured rounds is one draw; draws are independent
    across envs, so their spread over ``envs`` gives the standard error (~0.01 here).
    The burn-in is long enough that the start biases the measured law by < 1e-5 (checked
    below), far inside the tolerance."""
    eps, envs, burn_in, measured = 0.05, 1000, 150, 350
    play = memory_one_play(burn_in + measured, 1, False)
    keys = jax.random.split(jax.random.key(0), envs)
    payoffs = tuple(PD[k] for k in "RSTP")
    rejected = 0
    for name, (p, q) in PAIRS.items():
        M, v0 = chain(p, q, eps)
        pi = eigen_stationary(M)
        # the library's answer agrees with the test's own chain
        np.testing.assert_allclose(stationary_distribution(p, q, eps), pi, atol=1e-9)
        expected = np.array([pi @ PAYOFF_0, pi @ PAYOFF_1])
        np.testing.assert_allclose(stationary_payoffs(p, q, payoffs, eps), expected, atol=1e-9)
        v = v0 @ np.linalg.matrix_power(M, burn_in)  # law of the first measured round
        assert np.abs(v - pi).sum() < 1e-5, name

        reward, executed = play(keys, jnp.stack([p, q]), eps)
        reward, executed = np.asarray(reward)[:, burn_in:], np.asarray(executed)[:, burn_in:]
        per_env = reward.mean(axis=1)  # (envs, 2)
        mean, se = per_env.mean(axis=0), per_env.std(axis=0, ddof=1) / np.sqrt(envs)
        assert np.all(np.abs(mean - expected) < Z * se + 1e-4), (name, mean, expected, se)
        code = 2 * executed[..., 0] + executed[..., 1]  # 0=CC 1=CD 2=DC 3=DD, player 0's view
        freq = np.stack([(code == k).mean(axis=1) for k in range(4)], axis=1)
        se_freq = freq.std(axis=0, ddof=1) / np.sqrt(envs)
        assert np.all(np.abs(freq.mean(axis=0) - pi) < Z * se_freq + 1e-4), (name, freq.mean(0), pi)

        # The same data reject the two ways a player could misread its outcome code:
        # player 1 reading player 0's view (CD/DC unswapped for it), or both players
        # reading "other's action first". Whenever such a model predicts payoffs that
        # differ by more than 0.1, the measurement must be out of its 5-SE band.
        for wrong_p, wrong_q in ((p, q[SWAP]), (p[SWAP], q[SWAP])):
            wrong = np.array(stationary_payoffs(wrong_p, wrong_q, payoffs, eps))
            if np.max(np.abs(wrong - expected)) > 0.1:
                assert np.any(np.abs(mean - wrong) > Z * se), (name, mean, wrong)
                rejected += 1
    assert rejected >= 3  # the check above has power against those bugs


prob = st.floats(0.0, 1.0, allow_nan=False)
vector = st.lists(prob, min_size=5, max_size=5)


@settings(max_examples=12, deadline=None)
@given(p=vector, q=vector, eps=st.floats(0.02, 0.2))
def test_random_memory_one_pairs_match_markov_chain(p, q, eps):
    """Any memory-one pair, from the first round on (memory 2 + round index, acting
    through ``policy``): the empirical mean payoff over a 40-round game matches the
    exact expectation of the test's Markov chain. With eps >= 0.02 every transition has
    probability >= 4e-4, so over 20k rounds the per-env spread estimates the SE well."""
    rounds, envs = 40, 500
    play = memory_one_play(rounds, 2, True)
    strategies = np.array([p, q], np.float32)
    M, v0 = chain(strategies[0], strategies[1], np.float32(eps))
    dists = [v0]
    for _ in range(rounds - 1):
        dists.append(dists[-1] @ M)
    mean_dist = np.mean(dists, axis=0)
    np.testing.assert_allclose(mean_dist.sum(), 1.0, atol=1e-9)
    expected = np.array([mean_dist @ PAYOFF_0, mean_dist @ PAYOFF_1])

    reward, _ = play(jax.random.split(jax.random.key(1), envs), jnp.asarray(strategies), jnp.float32(eps))
    per_env = np.asarray(reward).mean(axis=1)
    se = per_env.std(axis=0, ddof=1) / np.sqrt(envs)
    assert np.all(np.abs(per_env.mean(axis=0) - expected) < Z * se + 1e-3), (per_env.mean(0), expected, se)
