"""commons-metrics at small scale: the four metrics at the start and end of training,
within their ranges, and a verdict read from each run's change."""

import numpy as np
import pytest
from small_runs import check_verdict, optimised, reproduction_fixture

from socialjax.reproduce import get_entry, reproduce

commons = reproduction_fixture("commons-metrics")


@pytest.mark.slow
def test_the_metrics_are_in_range_and_the_verdict_reads_their_change(commons):
    rep, out = commons
    check_verdict(rep)
    f = {m: rep.finals[("selfish", m)] for _, m in rep.entry.keys("small")}
    change = f["efficiency_end"] - f["efficiency_start"]
    assert f"{np.mean(change):.3g}" in rep.reason
    change = f["sustainability_end"] - f["sustainability_start"]
    assert f"{np.mean(change):.3g}" in rep.reason
    for w in ("start", "end"):
        # sustainability is a mean time step of a 250-step episode; peace counts the 5 players not removed
        # (the beam removes a player it hits for a few steps: random play's beam removes some, not all);
        # with apples as the only reward, efficiency is apples per step, equality defined
        assert ((f[f"sustainability_{w}"] >= 0) & (f[f"sustainability_{w}"] <= 250)).all()
        assert ((f[f"peace_{w}"] > 3.0) & (f[f"peace_{w}"] < 5.0)).all()
        assert ((f[f"efficiency_{w}"] > 0) & (f[f"efficiency_{w}"] < 5.0)).all()
        assert ((f[f"equality_{w}"] > 0) & (f[f"equality_{w}"] <= 1)).all()
    # the start and end windows read one curve: its first and last fifths
    curve = rep.curves[("selfish", "efficiency_end")]
    k = round(curve.shape[1] * 0.2)
    np.testing.assert_allclose(f["efficiency_start"], np.nanmean(curve[:, :k], axis=1))
    np.testing.assert_allclose(f["efficiency_end"], np.nanmean(curve[:, -k:], axis=1))
    assert (out / "figure.png").stat().st_size > 10_000


@pytest.mark.slow
def test_the_tragedys_onset_appears_on_untuned_seeds():
    """The cpu scale (20,000 env steps per seed on the three-patch map) on 4 seeds from
    2000, which nobody sized it on: efficiency rises and sustainability falls, each
    run's change on the expected side of 0 (seeds 0-3 and 1000-1003 gave efficiency
    +0.06 and sustainability -16 and -20 when it was sized)."""
    with optimised():
        rep = reproduce(get_entry("commons-metrics"), "cpu", base_seed=2000, progress=False)
    assert rep.verdict == "reproduced", rep.reason
