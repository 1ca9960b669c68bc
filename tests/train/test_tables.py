"""Results folders as long tables (socialjax.train.tables) and ``socialjax results DIR``.

One tiny population run (2 learners and TFT seated at random, an ALLD background bot,
a two-point learning-rate sweep x seeds 3 and 5 x 2 updates, with evaluation, so that
every kind of array is saved) and one tiny donor-evolution run (1 multiplier x 2 seeds x
2 generations) are written once and read by every test. The pandas parts skip where
pandas is not installed."""

from __future__ import annotations

import csv
import json
import math
import shutil
import sys

import numpy as np
import pytest
from support import reseal

import socialjax as sj
from socialjax import cli
from socialjax.train import TrainConfig, results, store, tables
from socialjax.train.cultural_evolution import run_experiment

CONFIG = TrainConfig(seating="random", num_learners=2, scripted=("tft",), learner_fraction=0.5, num_envs=4,
                     rollout_len=8, num_updates=2, hidden=8, update_epochs=1, num_minibatches=1, lr=[1e-3, 3e-3],
                     background=("alld",))
SEEDS = [3, 5]
KEY = ("grid_point", "seed", "update", "member", "metric")


@pytest.fixture(scope="module")
def pop(tmp_path_factory):
    out = tmp_path_factory.mktemp("tables") / "pop"
    result = sj.train.run(sj.make("ipd", num_rounds=8), CONFIG, seeds=SEEDS, progress=False)
    results.save_run(result, out, env_name="ipd", env_options={"num_rounds": 8}, plot=False)
    return out


@pytest.fixture(scope="module")
def donor(tmp_path_factory):
    out = tmp_path_factory.mktemp("tables") / "donor"
    run_experiment(num_seeds=2, num_generations=2, multipliers=(1.1,), out_dir=str(out), verbose=False)
    return out


def metric_arrays(folder) -> dict[str, np.ndarray]:
    with np.load(folder / "metrics.npz") as data:
        return {k: data[k] for k in data.files if k not in ("seeds", "multipliers") and not k.startswith("grid/")}


