"""commons-metrics at small scale: the four metrics at the start and end of training,
within their ranges, and a verdict read from each run's change."""

import numpy as np
import pytest
from small_runs import check_verdict, reproduction_fixture

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
        # sustainability is a mean time step of a 250-step episode; peace counts the 5 players (the SSD
        # Harvest fines beam use and removes nobody)
        assert ((f[f"sustainability_{w}"] >= 0) & (f[f"sustainability_{w}"] <= 250)).all()
        np.testing.assert_array_equal(f[f"peace_{w}"], 5.0)
    # the start and end windows read one curve: its first and last fifths
    curve = rep.curves[("selfish", "efficiency_end")]
    k = round(curve.shape[1] * 0.2)
    np.testing.assert_allclose(f["efficiency_start"], np.nanmean(curve[:, :k], axis=1))
    np.testing.assert_allclose(f["efficiency_end"], np.nanmean(curve[:, -k:], axis=1))
    assert (out / "figure.png").stat().st_size > 10_000
