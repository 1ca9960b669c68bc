"""The one state format of finished and unfinished runs (format version 2): arrays
stored by their pytree path name, restored by name against the state the run
description builds, refused by name when they differ, and folders of an earlier format
refused in one line; the leftovers of a killed write removed by the job that claims the
folder; an output path that is not UTF-8 refused before anything runs.

One tiny IPD run (PPO vs TFT, 2 seeds, 2 updates) is compiled for the module; the
command-line tests end before anything compiles."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import flax.serialization
import jax
import numpy as np
import pytest
from support import assert_same, reseal

import socialjax as sj
from socialjax.train import TrainConfig, formats, results, store

CONFIG = TrainConfig(num_envs=2, rollout_len=4, num_updates=2, hidden=4, update_epochs=1, num_minibatches=1,
                     seating="fixed", seats=(0, 1), scripted=("tft",), evaluate=False)
OPTIONS = {"num_rounds": 4}
SEEDS = 2
CLI = [sys.executable, "-m", "socialjax.cli"]


def ipd():
    return sj.make("ipd", **OPTIONS)


def spec():
    return results.population_spec(CONFIG, "ipd", OPTIONS, range(SEEDS), 0)


def meta():
    return results.run_meta(spec())


def same_bits(a, b, what=""):
    a, b = np.asarray(a), np.asarray(b)
    assert (a.dtype, a.shape) == (b.dtype, b.shape), what
    assert a.tobytes() == b.tobytes(), what


def assert_same_tree(a, b):
    assert jax.tree_util.tree_structure(a) == jax.tree_util.tree_structure(b)
    for (path, x), y in zip(jax.tree_util.tree_flatten_with_path(a)[0], jax.tree_util.tree_leaves(b), strict=True):
        same_bits(x, y, jax.tree_util.keystr(path))


def cli(args, cwd):
    """``socialjax ARGS`` in a process of its own, run in ``cwd`` (this checkout's package)."""
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "JAX_PLATFORMS": "cpu",
           "PYTHONPATH": os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run(CLI + args, cwd=cwd, env=env, capture_output=True, timeout=300)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The run, its snapshot after update 1 saved as a checkpoint (``ckpt/resume``) and
    the finished run saved as a result (``result``)."""
    root = tmp_path_factory.mktemp("format")
    snapshots = []
    result = sj.train.run(ipd(), CONFIG, seeds=SEEDS, progress=False, segment=1, on_segment=snapshots.append)
    assert [s.updates_done for s in snapshots] == [1]
    results.save_checkpoint(root / "ckpt", snapshots[0], spec(), segment=1)
    results.save_run(result, root / "result", env_name="ipd", env_options=OPTIONS, plot=False)
    return {"root": root, "result": result, "snapshot": snapshots[0]}


def _copy(saved, name, tmp_path) -> Path:
    shutil.copytree(saved["root"] / name, tmp_path / name)
    return tmp_path / name


def _edit_state(file: Path, edit) -> None:
    """Apply ``edit`` to the ``{name: array}`` state of a state file, then reseal its folder."""
    raw = flax.serialization.msgpack_restore(file.read_bytes())
    edit(raw["state"])
    file.write_bytes(flax.serialization.msgpack_serialize(raw))
    reseal(file.parent)


# ------------------------------------------------------------------------------ round trip
def test_a_checkpoint_round_trips_bit_for_bit_keyed_by_name(saved):
    """The unfinished run's ``resume/checkpoint.msgpack`` holds every array under its
    path name (``learners/params/...``, the key as key data), and the snapshot read back
    equals the saved one bit for bit; the run resumed from it equals the uncut run."""
    folder = saved["root"] / "ckpt" / store.RESUME_DIR
    assert sorted(p.name for p in folder.iterdir()) == ["checkpoint.msgpack", "manifest.json", "run.json"]
    assert json.loads((folder / "run.json").read_text())["format_version"] == formats.FORMAT_VERSION == 2
    raw = flax.serialization.msgpack_restore((folder / "checkpoint.msgpack").read_bytes())
    assert raw["format_version"] == 2 and set(raw) == {"format_version", "state", "metrics"}
    names = set(raw["state"])
    assert "halted" in names and "key/__key_data__" in names
    assert any(n.startswith("learners/params/") and n.endswith("/kernel") for n in names), sorted(names)
    assert not any(n.startswith("state/0") for n in names)

    snapshot = saved["snapshot"]
    checkpoint = results.load_checkpoint(saved["root"] / "ckpt")
    restored = results.restore_snapshot(checkpoint, sj.train.make_train(checkpoint.env, checkpoint.config))
    assert_same_tree(restored.state, snapshot.state)
    assert sorted(restored.metrics) == sorted(snapshot.metrics)
    for k, v in snapshot.metrics.items():
        same_bits(restored.metrics[k], v, k)
    assert (restored.updates_done, restored.per_device, restored.chunk) == \
           (snapshot.updates_done, snapshot.per_device, snapshot.chunk)
    resumed = sj.train.run(checkpoint.env, checkpoint.config, seeds=SEEDS, progress=False, resume=restored)
    for k, v in saved["result"].metrics.items():
        assert_same(resumed.metrics[k], v, err_msg=k)


def test_a_result_stores_its_learners_in_the_same_format(saved):
    """A finished run's ``checkpoint.msgpack``: the same map, its arrays by name; ``load_run``
    gives the saved states bit for bit."""
    raw = flax.serialization.msgpack_restore((saved["root"] / "result" / "checkpoint.msgpack").read_bytes())
    assert raw["format_version"] == 2 and set(raw) == {"format_version", "state"}
    assert "halted" in raw["state"]
    assert any(n.startswith("learners/params/") and n.endswith("/kernel") for n in raw["state"])
    assert json.loads((saved["root"] / "result" / "config.json").read_text())["format_version"] == 2
    loaded = results.load_run(saved["root"] / "result")
    assert_same_tree(loaded.states, saved["result"].states)


# ------------------------------------------------------------------------------ refusals by name
def _kernel(state: dict) -> str:
    return next(n for n in sorted(state) if n.startswith("learners/params/") and n.endswith("/kernel"))


EDITS = {
    "renamed": (lambda s: s.__setitem__("stopped", s.pop("halted")),
                lambda s: "missing halted; not in this version's state: stopped"),
    "extra": (lambda s: s.__setitem__("learners/extra_field", np.zeros(3, np.float32)),
              lambda s: "not in this version's state: learners/extra_field"),
    "missing": (lambda s: s.pop(_kernel(s)), lambda s: f"missing {_kernel(s)}"),
    "mis-shaped": (lambda s: s.__setitem__("halted", np.zeros((7,), bool)), lambda s: "state array halted is bool[7]"),
}


@pytest.mark.parametrize("edit", list(EDITS))
@pytest.mark.parametrize("which", ["checkpoint", "result"])
def test_a_state_with_other_fields_is_refused_naming_them(saved, tmp_path, which, edit):
    change, said = EDITS[edit]
    name = "ckpt" if which == "checkpoint" else "result"
    folder = _copy(saved, name, tmp_path)
    file = folder / (store.RESUME_DIR if which == "checkpoint" else ".") / "checkpoint.msgpack"
    original = dict(flax.serialization.msgpack_restore(file.read_bytes())["state"])
    _edit_state(file, change)
    with pytest.raises(store.ResultError) as err:
        if which == "checkpoint":
            checkpoint = results.load_checkpoint(folder)
            results.restore_snapshot(checkpoint, sj.train.make_train(checkpoint.env, checkpoint.config))
        else:
            results.load_run(folder)
    message = str(err.value)
    assert said(original) in message and message.startswith(str(file)), message
    assert "\n" not in message


def test_a_field_renamed_in_the_code_is_named(saved, monkeypatch):
    """The state class changed since the file was written (here its ``learners`` field
    renamed ``members``): the arrays are named, not read in leaf order."""
    template = results._state_template

    def renamed(train):
        t = template(train)
        return {"members": t.learners, "halted": t.halted}

    monkeypatch.setattr(results, "_state_template", renamed)
    with pytest.raises(store.ResultError, match=r"missing members/params/.*not in this version's state: "
                                                r"learners/params/"):
        results.load_run(saved["root"] / "result")


# ------------------------------------------------------------------------------ earlier versions
def _old_checkpoint(out: Path, snapshot, version) -> None:
    """A checkpoint as socialjax wrote it before format 2: ``resume/state.npz`` with the
    state leaves numbered in pytree order, ``run.json`` of format ``version`` (None: none)."""
    arrays = {f"state/{i:05d}": np.asarray(x) for i, x in enumerate(jax.tree_util.tree_leaves(snapshot.state))}
    arrays.update({f"metrics/{k}": np.asarray(v) for k, v in snapshot.metrics.items()})
    info = {**meta(), "updates_done": snapshot.updates_done, "per_device": snapshot.per_device,
            "chunk": snapshot.chunk, "segment": 1, "memory": None}
    info.pop("format_version")
    if version is not None:
        info["format_version"] = version

    def write(folder: Path) -> None:
        np.savez(folder / "state.npz", **arrays)
        (folder / "run.json").write_text(json.dumps(info, indent=2) + "\n")

    store.write_folder(out, lambda tmp: store.write_subfolder(tmp / store.RESUME_DIR, write, kind="checkpoint"),
                       kind=None)


@pytest.mark.parametrize("version", [1, None])
def test_an_old_format_checkpoint_is_refused_in_one_line(saved, tmp_path, version):
    """A ``resume/`` of format 1 (or of no format version): ``load_checkpoint`` and
    ``socialjax train --resume`` refuse it with one line naming both versions (exit status
    2, no traceback); the ``--resume`` claim also removes a killed write's leftover of
    that folder, and nothing else."""
    out = tmp_path / "old"
    _old_checkpoint(out, saved["snapshot"], version)
    line = (f"{out}/resume was written by socialjax checkpoint format 1; this version reads format 2: rerun it "
            "or use the socialjax version that wrote it")
    with pytest.raises(store.ResultError) as err:
        results.load_checkpoint(out)
    assert str(err.value) == line
    (tmp_path / ".old.tmp-deadbeef").mkdir()
    (tmp_path / ".old.tmp-deadbeef" / "metrics.npz").write_bytes(b"half")
    (tmp_path / ".other.tmp-x").mkdir()
    done = cli(["train", "--resume", str(out)], tmp_path)
    stderr = done.stderr.decode()
    assert done.returncode == 2, stderr
    assert f"--resume: {line}" in stderr.splitlines()[-1]
    assert "Traceback" not in stderr
    assert not (tmp_path / ".old.tmp-deadbeef").exists()
    assert (tmp_path / ".other.tmp-x").is_dir()
    assert store.folder_state(out) == "unfinished"  # refused, not removed


@pytest.mark.parametrize("version", [1, None])
def test_an_old_format_result_is_refused_in_one_line(saved, tmp_path, version):
    folder = _copy(saved, "result", tmp_path)
    described = json.loads((folder / "config.json").read_text())
    described.pop("format_version")
    if version is not None:
        described["format_version"] = version
    (folder / "config.json").write_text(json.dumps(described))
    reseal(folder)
    with pytest.raises(store.ResultError) as err:
        results.load_run(folder)
    assert str(err.value) == (f"{folder} was written by socialjax result format 1; this version reads format 2: "
                              "rerun it or use the socialjax version that wrote it")


def test_a_state_file_of_format_1_is_refused(saved, tmp_path):
    """A ``checkpoint.msgpack`` as format 1 wrote it (``flax.serialization.to_bytes`` of the
    states, no version) under a run description of format 2: refused by its version."""
    folder = _copy(saved, "result", tmp_path)
    (folder / "checkpoint.msgpack").write_bytes(flax.serialization.to_bytes(saved["result"].states))
    reseal(folder)
    with pytest.raises(store.ResultError, match="checkpoint.msgpack was written by socialjax checkpoint format 1; "
                                                "this version reads format 2"):
        results.load_run(folder)


# ------------------------------------------------------------------------------ donor-evolution
def test_donor_evolution_checkpoints_in_the_same_format(tmp_path, monkeypatch):
    """The donor job's snapshot goes through the same save and restore: its arrays by
    name (``thetas``, ``key/__key_data__``), format 2, restored bit for bit by name."""
    from socialjax.train.cultural_evolution import DonorEvolutionConfig, make_donor_evolution, run_experiment

    save = results.save_checkpoint
    kept = []

    def save_then_die(out_dir, snapshot, *args, **kwargs):
        kept.append(snapshot)
        save(out_dir, snapshot, *args, **kwargs)
        raise RuntimeError("killed")

    monkeypatch.setattr(results, "save_checkpoint", save_then_die)
    with pytest.raises(RuntimeError, match="killed"):
        run_experiment(num_seeds=2, num_generations=2, multipliers=(1.5,), out_dir=str(tmp_path / "cut"),
                       checkpoint_every=1, verbose=False)
    monkeypatch.undo()
    folder = tmp_path / "cut" / store.RESUME_DIR
    raw = flax.serialization.msgpack_restore((folder / "checkpoint.msgpack").read_bytes())
    assert raw["format_version"] == 2 and set(raw["state"]) == {"thetas", "key/__key_data__"}
    assert json.loads((folder / "run.json").read_text())["format_version"] == 2
    checkpoint = results.load_checkpoint(tmp_path / "cut")
    job = make_donor_evolution(sj.make("donor_game"), DonorEvolutionConfig(num_generations=2), multipliers=(1.5,))
    restored = results.restore_snapshot(checkpoint, job)
    assert_same_tree(restored.state, kept[0].state)
    with pytest.raises(store.ResultError, match="holds a donor-evolution run, not a population run"):
        results.restore_snapshot(checkpoint, None)
    _edit_state(folder / "checkpoint.msgpack", lambda s: s.__setitem__("strategies", s.pop("thetas")))
    with pytest.raises(store.ResultError, match="missing thetas; not in this version's state: strategies"):
        results.restore_snapshot(results.load_checkpoint(tmp_path / "cut"), job)


# ------------------------------------------------------------------------------ leftovers
def test_claiming_a_folder_removes_its_leftovers_and_nothing_else(tmp_path):
    """``.out.tmp-*`` / ``.out.old-*`` beside ``out`` and a mount point's or checkpoint's
    temporaries inside it are a killed write's: the job that holds the lock removes them.
    Other folders' temporaries, a file's temporary and the user's files stay."""
    out = tmp_path / "out"
    gone = [tmp_path / ".out.tmp-deadbeef", tmp_path / ".out.old-0badf00d", out / ".socialjax.tmp-12345678",
            out / ".resume.tmp-abcdef01"]
    kept = [tmp_path / ".other.tmp-x", tmp_path / ".other.tmp-deadbeef", tmp_path / ".outer.tmp-deadbeef",
            tmp_path / "out.tmp-deadbeef", tmp_path / ".out.tmp-notours", out / "notes.txt", out / ".hidden"]
    out.mkdir()
    for p in gone + kept[:-2]:
        p.mkdir()
        (p / "a.txt").write_text("half")
    for p in kept[-2:]:
        p.write_text("mine")
    (tmp_path / ".out.tmp-deadbeef.csv").write_text("a file being replaced")  # store.replacing's temporary
    kept.append(tmp_path / ".out.tmp-deadbeef.csv")
    assert store.leftovers(out) == sorted(gone)
    with store.claim(out):
        assert not [p for p in gone if p.exists()]
    assert all(p.exists() for p in kept), [p for p in kept if not p.exists()]


# ------------------------------------------------------------------------------ non-UTF-8 paths
def test_a_path_that_is_not_utf8_is_refused(tmp_path):
    bad = str(tmp_path / "res\udcff")
    for check in (store.check_out_dir, store.check_out_file):
        with pytest.raises(store.OutputError, match=r"is not valid UTF-8: use a UTF-8 name"):
            check(bad)
    with pytest.raises(store.OutputError, match=r"b'.*res\\xff' is not valid UTF-8"), store.claim(bad):
        pass
    assert sorted(os.listdir(tmp_path)) == []
    assert store.check_out_dir(tmp_path / "résumé") == tmp_path / "résumé"  # UTF-8 beyond ASCII is fine


def test_train_refuses_a_non_utf8_out_before_compiling(tmp_path):
    """``socialjax train ipd-tft --out $'res\\xff'``: exit status 2 and one line saying to
    use a UTF-8 name, at once, nothing written (it used to train, then fail writing
    summary.txt with nothing saved)."""
    start = time.time()
    done = cli(["train", "ipd-tft", "--out", b"res\xff"], tmp_path)
    took = time.time() - start
    stderr, stdout = done.stderr.decode(), done.stdout.decode()
    assert done.returncode == 2, stderr
    assert "--out: the path b'res\\xff' is not valid UTF-8: use a UTF-8 name" in stderr
    assert "Traceback" not in stderr and "compiling" not in stdout
    assert os.listdir(tmp_path) == []
    assert took < 60, took  # imports only: training this preset compiles for minutes on a small CPU
