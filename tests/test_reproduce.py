"""socialjax reproduce: the verdict follows from the numbers, the table and figure are
written, and an entry runs end to end at small scale from the command line."""

import json

import numpy as np
import pytest

from socialjax import cli
from socialjax.reproduce import ENTRIES, VERDICTS, get_entry
from socialjax.reproduce.core import final_values, interval, ordered_verdict, separated
from socialjax.train import TrainConfig, store


def test_final_values_average_the_last_fifth_and_skip_updates_without_an_episode():
    curve = np.array([[0, 0, 0, 0, 0, 0, 0, 0, 4.0, 6.0],
                      [0, 0, 0, 0, 0, 0, 0, 0, np.nan, 2.0],
                      [np.nan] * 10])
    np.testing.assert_array_equal(final_values(curve), [5.0, 2.0, np.nan])


def test_interval_is_the_mean_inside_a_bootstrap_band():
    mean, low, high = interval(np.array([1.0, 2.0, 3.0, np.nan]))
    assert mean == 2.0 and 1.0 <= low < 2.0 < high <= 3.0
    assert np.isnan(interval(np.array([np.nan]))[0])


@pytest.mark.parametrize("higher, lower, expected", [
    ([10.0, 11.0, 12.0], [1.0, 2.0, 3.0], "reproduced"),
    ([3.0, 9.0, 6.0], [1.0, 7.0, 4.0], "partly"),
    ([1.0, 2.0, 3.0], [10.0, 11.0, 12.0], "not reproduced"),
])
def test_the_verdict_follows_from_the_intervals(higher, lower, expected):
    finals = {("a", "x"): np.array(higher), ("b", "x"): np.array(lower)}
    verdict, reason = ordered_verdict(finals, ("a", "x"), ("b", "x"), "x")
    assert verdict == expected and "a " in reason
    assert separated(np.array(higher), np.array([np.nan])) == "no"


@pytest.mark.parametrize("cleanup_gap, harvest_gap, expected", [
    (10.0, 10.0, "reproduced"), (10.0, -10.0, "partly"), (0.5, 0.5, "partly"), (-10.0, -10.0, "not reproduced"),
])
def test_inequity_aversion_needs_both_games_for_reproduced(cleanup_gap, harvest_gap, expected):
    base = np.array([0.0, 1.0, 2.0])
    finals = {(f"{game}/{form}", "collective_return"): base for game in ("cleanup", "harvest")
              for form in ("selfish", "advantageous", "disadvantageous")}
    finals[("cleanup/advantageous", "collective_return")] = base + cleanup_gap
    finals[("harvest/disadvantageous", "collective_return")] = base + harvest_gap
    verdict, reason = get_entry("inequity-aversion").criterion(finals)
    assert verdict == expected and "Cleanup" in reason and "Harvest" in reason


def test_every_entry_is_complete_and_its_configs_are_valid():
    assert {"cleanup-reward", "harvest-reward", "inequity-aversion", "gathering-scarcity"} <= set(ENTRIES)
    for entry in ENTRIES.values():
        names = {c.name for c in entry.conditions}
        measures = {m.name for m in entry.measures}
        for ref in entry.references:
            assert ref.condition in names and ref.measure in measures, (entry.name, ref)
            assert ref.source and ref.how, (entry.name, ref)
        for cond in entry.conditions:
            for scale in ("small", "paper"):
                TrainConfig().replace(**dict(cond.config[scale])).validate()
                assert cond.env[scale] and isinstance(dict(cond.env_options[scale]), dict)
    with pytest.raises(ValueError, match="Did you mean 'cleanup-reward'"):
        get_entry("cleanup-rewards")


def test_list_shows_the_entries(capsys):
    assert cli.main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in ENTRIES)


def test_bad_requests_fail_before_training(capsys, tmp_path):
    for argv, message in ((["reproduce"], "give an experiment"), (["reproduce", "nope"], "unknown experiment"),
                          (["reproduce", "cleanup-reward", "--seeds", "1"], "at least 2")):
        with pytest.raises(SystemExit):
            cli.main(argv)
        assert message in capsys.readouterr().err


@pytest.fixture(scope="module")
def cleanup_small(tmp_path_factory):
    out = tmp_path_factory.mktemp("rep") / "cleanup"
    assert cli.main(["reproduce", "cleanup-reward", "--out", str(out), "--quiet"]) == 0
    return out


def test_a_small_run_writes_the_figure_table_and_verdict(cleanup_small):
    store.verify(cleanup_small, "reproduction")
    result = json.loads((cleanup_small / "reproduction.json").read_text())
    assert result["verdict"] in VERDICTS
    rows = {(r["condition"], r["measure"]): r for r in result["rows"]}
    finals = {k: np.array(v, float) for k, v in result["finals"].items()}
    # the table's numbers are the seeds' finals, and the verdict is the criterion on them
    for (cond, measure), row in rows.items():
        vals = finals[f"{cond}/{measure}"]
        if np.isfinite(vals).any():
            assert row["ours"] == pytest.approx(np.nanmean(vals))
    entry = get_entry("cleanup-reward")
    verdict, _ = entry.criterion({tuple(k.split("/")): v for k, v in finals.items()})
    assert verdict == result["verdict"]
    # a Cleanup with fines: collective returns are finite and each condition's run was saved
    assert np.isfinite(finals["common/collective_return"]).all()
    for cond in ("common", "individual"):
        store.verify(cleanup_small / cond, "population")
        config = json.loads((cleanup_small / cond / "config.json").read_text())["config"]
        assert config["reward"] == cond
    assert (cleanup_small / "figure.png").stat().st_size > 10_000
    assert "verdict:" in (cleanup_small / "summary.txt").read_text()


def test_a_second_run_into_the_folder_is_refused(cleanup_small, capsys):
    with pytest.raises(SystemExit):
        cli.main(["reproduce", "cleanup-reward", "--out", str(cleanup_small)])
    assert "--overwrite" in capsys.readouterr().err
