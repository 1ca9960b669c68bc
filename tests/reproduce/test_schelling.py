"""schelling at small scale: diagrams from trained common- and individual-reward
populations, consistent with their own summary rows, and a verdict read from them."""

import numpy as np
import pytest
from small_runs import check_verdict, reproduction_fixture

schelling = reproduction_fixture("schelling", optimise=False)  # compilation dominates


@pytest.mark.slow
def test_the_diagrams_and_their_summary_agree_and_are_judged(schelling):
    rep, out = schelling
    check_verdict(rep)
    assert [c.name for c in rep.entry.conditions_at("small")] == ["cleanup/cooperators", "cleanup/defectors"]
    assert "harvest" not in rep.reason
    for game in ("cleanup",):
        C = np.stack([rep.finals[(f"{game}/cooperator", f"x={x}")] for x in range(5)], axis=1)
        D = np.stack([rep.finals[(f"{game}/defector", f"x={x}")] for x in range(5)], axis=1)
        assert np.isfinite(C).all() and np.isfinite(D).all()
        np.testing.assert_array_equal(rep.finals[(game, "all_cooperate")], C[:, 4])
        np.testing.assert_array_equal(rep.finals[(game, "all_defect")], D[:, 0])
        np.testing.assert_allclose(rep.finals[(game, "defect_gain")], (D[:, 1:] - C[:, 1:]).mean(axis=1))
        assert f"{np.mean(C[:, 4]):.3g} vs" in rep.reason and f"{np.mean((D - C)[:, 1:]):.3g}" in rep.reason
        # a player's return per 250-step episode: at most one apple per step, fines at most the beams it
        # fires plus the hits it takes; the SSD games pay no other reward
        assert (C <= 250).all() and (D <= 250).all()
    for cond in ("cleanup/cooperators", "cleanup/defectors"):
        assert (out / cond / "summary.txt").exists()
    assert (out / "figure.png").stat().st_size > 10_000
