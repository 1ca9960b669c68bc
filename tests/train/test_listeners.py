"""The engine's listeners (socialjax.train.tracking.Listeners): a tracker, the progress
lines or the live display that fails is dropped with one line on stderr and the training
goes on; the result lists it. Log folders are a run's own (two runs of the same second,
one tracker object opened twice); ``reproduce --log`` after a stopped try; W&B without a
login.

The runs are tiny IPD populations (a few updates of 2 games); the full disk is a
``metrics.csv`` whose flush fails from the third update on."""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import re
from pathlib import Path

import numpy as np
import pytest
from support import run_stopped_at, two_run_entry

from socialjax import cli
from socialjax.core.registry import make
from socialjax.reproduce import core
from socialjax.reproduce.core import Analysis, Entry, reproduce
from socialjax.train import TrainConfig, trackers
from socialjax.train import run as run_fn
from socialjax.train.runner import run_module
from socialjax.train.tracking import (
    WANDB_INIT_TIMEOUT,
    CsvLog,
    Listeners,
    RunSet,
    TensorBoardLog,
    WandbLog,
    experiment_name,
    make_trackers,
)

event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")

TINY = dict(num_envs=2, rollout_len=4, hidden=8, update_epochs=1, num_minibatches=1, evaluate=False)
CLI_TINY = ["train", "ipd-ppo", "--seeds", "1", "--set", "num_updates=4", "--set", "num_envs=2",
            "--set", "rollout_len=10", "--set", "hidden=8", "--set", "update_epochs=1",
            "--set", "num_minibatches=1", "--set", "evaluate=False"]


class Recorder:
    """A tracker that keeps what it is given."""

    def __init__(self):
        self.calls = []

    def open(self, runs):
        self.calls.append(("open", len(runs)))

    def log(self, update, values):
        self.calls.append(("log", update))

    def summary(self, values):
        self.calls.append(("summary",))

    def artifact(self, path):
        self.calls.append(("artifact", Path(path).name))

    def close(self):
        self.calls.append(("close",))


class FullDisk(io.StringIO):
    """``metrics.csv`` on a disk that fills up: every flush from the ``fail_at``-th on fails."""

    def __init__(self, fail_at: int):
        super().__init__()
        self.flushes, self.fail_at = 0, fail_at

    def flush(self):
        self.flushes += 1
        if self.flushes >= self.fail_at:
            raise OSError(errno.ENOSPC, "No space left on device")


@pytest.fixture
def full_disk(monkeypatch):
    """The csv tracker's ``metrics.csv`` fails at its third flush (after update 3)."""
    real = open

    def fake_open(path, *args, **kwargs):
        return FullDisk(3) if Path(path).name == "metrics.csv" else real(path, *args, **kwargs)

    monkeypatch.setattr(trackers, "open", fake_open, raising=False)  # the module CsvLog opens its files in


def csv_rows(path: Path) -> list[dict]:
    return list(csv.DictReader(path.read_text().splitlines()))


def failure_lines(err: str, name: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith(f"socialjax: the {name} tracker failed")]


# ------------------------------------------------------------------ 1. a failing tracker
def test_a_full_disk_drops_the_csv_tracker_and_the_training_goes_on(tmp_path, full_disk, capsys):
    csv_log, other = CsvLog(tmp_path / "csv"), Recorder()
    config = TrainConfig(num_updates=4, log_every=1, **TINY)
    result = run_fn(make("ipd"), config, seeds=1, label="full", log=[csv_log, other], compile_cache=False)
    err = capsys.readouterr().err
    (line,) = failure_lines(err, "csv")
    assert line == (f"socialjax: the csv tracker failed at update 3 (cannot write {tmp_path / 'csv' / 'metrics.csv'}: "
                    "No space left on device); training goes on without it")
    assert result.listener_failures == [line.removeprefix("socialjax: ").removesuffix("; training goes on without it")]
    assert result.metrics["reward_rate"].shape[2] == 4  # every update trained
    assert [c for c in other.calls if c[0] == "log"] == [("log", u) for u in range(4)]  # the others go on
    assert ("close",) not in other.calls  # an object given to run stays open for its owner
    assert re.findall(r"^full \[(\d)/4\]", err, flags=re.M) == ["1", "2", "3", "4"]  # the progress lines too
    assert "Traceback" not in err


