"""inequity-aversion at small scale (Cleanup): the three conditions are one run over the
(alpha, beta) grid, each saved as its own run, and the verdict follows from the numbers."""

import json

import numpy as np
import pytest
from small_runs import check_verdict, optimised, quoted, reproduction_fixture, shortened

from socialjax.reproduce import get_entry, reproduce

inequity = reproduction_fixture("inequity-aversion")


@pytest.mark.slow
def test_each_condition_is_its_grid_point_and_the_verdict_follows(inequity):
    rep, out = inequity
    check_verdict(rep)
    assert [c.name for c in rep.entry.conditions_at("small")] == [
        "cleanup/selfish", "cleanup/advantageous", "cleanup/disadvantageous"]
    assert quoted(rep, ("cleanup/advantageous", "collective_return")) in rep.reason
    assert quoted(rep, ("cleanup/selfish", "collective_return")) in rep.reason
    assert "Harvest" not in rep.reason
    expected = {"selfish": (0.0, 0.0), "advantageous": (0.0, 0.05), "disadvantageous": (5.0, 0.0)}
    for game in ("cleanup",):
        runs = {}
        for form, (alpha, beta) in expected.items():
            saved = json.loads((out / game / form / "config.json").read_text())
            assert (saved["config"]["ia_alpha"], saved["config"]["ia_beta"]) == (alpha, beta)
            assert saved["sweep"] == []  # saved as a run of its own, not as the grid it was trained in
            runs[form] = rep.finals[(f"{game}/{form}", "collective_return")]
        # the shaping changes what is learned: the three conditions are not one run reported three times
        assert not np.array_equal(runs["selfish"], runs["advantageous"])
        assert not np.array_equal(runs["selfish"], runs["disadvantageous"])
        # the SSD games fine beam use without removing anyone: peace is every player, always
        np.testing.assert_array_equal(rep.finals[(f"{game}/selfish", "peace")], 5.0)


@pytest.mark.slow
def test_advantageous_aversion_raises_cleanups_collective_return_on_untuned_seeds():
    """The cpu setting cut to 12 updates, 2 seeds numbered from 2000. On seeds 0-2 at 20
    updates: advantageous -362, -407, -329 vs selfish -754, -866, -1008 (mostly fewer
    fines: being ahead of a player one has fined is penalised, so the averse fire less);
    at updates 11-12 the means were -540 vs -1001."""
    entry = shortened(get_entry("inequity-aversion"), "cpu", 12)
    with optimised():  # mostly execution
        rep = reproduce(entry, "cpu", seeds=2, base_seed=2000, progress=False)
    averse = rep.finals[("cleanup/advantageous", "collective_return")]
    selfish = rep.finals[("cleanup/selfish", "collective_return")]
    assert averse.min() > selfish.max(), (averse, selfish)
    assert rep.verdict == "reproduced", rep.reason
