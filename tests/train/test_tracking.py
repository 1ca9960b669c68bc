"""Experiment tracking (socialjax.train.tracking): ``socialjax train --log ...`` streams
every update's metrics, per grid point and seed, to TensorBoard, W&B (offline) and CSV
while the run goes; read back with TensorBoard's own reader (mid-run too) and W&B's
transaction log. The live notebook display (socialjax.viz.live) as a tracker.

One tiny IPD sweep (2 learning rates x 2 seeds x 4 updates, a checkpoint every 2) is
shared by the module."""

from __future__ import annotations

import csv
import json
import struct
import sys
from pathlib import Path

import numpy as np
import pytest
from support import assert_tree_same

from socialjax import cli
from socialjax.core.registry import make
from socialjax.reproduce import Condition, Entry, Measure, reproduce
from socialjax.reproduce.core import ordered_verdict
from socialjax.train import TrainConfig, results
from socialjax.train import run as run_fn
from socialjax.train.tracking import CsvLog, RunSet, TensorBoardLog, WandbLog, make_trackers
from socialjax.viz import live

event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
wandb_pb = pytest.importorskip("wandb.proto.wandb_internal_pb2")

UPDATES, SEEDS, LRS = 4, (0, 1), ("0.001", "0.003")
RUN_NAMES = [f"lr={lr}/seed{s}" for lr in LRS for s in SEEDS]  # grid-major, as the engine lays runs out
ARGS = ["train", "ipd-ppo", "--set", f"num_updates={UPDATES}", "--set", "num_envs=4", "--seeds", "2",
        "--set", "lr=[1e-3, 3e-3]", "--checkpoint-every", "2", "--quiet",
        "--log", "tensorboard", "--log", "csv", "--log", "wandb"]


def scalars(folder: Path, tag: str) -> dict[str, list[tuple[int, float]]]:
    """``{run name: [(step, value)]}`` of every run under ``folder``, read by TensorBoard."""
    out = {}
    for events in sorted(folder.rglob("events.out.tfevents.*")):
        acc = event_accumulator.EventAccumulator(str(events.parent))
        acc.Reload()
        if tag in acc.Tags()["scalars"]:
            out[events.parent.relative_to(folder).as_posix()] = [(e.step, e.value) for e in acc.Scalars(tag)]
    return out


def wandb_records(path: Path) -> list:
    """The records of a W&B transaction log (``run-*.wandb``): a 7-byte header, then
    LevelDB's log format (32 KiB blocks of chunks, each ``crc32 (4) length (2) type (1)``,
    type 1 a whole record, 2/3/4 its first/middle/last part)."""
    data, block, pos = path.read_bytes(), 32768, 7
    assert data[:4] == b":W&B"
    records, part = [], b""
    while pos + 7 <= len(data):
        left = block - pos % block
        if left < 7:  # a block's tail too short for a header is padding
            pos += left
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        chunk, pos = data[pos + 7:pos + 7 + length], pos + 7 + length
        part = chunk if kind in (1, 2) else part + chunk
        if kind in (1, 4):
            record = wandb_pb.Record()
            record.ParseFromString(part)
            records.append(record)
    return records


def values(items) -> dict:
    """W&B's key-value records as ``{key: value}`` (a nested key joined with ``/``)."""
    return {i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in items}