def test_the_cli_goes_on_past_a_full_log_folder_and_blames_no_checkpoint(tmp_path, full_disk):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main([*CLI_TINY, "--out", str(tmp_path / "out"), "--log", "csv",
                         "--log-dir", str(tmp_path / "runs")])
    err, out = err.getvalue(), out.getvalue()
    assert code == 0, err
    (line,) = failure_lines(err, "csv")
    assert "at update 3" in line and "No space left on device" in line and line.endswith("goes on without it")
    assert "checkpoint" not in err and "Traceback" not in err
    assert "listeners dropped while the runs trained" in out and "the csv tracker failed at update 3" in out
    assert (tmp_path / "out" / "summary.txt").exists()  # the result is whole


def test_listeners_drop_a_tracker_that_fails_to_open_and_skip_unopened_ones(tmp_path):
    class NoPackage(Recorder):
        def open(self, runs):
            raise ImportError('tracking to tensorboard needs the tensorboard package: pip install "x"')

    stream, recorder = io.StringIO(), Recorder()
    runs = RunSet("x", {"lr": np.array([1e-3], np.float32)}, np.arange(3), 2, {})
    listeners = Listeners([NoPackage(), WandbLog(tmp_path, mode="offline", max_runs=2), recorder], stream=stream)
    listeners.open(runs)
    listeners.log(0, {"x": np.zeros((3, 2))})
    lines = stream.getvalue().splitlines()
    assert lines == ['socialjax: the tracker NoPackage failed to open (tracking to tensorboard needs the tensorboard '
                     'package: pip install "x"); training goes on without it',
                     "socialjax: the wandb tracker failed to open (3 runs would be 3 W&B runs (max_runs=2): log a "
                     "sweep this large to TensorBoard or CSV, or raise max_runs); training goes on without it"]
    assert len(listeners.failures) == 2 and listeners.members == [recorder]
    assert recorder.calls == [("open", 3), ("log", 0)]
    never = Listeners([CsvLog(tmp_path / "never")], stream=stream)  # a run read back: never opened
    never.artifact(tmp_path / "figure.png")
    never.summary({"x": np.zeros(3)})
    never.close()
    assert never.failures == [] and not (tmp_path / "never").exists()


# ---------------------------------------------------------------- 2. one folder per run
def test_two_runs_of_one_label_in_the_same_second_get_folders_of_their_own(tmp_path):
    experiment = experiment_name("ipd-ppo")  # both runs start in this second
    (first,), (second,) = make_trackers(["csv"], tmp_path, experiment), make_trackers(["csv"], tmp_path, experiment)
    assert first.folder != second.folder
    assert first.folder.parent.name + "-2" == second.folder.parent.name
    runs = RunSet("x", {"lr": np.array([1e-3], np.float32)}, np.arange(1), 1, {})
    for tracker, value in ((first, 1.0), (second, 2.0)):
        with tracker:
            tracker.open(runs)
            tracker.log(0, {"x": np.full((1, 1), value)})
    assert [row["x"] for row in csv_rows(first.folder / "metrics.csv")] == ["1.0"]
    assert [row["x"] for row in csv_rows(second.folder / "metrics.csv")] == ["2.0"]


# ------------------------------------------------------- 3. one tracker object, two runs
def test_a_tracker_object_given_to_two_runs_keeps_both_records(tmp_path):
    csv_log, board = CsvLog(tmp_path / "csv"), TensorBoardLog(tmp_path / "tb")
    config = TrainConfig(num_updates=2, log_every=1, **TINY)
    for seed in (0, 1):
        run_fn(make("ipd"), config, seeds=[seed], progress=False, log=[csv_log, board], compile_cache=False)
    csv_log.close()
    board.close()
    for folder, seed in ((tmp_path / "csv", 0), (tmp_path / "csv" / "2", 1)):
        rows = csv_rows(folder / "metrics.csv")
        assert [(r["run"], r["update"]) for r in rows] == [(f"seed{seed}", "1"), (f"seed{seed}", "2")]
        assert (folder / "meta.json").exists() and (folder / "runs.csv").exists()
    curves = {}
    for events in sorted((tmp_path / "tb").rglob("events.out.tfevents.*")):
        acc = event_accumulator.EventAccumulator(str(events.parent))
        acc.Reload()
        curves[events.parent.relative_to(tmp_path / "tb").as_posix()] = [e.step for e in acc.Scalars("reward_rate")]
    assert curves == {"seed0": [1, 2], "2/seed1": [1, 2]}  # each run's curve once, none joined to the other