def read_csv(path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        return list(reader.fieldnames), list(reader)


@pytest.fixture(scope="module")
def pop_csv(pop, tmp_path_factory):
    path = tmp_path_factory.mktemp("tables") / "pop.csv"
    rows = tables.write_csv(pop, path)
    header, records = read_csv(path)
    assert rows == len(records)
    return header, records


def by_key(records) -> dict[tuple, str]:
    out = {tuple(r[c] for c in KEY): r["value"] for r in records}
    assert len(out) == len(records), "two rows share grid point, seed, update, member and metric"
    return out


# ----------------------------------------------------------------------------- population
def test_one_row_per_saved_value(pop, pop_csv):
    header, records = pop_csv
    assert header == ["grid_point", "lr", "seed", "update", "member", "metric", "value"]
    arrays = metric_arrays(pop)
    assert {"reward_rate", "loss", "nan_update", "eval/crossplay", "eval/reward_rate",
            "eval/focal_reward_rate"} <= set(arrays)
    assert len(records) == sum(a.size for a in arrays.values())
    counts = {}
    for r in records:
        name = r["metric"].split("[")[0]
        counts[name] = counts.get(name, 0) + 1
    assert counts == {k: a.size for k, a in arrays.items()}


def test_values_sit_in_their_rows(pop, pop_csv):
    """Axes (grid, seed, update, member): seed numbers, 1-based updates, members; empty
    fields where an array has no such axis; crossplay's co-player in the metric name."""
    rows = by_key(pop_csv[1])
    a = metric_arrays(pop)
    assert a["reward_rate"].shape == (2, 2, 2, 3) and a["loss"].shape == (2, 2, 2, 2)
    picks = [
        (("1", "5", "2", "2", "reward_rate"), a["reward_rate"][1, 1, 1, 2]),
        (("0", "3", "1", "1", "reward_rate"), a["reward_rate"][0, 0, 0, 1]),
        (("1", "3", "2", "1", "loss"), a["loss"][1, 0, 1, 1]),
        (("0", "5", "2", "", "efficiency"), a["efficiency"][0, 1, 1]),
        (("1", "5", "1", "", "halted"), a["halted"][1, 1, 0]),
        (("1", "3", "", "", "nan_update"), a["nan_update"][1, 0]),
        (("0", "5", "", "2", "eval/reward_rate"), a["eval/reward_rate"][0, 1, 2]),
        (("1", "5", "", "1", "eval/focal_reward_rate"), a["eval/focal_reward_rate"][1, 1, 1]),
        (("1", "3", "", "", "eval/efficiency"), a["eval/efficiency"][1, 0]),
        (("0", "5", "", "1", "eval/crossplay[0]"), a["eval/crossplay"][0, 1, 1, 0]),
        (("1", "3", "", "0", "eval/crossplay[1]"), a["eval/crossplay"][1, 0, 0, 1]),
    ]
    for key, want in picks:
        got = float(rows[key])
        assert got == float(want) or (math.isnan(got) and math.isnan(float(want))), key
    assert float(rows[("0", "3", "", "", "nan_update")]) == -1.0


def test_swept_hyperparameters_are_columns(pop_csv):
    """``lr`` carries each grid point's value at its shortest decimal (saved as float32)."""
    lr = {(r["grid_point"], r["lr"]) for r in pop_csv[1]}
    assert lr == {("0", "0.001"), ("1", "0.003")}
    assert {r["seed"] for r in pop_csv[1]} == {"3", "5"}


def test_no_sweep_no_hyperparameter_column(pop, tmp_path):
    folder = tmp_path / "plain"
    shutil.copytree(pop, folder)
    meta = json.loads((folder / "config.json").read_text())
    meta["sweep"] = []
    (folder / "config.json").write_text(json.dumps(meta))
    reseal(folder)
    columns, _ = tables.blocks(folder)
    assert columns == ["grid_point", "seed", "update", "member", "metric", "value"]


def test_frame_matches_the_csv(pop, pop_csv):
    pd = pytest.importorskip("pandas")
    df = results.to_frame(pop)
    header, records = pop_csv
    assert list(df.columns) == header and len(df) == len(records)
    assert str(df["update"].dtype) == "Int64" and str(df["member"].dtype) == "Int64"
    for row, rec in zip(df.itertuples(index=False), records):
        for column, value in zip(header, row):
            text = rec[column]
            if value is pd.NA:
                assert text == "", (column, rec)
            elif isinstance(value, str):
                assert text == value
            else:
                assert float(text) == float(value) or (math.isnan(float(text)) and math.isnan(float(value))), \
                    (column, rec)


def test_frame_answers_the_documented_question(pop):
    """docs/training.md: mean reward per step over the last 10% of updates, per grid point."""
    pytest.importorskip("pandas")
    df = results.to_frame(pop)
    U = CONFIG.num_updates
    last = df[(df.metric == "reward_rate") & (df["update"] > U - max(1, round(0.1 * U)))]  # df.update: a method
    means = last.groupby("lr")["value"].mean()
    rr = metric_arrays(pop)["reward_rate"]
    np.testing.assert_allclose(means.to_numpy(), rr[:, :, -1:].astype(np.float64).mean(axis=(1, 2, 3)))


def test_to_frame_without_pandas_names_the_extra(pop, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=r'pip install "socialjax\[tables\]"'):
        results.to_frame(pop)


def test_arrays_that_do_not_fit_the_config_are_refused(pop, tmp_path):
    folder = tmp_path / "odd"
    shutil.copytree(pop, folder)
    arrays = dict(np.load(folder / "metrics.npz"))
    arrays["loss"] = arrays["loss"][:, :, :1]  # 1 update, config.json says 2
    np.savez(folder / "metrics.npz", **arrays)
    reseal(folder)  # as if written so: the manifest holds, the arrays do not fit
    with pytest.raises(ValueError, match=r"'loss' has shape \(2, 2, 1, 2\); expected \(2, 2, 2, 3 or 2"):
        tables.write_csv(folder, tmp_path / "odd.csv")
    assert not (tmp_path / "odd.csv").exists()


# ----------------------------------------------------------------------------- donor-evolution
def test_donor_evolution_folder(donor, tmp_path):
    path = tmp_path / "donor.csv"
    rows = tables.write_csv(donor, path)
    header, records = read_csv(path)
    arrays = metric_arrays(donor)
    assert header == ["multiplier", "seed", "generation", "metric", "value"]
    assert rows == len(records) == sum(a.size for a in arrays.values()) == 4 * 2 * 2
    assert {r["multiplier"] for r in records} == {"1.1"}
    got = {(r["seed"], r["generation"], r["metric"]): float(r["value"]) for r in records}
    assert got[("1", "2", "mean_final_resources")] == float(arrays["mean_final_resources"][0, 1, 1])
    assert got[("0", "1", "mean_fraction_given")] == float(arrays["mean_fraction_given"][0, 0, 0])


def test_donor_evolution_frame(donor, tmp_path):
    pytest.importorskip("pandas")
    tables.write_csv(donor, tmp_path / "donor.csv")
    header, records = read_csv(tmp_path / "donor.csv")
    df = results.to_frame(donor)
    assert list(df.columns) == header and len(df) == len(records)
    assert df.multiplier.tolist() == [1.1] * len(records)
    assert df.seed.tolist() == [int(r["seed"]) for r in records]
    assert df.generation.tolist() == [int(r["generation"]) for r in records]
    assert df.metric.tolist() == [r["metric"] for r in records]
    assert df.value.tolist() == [float(r["value"]) for r in records]


# ----------------------------------------------------------------------------- the CLI
def test_cli_prints_the_summary(pop, donor, capsys):
    assert cli.main(["results", str(pop)]) == 0
    assert capsys.readouterr().out == (pop / "summary.txt").read_text()
    assert cli.main(["results", str(donor)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"donor-evolution: 1 multiplier(s) x 2 seeds x 2 generations, from {donor}\n")
    assert "Average final resources per generation" in out and "g = 1.1" in out


def test_cli_rebuilds_a_missing_summary(pop, tmp_path, capsys):
    folder = tmp_path / "nosummary"
    shutil.copytree(pop, folder)
    (folder / "summary.txt").unlink()
    reseal(folder)
    assert cli.main(["results", str(folder)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == f"(rebuilt from {folder}/{{metrics.npz, config.json}}: no summary.txt)"
    saved = (pop / "summary.txt").read_text().splitlines()
    assert len(out) == len(saved) and out[:2] == saved[:2] and out[3:-1] == saved[3:-1]
    assert saved[2].startswith(out[2])  # the program's memory is not in config.json


def test_cli_writes_the_csv(pop, pop_csv, tmp_path, capsys):
    path = tmp_path / "out.csv"
    assert cli.main(["results", str(pop), "--csv", str(path)]) == 0
    assert capsys.readouterr().out == f"wrote {path}: {len(pop_csv[1]):,} rows, one per value saved in {pop}\n"
    assert read_csv(path) == pop_csv
    with pytest.raises(SystemExit) as exc:
        cli.main(["results", str(pop), "--csv", str(path)])
    assert exc.value.code == 2 and "exists; pass --overwrite to replace it" in capsys.readouterr().err
    path.write_text("old\n")
    assert cli.main(["results", str(pop), "--csv", str(path), "--overwrite"]) == 0
    assert read_csv(path) == pop_csv


@pytest.mark.parametrize("inside", ["summary.csv", "metrics.npz", "sub/x.csv"])
def test_cli_never_writes_into_a_result(pop, inside, tmp_path, capsys):
    """``--csv`` inside the folder it reads (or any socialjax result) is refused, even
    with ``--overwrite``: the result stays whole. Another tool's ``manifest.json`` does not
    make a folder a result."""
    with pytest.raises(SystemExit) as exc:
        cli.main(["results", str(pop), "--csv", str(pop / inside), "--overwrite"])
    assert exc.value.code == 2 and f"is inside the socialjax result {pop}" in capsys.readouterr().err
    store.verify(pop, kind="population")
    assert not (pop / "sub").exists()
    other = tmp_path / "webapp"
    other.mkdir()
    (other / "manifest.json").write_text('{"name": "app", "icons": []}')
    assert cli.main(["results", str(pop), "--csv", str(other / "x.csv")]) == 0


def _not_a_zip(folder, seal=False):
    (folder / "metrics.npz").write_text("not a zip")
    if seal:
        reseal(folder, "population")


def _no_config(folder):
    np.savez(folder / "metrics.npz", reward_rate=np.zeros((1, 1, 1, 1)))
    reseal(folder, "population")


@pytest.mark.parametrize("make, message", [
    (lambda d: None, " is empty: not a results folder"),
    (_not_a_zip, " is not a results folder: it has no manifest.json"),
    (lambda d: _not_a_zip(d, seal=True), "/metrics.npz is not a readable .npz file"),
    (_no_config, "/config.json is not readable JSON"),
    (lambda d: reseal(d, "checkpoint"), " holds a checkpoint folder, not the results of a run"),
])
def test_cli_refuses_what_is_not_a_results_folder(make, message, tmp_path, capsys):
    folder = tmp_path / "folder"
    folder.mkdir()
    make(folder)
    for extra in ([], ["--csv", str(tmp_path / "x.csv")]):
        with pytest.raises(SystemExit) as exc:
            cli.main(["results", str(folder), *extra])
        err = capsys.readouterr().err.strip().splitlines()
        assert exc.value.code == 2 and err[-1].startswith(f"socialjax results: error: {folder}{message}")
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize("argv, message", [
    (["--csv", "{tmp}/file/x.csv"], "{tmp}/file is a file, not a folder"),
    (["--csv", "{tmp}"], "is a folder; give a file path"),
    (["--overwrite"], "--overwrite applies to --csv OUT"),
])
def test_cli_checks_csv_before_reading(argv, message, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(tables, "_read", lambda *a: pytest.fail("read the folder before checking --csv"))
    (tmp_path / "file").write_text("")
    argv = [a.format(tmp=tmp_path) for a in argv]
    with pytest.raises(SystemExit) as exc:
        cli.main(["results", str(tmp_path), *argv])
    assert exc.value.code == 2 and message.format(tmp=tmp_path) in capsys.readouterr().err


def test_reachable_from_results():
    assert results.to_frame is tables.to_frame and results.write_csv is tables.write_csv
