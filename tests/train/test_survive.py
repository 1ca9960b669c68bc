"""Experiments that survive: result folders are transactions (a failed or killed save
leaves the old result whole, a damaged file is named), output paths are checked before
anything compiles, two jobs cannot share a folder, and a run stopped by Ctrl-C or
killed resumes from its last checkpoint with the same bits as a run never stopped.

Compilation dominates: the in-process runs share one tiny IPD config (PPO vs TFT, 2
learning rates x 2 seeds, 6 updates), and the command-line runs are one uninterrupted
run, one interrupted by SIGINT and one killed with SIGKILL, then resumed."""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import jax
import numpy as np
import pytest
from support import TINY_IPD, assert_same, cpu_only, reseal

import socialjax as sj
from socialjax import cli
from socialjax.train import TrainConfig, engine, results, store

CONFIG = TrainConfig(num_envs=4, rollout_len=10, num_updates=6, hidden=8, update_epochs=1, num_minibatches=1,
                     lr=[1e-3, 3e-3], seating="fixed", seats=(0, 1), scripted=("tft",), evaluate=False)
SEEDS = 2
SEGMENT = 4  # 6 updates: segments of 4 and 2
CLI_ARGS = ["train", "ipd-ppo", "--seeds", "2", "--set", "num_envs=4", "--set", "rollout_len=10", "--set",
            "hidden=8", "--set", "update_epochs=1", "--set", "num_minibatches=1", "--set", "evaluate=False", "--quiet"]
CLI_UPDATES = 100


def ipd():
    return sj.make("ipd", num_rounds=10)


def leaves(tree) -> list[np.ndarray]:
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(tree)]


def assert_same_result(a, b):
    assert sorted(a.metrics) == sorted(b.metrics)
    for k in a.metrics:
        assert_same(a.metrics[k], b.metrics[k], err_msg=k)
    for x, y in zip(leaves(a.states), leaves(b.states), strict=True):
        assert_same(x, y)