# ---------------------------------------------------- 4. reproduce --log after a stop
def test_reproduce_logs_every_run_after_a_stopped_try(tmp_path, monkeypatch):
    """Stopped during its second run, then run again with ``--log csv``: the rerun
    finishes (it used to die with ``CsvLog is not open`` adding the figure to the run it
    read back), and its log folder holds both runs: the one trained now and the one read
    back, streamed as it was when it trained."""
    entry, out, log_dir = two_run_entry(), tmp_path / "rep", tmp_path / "runs"
    real_run, trained = run_module.run, []

    with monkeypatch.context() as mp:
        mp.setattr(run_module, "run", run_stopped_at(real_run, trained, 2))
        with pytest.raises(core.Stopped):
            reproduce(entry, "small", out=out, progress=False, log=["csv"], log_dir=log_dir)
    reproduce(entry, "small", out=out, progress=False, log=["csv"], log_dir=log_dir)
    first, again = sorted(log_dir.glob("reproduce/toy-ipd-small/*"))  # one folder per try, in the order made
    for name in ("short", "long"):
        metrics = (again / name / "csv" / "metrics.csv").read_text().splitlines()
        assert len(metrics) == 1 + 2 * 2  # the header, 2 seeds x 2 updates
        assert (again / name / "csv" / "figure.png").read_bytes() == (out / "figure.png").read_bytes()
    # the run read back is streamed as it was while it trained in the first try (in one call: rows run by run)
    read_back, trained_then = ((f / "short" / "csv" / "metrics.csv").read_text().splitlines() for f in (again, first))
    assert read_back[0] == trained_then[0] and sorted(read_back[1:]) == sorted(trained_then[1:])


def test_reproduce_says_when_an_entry_has_nothing_to_log(tmp_path, capsys):
    entry = Entry(name="toy-analysis", title="t", citation="c", conditions=(), measures=(), references=(),
                  criterion=lambda f: ("reproduced", "always"), criterion_text="-", seeds={"small": 2},
                  analysis=Analysis(keys={"small": (("a", "x"),)},
                                    compute=lambda runs, scale, seeds, base_seed: {("a", "x"): np.ones(seeds)}))
    reproduce(entry, "small", progress=False, log=["csv"], log_dir=tmp_path / "runs")
    err = capsys.readouterr().err
    assert "socialjax: toy-analysis runs nothing at scale small" in err and "nothing to stream" in err
    assert not (tmp_path / "runs").exists()


# ------------------------------------------------------------------------ 5. W&B
@pytest.fixture
def no_wandb_login(tmp_path, monkeypatch):
    """W&B online with no credentials anywhere it looks (the environment, ~/.netrc, its
    settings), wandb's process settings read afresh."""
    wandb = pytest.importorskip("wandb")
    for name in ("WANDB_API_KEY", "WANDB_IDENTITY_TOKEN_FILE", "NETRC", "WANDB_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WANDB_MODE", "online")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "home" / "wandb-config"))
    wandb.teardown()  # wandb keeps its settings per process: read this environment
    yield
    wandb.teardown()


def test_wandb_without_a_login_is_one_line_and_the_training_goes_on(tmp_path, no_wandb_login):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main([*CLI_TINY, "--quiet", "--out", str(tmp_path / "out"), "--log", "wandb",
                         "--log-dir", str(tmp_path / "runs")])
    err = err.getvalue()
    assert code == 0, err
    assert failure_lines(err, "wandb") == [
        "socialjax: the wandb tracker failed to open (W&B needs a login: run `wandb login` or set WANDB_API_KEY, "
        "or WANDB_MODE=offline); training goes on without it"]
    assert "Traceback" not in err
    assert (tmp_path / "out" / "summary.txt").exists()


def test_wandb_waits_for_its_server_at_most_the_init_timeout(tmp_path, monkeypatch):
    wandb = pytest.importorskip("wandb")
    started = []

    class Run:
        def finish(self):
            pass

    monkeypatch.setattr(wandb, "init", lambda **kwargs: started.append(kwargs["settings"]) or Run())
    runs = RunSet("x", {"lr": np.array([1e-3], np.float32)}, np.arange(2), 1, {})
    with WandbLog(tmp_path, mode="offline") as log:
        log.open(runs)
    assert len(started) == 2 and WANDB_INIT_TIMEOUT <= 30
    assert all(settings.init_timeout == WANDB_INIT_TIMEOUT for settings in started)
