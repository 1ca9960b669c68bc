"""Indirect reciprocity: the assessment table of each norm, errors, private views, the
long-run reputation of a population of discriminators against the analytic fixed point,
scripted strategies, evolution, bad input. Steps from hand-made states run with and
without jit (``chex.variants``)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from socialjax.envs.institutions.indirect_reciprocity import (
    BAD,
    GOOD,
    NORMS,
    OBS_IS_DONOR,
    OBS_OWN_GOOD,
    OBS_PARTNER_GOOD,
    OBS_PARTNER_SCORE,
    IndirectReciprocity,
)
from socialjax.envs.institutions.ir_strategies import (
    ALLC,
    ALLD,
    DISC,
    NUM_STRATEGIES,
    evolve_strategies,
    image_score_strategy,
    reproduce,
    strategy_actions,
)

C, D = 0, 1
NORM_NAMES = ("image_scoring", "simple_standing", "stern_judging", "shunning")
# the norm table of docs/environments.md (Ohtsuki & Iwasa 2004):
# new label for (C to G, D to G, C to B, D to B)
SPEC_TABLE = {
    "image_scoring": (GOOD, BAD, GOOD, BAD),
    "simple_standing": (GOOD, BAD, GOOD, GOOD),
    "stern_judging": (GOOD, BAD, BAD, GOOD),
    "shunning": (GOOD, BAD, BAD, BAD),
}


# ------------------------------------------------------------------ hand-made rounds
def handmade_state(env, params):
    """8 agents: donors 0, 2, 4, 6 give to 1, 3, 5, 7; recipients 1 and 3 are GOOD,
    5 and 7 BAD (in every view). Donors' prior labels (B, G, B, B) do not enter the
    assessment; the ones the table sets to G or B from them show that it was applied."""
    _, state = env.reset(jax.random.key(0), params)
    partner = jnp.array([1, 0, 3, 2, 5, 4, 7, 6], jnp.int32)
    is_donor = jnp.array([1, 0, 1, 0, 1, 0, 1, 0], bool)
    labels = jnp.array([BAD, GOOD, GOOD, GOOD, BAD, BAD, BAD, BAD], jnp.int32)
    reputation = jnp.broadcast_to(labels, state.reputation.shape)
    return state.replace(partner=partner, is_donor=is_donor, reputation=reputation)


# donors' actions: C to G, D to G, C to B, D to B; recipients try to cooperate (ignored)
HANDMADE_ACTIONS = jnp.array([C, C, D, C, C, C, D, C], jnp.int32)


@pytest.fixture(scope="module")
def handmade_rounds():
    """``{(norm, private): (state, step outputs)}``: the hand-made round under every norm,
    public and private, as one jitted call (the norm and the assessment are static
    options, so this is eight environments; compiling them together costs a fraction of
    eight separate compilations)."""
    envs = {
        (norm, private): IndirectReciprocity(num_agents=8, norm=norm, private_assessment=private)
        for norm in NORM_NAMES for private in (False, True)
    }

    def one(env):
        params = env.default_params
        state = handmade_state(env, params)
        return state, env.step(jax.random.key(1), state, HANDMADE_ACTIONS, params)

    return jax.device_get(jax.jit(lambda: {k: one(env) for k, env in envs.items()})())


@pytest.mark.parametrize("private", [False, True])
@pytest.mark.parametrize("norm", NORM_NAMES)
def test_assessment_table_without_errors(norm, private, handmade_rounds):
    params = IndirectReciprocity(num_agents=8, norm=norm, private_assessment=private).default_params
    state, (obs, new, reward, done, info) = handmade_rounds[(norm, private)]
    rep = np.asarray(new.reputation)
    chex.assert_shape(rep, (8, 8) if private else (1, 8))
    # every observer (one, or all eight) assigns the table's labels to the donors ...
    np.testing.assert_array_equal(rep[:, [0, 2, 4, 6]], np.broadcast_to(SPEC_TABLE[norm], (rep.shape[0], 4)))
    # ... and the recipients keep theirs
    np.testing.assert_array_equal(rep[:, [1, 3, 5, 7]], np.broadcast_to([GOOD, GOOD, BAD, BAD], (rep.shape[0], 4)))
    b, c = float(params.benefit), float(params.cost)
    np.testing.assert_allclose(reward, [-c, b, 0, 0, -c, b, 0, 0], rtol=1e-6)
    np.testing.assert_array_equal(new.image_score, [1, 0, -1, 0, 1, 0, -1, 0])
    np.testing.assert_array_equal(info["cooperated"], [1, 0, 0, 0, 1, 0, 0, 0])
    np.testing.assert_array_equal(info["defected"], [0, 0, 1, 0, 0, 0, 1, 0])
    np.testing.assert_array_equal(info["partner"], state.partner)
    assert not np.asarray(info["execution_error"]).any()


class HandMadeSteps(chex.TestCase):
    """Steps from hand-made states, with and without jit."""

    @chex.variants(with_jit=True, without_jit=True)
    def test_private_observers_use_their_own_view_of_the_recipient(self):
        env = IndirectReciprocity(num_agents=4, norm="stern_judging", private_assessment=True)
        params = env.default_params
        _, state = env.reset(jax.random.key(0), params)
        # donor 0 defects against recipient 1; observers 0 and 2 see 1 as BAD, 1 and 3 as GOOD
        reputation = jnp.ones((4, 4), jnp.int32).at[0, 1].set(BAD).at[2, 1].set(BAD)
        state = state.replace(
            reputation=reputation,
            partner=jnp.array([1, 0, 3, 2], jnp.int32),
            is_donor=jnp.array([1, 0, 1, 0], bool),
        )
        _, new, _, _, _ = self.variant(env.step)(jax.random.key(1), state, jnp.array([D, C, C, C], jnp.int32), params)
        # stern judging: D to B is GOOD, D to G is BAD, each in the observer's own view
        np.testing.assert_array_equal(new.reputation[:, 0], [GOOD, BAD, GOOD, BAD])
        np.testing.assert_array_equal(new.reputation[:, 2], GOOD)  # donor 2 helped a GOOD recipient

    @chex.variants(with_jit=True, without_jit=True)
    def test_observation_layout(self):
        env = IndirectReciprocity(num_agents=8, norm="image_scoring")
        params = env.default_params
        obs0, state0 = self.variant(env.reset)(jax.random.key(0), params)
        chex.assert_shape(obs0, (8, 4))
        chex.assert_type(obs0, jnp.float32)
        np.testing.assert_array_equal(obs0[:, OBS_PARTNER_GOOD], 1.0)  # everyone starts GOOD
        np.testing.assert_array_equal(obs0[:, OBS_PARTNER_SCORE], 0.0)
        np.testing.assert_array_equal(obs0[:, OBS_IS_DONOR], state0.is_donor)
        assert int(state0.is_donor.sum()) == 4
        state = handmade_state(env, params)
        obs, new, _, _, _ = self.variant(env.step)(jax.random.key(1), state, HANDMADE_ACTIONS, params)
        partner = np.asarray(new.partner)
        assert sorted(partner[np.asarray(new.is_donor)]) == sorted(np.flatnonzero(~np.asarray(new.is_donor)))
        np.testing.assert_array_equal(partner[partner], np.arange(8))
        np.testing.assert_array_equal(obs[:, OBS_PARTNER_GOOD], np.asarray(new.reputation)[0, partner])
        np.testing.assert_array_equal(obs[:, OBS_PARTNER_SCORE], np.asarray(new.image_score)[partner])
        np.testing.assert_array_equal(obs[:, OBS_OWN_GOOD], np.asarray(new.reputation)[0])
        np.testing.assert_array_equal(obs[:, OBS_IS_DONOR], new.is_donor)
        # private: own label is the fraction of the others that see the agent as GOOD
        penv = IndirectReciprocity(num_agents=4, private_assessment=True)
        _, pstate = penv.reset(jax.random.key(0))
        pstate = pstate.replace(reputation=jnp.eye(4, dtype=jnp.int32).at[1, 0].set(1).at[2, 0].set(1))
        own = np.asarray(self.variant(penv.get_obs)(pstate, penv.default_params))[:, OBS_OWN_GOOD]
        np.testing.assert_allclose(own, [2 / 3, 0, 0, 0])

    @chex.variants(with_jit=True, without_jit=True)
    def test_image_scores_clip(self):
        env = IndirectReciprocity(num_agents=2, norm="image_scoring")
        params = env.default_params
        _, state = env.reset(jax.random.key(0), params)
        step = self.variant(env.step)
        for t in range(7):  # both always cooperate: each donates in every round as donor
            _, state, _, _, _ = step(jax.random.key(t), state, jnp.array([C, C]), params)
        scores = np.asarray(state.image_score)
        assert scores.sum() == 7 or scores.max() == 5  # +1 per donation, clipped at 5
        for t in range(60):
            _, state, _, _, _ = step(jax.random.key(100 + t), state, jnp.array([D, D]), params)
        np.testing.assert_array_equal(state.image_score, -5)

    @chex.variants(with_jit=True, without_jit=True)
    def test_out_of_range_actions_are_a_flagged_defection(self):
        env = IndirectReciprocity(num_agents=4)
        _, state = env.reset(jax.random.key(0))
        _, _, _, _, info = self.variant(env.step)(jax.random.key(0), state, jnp.array([5, -1, 5, -1]))
        assert np.asarray(info["invalid_action"]).all() and not np.asarray(info["cooperated"]).any()


# ------------------------------------------------------------------ statistics
def run_population(env, params, strategy_ids, key, num_envs, num_steps):
    """Scripted play in ``num_envs`` envs; returns per-step info leaves ``(B, T, ...)``."""

    def one(key):
        key_reset, key_run = jax.random.split(key)
        obs, state = env.reset(key_reset, params)

        def body(carry, key):
            obs, state = carry
            obs, state, reward, done, info = env.step(key, state, strategy_actions(strategy_ids, obs), params)
            keep = {k: info[k] for k in ("good_fraction", "execution_error", "cooperated", "is_donor")}
            return (obs, state), keep

        return jax.lax.scan(body, (obs, state), jax.random.split(key_run, num_steps))[1]

    return jax.vmap(one)(jax.random.split(key, num_envs))


E, MU = 0.1, 0.05  # execution and assessment error rates of the long-run test
N_AGENTS, NUM_ENVS, BURN_IN, MEASURE = 40, 64, 150, 300


def fixed_point(norm: str, strategy: int, e: float, mu: float) -> float:
    """Stationary fraction of GOOD labels, derived for public assessment.

    Let g be the fraction GOOD. In a round half the agents donate, each to a uniformly
    random other agent, and only donors are relabelled. Write ``flip(p) = p (1 - mu) +
    (1 - p) mu`` for the chance of GOOD after the assessment error when the norm gives
    GOOD with chance p, and let ``P_G`` (``P_B``) be the chance that a donor is labelled
    GOOD after meeting a GOOD (BAD) recipient. Given K GOOD agents, a donor's recipient
    is GOOD with chance (K - r_donor) / (N - 1), which averages to K / N over the random
    donors, so E[K' | K] = K / 2 + (N / 2) (P_B + (P_G - P_B) K / N) is linear in K and
    the stationary mean solves g = g / 2 + (g P_G + (1 - g) P_B) / 2, i.e.

        g* = P_B / (1 - P_G + P_B)        (exact for the mean, any N).

    Meeting a GOOD recipient, DISC and ALLC both intend C, executed as C with chance
    1 - e; every norm labels C to G as G and D to G as B, so
    ``P_G = alpha = flip(1 - e) = (1 - e)(1 - mu) + e mu``.

    DISC meeting a BAD recipient intends D (never flipped): the label is the norm's
    "D to B": image scoring and shunning B -> P_B = mu; simple standing and stern
    judging G -> P_B = 1 - mu. So
        image scoring, shunning:         g* = mu / (1 - alpha + mu)
        simple standing, stern judging:  g* = (1 - mu) / (2 - alpha - mu).
    (DISC never cooperates with B, so the "C to B" column cannot matter; ALLC tells it
    apart.) ALLC meeting a BAD recipient intends C: executed C with chance 1 - e
    ("C to B"), D with chance e ("D to B"):
        image scoring:   C->G, D->B: P_B = alpha,        g* = alpha
        simple standing: C->G, D->G: P_B = 1 - mu,       g* = (1 - mu) / (2 - alpha - mu)
        stern judging:   C->B, D->G: P_B = beta = flip(e) = e (1 - mu) + (1 - e) mu,
                                                         g* = beta / (1 - alpha + beta)
        shunning:        C->B, D->B: P_B = mu,           g* = mu / (1 - alpha + mu)
    With e = 0.1, mu = 0.05: alpha = 0.86, beta = 0.14; DISC: 0.263 (IS, SH), 0.872
    (SS, SJ); ALLC: 0.86, 0.872, 0.5, 0.263.
    """
    alpha = (1 - e) * (1 - mu) + e * mu
    beta = e * (1 - mu) + (1 - e) * mu
    closed = {
        (DISC, "image_scoring"): mu / (1 - alpha + mu),
        (DISC, "shunning"): mu / (1 - alpha + mu),
        (DISC, "simple_standing"): (1 - mu) / (2 - alpha - mu),
        (DISC, "stern_judging"): (1 - mu) / (2 - alpha - mu),
        (ALLC, "image_scoring"): alpha,
        (ALLC, "simple_standing"): (1 - mu) / (2 - alpha - mu),
        (ALLC, "stern_judging"): beta / (1 - alpha + beta),
        (ALLC, "shunning"): mu / (1 - alpha + mu),
    }[(strategy, norm)]
    # the same from the env's own table, as a cross-check of the hand derivation above
    table = NORMS[norm]
    flip = lambda p: p * (1 - mu) + (1 - p) * mu  # noqa: E731
    p_good = flip(1 - e)
    p_bad = flip(float(table[D, BAD])) if strategy == DISC else flip((1 - e) * table[C, BAD] + e * table[D, BAD])
    assert abs(closed - p_bad / (1 - p_good + p_bad)) < 1e-12
    return closed


@pytest.fixture(scope="module")
def long_run_good():
    """``{norm: (2, NUM_ENVS, BURN_IN + MEASURE)}``: the fraction GOOD per step for an
    all-DISC and an all-ALLC population under each norm. The four norms (static options)
    run in one jitted call: one compilation instead of four."""
    strategies = jnp.array([DISC, ALLC])

    def good_fractions(norm, keys):
        env = IndirectReciprocity(num_agents=N_AGENTS, norm=norm, episode_length=10**6)
        params = env.default_params.replace(execution_error=jnp.float32(E), assessment_error=jnp.float32(MU))

        def population(strategy, key):
            ids = jnp.full(N_AGENTS, strategy, jnp.int32)
            return run_population(env, params, ids, key, NUM_ENVS, BURN_IN + MEASURE)["good_fraction"]

        return jax.vmap(population)(strategies, keys)

    run = jax.jit(lambda keys: {norm: good_fractions(norm, keys) for norm in NORM_NAMES})
    return jax.device_get(run(jax.random.split(jax.random.key(7), 2)))


@pytest.mark.parametrize("norm", NORM_NAMES)
def test_long_run_good_fraction_matches_the_fixed_point(norm, long_run_good):
    good = np.asarray(long_run_good[norm])
    for i, strategy in enumerate((DISC, ALLC)):
        # each env's time average after burn-in is an independent draw; the tolerance
        # is 5 standard errors of their mean over NUM_ENVS envs
        per_env = good[i, :, BURN_IN:].mean(axis=1)
        se = per_env.std(ddof=1) / np.sqrt(NUM_ENVS)
        assert se < 0.01, (norm, strategy, se)  # the check has power
        expected = fixed_point(norm, strategy, E, MU)
        assert abs(per_env.mean() - expected) < 5 * se + 1e-3, (norm, strategy, per_env.mean(), expected, se)


def test_execution_error_rate():
    env = IndirectReciprocity(num_agents=N_AGENTS, norm="stern_judging")
    e = 0.3
    params = env.default_params.replace(execution_error=jnp.float32(e))
    allc = jnp.full(N_AGENTS, ALLC, jnp.int32).at[: N_AGENTS // 2].set(ALLD)
    info = jax.device_get(jax.jit(lambda k: run_population(env, params, allc, k, 16, 100))(jax.random.key(3)))
    donor = info["is_donor"]
    intends_c = donor[..., N_AGENTS // 2:]
    errors = info["execution_error"][..., N_AGENTS // 2:]
    n = intends_c.sum()
    rate = errors[intends_c].mean()
    assert abs(rate - e) < 5 * np.sqrt(e * (1 - e) / n), (rate, n)
    # an intended D is never changed, and errors only hit donors
    assert not info["execution_error"][..., : N_AGENTS // 2].any()
    assert not info["cooperated"][..., : N_AGENTS // 2].any()
    assert not (info["execution_error"] & ~donor).any()
    np.testing.assert_array_equal(donor.sum(-1), N_AGENTS // 2)
    # roles are fair: each agent donates in about half its rounds
    share = donor.mean(axis=(0, 1))
    assert np.all(np.abs(share - 0.5) < 5 * np.sqrt(0.25 / (16 * 100)))


def test_private_views_agree_without_errors_and_diverge_with_them():
    env = IndirectReciprocity(num_agents=8, norm="stern_judging", private_assessment=True, episode_length=50)
    ids = jnp.full(8, DISC, jnp.int32)

    def final_views(params, key):
        def body(carry, key):
            obs, state = carry
            obs, state, _, _, _ = env.step(key, state, strategy_actions(ids, obs), params)
            return (obs, state), None

        (_, state), _ = jax.lax.scan(body, env.reset(key, params), jax.random.split(key, 20))
        return state.reputation

    run = jax.jit(final_views)
    clean = np.asarray(run(env.default_params, jax.random.key(0)))
    assert (clean == clean[:1]).all()
    noisy = np.asarray(run(env.default_params.replace(assessment_error=jnp.float32(0.2)), jax.random.key(0)))
    assert not (noisy == noisy[:1]).all()


# ------------------------------------------------------------------ strategies, evolution
def test_scripted_strategies():
    # partner GOOD with score 2, partner BAD with score -3
    obs = jnp.array([[1, 2, 1, 1], [0, -3, 1, 1]], jnp.float32)
    act = lambda s: np.asarray(strategy_actions(jnp.array([s, s]), obs))  # noqa: E731
    np.testing.assert_array_equal(act(ALLC), [C, C])
    np.testing.assert_array_equal(act(ALLD), [D, D])
    np.testing.assert_array_equal(act(DISC), [C, D])
    np.testing.assert_array_equal(act(image_score_strategy(-5)), [C, C])
    np.testing.assert_array_equal(act(image_score_strategy(-3)), [C, C])
    np.testing.assert_array_equal(act(image_score_strategy(-2)), [C, D])
    np.testing.assert_array_equal(act(image_score_strategy(2)), [C, D])
    np.testing.assert_array_equal(act(image_score_strategy(3)), [D, D])
    np.testing.assert_array_equal(act(image_score_strategy(6)), [D, D])
    assert image_score_strategy(6) == NUM_STRATEGIES - 1
    with pytest.raises(ValueError, match="threshold"):
        image_score_strategy(7)


def test_reproduce_is_payoff_proportional():
    ids = jnp.array([0, 1, 2, 3], jnp.int32)
    # only agent 2 is above the minimum: everyone copies DISC
    out = reproduce(jax.random.key(0), ids, jnp.array([0.0, 0.0, 5.0, 0.0]))
    np.testing.assert_array_equal(out, 2)
    # payoffs 0, 1, 3 (shifted): agent 2 is drawn 3x as often as agent 1, agent 0 never
    keys = jax.random.split(jax.random.key(1), 2000)
    draws = np.asarray(jax.jit(jax.vmap(lambda k: reproduce(k, ids[:3], jnp.array([2.0, 3.0, 5.0]))))(keys))
    freq = np.bincount(draws.reshape(-1), minlength=3) / draws.size
    assert freq[0] == 0
    assert abs(freq[2] - 0.75) < 5 * np.sqrt(0.75 * 0.25 / draws.size)
    # equal payoffs: uniform; mutation 1 with a one-strategy pool: all mutants
    out = reproduce(jax.random.key(2), ids, jnp.zeros(4), mutation_rate=1.0, pool=(7,))
    np.testing.assert_array_equal(out, 7)


def test_evolution_runs_in_jit_and_selects():
    env = IndirectReciprocity(num_agents=20, norm="stern_judging")
    params = env.default_params.replace(cost=jnp.float32(0.5))
    ids = jnp.array([ALLC] * 10 + [ALLD] * 10, jnp.int32)

    @jax.jit
    def run(key):
        return evolve_strategies(key, env, ids, generations=12, rounds_per_generation=20, params=params)

    history, final = jax.vmap(run)(jax.random.split(jax.random.key(0), 16))
    freq = np.asarray(history["frequencies"])
    chex.assert_shape(freq, (16, 12, NUM_STRATEGIES))
    np.testing.assert_allclose(freq.sum(-1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(freq[:, 0, [ALLC, ALLD]], 0.5)
    assert freq[..., 2:].sum() == 0  # no mutation: no new strategies
    # ALLC pays c = 0.5 per donation and gets nothing more back: ALLD takes over
    assert freq[:, -1, ALLD].mean() > 0.9
    chex.assert_shape(final, (16, 20))
    # discriminators under stern judging with errors-free reputations hold off defectors
    disc = jnp.array([DISC] * 14 + [ALLD] * 6, jnp.int32)
    history, _ = jax.jit(
        lambda k: evolve_strategies(k, env, disc, 10, 30, params=env.default_params)
    )(jax.random.key(1))
    assert float(history["frequencies"][-1, DISC]) > 0.7
    assert np.all(np.asarray(history["cooperation_rate"]) <= 1.0)


# ------------------------------------------------------------------ bad input
def test_bad_input():
    with pytest.raises(ValueError, match="norm"):
        IndirectReciprocity(num_agents=4, norm="golden_rule")
    with pytest.raises(ValueError, match="num_agents"):
        IndirectReciprocity(num_agents=5)
    with pytest.raises(ValueError, match="private_assessment"):
        IndirectReciprocity(num_agents=4, private_assessment="maybe")
    with pytest.raises(ValueError, match="episode_length"):
        IndirectReciprocity(num_agents=4, episode_length=0)
    env = IndirectReciprocity(num_agents=4)
    for name, value in [
        ("execution_error", 1.5),
        ("assessment_error", -0.1),
        ("observation_prob", 2.0),
        ("initial_good_prob", -1.0),
        ("cost", -1.0),
    ]:
        with pytest.raises(ValueError, match=name):
            env.with_params(**{name: value})
    _, state = env.reset(jax.random.key(0))
    with pytest.raises(ValueError, match="shape"):
        env.step(jax.random.key(0), state, jnp.zeros(3, jnp.int32))
    with pytest.raises(ValueError, match="strategy_ids"):
        evolve_strategies(jax.random.key(0), env, jnp.array([0, 1, 2]), 2, 2)
    with pytest.raises(ValueError, match="strategy_ids"):
        evolve_strategies(jax.random.key(0), env, jnp.array([0, 1, 2, 99]), 2, 2)
    with pytest.raises(ValueError, match="mutation_rate"):
        evolve_strategies(jax.random.key(0), env, jnp.array([0, 1, 2, 3]), 2, 2, mutation_rate=1.5)
    with pytest.raises(ValueError, match="generations"):
        evolve_strategies(jax.random.key(0), env, jnp.array([0, 1, 2, 3]), 0, 2)
