"""Experiment tracking: a run's metrics streamed to TensorBoard, Weights & Biases or CSV
while it trains, one curve per (grid point, seed).

The engine (:func:`socialjax.train.engine.run_job`) already brings every segment's
metrics to the host between its compiled calls (one call per update where Ctrl-C can
stop the run, otherwise one per ``log_every`` updates: the call the progress line is
printed after), so tracking adds no transfer: each :class:`Tracker` receives the same
arrays, reduced by the job to one number per run and update (``{name: (R, K)}``, see
:meth:`~socialjax.train.run.PopulationJob.tracked`). Nothing runs on the host from
inside the compiled loop (a program that calls the host is never written to JAX's
persistent compilation cache).

A tracker's life: :meth:`Tracker.open` with the :class:`RunSet` (the runs, their grid
points and seeds, and the run's metadata: the config and the environment), then
:meth:`Tracker.log` after every segment, :meth:`Tracker.summary` with the run's end (the
evaluation), :meth:`Tracker.artifact` for files made after the run (the final figures),
:meth:`Tracker.close`. ``sj.train.run(..., log=...)`` takes
tracker objects or the names in :data:`TRACKERS` (made by :func:`make_trackers` under
``log_dir``); it closes the trackers it made from names and leaves the objects it was
given open, so that their owner can add artifacts (trackers are context managers).

Listeners. The engine never calls a tracker itself: it calls one :class:`Listeners`,
the fan-out to the trackers and then its own progress lines
(:class:`~socialjax.train.progress.ProgressLines`) or, in Jupyter, the live display
(:class:`~socialjax.viz.live.LiveDisplay`), in that order, with the same host arrays.
A listener whose call raises (any ``Exception``: a full disk, a package missing at
``open``, a W&B error, too many W&B runs) is dropped at once: one line on stderr names
it, where it failed and why (``socialjax: the csv tracker failed at update 3 (cannot
write runs/.../metrics.csv: No space left on device); training goes on without it``),
it is closed quietly, and the run goes on; the run's result lists those lines
(``listener_failures`` of :class:`~socialjax.train.engine.JobResult` and
:class:`~socialjax.train.run.RunResult`). A listener never opened (its run was read back,
not trained) gets no ``log``, ``summary`` nor ``artifact``. The commands pass their
trackers as one :class:`Listeners`, so that the figures added after the run and the
closing go through the same rules.

Folders. :func:`make_trackers` with :func:`experiment_name` writes under
``<folder>/<label>/<date-time>[-n]/<kind>``: the date-time folder is made exclusively
(:func:`new_folder`), so two runs started in the same second with the same label get
folders of their own (the second ``<date-time>-2``). A tracker object
opened a second time (one :class:`CsvLog` or :class:`TensorBoardLog` passed to two
``sj.train.run`` calls) never writes over its first run's record: the first run writes
in its folder, the second in ``<folder>/2/``, the third in ``<folder>/3/`` (the next
number not taken), each a complete record of its own. :class:`WandbLog` starts new W&B
runs at every ``open``.

- :class:`CsvLog`: ``metrics.csv``, one row per run and update, written as it goes, with
  ``runs.csv`` (each run's grid point, seed and hyperparameters), ``summary.csv`` (each
  run's evaluation), ``meta.json``, and the artifacts copied beside them. Needs nothing beyond the core install.
- :class:`TensorBoardLog`: one event file per run in ``<folder>/<run name>/`` (so
  TensorBoard draws one curve per run), with each run's hyperparameters for the HParams
  dashboard and the metadata as text; artifacts as images. ``pip install
  "socialjax[tensorboard]"``.
- :class:`WandbLog`: one W&B run per (grid point, seed), grouped by experiment, the
  metadata and the run's hyperparameters as its config; artifacts as images of the first
  run. ``pip install "socialjax[wandb]"``; ``mode="offline"`` needs no network
  (``wandb sync`` uploads later); by default wandb's own settings decide
  (``WANDB_MODE``, ``WANDB_PROJECT``, ``WANDB_ENTITY``). Online without a login, its
  ``open`` fails at once (one line, the training goes on); a server that does not
  answer, after :data:`WANDB_INIT_TIMEOUT` seconds.

Where it lives: the protocol, :class:`RunSet` and :class:`Listeners` in
:mod:`socialjax.train.listeners`; the three trackers in :mod:`socialjax.train.trackers`;
here the names, the folders and :func:`make_trackers`, and every name above imported
from here.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Sequence
from pathlib import Path

from socialjax.train.listeners import Listeners, RunSet, Tracker, TrackerError
from socialjax.train.trackers import (
    WANDB_INIT_TIMEOUT,
    WANDB_LOGIN,
    WANDB_MAX_RUNS,
    CsvLog,
    TensorBoardLog,
    WandbLog,
    first_new,
)

#: the names :func:`make_trackers` understands (``socialjax train --log NAME``)
TRACKERS = ("csv", "tensorboard", "wandb")


def make_trackers(names: Sequence[str], folder: str | os.PathLike, experiment: str) -> list[Tracker]:
    """The trackers ``names`` (each one of :data:`TRACKERS`, at most once), writing under
    ``<folder>/<experiment>/<kind>`` (W&B: its runs under ``<folder>/<experiment>/wandb``),
    the folder ``<folder>/<experiment>`` made here for them alone (:func:`new_folder`:
    taken by another run, ``<experiment>-2``, ``-3``, ...); a missing optional package is
    a clear ``ImportError`` naming the extra, before any training."""
    names = list(names)
    unknown = [n for n in names if n not in TRACKERS]
    if unknown:
        raise ValueError(f"unknown tracker(s) {unknown}: choose from {TRACKERS}")
    if len(set(names)) != len(names):
        raise ValueError(f"a tracker named twice: {names}")
    root = new_folder(Path(folder) / experiment)
    made = {"csv": lambda: CsvLog(root / "csv"), "tensorboard": lambda: TensorBoardLog(root / "tensorboard"),
            "wandb": lambda: WandbLog(root)}
    return [made[n]() for n in names]


def as_listeners(log: Sequence[str | Tracker] | Listeners, folder: str | os.PathLike,
                 label: str) -> tuple[Listeners, list[Tracker]]:
    """``log`` (tracker names, tracker objects, or a :class:`Listeners`) as one
    :class:`Listeners`, and the trackers made here from names, under ``<folder>/<label>/<date-time>``
    (their maker closes them; objects and a given :class:`Listeners` are their owner's)."""
    if isinstance(log, Listeners):
        return log, []
    named = [x for x in log if isinstance(x, str)]
    made = make_trackers(named, folder, experiment_name(label)) if named else []
    return Listeners([*made, *(x for x in log if not isinstance(x, str))]), made


def experiment_name(label: str) -> str:
    """``<label>/<date-time>``: the folder of a run of ``label`` (``/`` in ``label`` kept
    as folders), so that a rerun's curves do not join the last one's; two runs of the
    same second are told apart when the folder is made (:func:`new_folder`)."""
    clean = "".join(c if c.isalnum() or c in "-_.=,/" else "-" for c in label).strip("/") or "run"
    return f"{clean}/{time.strftime('%Y%m%d-%H%M%S')}"


def new_folder(path: str | os.PathLike) -> Path:
    """``path`` made now and by this call alone (``mkdir`` without ``exist_ok``, its
    parents as needed); when it exists (another run of the same label started in the
    same second), ``<path>-2``, ``<path>-3``, ...: the first one this call makes. A
    folder that cannot be made at all (no permission, a full disk) is returned as
    ``path``, unmade: the trackers' ``open`` then fails there and says why, and
    training goes on without them."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return first_new(path if n == 1 else path.with_name(f"{path.name}-{n}") for n in itertools.count(1))
    except OSError:
        return path


__all__ = ["TRACKERS", "WANDB_INIT_TIMEOUT", "WANDB_LOGIN", "WANDB_MAX_RUNS", "CsvLog", "Listeners", "RunSet",
           "TensorBoardLog", "Tracker", "TrackerError", "WandbLog", "as_listeners", "experiment_name",
           "make_trackers", "new_folder"]