def run_cli(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def whole():
    """The runs in one call, never cut."""
    return sj.train.run(ipd(), CONFIG, seeds=SEEDS, progress=False)


@pytest.fixture(scope="module")
def saved(whole, tmp_path_factory):
    out = tmp_path_factory.mktemp("survive") / "result"
    results.save_run(whole, out, env_name="ipd", env_options={"num_rounds": 10}, plot=False)
    return out


# ------------------------------------------------------------------------ segments and resume
def test_segments_and_a_resumed_run_give_the_bits_of_an_uncut_run(whole, tmp_path):
    """Cut into segments of 4 and 2 updates, checkpointed to disk after the first and
    "killed" there (update 4 of 6), then resumed from the files: the metrics and
    trained learners equal the uncut run's, bit for bit on CPU."""
    env = ipd()
    spec = results.population_spec(CONFIG, "ipd", {"num_rounds": 10}, range(SEEDS), 0)

    def save_then_die(snapshot):
        results.save_checkpoint(tmp_path / "run", snapshot, spec, segment=SEGMENT)
        raise RuntimeError(f"killed after update {snapshot.updates_done}")

    with pytest.raises(RuntimeError, match="killed after update 4"):
        sj.train.run(env, CONFIG, seeds=SEEDS, progress=False, segment=SEGMENT, on_segment=save_then_die)
    assert store.folder_state(tmp_path / "run") == "unfinished"
    checkpoint = results.load_checkpoint(tmp_path / "run")
    snapshot = results.restore_snapshot(checkpoint, sj.train.make_train(checkpoint.env, checkpoint.config))
    assert snapshot.updates_done == 4 and snapshot.metrics["reward_rate"].shape[:2] == (2 * SEEDS, 4)
    resumed = sj.train.run(checkpoint.env, checkpoint.config, seeds=SEEDS, progress=False, segment=SEGMENT,
                           resume=snapshot)
    assert_same_result(resumed, whole)


def test_a_finished_or_foreign_folder_is_not_resumed(saved, tmp_path):
    with pytest.raises(store.ResultError, match="holds a finished result: there is no unfinished run"):
        results.load_checkpoint(saved)
    with pytest.raises(store.ResultError, match="does not exist"):
        results.load_checkpoint(tmp_path / "nothing")


def test_bad_segment_and_resume_arguments_are_refused(whole):
    with pytest.raises(ValueError, match="segment must be a positive int"):
        sj.train.run(ipd(), CONFIG, seeds=SEEDS, progress=False, segment=0)
    from socialjax.train.run import Snapshot

    done = Snapshot(CONFIG.num_updates, None, {}, 4, None)
    with pytest.raises(ValueError, match="nothing to resume"):
        sj.train.run(ipd(), CONFIG, seeds=SEEDS, progress=False, resume=done)


# ------------------------------------------------------------------------------- transactions
def test_a_result_folder_is_written_whole_with_a_manifest(saved):
    manifest = store.verify(saved, kind="population")
    assert set(manifest["files"]) == {"metrics.npz", "config.json", "checkpoint.msgpack", "summary.txt"}
    assert manifest["kind"] == "population" and manifest["env"] == "ipd"
    assert not [p for p in saved.parent.iterdir() if p.name.startswith(".")]  # no temporary or lock left


def test_a_save_that_fails_midway_leaves_the_old_result_whole(whole, saved, tmp_path, monkeypatch):
    """The new result fails while its plot is drawn (as a full disk or a kill would stop
    it): the earlier result is untouched and still loads, and nothing else is left."""
    before = {p.name: p.read_bytes() for p in saved.iterdir()}

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(results, "plot_curves", broken)
    with pytest.raises(OSError, match="No space left"):
        results.save_run(whole, saved, env_name="ipd", env_options={"num_rounds": 10}, overwrite=True)
    assert {p.name: p.read_bytes() for p in saved.iterdir()} == before
    assert not [p for p in saved.parent.iterdir() if p.name.startswith(".")]
    results.load_run(saved)


def test_a_killed_save_leaves_only_a_hidden_temporary_beside_the_old_result(saved, tmp_path):
    """A save killed before its rename leaves ``.NAME.tmp-*`` beside the folder: the old
    result still loads, and the partial one is never read."""
    folder = tmp_path / "r"
    import shutil

    shutil.copytree(saved, folder)
    partial = tmp_path / ".r.tmp-deadbeef"
    partial.mkdir()
    (partial / "metrics.npz").write_bytes(b"half")
    assert results.load_run(folder).seeds.tolist() == [0, 1]


def test_results_are_not_overwritten_without_asking(whole, saved):
    with pytest.raises(store.OutputError, match="already holds a population result; pass --overwrite"):
        store.check_out_dir(saved)
    with pytest.raises(store.OutputError, match="was written by another job while this one ran"):
        results.save_run(whole, saved, env_name="ipd", env_options={"num_rounds": 10}, plot=False)
    results.load_run(saved)


def _sealed_noise(path: Path) -> None:
    """Random bytes in ``path``, the manifest rewritten to match (a foreign file)."""
    path.write_bytes(os.urandom(300))
    reseal(path.parent)


@pytest.mark.parametrize("damage, message", [
    (lambda d: (d / "checkpoint.msgpack").write_bytes((d / "checkpoint.msgpack").read_bytes()[:100]),
     r"checkpoint.msgpack is damaged: 100 bytes, the manifest says \d+"),
    (lambda d: (d / "metrics.npz").write_bytes(os.urandom((d / "metrics.npz").stat().st_size)),
     "metrics.npz is damaged: its checksum does not match"),
    (lambda d: (d / "config.json").unlink(), "config.json is missing"),
    (lambda d: (d / "manifest.json").write_text("{"), "manifest.json is damaged"),
    (lambda d: _sealed_noise(d / "metrics.npz"), "metrics.npz is not a readable .npz"),
    (lambda d: _sealed_noise(d / "checkpoint.msgpack"),
     "checkpoint.msgpack does not hold the learners of its config.json"),
    (lambda d: reseal(d, "donor-evolution"), "holds a donor-evolution result, not a population result"),
])
def test_damaged_or_foreign_files_are_named(saved, tmp_path, damage, message):
    import shutil

    folder = tmp_path / "copy"
    shutil.copytree(saved, folder)
    damage(folder)
    with pytest.raises(store.ResultError, match=message) as err:
        results.load_run(folder)
    assert "\n" not in str(err.value)


# ------------------------------------------------------------------------------ output paths
def test_output_checks(tmp_path, saved):
    (tmp_path / "file").write_text("")
    with pytest.raises(store.OutputError, match="is a file; the output must be a folder"):
        store.check_out_dir(tmp_path / "file")
    with pytest.raises(store.OutputError, match="cannot create"):
        store.check_out_dir(tmp_path / "file" / "sub" / "out")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    for overwrite in (False, True):
        with pytest.raises(store.OutputError, match="is not empty and is not a socialjax result folder"):
            store.check_out_dir(tmp_path / "mine", overwrite=overwrite)
    assert store.check_out_dir(tmp_path / "new" / "deeper") == tmp_path / "new" / "deeper"
    assert store.check_out_dir(saved, overwrite=True) == saved
    with pytest.raises(store.OutputError, match="is a folder; give a file path"):
        store.check_out_file(tmp_path)
    with pytest.raises(store.OutputError, match="exists; pass --overwrite"):
        store.check_out_file(tmp_path / "file")
    with pytest.raises(store.OutputError, match="unsupported extension '.png'"):
        store.check_out_file(tmp_path / "x.png", suffixes=(".gif", ".mp4"))


@pytest.mark.parametrize("argv, message", [
    (["train", "ipd-ppo", "--out", "{tmp}/file"], "--out: {tmp}/file is a file"),
    (["train", "ipd-ppo", "--out", "{tmp}/file/x"], "--out: cannot create {tmp}/file"),
    (["train", "ipd-ppo", "--out", "{tmp}/mine"], "is not empty and is not a socialjax result folder"),
    (["train", "donor-evolution", "--out", "{tmp}/mine"], "is not empty and is not a socialjax result folder"),
    (["render", "--env", "cleanup", "--out", "{tmp}"], "--out: {tmp} is a folder"),
    (["render", "--env", "cleanup", "--out", "{tmp}/file.gif"], "file.gif exists; pass --overwrite"),
    (["bench", "--envs", "ipd", "--json", "{tmp}"], "--json: {tmp} is a folder"),
    (["bench", "--envs", "ipd", "--json", "{tmp}/file/x.json"], "--json: {tmp}/file is a file, not a folder"),
    (["train", "--resume", "{tmp}/mine"], "--resume: {tmp}/mine is not a socialjax output folder"),
    (["train", "ipd-ppo", "--resume", "{tmp}/mine"], "drop PRESET"),
    (["train"], "give a preset"),
])
def test_bad_output_paths_are_refused_before_any_work(argv, message, tmp_path, monkeypatch):
    import importlib

    import socialjax.bench as bench

    run_mod = importlib.import_module("socialjax.train.run")

    monkeypatch.setattr(run_mod, "run", lambda *a, **k: pytest.fail("ran before checking the output"))
    monkeypatch.setattr(bench, "bench", lambda *a, **k: pytest.fail("ran before checking the output"))
    (tmp_path / "file").write_text("")
    (tmp_path / "file.gif").write_text("")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("")
    code, out, err = run_cli([a.format(tmp=tmp_path) for a in argv])
    text = str(code) + err
    assert code not in (0, None), out
    assert message.format(tmp=tmp_path) in text


def test_a_second_job_on_the_same_folder_stops_at_once(tmp_path):
    target = tmp_path / "shared"
    with store.claim(target):
        with pytest.raises(store.OutputError, match=r"is being written by .* \(lock "), store.claim(target):
            pass
        code, out, err = run_cli(CLI_ARGS + ["--out", str(target)])
        assert code == 2 and "is being written by" in err
    with store.claim(target):  # released: free again
        pass


def test_a_lock_left_by_a_dead_process_is_taken_over(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / ".shared.lock").write_text(f"{socket.gethostname()} {dead.stdout.strip()}")
    with store.claim(tmp_path / "shared"):
        assert (tmp_path / ".shared.lock").read_text().endswith(str(os.getpid()))
    assert not (tmp_path / ".shared.lock").exists()


# ------------------------------------------------------------------- command line: stop, resume
def _start(argv, cwd):
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    return subprocess.Popen([sys.executable, "-m", "socialjax.cli", *argv], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class Lines:
    """The lines a process writes to one of its streams, read as they come (a thread)."""

    def __init__(self, stream):
        self.lines: list[str] = []
        self._thread = threading.Thread(target=lambda: self.lines.extend(iter(stream.readline, "")), daemon=True)
        self._thread.start()

    def wait_for(self, text: str, proc, timeout: float = 300.0) -> str:
        """The first line holding ``text`` (the process must still run)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            for line in list(self.lines):
                if text in line:
                    return line
            if proc.poll() is not None:
                raise AssertionError(f"ended (status {proc.returncode}) before {text!r}: {self.text()}")
            time.sleep(0.02)
        raise AssertionError(f"no {text!r} in {timeout} s")

    def text(self) -> str:
        self._thread.join(timeout=30)
        return "".join(self.lines)


def _wait_for_checkpoint(folder: Path, proc, timeout=300.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if (folder / "resume" / "manifest.json").is_file():
            return
        if proc.poll() is not None:
            raise AssertionError(f"finished before a checkpoint: {proc.communicate()}")
        time.sleep(0.05)
    raise AssertionError("no checkpoint")


@pytest.fixture(scope="module")
def cli_whole(tmp_path_factory):
    """The command-line run of the stop tests, never stopped (one compiled call per update)."""
    out = tmp_path_factory.mktemp("cli") / "whole"
    code, _, err = run_cli(CLI_ARGS + ["--updates", str(CLI_UPDATES), "--out", str(out)])
    assert code == 0, err
    return results.load_run(out)


@cpu_only("compares bits of separate processes with this one's CPU results")
@pytest.mark.parametrize("how", ["sigint", "sigterm-unsaved", "sigkill"])
def test_a_stopped_command_line_run_resumes_with_the_same_bits(how, cli_whole, tmp_path):
    """``socialjax train``, stopped part-way, then ``--resume``: the result equals an
    uninterrupted run's, bit for bit. Ctrl-C with ``--checkpoint-every 1``, after its
    first checkpoint; SIGTERM without ``--checkpoint-every``, after a progress line: each
    stops within the update under way, saves what is done and says how to resume. SIGKILL
    (``--checkpoint-every 1``): the process dies, its last checkpoint resumes."""
    out = tmp_path / "run"
    argv = CLI_ARGS + ["--updates", str(CLI_UPDATES), "--out", str(out)]
    if how == "sigterm-unsaved":  # progress lines every update, on stderr
        proc = _start([a for a in argv if a != "--quiet"] + ["--set", "log_every=1"], tmp_path)
        err_lines = Lines(proc.stderr)
        err_lines.wait_for(f"/{CLI_UPDATES}]", proc)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
        stderr = err_lines.text()
        last = max(int(line.split("[")[1].split("/")[0]) for line in stderr.splitlines() if f"/{CLI_UPDATES}]" in line)
    else:
        proc = _start(argv + ["--checkpoint-every", "1"], tmp_path)
        _wait_for_checkpoint(out, proc)
        proc.send_signal(signal.SIGINT if how == "sigint" else signal.SIGKILL)
        _, stderr = proc.communicate(timeout=300)
    if how == "sigkill":
        assert proc.returncode == -signal.SIGKILL
    else:
        assert proc.returncode == 130, stderr
        assert f"the training state is saved in {out}/resume; continue with: socialjax train --resume {out}" in stderr
    done = json.loads((out / "resume" / "run.json").read_text())["updates_done"]
    assert 1 <= done < CLI_UPDATES
    if how == "sigterm-unsaved":  # stopped after the update under way: the last one it reported
        assert "SIGTERM: stopping after the update under way" in stderr
        assert done == last, (done, last)
    code, _, err = run_cli(["train", "--resume", str(out), "--quiet"])
    assert code == 0, err
    resumed = results.load_run(out)
    for k in cli_whole.metrics:
        assert_same(resumed.metrics[k], cli_whole.metrics[k], err_msg=k)
    for x, y in zip(leaves(resumed.states), leaves(cli_whole.states), strict=True):
        assert_same(x, y)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_during_compilation_ends_the_process_at_once(signum, tmp_path):
    """A signal while the program compiles ends ``socialjax train`` at once, status 130,
    with a line saying nothing was saved: no waiting for the compiler, no crash of the
    interpreter's shutdown under XLA's threads (which ended earlier runs in a segmentation
    fault), and nothing left in the output folder."""
    out = tmp_path / "run"
    argv = [a for a in CLI_ARGS if a != "--quiet"] + ["--updates", "3", "--out", str(out), "--no-compile-cache"]
    proc = _start(argv, tmp_path)
    out_lines = Lines(proc.stdout)
    out_lines.wait_for("compiling...", proc)
    proc.send_signal(signum)
    start = time.time()
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, (proc.returncode, stderr)
    assert time.time() - start < 10
    assert "stopped at once; nothing was saved" in stderr
    assert store.folder_state(out) == "missing"
    assert not list(tmp_path.glob(".run.*"))  # no lock, no temporary left


def test_a_signal_whose_interrupt_is_lost_while_compiling_still_stops_before_training(monkeypatch):
    """Native code that checks for signals while it compiles may clear the
    ``KeyboardInterrupt`` the handler raised (a CI run trained to the end after a Ctrl-C
    sent while it compiled). The signal is noted, and the engine stops at once when the
    compilation returns instead of training."""
    compile_stages = engine.compile_stages

    def losing_the_interrupt(*args, **kwargs):
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1.0)  # the handler runs here
        except KeyboardInterrupt:
            pass  # cleared, as native code may
        return compile_stages(*args, **kwargs)

    monkeypatch.setattr(engine, "compile_stages", losing_the_interrupt)
    with pytest.raises(KeyboardInterrupt):
        sj.train.run(sj.make("ipd"), TrainConfig().replace(**TINY_IPD), seeds=1, progress=False)


# ------------------------------------------------------------------------ donor-evolution
def killed_after_first_checkpoint(monkeypatch, job, **kwargs) -> None:
    """Run ``job(**kwargs)`` as if the process died right after its first checkpoint was saved."""
    save = results.save_checkpoint

    def save_then_die(*args, **kw):
        save(*args, **kw)
        raise RuntimeError("killed")

    monkeypatch.setattr(results, "save_checkpoint", save_then_die)
    with pytest.raises(RuntimeError, match="killed"):
        job(**kwargs)
    monkeypatch.setattr(results, "save_checkpoint", save)


def test_donor_evolution_checkpoints_and_resumes_with_the_same_bits(tmp_path, monkeypatch):
    """The cultural-evolution job in segments of 2 generations, killed after its first
    checkpoint, then ``socialjax train --resume``: the same metrics as a run never cut."""
    from socialjax.train.cultural_evolution import run_experiment

    settings = dict(num_seeds=2, num_generations=5, multipliers=(1.5, 2.0), verbose=False)
    whole = run_experiment(out_dir=str(tmp_path / "whole"), **settings)
    killed_after_first_checkpoint(monkeypatch, run_experiment, out_dir=str(tmp_path / "cut"), checkpoint_every=2,
                                  **settings)
    assert store.folder_state(tmp_path / "cut") == "unfinished"
    with pytest.raises(store.ResultError, match="holds a donor-evolution run, not a population run"):
        checkpoint = results.load_checkpoint(tmp_path / "cut")
        results.restore_snapshot(checkpoint, None)
    code, out, err = run_cli(["train", "--resume", str(tmp_path / "cut"), "--quiet"])
    assert code == 0, err
    with np.load(tmp_path / "cut" / "metrics.npz") as data:
        for k, v in whole["metrics"].items():
            assert_same(data[k], v, err_msg=k)
    store.verify(tmp_path / "cut", kind="donor-evolution")
    code, out, err = run_cli(["train", "donor-evolution", "--seeds", "2", "--out", str(tmp_path / "whole"), "--quiet"])
    assert code == 2 and "already holds a donor-evolution result; pass --overwrite" in err


def test_overwrite_with_checkpoints_keeps_the_old_result_until_the_new_one_is_complete(tmp_path, monkeypatch):
    """``--overwrite --checkpoint-every``: the first checkpoint goes beside the old result
    (``replacing``), so a kill before the end leaves the old result readable and the new
    run resumable; the finished run then replaces both."""
    from socialjax.train.cultural_evolution import run_experiment

    settings = dict(num_seeds=2, num_generations=5, multipliers=(1.5, 2.0), verbose=False)
    out = tmp_path / "run"
    run_experiment(out_dir=str(out), **settings)
    before = (out / "metrics.npz").read_bytes()
    killed_after_first_checkpoint(monkeypatch, run_experiment, out_dir=str(out), checkpoint_every=2, overwrite=True,
                                  seed=1, **settings)
    assert store.folder_state(out) == "replacing"
    store.verify(out, kind="donor-evolution")  # the old result, intact
    assert (out / "metrics.npz").read_bytes() == before
    code, _, err = run_cli(["train", "donor-evolution", "--seeds", "2", "--out", str(out), "--quiet"])
    assert code == 2 and "holds an unfinished run (and the result it is replacing)" in err
    code, _, err = run_cli(["train", "--resume", str(out), "--quiet"])
    assert code == 0, err
    assert store.folder_state(out) == "result" and not (out / store.RESUME_DIR).exists()
    store.verify(out, kind="donor-evolution")
    assert (out / "metrics.npz").read_bytes() != before  # the new run (seed 1) replaced it


def test_leftovers_of_a_killed_write_are_ignored_and_replacing_is_atomic(tmp_path):
    """A write killed mid-way leaves a hidden ``.NAME.tmp-*`` folder; it neither makes an
    unfinished run look foreign nor is read. Replacing a folder swaps it in one step
    (``renameat2`` exchange on Linux): the old one is gone, and the leftover with it."""
    out = tmp_path / "run"

    def write(n):
        return lambda folder: (folder / "a.txt").write_text(str(n))

    store.write_folder(out, lambda tmp: store.write_subfolder(tmp / store.RESUME_DIR, write(1), kind="checkpoint"),
                       kind=None)
    (out / ".resume.tmp-0badf00d").mkdir()
    (out / ".resume.tmp-0badf00d" / "a.txt").write_text("half")
    assert store.folder_state(out) == "unfinished"
    store.write_subfolder(out / store.RESUME_DIR, write(2), kind="checkpoint")
    assert (out / "resume" / "a.txt").read_text() == "2"
    store.verify(out / "resume", kind="checkpoint")
    assert sorted(p.name for p in out.iterdir()) == ["resume"]  # the leftover is cleared by the next write


# ------------------------------------------------------------------------- output paths
def _write(n):
    return lambda folder: (folder / "a.txt").write_text(str(n))


def test_a_symbolic_link_is_followed_and_stays_a_link(tmp_path):
    """``--out link``: the result is written where the link points; with ``--overwrite``
    the result there is replaced and the link stays a link, nothing hidden left beside it."""
    target = tmp_path / "real"
    link = tmp_path / "link"
    link.symlink_to(target)  # dangling: the folder is made where it points
    assert store.check_out_dir(link) == target
    store.write_folder(link, _write(1), kind="population")
    assert link.is_symlink() and (target / "a.txt").read_text() == "1"
    with pytest.raises(store.OutputError, match="already holds a population result"):
        store.check_out_dir(link)
    store.check_out_dir(link, overwrite=True)
    with store.claim(link):
        assert (tmp_path / ".real.lock").exists()  # the target's lock: both spellings are one folder
        with pytest.raises(store.OutputError, match="is being written by"), store.claim(target):
            pass
        store.write_folder(link, _write(2), kind="population", overwrite=True)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert (target / "a.txt").read_text() == "2"
    store.verify(link, kind="population")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real"]
    (tmp_path / "out.csv")  # a single file through a link, too.write_text("old")
    (tmp_path / "csv-link").symlink_to(tmp_path / "out.csv")
    with store.replacing(tmp_path / "csv-link") as tmp:
        tmp.write_text("new")
    assert (tmp_path / "csv-link").is_symlink() and (tmp_path / "out.csv").read_text() == "new"


def test_files_of_the_user_in_an_output_folder_neither_stop_a_run_nor_are_deleted(tmp_path):
    """A notes file put beside a checkpoint leaves the folder an unfinished run (resumable,
    not foreign), and the result that replaces the folder keeps a copy of it (and of a
    file named like one of the result's, as ``NAME.kept``)."""
    out = tmp_path / "run"
    store.write_folder(out, lambda tmp: store.write_subfolder(tmp / store.RESUME_DIR, _write(1), kind="checkpoint"),
                       kind=None)
    (out / "notes.txt").write_text("lr too high?")
    (out / "a.txt").write_text("mine")
    assert store.folder_state(out) == "unfinished"
    store.check_out_dir(out, resume=True)
    store.write_subfolder(out / store.RESUME_DIR, _write(2), kind="checkpoint")  # the next checkpoint
    store.write_folder(out, _write(3), kind="population", overwrite=True)  # the result
    assert store.folder_state(out) == "result"
    store.verify(out, kind="population")
    assert (out / "notes.txt").read_text() == "lr too high?"
    assert (out / "a.txt").read_text() == "3" and (out / "a.txt.kept").read_text() == "mine"
    store.write_folder(out, _write(4), kind="population", overwrite=True)  # replaced again: the notes stay
    assert (out / "notes.txt").read_text() == "lr too high?"
    assert not (out / store.RESUME_DIR).exists()


def test_the_lock_goes_with_its_process(tmp_path):
    """Two processes on one folder: the second is refused while the first holds it, and
    once the first is gone (killed: no cleanup) the folder is free again."""
    target = tmp_path / "shared"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from socialjax.train import store\n"
                               f"with store.claim({str(target)!r}):\n print('held', flush=True); time.sleep(600)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(store.OutputError, match=f"is being written by .* {holder.pid} "), store.claim(target):
            pass
        code, _, err = run_cli(["train", "--resume", str(target)])  # refused before the folder is read
        assert code == 2 and f"is being written by {socket.gethostname()} {holder.pid}" in err, err
    finally:
        holder.kill()
        holder.wait()
    with store.claim(target):  # its lock file is left, its lock is not
        pass


MOUNT_SCRIPT = """
import os, sys
from pathlib import Path
from socialjax.train import store
mp = Path(sys.argv[1])
assert os.path.ismount(mp)
assert store.check_out_dir(mp) == mp
with store.claim(mp):
    store.write_folder(mp, lambda t: (t / "a.txt").write_text("1"), kind="population")
(mp / "notes.txt").write_text("mine")
store.write_folder(mp, lambda t: (t / "b.txt").write_text("2"), kind="population", overwrite=True)
store.verify(mp, kind="population")
print(sorted(p.name for p in mp.iterdir()))
"""


@pytest.fixture
def mount_point(tmp_path):
    """A command that runs its arguments with a fresh tmpfs mounted at ``tmp_path/mp``
    (a private mount namespace), or a skip where this system cannot make one."""
    mp = tmp_path / "mp"
    mp.mkdir()
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size=64m tmpfs {mp}"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {probe.stderr.strip()}")
    return mp, lambda cmd: ["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size=64m tmpfs {mp} && exec \"$@\"",
                            "sh", *cmd]


def test_a_mount_point_is_written_inside(mount_point, tmp_path):
    """``--out`` naming a mount point (a ``docker -v`` folder): it cannot be renamed, so
    the result is written inside it, old files replaced, unrelated ones kept."""
    mp, inside = mount_point
    done = subprocess.run(inside([sys.executable, "-c", MOUNT_SCRIPT, str(mp)]), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['b.txt', 'manifest.json', 'notes.txt']", done.stdout


# ------------------------------------------------------------------ failures of the system
def _no_space(path):
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


def test_a_full_disk_at_a_checkpoint_is_one_line_and_the_last_checkpoint_resumes(tmp_path, monkeypatch):
    """The disk fills at the second checkpoint: one line naming the path, the cause, what
    to do and the checkpoint that is intact; ``--resume`` then finishes the run."""
    out = tmp_path / "run"
    save = results.save_checkpoint
    calls = []

    def second_fails(out_dir, snapshot, *args, **kwargs):
        calls.append(snapshot.updates_done)
        if len(calls) == 2:
            raise _no_space(Path(out_dir) / "resume" / "state.npz")
        return save(out_dir, snapshot, *args, **kwargs)

    monkeypatch.setattr(results, "save_checkpoint", second_fails)
    code, _, err = run_cli(CLI_ARGS + ["--updates", "6", "--checkpoint-every", "2", "--out", str(out)])
    monkeypatch.setattr(results, "save_checkpoint", save)
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1, err
    assert f"cannot write the checkpoint ({out}/resume/state.npz): No space left on device; the disk is full" in err
    assert f"the last checkpoint (update 2 of 6) in {out}/resume is intact: continue with `socialjax train " \
           f"--resume {out}`" in err
    code, _, err = run_cli(["train", "--resume", str(out), "--quiet"])
    assert code == 0, err
    store.verify(out, kind="population")


def test_a_result_that_cannot_be_written_keeps_the_earlier_one(saved, tmp_path, monkeypatch):
    """Writing the result fails (read-only filesystem): one line, and the earlier result
    that ``--overwrite`` was to replace is intact."""
    out = tmp_path / "run"
    code, _, err = run_cli(CLI_ARGS + ["--updates", "1", "--out", str(out)])
    assert code == 0, err
    before = (out / "manifest.json").read_bytes()

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(out / "metrics.npz"))

    monkeypatch.setattr(np, "savez", read_only)
    code, _, err = run_cli(CLI_ARGS + ["--updates", "1", "--out", str(out), "--overwrite", "--seed", "3"])
    monkeypatch.undo()
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert "trained, but cannot write the result" in err and "the filesystem is read-only" in err
    assert f"the earlier result in {out} is intact" in err
    assert (out / "manifest.json").read_bytes() == before
    store.verify(out, kind="population")
    assert not list(tmp_path.glob(".run.*"))


def test_running_out_of_device_memory_part_way_names_the_sizes_and_keeps_the_checkpoint(tmp_path, monkeypatch):
    """The allocator fails at the fourth compiled call (after XLA's plan fitted): a
    MemoryError naming what a run's memory grows with; the checkpoint before it stays."""
    from socialjax.train import engine

    start, calls = engine.Blocks.start, []

    def fails_at_the_fourth(self, st, xs, done):
        calls.append(st)
        if len(calls) == 4:
            raise jax.errors.JaxRuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1.00GiB.")
        return start(self, st, xs, done)

    monkeypatch.setattr(engine.Blocks, "start", fails_at_the_fourth)
    code, _, err = run_cli(CLI_ARGS + ["--updates", "6", "--checkpoint-every", "1", "--out", str(tmp_path / "run")])
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert "the device ran out of memory part-way (RESOURCE_EXHAUSTED" in err
    assert "a run's memory grows with num_envs (4) x rollout_len (10)" in err
    assert "the last checkpoint (update 1 of 6)" in err and "--resume" in err


DAMAGED_CACHE = """
import sys, jax
from socialjax.train.compilation import enable_cache
enable_cache(sys.argv[1])
print(float(jax.jit(lambda x: x * 2 + 1)(1.0)))
"""


def test_a_damaged_compilation_cache_is_bypassed_with_one_line(tmp_path):
    """Every entry of the cache damaged: the program compiles again, gives its value, and
    JAX's warning per program becomes one line."""
    cache = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_COMPILATION_CACHE", "SOCIALJAX_COMPILATION"))}
    env["JAX_PLATFORMS"] = "cpu"
    first = subprocess.run([sys.executable, "-c", DAMAGED_CACHE, str(cache)], capture_output=True, text=True, env=env)
    assert first.returncode == 0 and first.stdout.strip() == "3.0", first.stderr
    entries = [p for p in cache.iterdir() if p.name.endswith("-cache")]
    assert entries
    for p in entries:
        p.write_bytes(b"not a compiled program")
    again = subprocess.run([sys.executable, "-c", DAMAGED_CACHE, str(cache)], capture_output=True, text=True, env=env)
    assert again.returncode == 0 and again.stdout.strip() == "3.0", again.stderr
    said = [line for line in again.stderr.splitlines() if "compilation cache" in line]
    assert len(said) == 1 and f"the compilation cache {cache} could not be read (a damaged entry" in said[0], \
        again.stderr
    assert "UserWarning" not in again.stderr


_SIGNAL_WHILE_SAVING = """
import os, signal, sys
from socialjax import cli
from socialjax.train import results
write = results.save_run
def save_run(*args, **kwargs):  # the signals arrive while the result is written
    for _ in range(int(sys.argv[1])):
        os.kill(os.getpid(), signal.SIGINT)
    return write(*args, **kwargs)
results.save_run = save_run
sys.exit(cli.main(sys.argv[2:]))
"""


@pytest.mark.parametrize("signals", [1, 2])
def test_a_stop_while_the_result_is_written(signals, tmp_path):
    """Ctrl-C while the trained result is written: a first one lets the writing finish
    (the result is complete, status 130, a line says so); a second stops at once, the
    result is not written, and the line names the checkpoint and the ``--resume``
    command (it said only "stopped at once")."""
    out = tmp_path / "run"
    argv = CLI_ARGS + ["--updates", "2", "--checkpoint-every", "1", "--out", str(out)]
    done = subprocess.run([sys.executable, "-c", _SIGNAL_WHILE_SAVING, str(signals), *argv], cwd=tmp_path,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"}, capture_output=True, text=True, timeout=600)
    assert done.returncode == 130, done.stderr[-2000:]
    if signals == 1:
        assert "SIGINT: finishing writing the result first" in done.stderr
        assert f"stopped once the result was written to {out}" in done.stderr
        results.load_run(out)
    else:
        assert "stopped at once while writing the result; it was not written" in done.stderr
        assert f"in {out}/resume is intact: continue with `socialjax train --resume {out}`" in done.stderr
        assert store.folder_state(out) == "unfinished"
