"""donor-evolution at small scale: cultural evolution of parametric donor strategies for
every multiplier, with and without costly punishment; resources and fractions within what
the game allows, the evolved population's resources balancing what it donated and what
punishment destroyed, and a verdict that follows from the runs."""

import numpy as np
import pytest
from small_runs import check_model_runs, check_verdict, optimised, quoted, reproduction_fixture

from socialjax.reproduce.core import interval
from socialjax.reproduce.donor_evolution import (
    DEFAULT_MULTIPLIER,
    EVOLVED,
    FLOOR,
    GENERATIONS,
    GIVEN,
    GIVEN_SERIES,
    GROWTH,
    LINEAR_STINGY,
    LOG_LAST,
    MULTIPLIERS,
    PUNISHMENT,
    RESOURCES,
    RESOURCES_SERIES,
    SCHEDULES,
    evolve_runs,
    row,
)
from socialjax.reproduce.donor_evolution import RECIPROCAL_STINGY as JUDGED

INITIAL = 10.0  # resources of every agent at the start of a game
ROUNDS = 12  # rounds per game (one per agent)

donor = reproduction_fixture("donor-evolution", optimise=False)  # compilation dominates


def test_resources_and_fractions_are_within_the_game_and_the_verdict_follows(donor):
    rep, out = donor
    check_verdict(rep)
    f = rep.finals
    for schedule in SCHEDULES["small"]:
        for punishment in PUNISHMENT:
            for g in MULTIPLIERS:
                name = row(schedule, g, punishment)
                resources, given = rep.curves[(name, RESOURCES_SERIES)], rep.curves[(name, GIVEN_SERIES)]
                assert resources.shape == given.shape == (rep.seeds, GENERATIONS)
                # the table shows the first and last generation of the sequences
                for k in (1, GENERATIONS):
                    np.testing.assert_array_equal(f[(name, RESOURCES.format(k))], resources[:, k - 1])
                    np.testing.assert_array_equal(f[(name, GIVEN.format(k))], given[:, k - 1])
                # a round's donors give at most all they hold, which the recipients get g times over: the
                # group's total can at most multiply by g per round; fines floor at 0
                assert ((resources >= 0) & (resources <= INITIAL * g**ROUNDS)).all()
                if not punishment:
                    # a gift turns x into g x >= x, so with no punishment no game ends below its start
                    assert (resources >= INITIAL - 1e-4).all()
                assert ((given >= (-1 if punishment else 0)) & (given <= 1)).all()
                # log growth: the last generation's log10 resources minus the first's
                log = np.log10(np.maximum(resources, FLOOR))
                np.testing.assert_allclose(f[(name, LOG_LAST)], log[:, -1], rtol=1e-6)
                np.testing.assert_allclose(f[(name, GROWTH)], log[:, -1] - log[:, 0], rtol=1e-6, atol=1e-9)
                # the evolved population's generation: every gift adds (g - 1) x to the group and punishing
                # destroys what the punisher pays plus the fine, so the average ends at
                # 10 + (g - 1) * donated - loss (per member and game)
                res, donated, loss = (f[(name, q)] for q in EVOLVED)
                assert (donated >= 0).all() and (loss >= 0).all()
                np.testing.assert_allclose(res, INITIAL + (g - 1) * donated - loss, rtol=1e-4, atol=1e-3)
                if not punishment:
                    assert (loss == 0).all()
        # the strategies read traces of fractions, never resources, and every condition plays the same
        # runs' keys: the first generation gives the same fractions whatever the multiplier
        for punishment in PUNISHMENT:
            first = [f[(row(schedule, g, punishment), GIVEN.format(1))] for g in MULTIPLIERS]
            for other in first[1:]:
                np.testing.assert_allclose(other, first[0], rtol=1e-5, atol=1e-6)
        base = row(schedule, DEFAULT_MULTIPLIER, False)
        assert quoted(rep, (base, GROWTH)) in rep.reason
        assert quoted(rep, (row(schedule, DEFAULT_MULTIPLIER, True), LOG_LAST)) in rep.reason
        assert quoted(rep, (base, LOG_LAST)) in rep.reason
    check_model_runs(rep, out)
    assert (out / "figure.png").stat().st_size > 0


@pytest.mark.slow
def test_generosity_spreads_in_the_reciprocal_space_and_not_in_the_linear_one():
    """The cpu scale's direction on a seed set nobody tuned to (base seed 2000, 48 runs,
    g = 2, the released schedule, no punishment): from the same stingy start (initial gifts
    of at most 10%), the reciprocal space's giving and resources rise over the 10
    generations and the linear space's fall (95% intervals of the per-run change exclude
    0)."""
    with optimised():
        runs = {pop: evolve_runs("released", False, 48, multipliers=(DEFAULT_MULTIPLIER,), base_seed=2000,
                                 population=pop) for pop in (JUDGED, LINEAR_STINGY)}
    growth, gain = {}, {}
    for pop, r in runs.items():
        log = np.log10(np.maximum(r["mean_final_resources"][0], FLOOR))  # (S, G)
        growth[pop] = interval(log[:, -1] - log[:, 0])
        gain[pop] = interval(r["mean_fraction_given"][0, :, -1] - r["mean_fraction_given"][0, :, 0])
    assert growth[JUDGED][1] > 0 and gain[JUDGED][1] > 0, (growth, gain)
    assert growth[LINEAR_STINGY][2] < 0 and gain[LINEAR_STINGY][2] < 0, (growth, gain)
