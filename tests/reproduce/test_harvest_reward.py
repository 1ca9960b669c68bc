"""harvest-reward at small scale: the open map's two populations, numbers that hold for
Commons Harvest, and a verdict that follows from them."""

import numpy as np
import pytest
from small_runs import check_verdict, optimised, quoted, reproduction_fixture, shortened

from socialjax.reproduce import get_entry, reproduce

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


@pytest.mark.slow
def test_individual_reward_strips_the_patches_on_untuned_seeds():
    """The cpu scale cut to 160 updates (80,000 env steps per seed), 2 seeds from 2000,
    which nobody sized it on: the individual-reward population collects its apples ever
    earlier in the episode, stripping the patches (its sustainability over the last fifth
    below the common-reward one's in every seed), and its collective return falls from its
    best tenth of training. (Common above individual in collective return, the entry's
    criterion, needs the full 300 updates: at 180 the seeds from 1000 gave 43.4 vs 38.7,
    overlapping; seeds 0 and 1000 at 300 are in REPRODUCTIONS.md.)"""
    entry = shortened(get_entry("harvest-reward"), "cpu", 160)
    with optimised():
        rep = reproduce(entry, "cpu", 2, base_seed=2000, progress=False)
    common, individual = (rep.finals[(f"open/{form}", "sustainability")] for form in ("common", "individual"))
    assert (individual < common - 20).all(), (individual, common)
    curve = rep.curves[("open/individual", "collective_return")]
    tenths = np.stack([np.nanmean(part, axis=1) for part in np.array_split(curve, 10, axis=1)], axis=1)
    best, last = tenths.max(axis=1), rep.finals[("open/individual", "collective_return")]
    assert (last < best - 2).all(), (best, last)
