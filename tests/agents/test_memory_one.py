"""Memory-one strategies: vectors, acting, and the exact long-run payoffs."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import socialjax.agents as agents
from socialjax.agents.memory_one import (
    ALLC,
    ALLD,
    GRIM,
    GTFT,
    RANDOM,
    STRATEGIES,
    TFT,
    WSLS,
    act,
    gtft,
    last_outcome,
    memory_one,
    policy,
    stationary_distribution,
    stationary_payoffs,
    transition_matrix,
)

R, S, T, P = 3.0, 0.0, 5.0, 1.0  # the default PD (Axelrod 1984): (T, R, P, S) = (5, 3, 1, 0)
PD = (R, S, T, P)


# ----------------------------------------------------------------------------- vectors
@pytest.mark.parametrize(
    "vector, expected",  # [p_first, p_CC, p_CD, p_DC, p_DD]
    [
        (ALLC, [1, 1, 1, 1, 1]),
        (ALLD, [0, 0, 0, 0, 0]),
        (TFT, [1, 1, 0, 1, 0]),
        (WSLS, [1, 1, 0, 0, 1]),
        (GRIM, [1, 1, 0, 0, 0]),
        (RANDOM, [0.5] * 5),
    ],
)
def test_named_strategy_vectors(vector, expected):
    chex.assert_shape(vector, (5,))
    chex.assert_type(vector, np.float32)
    np.testing.assert_array_equal(vector, np.float32(expected))


def test_gtft_default_pd_q_is_one_third():
    # q = min(1 - (T-R)/(R-S), (R-P)/(T-P)) = min(1 - 2/3, 2/4) = 1/3
    np.testing.assert_allclose(GTFT, [1, 1, 1 / 3, 1, 1 / 3], rtol=1e-6)
    np.testing.assert_allclose(gtft(*PD), GTFT)


def test_gtft_other_games_and_errors():
    # (R, S, T, P) = (3, 1, 4, 0): min(1 - 1/2, 3/4) = 1/2
    np.testing.assert_allclose(gtft(3.0, 1.0, 4.0, 0.0)[[2, 4]], [0.5, 0.5])
    # The formula leaves [0, 1] outside a PD; the probability is clipped.
    assert gtft(3.0, 0.0, 10.0, 1.0)[2] == 0.0  # 1 - 7/3 < 0
    assert gtft(4.0, 0.0, 3.0, 1.0)[2] == 1.0  # stag hunt: min(1.25, 1.5)
    with pytest.raises(ValueError, match="R != S"):
        gtft(1.0, 1.0, 5.0, 0.0)
    # traced payoffs work (e.g. vmapped over games)
    qs = jax.vmap(lambda t: gtft(3.0, 0.0, t, 1.0)[2])(jnp.array([5.0, 4.0]))
    np.testing.assert_allclose(qs, [1 / 3, 2 / 3], rtol=1e-6)


def test_strategies_dict_and_exports():
    assert set(STRATEGIES) == {"allc", "alld", "tft", "wsls", "grim", "random", "gtft"}
    np.testing.assert_array_equal(STRATEGIES["wsls"], WSLS)
    np.testing.assert_array_equal(STRATEGIES["gtft"], GTFT)
    for name in agents.__all__:
        assert hasattr(agents, name)
    # the submodule is reachable by name (no function shadows it)
    import types
    assert isinstance(agents.memory_one, types.ModuleType)
    assert isinstance(agents.donor_strategies, types.ModuleType)
    with pytest.raises(ValueError):  # constants are read-only
        TFT[0] = 0.0


def test_memory_one_vector_and_checks():
    np.testing.assert_allclose(memory_one(0.9, 0.1, 0.8, 0.2, p_first=0.7), [0.7, 0.9, 0.1, 0.8, 0.2])
    np.testing.assert_allclose(memory_one(0.0, 0.0, 0.0, 0.0), ALLD)  # p_first defaults to p_cc
    np.testing.assert_allclose(memory_one(1.0, 0.0, 1.0, 0.0), TFT)
    with pytest.raises(ValueError, match="p_dc"):
        memory_one(1.0, 0.0, 1.5, 0.0)
    with pytest.raises(ValueError, match="p_first"):
        memory_one(1.0, 0.0, 1.0, 0.0, p_first=float("nan"))
    traced = jax.jit(lambda x: memory_one(x, 0.0, x, 0.0, p_first=1.0))(0.25)
    np.testing.assert_allclose(traced, [1.0, 0.25, 0.0, 0.25, 0.0])


# ----------------------------------------------------------------------------- acting
def test_act_is_deterministic_for_pure_strategies():
    codes = jnp.arange(5)
    key = jax.random.key(0)
    np.testing.assert_array_equal(act(key, TFT, codes), [0, 0, 1, 0, 1])
    np.testing.assert_array_equal(act(key, WSLS, codes), [0, 0, 1, 1, 0])
    np.testing.assert_array_equal(act(key, GRIM, codes), [0, 0, 1, 1, 1])
    np.testing.assert_array_equal(act(key, ALLD, codes), [1] * 5)
    chex.assert_type(act(key, ALLC, codes), jnp.int32)


def test_act_frequency_matches_probability():
    strategy = memory_one(0.9, 0.1, 0.6, 0.3, p_first=0.5)
    n = 20_000
    codes = jnp.tile(jnp.arange(5), n)
    actions = jax.jit(act)(jax.random.key(1), strategy, codes).reshape(n, 5)
    freq = np.mean(np.asarray(actions) == 0, axis=0)
    se = np.sqrt(strategy * (1 - strategy) / n)
    assert np.all(np.abs(freq - strategy) < 5 * se), (freq, strategy)


def test_act_batched_and_vmapped():
    # two players with different strategies, codes from each one's own view
    strategies = jnp.stack([TFT, WSLS])
    codes = jnp.array([2, 2])  # each saw (own C, other D)
    np.testing.assert_array_equal(act(jax.random.key(0), strategies, codes), [1, 1])
    codes = jnp.array([4, 4])  # DD: TFT defects, WSLS cooperates
    np.testing.assert_array_equal(act(jax.random.key(0), strategies, codes), [1, 0])
    # vmap over a batch of games
    keys = jax.random.split(jax.random.key(2), 3)
    batch_codes = jnp.array([[1, 1], [3, 2], [4, 4]])
    out = jax.vmap(act, in_axes=(0, None, 0))(keys, strategies, batch_codes)
    np.testing.assert_array_equal(out, [[0, 0], [0, 1], [1, 0]])
    with pytest.raises(TypeError, match="integer"):
        act(jax.random.key(0), TFT, jnp.array([1.0]))


def test_last_outcome_and_policy():
    obs = jnp.array([[0, 3, 2], [0, 2, 3]])  # memory 3, oldest first
    np.testing.assert_array_equal(last_outcome(obs, 3), [2, 3])
    with_round = jnp.array([[3, 2, 7], [2, 3, 7]])  # memory 2 + round index
    np.testing.assert_array_equal(last_outcome(with_round, 2), [2, 3])
    with pytest.raises(ValueError, match="memory"):
        last_outcome(obs, 5)

    tft = jax.jit(policy(TFT))
    assert int(tft(jax.random.key(0), jnp.array([0]))) == 0  # first move C
    assert int(tft(jax.random.key(0), jnp.array([1, 2]))) == 1  # last round CD -> D
    tft_round = policy(TFT, observe_round=True)
    assert int(tft_round(jax.random.key(0), jnp.array([2, 3, 9]))) == 0  # last = DC -> C
    np.testing.assert_array_equal(tft_round(jax.random.key(0), with_round), [1, 0])


# ----------------------------------------------------------------------------- analysis
@pytest.mark.parametrize(
    "p, q, noise, expected",
    [
        (ALLC, ALLC, 0.0, (R, R)),
        (ALLD, ALLC, 0.0, (T, S)),
        (ALLC, ALLD, 0.0, (S, T)),
        (ALLD, ALLD, 0.0, (P, P)),
        (TFT, TFT, 0.0, (R, R)),
        (TFT, ALLD, 0.0, (P, P)),  # one S in the first round, then P forever
        (WSLS, ALLD, 0.0, ((S + P) / 2, (T + P) / 2)),  # alternates CD, DD
        (TFT, memory_one(1, 0, 1, 0, p_first=0.0), 0.0, ((S + T) / 2, (S + T) / 2)),  # periodic
        (GRIM, WSLS, 0.0, (R, R)),
        (TFT, TFT, 0.05, ((R + S + T + P) / 4,) * 2),  # doubly stochastic chain: uniform
        (RANDOM, ALLD, 0.0, ((S + P) / 2, (T + P) / 2)),
        (WSLS, GRIM, 0.5, ((R + S + T + P) / 4,) * 2),  # noise 1/2: every action a coin
    ],
)
def test_stationary_payoffs_known_values(p, q, noise, expected):
    np.testing.assert_allclose(stationary_payoffs(p, q, PD, noise), expected, atol=1e-9)


def test_stationary_payoffs_closed_form_with_noise():
    eps = 0.1
    a, b = 1 - eps, eps  # ALLC executes C w.p. 1-eps, ALLD w.p. eps
    expected = (a * b * R + a * (1 - b) * S + (1 - a) * b * T + (1 - a) * (1 - b) * P,
                a * b * R + a * (1 - b) * T + (1 - a) * b * S + (1 - a) * (1 - b) * P)
    np.testing.assert_allclose(stationary_payoffs(ALLC, ALLD, PD, eps), expected, atol=1e-12)
    # other games: chicken (T, R, S, P) = (4, 3, 1, 0), so ALLD vs ALLC is (T, S) = (4, 1)
    np.testing.assert_allclose(stationary_payoffs(ALLD, ALLC, (3.0, 1.0, 4.0, 0.0)), (4.0, 1.0))


def test_analysis_input_checks():
    with pytest.raises(ValueError, match="shape"):
        stationary_payoffs(TFT[1:], WSLS)
    with pytest.raises(ValueError, match="probabilities"):
        stationary_payoffs(TFT * 2, WSLS)
    with pytest.raises(ValueError, match="noise"):
        stationary_payoffs(TFT, WSLS, noise=1.5)


prob = st.floats(0.0, 1.0, allow_nan=False)
vector = st.lists(prob, min_size=5, max_size=5).map(lambda v: np.array(v))


@settings(max_examples=60, deadline=None)
@given(p=vector, q=vector, noise=st.floats(0.0, 0.5))
@example(p=np.array([0.0, 0.0, 0.0, 0.0, 5.3e-193]), q=np.array([0.0, 0.0, 1.0, 1.0, 0.0]), noise=0.0)  # singular
@example(p=np.array([0.0, 0.0, 0.0, 0.0, 5.3e-193]), q=np.array([0.0, 0.0, 1.0, 0.5, 0.0]), noise=0.0)  # NaN
def test_stationary_distribution_properties(p, q, noise):
    pi = stationary_distribution(p, q, noise)
    chex.assert_shape(pi, (4,))
    assert np.all(pi >= 0)
    np.testing.assert_allclose(pi.sum(), 1.0, atol=1e-9)
    M = transition_matrix(p, q, noise)
    np.testing.assert_allclose(M.sum(axis=1), 1.0, atol=1e-12)
    if noise >= 1e-3:  # irreducible: pi is the unique invariant distribution
        np.testing.assert_allclose(pi @ M, pi, atol=1e-8)
    # seen from the other seat, the same game: payoffs swap
    a, b = stationary_payoffs(p, q, PD, noise)
    b2, a2 = stationary_payoffs(q, p, PD, noise)
    np.testing.assert_allclose([a, b], [a2, b2], atol=1e-6)


def test_random_memory_one_pool():
    from socialjax.agents.memory_one import random_memory_one

    pool = np.asarray(jax.jit(random_memory_one, static_argnums=1)(jax.random.key(0), (4000,)))
    chex.assert_shape(pool, (4000, 5))
    chex.assert_type(pool, np.float32)
    assert pool.min() >= 0.0 and pool.max() <= 1.0
    # uniform on [0, 1]: mean 1/2 (sd of the mean ~0.0046), variance 1/12, entries independent
    np.testing.assert_allclose(pool.mean(0), 0.5, atol=0.025)
    np.testing.assert_allclose(pool.var(0), 1 / 12, atol=0.01)
    assert np.abs(np.corrcoef(pool.T) - np.eye(5)).max() < 0.08
    assert not np.array_equal(random_memory_one(jax.random.key(1), (3,)), random_memory_one(jax.random.key(2), (3,)))
