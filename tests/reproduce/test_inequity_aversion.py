"""inequity-aversion at small scale (Cleanup): the three conditions are one run over the
(alpha, beta) grid, each saved as its own run, and the verdict follows from the numbers."""

import json

import numpy as np
import pytest
from small_runs import check_verdict, quoted, reproduction_fixture

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
