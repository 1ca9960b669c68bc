"""harvest-reward at small scale: the open map's two populations, numbers that hold for
Commons Harvest, and a verdict that follows from them. Its cpu scale's direction on
untuned seeds is asserted in test_schelling.py, whose cpu scale trains the same two
populations and seats them in a Schelling diagram."""

import numpy as np
import pytest
from small_runs import check_verdict, quoted, reproduction_fixture

harvest = reproduction_fixture("harvest-reward", optimise=False)  # compilation dominates


@pytest.mark.slow
def test_small_scale_runs_the_open_map_and_judges_it(harvest):
    rep, out = harvest
    check_verdict(rep)
    assert [c.name for c in rep.entry.conditions_at("small")] == ["open/common", "open/individual"]
    assert "(open)" in rep.reason and "closed" not in rep.reason
    for cond in ("open/common", "open/individual"):
        assert quoted(rep, (cond, "collective_return")) in rep.reason
        # Melting Pot's Commons Harvest pays 1 per apple and fines nothing: a return is a count of apples,
        # at most one per player per step (3 players, 250-step episodes)
        values = rep.finals[(cond, "collective_return")]
        assert np.isfinite(values).all() and (values >= 0).all() and (values <= 3 * 250).all()
        assert (out / cond / "summary.txt").exists()
    assert not (out / "closed").exists()
