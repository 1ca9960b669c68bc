"""punishment at small scale: scripted conditional cooperators and free riders in the
public goods game with and without peer punishment, the payoffs balancing against the
contributions and points, and a verdict that follows from them; the scripted rules
checked by hand."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from small_runs import check_model_runs, check_verdict, quoted, reproduction_fixture

from socialjax import make
from socialjax.envs.institutions.public_goods import (
    ENDOWMENT,
    GROUP_SIZE,
    MPCR,
    OBS_PUNISH_STAGE,
    design_params,
)
from socialjax.reproduce.punishment import (
    ARMS,
    PERIODS,
    PUNISHMENT,
    SESSIONS,
    matching_values,
    period_key,
    row_name,
)
from socialjax.reproduce.punishment_rules import (
    CONDITIONAL,
    FREE_RIDER,
    learnt_standard,
    scripted_contribution,
    scripted_points,
)

punishment = reproduction_fixture("punishment")
# a member's payoff per period without punishment: e - g + mpcr * (group total); averaged over
# the members, the group total is n times the mean contribution
NET = (MPCR * GROUP_SIZE - 1) * ENDOWMENT  # payoff per unit of mean contribution (as a fraction of e)


def test_contributions_and_payoffs_balance_and_the_verdict_follows(punishment):
    rep, out = punishment
    check_verdict(rep)
    f = rep.finals
    for design, matching in ARMS:
        P = PERIODS[design]
        for punish in (False, True):
            row = row_name(design, matching, punish)
            c = np.stack([f[(row, period_key(t))] for t in range(P)], axis=1)  # (S, P)
            assert ((c >= 0) & (c <= 1)).all()
            assert ((c[:, 0] > 0.4) & (c[:, 0] < 0.6)).all()  # first contributions uniform in 0..20
            np.testing.assert_allclose(f[(row, "last third")], c[:, -math.ceil(P / 3):].mean(axis=1))
            np.testing.assert_allclose(f[(row, "change")], c[:, -1] - c[:, 0])
            points, payoff, mean_c = f[(row, "points")], f[(row, "payoff")], c.mean(axis=1)
            if not punish:
                np.testing.assert_array_equal(points, 0.0)
                np.testing.assert_allclose(payoff, ENDOWMENT + NET * mean_c, rtol=1e-5)
            elif design == "2002":  # every point costs its giver 1 and its target 3
                assert (points > 0).all()
                np.testing.assert_allclose(payoff, ENDOWMENT + NET * mean_c - 4 * points, rtol=1e-5)
            else:  # 2000: a point costs at least 1, and the cut takes a share of a non-negative payoff
                assert (points > 0).all()
                assert (payoff <= ENDOWMENT + NET * mean_c - points + 1e-4).all()
        assert quoted(rep, (row_name(design, matching, True), "last third")) in rep.reason
    check_model_runs(rep, out)


def test_scripted_rules_by_hand():
    env = make("public_goods", num_agents=8, punishment=True)
    obs = np.zeros((4, env.obs_size), np.int32)
    obs[:, 0] = 1  # period 1
    # last period: own 10, others 20, 20, 8; member 2 was given 2 points
    obs[:, 4:8] = [10, 20, 20, 8]
    obs[2, 8:11] = [1, 1, 0]
    types = jnp.asarray([CONDITIONAL, FREE_RIDER, CONDITIONAL, FREE_RIDER])
    params = design_params("2002")
    contribution = jax.jit(lambda obs, first, standard: scripted_contribution(env, obs, types, first, params,
                                                                             standard))
    g = np.asarray(contribution(jnp.asarray(obs), jnp.zeros(4), jnp.zeros(4)))
    # aim 0.9 * 16 = 14.4 (cooperator) or 0; halfway from 10; member 2 lost 3 * 2 = 6, adds 3
    assert g.tolist() == [12, 5, 15, 5]
    # a learnt standard is a floor: 13.6 lifts the free rider's 5 and the cooperator's 12 to 14
    g = np.asarray(contribution(jnp.asarray(obs), jnp.zeros(4), jnp.asarray([13.6, 13.6, 0.0, 0.0])))
    assert g.tolist() == [14, 14, 15, 5]
    # what is learnt: under partner matching member 2 (punished last period) keeps to its
    # group's mean of that period, (10 + 20 + 20 + 8) / 4 = 14.5; the others keep theirs
    learnt = np.asarray(learnt_standard(env, jnp.asarray(obs), jnp.asarray([0.0, 3.0, 7.0, 0.0])))
    np.testing.assert_allclose(learnt, [0.0, 3.0, 14.5, 0.0])
    at_punishment_step = obs.copy()
    at_punishment_step[:, OBS_PUNISH_STAGE] = 1  # learnt once per period, at the contribution step
    np.testing.assert_allclose(learnt_standard(env, jnp.asarray(at_punishment_step), jnp.ones(4)), 1.0)
    stranger = make("public_goods", num_agents=8, punishment=True, matching="stranger")
    np.testing.assert_array_equal(learnt_standard(stranger, jnp.asarray(obs), jnp.ones(4)), 0.0)  # a new group
    obs[:, 0] = 0
    first = jnp.asarray([3.0, 7.0, 20.0, 0.0])
    assert np.asarray(contribution(jnp.asarray(obs), first, jnp.full(4, 20.0))).tolist() == [3, 7, 20, 0]
    # punishment stage: this period 20 (own), 2, 14, 12 -> mean 12; one point per 3 tokens below it
    current = np.zeros_like(obs)
    current[:, 4 + 2 * GROUP_SIZE - 1:] = [20, 2, 14, 12]
    points = np.asarray(jax.jit(lambda obs: scripted_points(env, obs, types))(jnp.asarray(current)))
    assert points[0].tolist() == [3, 0, 0] and points[1].tolist() == [0, 0, 0]  # free riders never punish


# ---------------------------------------------------------------------- slow: the science
@pytest.mark.slow
def test_scripted_directions_on_untuned_seeds():
    """The scripted rows at small scale on base seed 2000: without punishment contributions
    fall; with punishment they are higher (each arm); with punishment partner is above
    stranger (2000 design); all separated over seeds."""
    finals = {**matching_values("partner", SESSIONS["small"], 4, base_seed=2000),
              **matching_values("stranger", SESSIONS["small"], 4, base_seed=2000)}
    verdict, reason = PUNISHMENT.criterion(finals)
    assert verdict == "reproduced", reason