def wandb_runs(folder: Path) -> dict[str, dict]:
    """``{run name: {"group", "config", "history": [{key: value}], "summary": {key: value}}}``
    of the offline runs."""
    runs = {}
    for log in folder.rglob("offline-run-*/run-*.wandb"):
        records = wandb_records(log)
        run = next(r.run for r in records if r.WhichOneof("record_type") == "run")
        history = [values(r.history.item) for r in records if r.WhichOneof("record_type") == "history"]
        summary = {}
        for r in records:  # the summary's updates, in order
            summary.update(values(r.summary.update) if r.WhichOneof("record_type") == "summary" else {})
        runs[run.display_name] = {"group": run.run_group, "history": history, "summary": summary,
                                  "config": values(run.config.update)}
    return runs


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    """The CLI run with every tracker; what TensorBoard read at each checkpoint (mid-run);
    the result; the folders."""
    tmp = tmp_path_factory.mktemp("tracking")
    log_dir, out = tmp / "runs", tmp / "out"
    seen, kept = [], {}
    save_checkpoint, save_run = results.save_checkpoint, results.save_run

    def at_checkpoint(out_dir, snapshot, *args, **kwargs):  # mid-run: the event files as TensorBoard reads them
        seen.append((snapshot.updates_done, scalars(next(log_dir.rglob("tensorboard")), "reward_rate")))
        return save_checkpoint(out_dir, snapshot, *args, **kwargs)

    def keep(result, *args, **kwargs):
        kept["result"] = result
        return save_run(result, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WANDB_MODE", "offline")
        mp.setenv("WANDB_SILENT", "true")
        mp.setattr(results, "save_checkpoint", at_checkpoint)
        mp.setattr(results, "save_run", keep)
        assert cli.main([*ARGS, "--out", str(out), "--log-dir", str(log_dir)]) == 0
    (experiment,) = [p for p in (log_dir / "ipd-ppo").iterdir()]  # runs/<preset>/<date-time>
    return {"seen": seen, "result": kept["result"], "dir": experiment, "out": out}


def learner_mean(result, name: str) -> np.ndarray:
    """``(R, U)``: a per-member metric's mean over the learners, runs grid-major."""
    v = np.asarray(result.metrics[name], np.float32)
    return np.nanmean(v, axis=-1).reshape(-1, v.shape[2])


def test_tensorboard_has_one_curve_per_grid_point_and_seed(logged):
    curves = scalars(logged["dir"] / "tensorboard", "reward_rate")
    assert sorted(curves) == sorted(RUN_NAMES)
    want = learner_mean(logged["result"], "reward_rate")
    for r, name in enumerate(RUN_NAMES):
        steps, values = zip(*curves[name])
        assert list(steps) == list(range(1, UPDATES + 1))
        np.testing.assert_allclose(values, want[r], rtol=1e-6)
    assert len({tuple(v for _, v in c) for c in curves.values()}) == len(RUN_NAMES)  # four different runs


def test_tensorboard_shows_the_sweep_while_it_runs(logged):
    """At the checkpoint after update 2, the event files already held updates 1 and 2 of every run."""
    (done, curves), = logged["seen"]  # --checkpoint-every 2 of 4 updates: one checkpoint before the end
    assert done == 2
    assert sorted(curves) == sorted(RUN_NAMES)
    assert all([s for s, _ in c] == [1, 2] for c in curves.values())


def test_tensorboard_holds_hparams_meta_and_the_figure(logged):
    folder = logged["dir"] / "tensorboard"
    acc = event_accumulator.EventAccumulator(str(folder / "lr=0.003" / "seed1"))
    acc.Reload()
    assert "hparams" in acc.PluginTagToContent("hparams") or acc.PluginTagToContent("hparams")
    text = acc.Tensors("meta")[0].tensor_proto.string_val[0].decode()
    assert json.loads(text)["config"]["num_updates"] == UPDATES
    figures = event_accumulator.EventAccumulator(str(folder / "figures"))
    figures.Reload()
    (image,) = figures.Images("curves")
    assert image.encoded_image_string == (logged["out"] / results.CURVES_FILE).read_bytes()


def test_csv_streams_a_row_per_run_and_update(logged):
    folder = logged["dir"] / "csv"
    with open(folder / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(RUN_NAMES) * UPDATES
    want = learner_mean(logged["result"], "reward_rate")
    for r, name in enumerate(RUN_NAMES):
        mine = [row for row in rows if row["run"] == name]
        assert [int(row["update"]) for row in mine] == list(range(1, UPDATES + 1))
        np.testing.assert_allclose([float(row["reward_rate"]) for row in mine], want[r], rtol=1e-6)
    with open(folder / "runs.csv") as f:
        runs = list(csv.DictReader(f))
    assert [(r["run"], r["lr"], r["seed"]) for r in runs] == [(n, n[3:8], n[-1]) for n in RUN_NAMES]
    assert json.loads((folder / "meta.json").read_text())["env"] == "ipd"
    assert (folder / results.CURVES_FILE).read_bytes() == (logged["out"] / results.CURVES_FILE).read_bytes()


def test_wandb_offline_has_a_run_per_grid_point_and_seed(logged):
    runs = wandb_runs(logged["dir"] / "wandb")
    assert sorted(runs) == sorted(RUN_NAMES)
    want = learner_mean(logged["result"], "reward_rate")
    for r, name in enumerate(RUN_NAMES):
        run = runs[name]
        assert run["group"] == "ipd-ppo"
        assert run["config"]["hparams"] == {"lr": float(LRS[r // 2]), "seed": SEEDS[r % 2]}
        assert run["config"]["config"]["num_envs"] == 4
        # the run's own learning rate in its config; the sweep's values beside it
        assert run["config"]["config"]["lr"] == float(LRS[r // 2])
        assert run["config"]["sweep"] == {"lr": [float(lr) for lr in LRS]}
        rows = [h for h in run["history"] if "reward_rate" in h]
        assert [h["_step"] for h in rows] == list(range(1, UPDATES + 1))
        np.testing.assert_allclose([h["reward_rate"] for h in rows], want[r], rtol=1e-6)
    # the figure, as an image of the first run (its fields flattened under the key)
    assert any(k.startswith("figures/curves/") for h in runs[RUN_NAMES[0]]["history"] for k in h)


def test_the_evaluation_is_each_runs_summary(logged):
    """The trained populations' evaluation, one number per run: TensorBoard at the last
    step, CSV's summary.csv, W&B's run summary."""
    want = np.asarray(logged["result"].metrics["eval/collective_return"], np.float32).reshape(-1)
    rate = np.nanmean(np.asarray(logged["result"].metrics["eval/reward_rate"], np.float32), axis=-1).reshape(-1)
    curves = scalars(logged["dir"] / "tensorboard", "eval/collective_return")
    np.testing.assert_allclose([curves[n] for n in RUN_NAMES], [[(UPDATES, w)] for w in want], rtol=1e-6)
    with open(logged["dir"] / "csv" / "summary.csv") as f:
        rows = {row["run"]: row for row in csv.DictReader(f)}
    np.testing.assert_allclose([float(rows[n]["eval/reward_rate"]) for n in RUN_NAMES], rate, rtol=1e-6)
    assert "eval/crossplay" not in rows[RUN_NAMES[0]]  # a matrix per run, not a number
    runs = wandb_runs(logged["dir"] / "wandb")
    np.testing.assert_allclose([runs[n]["summary"]["eval/collective_return"] for n in RUN_NAMES], want, rtol=1e-6)


def test_tracked_values_are_the_learners_means_and_the_social_metrics(logged):
    """What is tracked: per-game metrics as they are, per-member ones averaged over the
    learners, no bookkeeping."""
    with open(logged["dir"] / "csv" / "metrics.csv") as f:
        columns = next(csv.reader(f))
    assert {"reward_rate", "return", "loss", "entropy", "collective_return", "efficiency", "episodes"} <= set(columns)
    assert not {"parents", "seat_count", "halted"} & set(columns)
    assert not [c for c in columns if c.startswith("hparams/")]  # constant without PBT
    # each member's own series beside the mean: ipd-ppo's two learners told apart
    assert {"reward_rate/learner_0", "reward_rate/learner_1", "loss/learner_0", "loss/learner_1"} <= set(columns)
    with open(logged["dir"] / "csv" / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    rate = np.asarray(logged["result"].metrics["reward_rate"], np.float32)  # (G, S, U, P)
    rate = rate.reshape(-1, *rate.shape[2:])  # (R, U, P), runs grid-major
    for row in rows:
        r, u = RUN_NAMES.index(row["run"]), int(row["update"]) - 1
        np.testing.assert_allclose([float(row[f"reward_rate/learner_{m}"]) for m in (0, 1)], rate[r, u], rtol=1e-6)
    curves = scalars(logged["dir"] / "tensorboard", "reward_rate/learner_1")
    assert sorted(curves) == sorted(RUN_NAMES)


# ---------------------------------------------------------------------------- errors
def test_unknown_or_repeated_tracker_names_are_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown tracker"):
        make_trackers(["tensorbord"], tmp_path, "x")
    with pytest.raises(ValueError, match="named twice"):
        make_trackers(["csv", "csv"], tmp_path, "x")


def test_cli_names_a_missing_extra_before_training(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # as if not installed
    with pytest.raises(SystemExit):
        cli.main(["train", "ipd-ppo", "--log", "tensorboard", "--log-dir", str(tmp_path), "--out",
                  str(tmp_path / "out")])
    assert 'pip install "socialjax[tensorboard]"' in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_wandb_refuses_more_runs_than_max_runs(tmp_path):
    runs = RunSet("x", {"lr": np.array([1e-3], np.float32)}, np.arange(3), 2, {})
    with pytest.raises(ValueError, match="3 W&B runs"):
        WandbLog(tmp_path, mode="offline", max_runs=2).open(runs)


def test_a_tracker_logs_only_once_open(tmp_path):
    with pytest.raises(RuntimeError, match="open"):
        CsvLog(tmp_path).log(0, {"x": np.zeros((1, 1))})


def test_run_names_show_only_the_swept_values():
    grid = {"lr": np.array([1e-3, 3e-3], np.float32), "gamma": np.array([0.99, 0.99], np.float32)}
    runs = RunSet("x", grid, np.array([5, 7]), 3, {})
    assert [runs.name(r) for r in range(len(runs))] == ["lr=0.001/seed5", "lr=0.001/seed7", "lr=0.003/seed5",
                                                        "lr=0.003/seed7"]
    assert runs.hparams(3) == {"lr": 0.003, "seed": 7}
    alone = RunSet("x", {"lr": np.array([1e-3], np.float32)}, np.array([2]), 3, {})
    assert alone.name(0) == "seed2"


# ---------------------------------------------------------------------- live display
def test_live_display_draws_a_curve_per_headline_metric_and_grid_point():
    shown = []
    display = live.LiveDisplay(("reward_rate", "return"), lambda step, v: f"reward {v['reward_rate'].mean():.2f}",
                               every=2, label="pd", min_seconds=0.0, show=lambda html: shown.append)
    runs = RunSet("pd", {"lr": np.array([1e-3, 3e-3], np.float32)}, np.arange(2), 4, {})
    display.open(runs)
    assert live.MARKER in display.html and "img" not in display.html
    for u in range(4):
        display.log(u, {"reward_rate": np.full((4, 1), float(u)), "return": np.full((4, 1), np.nan)})
    assert "[4/4] reward 3.00" in display.html and "data:image/png;base64," in display.html
    assert display._drawn_at == 4  # at updates 2 and 4 (every=2)
    display.summary({"eval/collective_return": np.array([1.0, 2.0, 3.0, np.nan])})
    assert "end of the run: eval/collective_return 2" in display.html
    assert shown[-1] == display.html  # every redraw replaced what is on screen


def test_run_in_a_notebook_shows_the_live_display_not_lines(monkeypatch, capsys):
    shown = []
    monkeypatch.setattr("socialjax.train.engine.in_notebook", lambda: True)
    monkeypatch.setattr(live, "_ipython_show", lambda html: shown.append)
    config = TrainConfig(num_updates=2, num_envs=2, rollout_len=4, log_every=1)
    run_fn(make("ipd"), config, seeds=1, label="nb", compile_cache=False)
    assert "[1/2]" not in capsys.readouterr().err  # no text lines
    assert shown and live.MARKER in shown[-1] and "nb [2/2] reward/step" in shown[-1]


def test_trackers_opened_by_name_are_closed_by_run_and_change_no_bit(tmp_path):
    config = TrainConfig(num_updates=2, num_envs=2, rollout_len=4, log_every=1)
    logged = run_fn(make("ipd"), config, seeds=1, progress=False, log=["csv"], log_dir=tmp_path, compile_cache=False)
    (metrics,) = tmp_path.rglob("metrics.csv")
    assert len(metrics.read_text().splitlines()) == 1 + 2  # the header and both updates, flushed and closed
    plain = run_fn(make("ipd"), config, seeds=1, progress=False, compile_cache=False)
    assert_tree_same(logged.metrics, plain.metrics)  # the same program: tracking only reads its outputs


def test_tensorboard_log_rejects_use_before_open(tmp_path):
    with pytest.raises(RuntimeError, match="open"):
        TensorBoardLog(tmp_path).log(0, {"x": np.zeros((1, 1))})


def test_donor_evolution_logs_each_multiplier_and_seed(tmp_path):
    """The engine's other job: a row per (multiplier, seed) and generation, and its figure."""
    assert cli.main(["train", "donor-evolution", "--seeds", "2", "--generations", "2", "--multipliers", "2,3",
                     "--env-option", "num_agents=8", "--quiet", "--out", str(tmp_path / "out"), "--log", "csv",
                     "--log-dir", str(tmp_path / "runs")]) == 0
    (folder,) = tmp_path.rglob("csv")
    with open(folder / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert sorted({r["run"] for r in rows}) == ["multiplier=2/seed0", "multiplier=2/seed1", "multiplier=3/seed0",
                                                "multiplier=3/seed1"]
    assert len(rows) == 4 * 2 and all(0 <= float(r["mean_fraction_given"]) <= 1 for r in rows)
    assert (folder / "donor_evolution.png").exists()


def test_reproduce_logs_each_training_run_and_its_figure(tmp_path):
    """``reproduce(..., log=...)``: a tracker folder per group of conditions trained
    together, each with the reproduction's figure at the end."""
    tiny = dict(seating="independent", num_envs=2, rollout_len=10, hidden=8, update_epochs=1, num_minibatches=1,
                num_updates=2, evaluate=False)

    def condition(form):
        return Condition(name=form, env={"small": "ipd"}, env_options={"small": {"num_rounds": 10}},
                         config={"small": dict(tiny, reward=form)})

    entry = Entry(name="ipd-tiny", title="t", citation="c", conditions=(condition("common"), condition("individual")),
                  measures=(Measure("rate", "reward_rate", "reward per round", members=slice(0, 2)),),
                  references=(), criterion=lambda finals: ordered_verdict(finals, ("common", "rate"),
                                                                          ("individual", "rate"), "reward"),
                  criterion_text="-", seeds={"small": 2})
    reproduce(entry, "small", out=tmp_path / "out", progress=False, log=["csv"], log_dir=tmp_path / "runs")
    folders = sorted(tmp_path.glob("runs/reproduce/ipd-tiny-small/*/*/csv"))
    assert [f.parent.name for f in folders] == ["common", "individual"]
    for folder in folders:
        assert len((folder / "metrics.csv").read_text().splitlines()) == 1 + 2 * 2  # header, 2 seeds x 2 updates
        assert (folder / "figure.png").read_bytes() == (tmp_path / "out" / "figure.png").read_bytes()
