"""Save, summarise and reload the results of :func:`socialjax.train.run`.

    import socialjax as sj
    from socialjax.train import run
    from socialjax.train.results import save_run, load_run

    env = sj.make("ipd", num_rounds=100)
    result = run(env, config, seeds=8)
    text = save_run(result, "results/my-run", env_name="ipd", env_options={"num_rounds": 100})
    print(text)                                  # the one-screen summary

    loaded = load_run("results/my-run")          # works in a fresh process / notebook
    loaded.train                                 # make_train(env, config), rebuilt (not compiled)
    out = sj.train.play(loaded.train, loaded.learners(0, 3), jax.random.key(0), 200)

``save_run`` writes to ``out_dir``:

- ``metrics.npz``: every array of ``result.metrics`` with axes ``(grid, seed, update,
  member...)`` (see :func:`socialjax.train.make_train`; ``eval/...`` arrays have no
  update axis), plus ``grid/<hyperparameter>`` ``(G,)`` and ``seeds`` ``(S,)``;
- ``config.json``: the :class:`~socialjax.train.TrainConfig` fields, the environment's
  registered name and options (for :func:`socialjax.make`), the preset name, the
  seeds, the base seed and the wall time;
- ``checkpoint.msgpack``: ``result.states`` (the trained learners of every run: leaves
  with leading axes ``(G, S)``), each array under its path name
  (``learners/params/params/Dense_0/kernel``), in the one state format of
  :mod:`socialjax.train.formats` (a msgpack map, format version 2);
- ``curves.png``: reward per step of each member and the social metrics per update, the
  mean across seeds with a bootstrap 95% band (:func:`~socialjax.train.reports.plot_curves`);
- ``summary.txt``: the text that ``save_run`` returns
  (:func:`~socialjax.train.reports.format_summary`).

``load_run(dir)`` reads them back into a :class:`LoadedRun`: the config, the
environment (rebuilt with ``sj.make``), ``train = make_train(env, config)``, the
metrics, and the states restored by name onto the structure ``make_train`` gives, bit
for bit.

An unfinished run's checkpoint (``out_dir/resume/``, :func:`save_checkpoint`: the
snapshot's state and metrics in ``checkpoint.msgpack``, the same format, and
``run.json``) is read back with :func:`load_checkpoint` and :func:`restore_snapshot`,
for a population run and a donor-evolution run alike. Restoring matches every array by
name against the state the run description builds (``jax.eval_shape`` of the job's
``init``): a missing, extra or mis-shaped array is a
:class:`~socialjax.train.store.ResultError` naming it. A result or checkpoint written
by an earlier format version (before 2: the state as numbered leaves) is refused with
one line: ``OUT/resume was written by socialjax checkpoint format 1; this version reads
format 2: rerun it or use the socialjax version that wrote it``. The file names and the
run description are :mod:`socialjax.train.formats`; the summary and the plot
:mod:`socialjax.train.reports`; :func:`to_frame` / :func:`write_csv` (a folder as one
long table) :mod:`socialjax.train.tables`, also importable from here.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from socialjax.train import store
from socialjax.train.config import TrainConfig
from socialjax.train.devices import as_key_data
from socialjax.train.formats import (
    CHECKPOINT_FILE,
    CONFIG_FILE,
    CURVES_FILE,
    KIND,
    METRICS_FILE,
    OUTPUT_FILES,
    RUN_FILE,
    STATE_FILE,
    SUMMARY_FILE,
    check_version,
    config_from_dict,
    config_to_dict,
    json_default,
    matched_state,
    population_spec,
    read_json,
    read_npz,
    read_spec,
    read_state,
    rebuild,
    run_meta,
    state_bytes,
)
from socialjax.train.playback import as_run
from socialjax.train.population import TrainState, make_train
from socialjax.train.reports import format_summary, member_names, plot_curves
from socialjax.train.run import Snapshot
from socialjax.train.spec import JobSpec
from socialjax.train.tables import to_frame, write_csv

__all__ = ["CHECKPOINT_FILE", "CONFIG_FILE", "CURVES_FILE", "Checkpoint", "KIND", "LoadedRun", "METRICS_FILE",
           "OUTPUT_FILES", "RUN_FILE", "STATE_FILE", "SUMMARY_FILE", "config_from_dict", "config_to_dict",
           "format_summary", "load_checkpoint", "load_run", "member_names", "plot_curves", "restore_snapshot",
           "population_spec", "run_meta", "save_checkpoint", "save_run", "to_frame", "write_csv"]


# ----------------------------------------------------------------------------- save
def save_run(
    result,
    out_dir: str | os.PathLike,
    *,
    env_name: str | None = None,
    env_options: dict[str, Any] | None = None,
    preset: str | None = None,
    base_seed: int = 0,
    plot: bool = True,
    overwrite: bool = False,
) -> str:
    """Write ``result`` (a :class:`~socialjax.train.RunResult`) to ``out_dir`` (see the
    module docstring) and return the summary text (also in ``summary.txt``).

    ``env_name`` and ``env_options`` must rebuild the environment with
    ``sj.make(env_name, **env_options)`` (``env_name`` defaults to ``result.env_name``);
    ``base_seed`` is the one passed to ``run``. The folder is written whole or not at
    all (:mod:`socialjax.train.store`); an earlier result there is replaced only with
    ``overwrite=True``."""
    out = Path(out_dir)
    env_name = env_name or result.env_name
    env_options = dict(env_options or {})
    arrays = {name: np.asarray(v) for name, v in result.metrics.items()}
    arrays.update({f"grid/{k}": np.asarray(v) for k, v in result.grid.items()})
    arrays["seeds"] = np.asarray(result.seeds)
    meta = run_meta(population_spec(result.config, env_name, env_options, result.seeds, base_seed, preset))
    meta.update({
        "seconds": float(result.seconds),
        "compile_seconds": float(getattr(result, "compile_seconds", 0.0)),
        "compile_times": {k: list(v) for k, v in getattr(result, "compile_times", {}).items()},
        "per_device": int(getattr(result, "per_device", 0)),
        "chunk": getattr(result, "chunk", None),
        "memory_bytes": int(getattr(result, "memory_bytes", 0)),
        "nan_runs": list(result.nan_runs),
    })
    files = [METRICS_FILE, CONFIG_FILE, CHECKPOINT_FILE] + ([CURVES_FILE] if plot else []) + [SUMMARY_FILE]
    text = format_summary(result, env_name=env_name, env_options=env_options, preset=preset)
    text += f"\nwrote {out}/{{{', '.join(files)}, {store.MANIFEST}}}"

    def write(tmp: Path) -> None:
        np.savez(tmp / METRICS_FILE, **arrays)
        (tmp / CONFIG_FILE).write_text(json.dumps(meta, indent=2, default=json_default) + "\n")
        (tmp / CHECKPOINT_FILE).write_bytes(state_bytes(result.states))
        if plot:
            plot_curves(result.metrics, result.grid, result.config, tmp / CURVES_FILE, title=preset or env_name)
        (tmp / SUMMARY_FILE).write_text(text + "\n")

    store.write_folder(out, write, kind=KIND, overwrite=overwrite, info={"env": env_name, "preset": preset})
    return text


# ----------------------------------------------------------------------------- load
@dataclasses.dataclass
class LoadedRun:
    """What :func:`load_run` returns. ``states`` leaves have leading axes ``(G, S)``."""

    path: Path
    preset: str | None
    env_name: str
    env_options: dict[str, Any]
    config: TrainConfig
    env: Any
    train: Any  # make_train(env, config): carries env, learner, scripted members, seat plan
    seeds: np.ndarray
    base_seed: int
    grid: dict[str, np.ndarray]
    metrics: dict[str, np.ndarray]
    states: Any  # TrainState, numpy leaves (G, S, ...)
    meta: dict[str, Any]
    spec: JobSpec  # the run as one value: env, options, config, seeds, base seed, preset

    @property
    def grid_size(self) -> int:
        return int(len(next(iter(self.grid.values()))))

    def learners(self, g: int = 0, s: int = 0):
        """The learners of run ``(grid point g, seed index s)``, for :func:`~socialjax.train.play`."""
        G, S = self.grid_size, len(self.seeds)
        if not (0 <= g < G and 0 <= s < S):
            raise ValueError(f"run ({g}, {s}) is outside the {G} grid point(s) x {S} seed(s) of {self.path}")
        return as_run(self.states.learners, g, s)


def load_run(path: str | os.PathLike) -> LoadedRun:
    """Reload a folder written by :func:`save_run` (or ``socialjax train``). The folder
    is checked against its manifest first: a partial, damaged or foreign folder raises
    :class:`~socialjax.train.store.ResultError` naming the file."""
    path = Path(path)
    store.verify(path, kind=KIND)
    meta = read_json(path / CONFIG_FILE)
    check_version(path, meta, "result")
    spec = read_spec(path / CONFIG_FILE, meta)
    config, env = rebuild(path / CONFIG_FILE, spec)
    train = make_train(env, config)
    arrays = read_npz(path / METRICS_FILE)
    if "seeds" not in arrays or not any(k.startswith("grid/") for k in arrays):
        raise store.ResultError(f"{path / METRICS_FILE} is not a population result's metrics (no seeds or grid)")
    seeds = arrays.pop("seeds")
    grid = {k[len("grid/"):]: arrays.pop(k) for k in list(arrays) if k.startswith("grid/")}
    G, S = len(next(iter(grid.values()))), len(seeds)
    saved = read_state(path / CHECKPOINT_FILE, "the learners of its config.json")
    states = matched_state(path / CHECKPOINT_FILE, saved["state"], _state_template(train), (G, S),
                           f"the learners of its config.json ({G} grid point(s) x {S} seed(s))")
    return LoadedRun(path, spec.preset, spec.env, dict(spec.env_options), config, env, train, seeds, spec.base_seed,
                     grid, arrays, states, meta, spec)


# ----------------------------------------------------------------------------- checkpoints
def save_checkpoint(out_dir: str | os.PathLike, snapshot, spec: JobSpec, *, segment: int | None,
                    memory: int | None = None) -> Path:
    """Write an unfinished run's checkpoint, ``out_dir/resume/`` (``checkpoint.msgpack``:
    the :class:`~socialjax.train.engine.Snapshot`'s state, every array under its path
    name, and its metrics, in the format of a finished run's ``checkpoint.msgpack``;
    ``run.json``: the job's ``spec`` and the format version (:func:`run_meta`) and the
    segment bookkeeping: ``segment`` is
    the run's ``--checkpoint-every``, ``None`` for a run saved only when it was stopped),
    atomically: the old checkpoint is replaced only once the new one is complete. A
    result already in ``out_dir`` (an ``--overwrite`` run) stays there, with ``resume/``
    beside it, until the new result is complete and replaces both; otherwise ``out_dir``
    holds nothing else until the run finishes. Every job of the engine saves through
    this function."""
    out = Path(out_dir)
    info = {**run_meta(spec), "updates_done": int(snapshot.updates_done),
            "per_device": int(snapshot.per_device), "chunk": snapshot.chunk,
            "segment": None if segment is None else int(segment), "memory": memory}

    def write(folder: Path) -> None:
        (folder / STATE_FILE).write_bytes(state_bytes(snapshot.state, snapshot.metrics))
        (folder / RUN_FILE).write_text(json.dumps(info, indent=2, default=json_default) + "\n")

    if store.folder_state(out) in ("unfinished", "replacing", "result", "foreign"):  # foreign: files put there
        # while the run went on (the folder was checked at its start): kept beside the checkpoint
        return store.write_subfolder(out / store.RESUME_DIR, write, kind="checkpoint")

    def wrap(tmp: Path) -> None:  # a new unfinished-run folder, replacing what --overwrite allowed
        store.write_subfolder(tmp / store.RESUME_DIR, write, kind="checkpoint")

    store.write_folder(out, wrap, kind=None, overwrite=True)
    return out / store.RESUME_DIR


@dataclasses.dataclass
class Checkpoint:
    """An unfinished run read back by :func:`load_checkpoint`: ``meta`` (``run.json``),
    its ``spec`` (``spec.kind`` is ``population`` or ``donor-evolution``), the rebuilt ``config``
    and ``env`` of a population run (``None`` for donor-evolution), and the arrays
    (``state``: ``{name: array}`` by path name, ``metrics``) for :func:`restore_snapshot`."""

    path: Path
    meta: dict
    config: TrainConfig
    env: Any
    state: dict
    metrics: dict
    spec: JobSpec


def load_checkpoint(out_dir: str | os.PathLike) -> Checkpoint:
    """Read ``out_dir/resume/``, checked against its manifest; a checkpoint of another
    format version is refused with one line naming both versions."""
    out = Path(out_dir)
    state = store.folder_state(out)
    if state not in ("unfinished", "replacing"):
        what = {"missing": "does not exist", "empty": "is empty", "result": "holds a finished result",
                "foreign": "is not a socialjax output folder"}[state]
        raise store.ResultError(f"{out} {what}: there is no unfinished run to resume "
                                f"(a run saves one with --checkpoint-every K)")
    folder = out / store.RESUME_DIR
    store.verify(folder, kind="checkpoint")
    meta = read_json(folder / RUN_FILE)
    check_version(folder, meta, "checkpoint")
    spec = read_spec(folder / RUN_FILE, meta)
    config = env = None  # a donor-evolution run is rebuilt by run_experiment from its spec
    if spec.kind == KIND:
        config, env = rebuild(folder / RUN_FILE, spec)
    saved = read_state(folder / STATE_FILE, "the state of its run.json")
    return Checkpoint(folder, meta, config, env, saved["state"], saved["metrics"], spec)


def restore_snapshot(checkpoint: Checkpoint, train):
    """The :class:`~socialjax.train.engine.Snapshot` of a checkpoint, its state arrays
    matched by name (and checked for shape and dtype) against the run state
    ``train.init`` makes: ``train`` is ``make_train(checkpoint.env, checkpoint.config)``
    for a population run, the job (:class:`~socialjax.train.cultural_evolution.DonorEvolution`)
    for a donor-evolution run."""
    meta, job = checkpoint.meta, checkpoint.spec.kind
    if job != KIND and not hasattr(train, "hparam_grid"):
        raise store.ResultError(f"{checkpoint.path} holds a {job} run, not a population run")
    grid = checkpoint.config.hparam_grid() if job == KIND else train.hparam_grid()
    try:
        seeds = len(checkpoint.spec.seeds)
        done = int(meta["updates_done"])
        per_device, chunk = int(meta["per_device"]), meta["chunk"]
    except (KeyError, TypeError, ValueError) as err:
        raise store.ResultError(f"{checkpoint.path / RUN_FILE} does not describe a checkpoint: "
                                f"{type(err).__name__}: {err}") from None
    R = seeds * len(next(iter(grid.values())))
    hp = {k: jnp.asarray(v[0], jnp.float32) for k, v in grid.items()}
    shapes = jax.eval_shape(lambda k: jax.tree_util.tree_map(as_key_data, train.init(k, hp)), jax.random.key(0))
    where = checkpoint.path / STATE_FILE
    state = matched_state(where, checkpoint.state, shapes, (R,), f"the run of its {RUN_FILE}")
    for k, v in checkpoint.metrics.items():
        if v.shape[:2] != (R, done):
            raise store.ResultError(f"{where}: metrics/{k} has shape {list(v.shape)}, "
                                    f"expected {R} runs x {done} updates")
    return Snapshot(done, state, checkpoint.metrics, per_device, chunk)


def _state_template(train):
    """The structure (shapes and dtypes) of one run's :class:`TrainState`, from the
    learner's ``init``, without tracing the training loop."""
    L = train.plan.num_learners
    hp = {k: jnp.zeros((L,), jnp.float32) for k in train.learner.hparams}

    def init():
        learners = jax.vmap(train.learner.init)(jax.random.split(jax.random.key(0), L), hp)
        return jax.tree_util.tree_map(as_key_data, TrainState(learners=learners, halted=jnp.zeros((), bool)))

    return jax.eval_shape(init)
