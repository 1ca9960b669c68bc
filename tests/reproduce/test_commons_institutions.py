"""commons-institutions at small scale: GovSim's collapse rate against the group's
harvest fraction (scripted fishers) and the Ostrom CPR's rent with and without each
institution (independent learners): rates and shares within what the games allow, the
accounting between rent, fines and monitoring costs, the analytic benchmarks, the arms'
switches equal to the env without the option, and a verdict that follows."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from small_runs import check_model_runs, check_verdict, optimised, quoted, reproduction_fixture

import socialjax as sj
from socialjax.reproduce import reproduce
from socialjax.reproduce.commons_institutions import (
    ARMS,
    COMMONS_INSTITUTIONS,
    FRACTIONS,
    HETEROGENEITY,
    SWITCHES,
    arm_actions,
    arm_params,
    institutions_env,
    ostrom_benchmarks,
)

institutions = reproduction_fixture("commons-institutions")


def test_govsim_rates_are_bounded_and_a_full_lake_pays_the_asked_share(institutions):
    rep, out = institutions
    check_verdict(rep)
    f = rep.finals
    for frac in FRACTIONS:
        rate, months, catch = (f[(f"govsim f={frac:.2f}", m)] for m in ("collapse_rate", "survival_months", "catch"))
        assert ((rate >= 0) & (rate <= 1)).all() and ((months >= 0) & (months <= 12)).all()
        # a collapsed game has at most 11 months before its collapse: the mean months bound the rate
        assert (months <= 12 - rate + 1e-9).all()
        assert ((catch >= 0) & (catch <= 12 * 100)).all()
    # at f = 0.05 the lake refills to 100 every month (the remainder doubles), so the catch is 12 months of
    # f K times the mean of the fishers' factor exp(h u), u uniform with unit variance: sinh(c) / c
    c = HETEROGENEITY * np.sqrt(3.0)
    expected = 12 * FRACTIONS[0] * 100 * np.sinh(c) / c
    np.testing.assert_allclose(f[(f"govsim f={FRACTIONS[0]:.2f}", "catch")], expected, rtol=0.03)
    # asking for the whole stock (each fisher's factor at least exp(-h sqrt 3) = 0.65) leaves at most 35% to
    # double: the lake shrinks by 30% a month or more and is gone well within the year
    np.testing.assert_array_equal(f[("govsim f=1.00", "collapse_rate")], 1.0)
    np.testing.assert_array_equal(f[(f"govsim f={FRACTIONS[0]:.2f}", "survival_months")], 12.0)
    assert ((f[("govsim curve", "f_half")] > 0.5) & (f[("govsim curve", "f_half")] < 0.7)).all()
    for key in (("govsim below threshold", "max_collapse_rate"), ("govsim well above threshold", "collapse_rate"),
                ("govsim curve", "largest_drop")):
        assert quoted(rep, key) in rep.reason
    check_model_runs(rep, out)  # the IPPO arms are paper scale only
    assert (out / "figure.png").stat().st_size > 10_000


def test_institution_shares_balance_fines_and_monitoring_costs(institutions):
    rep, _ = institutions
    f = rep.finals
    env = institutions_env()
    params = env.default_params
    bench = ostrom_benchmarks(params, env.num_agents)
    for arm in ARMS:
        monitor, sanction, vote = SWITCHES[arm]
        v = {m: f[(f"ostrom/{arm}", m)] for m in ("tokens", "rent_share", "net_share", "fines", "monitoring", "quota")}
        assert ((v["tokens"] >= 0) & (v["tokens"] <= env.num_agents * params.endowment)).all()
        assert (v["rent_share"] <= 1 + 1e-6).all()
        assert ((v["monitoring"] >= 0) & (v["monitoring"] <= 1)).all()
        # the group's payoff above the all-market payoff is the rent less the fines (destroyed) and the
        # monitoring costs, all per round
        costs = v["fines"] + float(params.monitor_cost) * env.num_agents * v["monitoring"]
        np.testing.assert_allclose(v["net_share"], v["rent_share"] - costs / bench["peak_rent"], atol=1e-4)
        if not sanction:
            np.testing.assert_array_equal(v["fines"], 0.0)
        if not monitor:
            np.testing.assert_array_equal(v["monitoring"], 0.0)
        if not vote:
            np.testing.assert_allclose(v["quota"], float(params.quota))
    # the imposed quota (4.5) with fines of 10 per token over it: every learner puts in 5 tokens (with the
    # others at 5, the fifth token earns 7 and is fined 5; a sixth would earn 6.5 and be fined 10 more)
    np.testing.assert_allclose(f[("ostrom/sanctions", "tokens")], 40.0, atol=0.5)
    assert quoted(rep, ("ostrom/none", "tokens")) in rep.reason
    assert quoted(rep, ("ostrom/sanctions", "rent_share")) in rep.reason


def test_the_benchmarks_are_the_stage_game_s_nash_and_optimum():
    env = sj.make("commons_ostrom")
    params = env.default_params
    bench = ostrom_benchmarks(params, env.num_agents)
    assert (bench["nash_tokens"], bench["optimum_tokens"], bench["peak_rent"]) == (64.0, 36.0, 324.0)
    assert bench["nash_rent_share"] == pytest.approx(128 / 324)
    payoff = jax.jit(env.ostrom_payoff)
    # Nash: with the others at 8 tokens, 8 is a best reply (the env's own payoffs)
    others = jnp.full(env.num_agents, 8)
    gains = [float(payoff(others.at[0].set(x), params)[0]) for x in range(params.endowment + 1)]
    assert int(np.argmax(gains)) == 8
    # the optimum: the group's payoff over symmetric totals peaks at X = 36 (4.5 each: 4 and 5 tokens)
    group = [float(payoff(jnp.array([5] * k + [4] * (8 - k)), params).sum()) for k in range(9)]
    assert int(np.argmax(group)) == 4 and group[4] - env.num_agents * 5.0 * params.endowment == pytest.approx(324.0)


@pytest.mark.parametrize("arm", ARMS)
def test_an_arm_s_switches_are_the_env_without_those_options(arm):
    monitor, sanction, vote = SWITCHES[arm]
    full = institutions_env()
    plain = sj.make("commons_ostrom", monitoring=bool(monitor), sanctions="destroy" if sanction else None,
                    quota_vote=bool(vote))
    p_full, p_plain = arm_params(full, arm), plain.default_params
    on = jnp.array([True, bool(monitor), bool(vote)])
    key = jax.random.key(3)
    s_full, s_plain = full.initial_state(key, p_full), plain.initial_state(key, p_plain)
    rng = np.random.default_rng(0)
    for t in range(7):  # votes at rounds 0 and 5
        a = np.stack([rng.integers(0, 26, 8), rng.integers(0, 2, 8), rng.integers(0, 27, 8)], axis=1)
        heads = [0] + ([1] if monitor else []) + ([2] if vote else [])
        a_plain = a[:, 0] if len(heads) == 1 else a[:, heads]
        k = jax.random.fold_in(key, t)
        s_full, r_full, _, _ = full.transition(k, s_full, arm_actions(full, jnp.asarray(a, jnp.int32), on), p_full)
        s_plain, r_plain, _, _ = plain.transition(k, s_plain, jnp.asarray(a_plain, jnp.int32), p_plain)
        np.testing.assert_allclose(r_full, r_plain, rtol=1e-6)
        np.testing.assert_allclose(full.get_obs(s_full, p_full), plain.get_obs(s_plain, p_plain))


@pytest.mark.slow
def test_published_directions_hold_on_an_untuned_seed_set(tmp_path):
    """At cpu scale with 4 seeds from 2000 (not the default 0 nor the checked 1000): GovSim
    keeps the lake below half the stock and collapses it well above, the collapse rate never
    dropping; the Ostrom CPR without institutions over-appropriates (above the midpoint of
    optimum and Nash), and sanctions, and sanctions with a voted quota, raise the rent above
    none; each separated over seeds."""
    with optimised():
        rep = reproduce(COMMONS_INSTITUTIONS, "cpu", seeds=4, base_seed=2000, out=tmp_path / "ci", progress=False)
    check_verdict(rep)
    assert rep.verdict == "reproduced", rep.reason
    # voting its own quota, the group votes itself more tokens than the imposed quota (4.5 each) lets it put in
    f = rep.finals
    assert (f[("ostrom/sanctions+quota_vote", "tokens")] > f[("ostrom/sanctions", "tokens")]).all()
