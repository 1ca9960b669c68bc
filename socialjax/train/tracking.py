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
  (``WANDB_MODE``, ``WANDB_PROJECT``, ``WANDB_ENTITY``).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import os
import shutil
import socket
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

#: the names :func:`make_trackers` understands (``socialjax train --log NAME``)
TRACKERS = ("csv", "tensorboard", "wandb")
WANDB_MAX_RUNS = 128  # one W&B run per (grid point, seed): more is a sweep for TensorBoard or CSV


@dataclasses.dataclass(frozen=True)
class RunSet:
    """The runs a tracker follows: ``R = G x S`` runs, grid-major (run ``r`` is grid point
    ``r // S`` and seed ``seeds[r % S]``), of one ``experiment``; ``grid`` ``{name: (G,)}``,
    ``seeds`` ``(S,)``, ``num_updates``, and ``meta``: the run's description as JSON
    values (the environment, the config)."""

    experiment: str
    grid: dict[str, np.ndarray]
    seeds: np.ndarray
    num_updates: int
    meta: dict[str, Any]

    @property
    def num_points(self) -> int:
        return len(next(iter(self.grid.values()))) if self.grid else 1

    def __len__(self) -> int:
        return self.num_points * len(self.seeds)

    @property
    def swept(self) -> tuple[str, ...]:
        """The hyperparameters that differ between grid points (they name the runs)."""
        return tuple(k for k, v in self.grid.items() if len(np.unique(np.asarray(v))) > 1)

    def point(self, r: int) -> tuple[int, int]:
        """``(grid point, seed)`` of run ``r``."""
        g, s = divmod(int(r), len(self.seeds))
        return g, int(self.seeds[s])

    def point_name(self, g: int) -> str:
        """``"lr=0.001,gamma=0.99"`` (the swept values), or ``""`` without a sweep."""
        return ",".join(f"{k}={_number(self.grid[k][g]):g}" for k in self.swept)

    def name(self, r: int) -> str:
        """The run's name: ``"<point>/seed<seed>"`` (``"seed<seed>"`` without a sweep)."""
        g, seed = self.point(r)
        point = self.point_name(g)
        return f"{point}/seed{seed}" if point else f"seed{seed}"

    def hparams(self, r: int) -> dict[str, float | int]:
        """Run ``r``'s swept hyperparameters and its seed (the rest are in ``meta``)."""
        g, seed = self.point(r)
        return {**{k: _number(self.grid[k][g]) for k in self.swept}, "seed": seed}


class Tracker(Protocol):
    """Where a run's metrics go while it trains (see the module docstring)."""

    def open(self, runs: RunSet) -> None:
        """Before the first segment: the runs to follow."""

    def log(self, update: int, values: dict[str, np.ndarray]) -> None:
        """After a segment: ``values`` ``{name: (R, K)}`` of updates ``update .. update +
        K - 1`` (0-based; the step logged is the number of updates done, ``update + k + 1``)."""

    def summary(self, values: dict[str, np.ndarray]) -> None:
        """After the last update: ``values`` ``{name: (R,)}``, one number per run of the
        run's end (the evaluation of the trained populations)."""

    def artifact(self, path: str | os.PathLike) -> None:
        """A file made from the run (a figure): kept with the run's record."""

    def close(self) -> None:
        """The run is over: flush and release."""


class _Lifecycle:
    """What every tracker shares: the :class:`RunSet` of its current ``open``, and the
    context manager that closes it."""

    runs: RunSet | None = None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _opened(self) -> RunSet:
        if self.runs is None:
            raise RuntimeError(f"{type(self).__name__} is not open: open(runs) comes first")
        return self.runs


def _steps(update: int, values: dict[str, np.ndarray]) -> range:
    """The steps (updates done) of a segment's ``values``."""
    K = np.shape(next(iter(values.values())))[1] if values else 0
    return range(update + 1, update + K + 1)


class CsvLog(_Lifecycle):
    """A folder of CSV: ``metrics.csv`` (columns ``run, grid_point, seed, update`` and one
    per metric; a row per run and update, flushed after every segment), ``runs.csv`` (a
    row per run: its name, grid point, seed and hyperparameters), ``meta.json``, and each
    artifact copied in. An empty cell is a NaN (e.g. a return where no episode ended)."""

    def __init__(self, folder: str | os.PathLike):
        self.folder = Path(folder)
        self._file = None
        self._writer = None
        self._columns: list[str] | None = None

    def open(self, runs: RunSet) -> None:
        self.close()
        self.runs = runs
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "meta.json").write_text(json.dumps({"experiment": runs.experiment, **runs.meta}, indent=2,
                                                          default=_plain) + "\n")
        with open(self.folder / "runs.csv", "w", newline="") as f:
            rows = [{"run": runs.name(r), "grid_point": runs.point(r)[0], **runs.hparams(r)} for r in range(len(runs))]
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        self._file = open(self.folder / "metrics.csv", "w", newline="")  # noqa: SIM115 (open across log calls)
        self._writer = csv.writer(self._file)
        self._columns = None

    def log(self, update: int, values: dict[str, np.ndarray]) -> None:
        runs = self._opened()
        if self._columns is None:
            self._columns = sorted(values)
            self._writer.writerow(["run", "grid_point", "seed", "update", *self._columns])
        arrays = [np.asarray(values[k], np.float32) for k in self._columns]
        rows = []
        for r in range(len(runs)):
            g, seed = runs.point(r)
            name = runs.name(r)
            for k, step in enumerate(_steps(update, values)):
                rows.append([name, g, seed, step, *(_cell(a[r, k]) for a in arrays)])
        self._writer.writerows(rows)
        self._file.flush()

    def summary(self, values: dict[str, np.ndarray]) -> None:
        """``summary.csv``: a row per run (``run, grid_point, seed`` and one column per value)."""
        runs = self._opened()
        names = sorted(values)
        with open(self.folder / "summary.csv", "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["run", "grid_point", "seed", *names])
            for r in range(len(runs)):
                writer.writerow([runs.name(r), *runs.point(r), *(_cell(np.float32(values[k][r])) for k in names)])

    def artifact(self, path: str | os.PathLike) -> None:
        self._opened()
        shutil.copy2(path, self.folder / Path(path).name)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _number(x) -> float:
    """A float32 value as the shortest decimal that reads back as it (0.001, not 0.0010000000474974513)."""
    return float(str(np.float32(x)))


def _cell(x: np.float32) -> str:
    return "" if math.isnan(x) else str(x)


class TensorBoardLog(_Lifecycle):
    """TensorBoard event files, one folder per run (``<folder>/<run name>/``) so that
    TensorBoard draws one curve per (grid point, seed); each run's file also holds its
    hyperparameters (the HParams dashboard) and the metadata (the Text dashboard).
    Artifacts are images in a run of their own, ``<folder>/figures``. Written
    synchronously with TensorBoard's own record format and flushed after every segment:
    ``tensorboard --logdir <folder>`` shows a sweep while it runs."""

    def __init__(self, folder: str | os.PathLike):
        _require("tensorboard", "tensorboard")
        self.folder = Path(folder)
        self._paths: list[Path] = []

    def open(self, runs: RunSet) -> None:
        from tensorboard.plugins.hparams import summary_v2 as hparams_summary

        self.runs = runs
        meta = json.dumps({"experiment": runs.experiment, **runs.meta}, indent=2, default=_plain)
        self._paths = [self._new_file(runs.name(r)) for r in range(len(runs))]
        for r, path in enumerate(self._paths):
            pb = hparams_summary.hparams_pb(runs.hparams(r), trial_id=runs.name(r))
            self._write(path, [_event(0, pb), _event(0, _text_summary("meta", meta))])

    def _new_file(self, run: str) -> Path:
        folder = self.folder / run
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"events.out.tfevents.{time.time():.6f}.{socket.gethostname()}.socialjax"
        from tensorboard.compat.proto import event_pb2

        self._write(path, [event_pb2.Event(wall_time=time.time(), file_version="brain.Event:2")])
        return path

    def log(self, update: int, values: dict[str, np.ndarray]) -> None:
        self._opened()
        names = sorted(values)
        arrays = [np.asarray(values[k], np.float64) for k in names]
        for r, path in enumerate(self._paths):
            self._write(path, [_event(step, _scalars({n: a[r, k] for n, a in zip(names, arrays)}))
                               for k, step in enumerate(_steps(update, values))])

    def summary(self, values: dict[str, np.ndarray]) -> None:
        """Scalars at the last step (``num_updates``), each run in its own file."""
        runs = self._opened()
        for r, path in enumerate(self._paths):
            self._write(path, [_event(runs.num_updates, _scalars({n: v[r] for n, v in values.items()}))])

    def artifact(self, path: str | os.PathLike) -> None:
        from PIL import Image  # on call, as in socialjax.viz: Pillow only serves the figure
        from tensorboard.compat.proto import summary_pb2

        runs = self._opened()
        path = Path(path)
        with Image.open(path) as image:
            width, height = image.size
        summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(
            tag=path.stem, image=summary_pb2.Summary.Image(height=height, width=width, colorspace=4,
                                                           encoded_image_string=path.read_bytes()))])
        self._write(self._new_file("figures"), [_event(runs.num_updates, summary)])

    @staticmethod
    def _write(path: Path, events: list) -> None:
        from tensorboard.summary.writer.record_writer import RecordWriter

        with open(path, "ab") as f:
            writer = RecordWriter(f)
            for event in events:
                writer.write(event.SerializeToString())

    def close(self) -> None:
        self._paths = []


def _event(step: int, summary):
    from tensorboard.compat.proto import event_pb2

    return event_pb2.Event(wall_time=time.time(), step=int(step), summary=summary)


def _scalars(values: dict[str, float]):
    """A summary of scalars, the finite ones (a NaN is a value nobody measured)."""
    from tensorboard.compat.proto import summary_pb2

    return summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=name, simple_value=float(v))
                                      for name, v in values.items() if np.isfinite(v)])


def _text_summary(tag: str, text: str):
    """A Text-dashboard summary of ``text`` (TensorBoard's text plugin format)."""
    from tensorboard.compat.proto import summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
    from tensorboard.plugins.text import metadata

    tensor = tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING, string_val=[text.encode()],
                                    tensor_shape=tensor_shape_pb2.TensorShapeProto())
    value = summary_pb2.Summary.Value(tag=tag, metadata=metadata.create_summary_metadata("", ""), tensor=tensor)
    return summary_pb2.Summary(value=[value])


class WandbLog(_Lifecycle):
    """Weights & Biases: one W&B run per (grid point, seed), named as in :class:`RunSet`,
    grouped by experiment, its config the metadata with the run's ``hparams`` and
    ``seed``; the step logged is the number of updates done. ``mode``: ``"offline"``
    (no network: ``wandb sync <dir>/wandb/offline-run-*`` uploads later), ``"online"``,
    or ``None`` (wandb's settings: ``WANDB_MODE``); ``project`` ``None``: ``WANDB_PROJECT``
    or ``"socialjax"``. Artifacts are logged as images of the first run. At most
    ``max_runs`` runs (a W&B run each): a larger sweep belongs in TensorBoard or CSV."""

    def __init__(self, folder: str | os.PathLike | None = None, *, project: str | None = None,
                 entity: str | None = None, mode: str | None = None, max_runs: int = WANDB_MAX_RUNS):
        _require("wandb", "wandb")
        if mode not in (None, "online", "offline", "disabled"):
            raise ValueError(f"mode must be 'online', 'offline', 'disabled' or None, got {mode!r}")
        self.folder = None if folder is None else Path(folder)
        self.project = project or os.environ.get("WANDB_PROJECT") or "socialjax"
        self.entity, self.mode, self.max_runs = entity, mode, max_runs
        self._runs: list = []

    def open(self, runs: RunSet) -> None:
        import wandb

        if len(runs) > self.max_runs:
            raise ValueError(f"{len(runs)} runs would be {len(runs)} W&B runs (max_runs={self.max_runs}): log a "
                             "sweep this large to TensorBoard or CSV, or raise max_runs")
        self.close()
        self.runs = runs
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)
        settings = wandb.Settings(silent=True, console="off", x_disable_stats=True)
        self._runs = [
            wandb.init(project=self.project, entity=self.entity, group=runs.experiment, name=runs.name(r),
                       config={**json.loads(json.dumps(runs.meta, default=_plain)), "hparams": runs.hparams(r),
                               "seed": runs.point(r)[1]},
                       dir=None if self.folder is None else str(self.folder), mode=self.mode,
                       reinit="create_new", settings=settings)
            for r in range(len(runs))
        ]

    def log(self, update: int, values: dict[str, np.ndarray]) -> None:
        self._opened()
        arrays = {name: np.asarray(v, np.float32) for name, v in values.items()}
        for r, run in enumerate(self._runs):
            for k, step in enumerate(_steps(update, values)):
                run.log({name: _number(a[r, k]) for name, a in arrays.items() if np.isfinite(a[r, k])}, step=step)

    def summary(self, values: dict[str, np.ndarray]) -> None:
        """Each run's W&B summary (the numbers its row shows in a project's table)."""
        self._opened()
        for r, run in enumerate(self._runs):
            run.summary.update({name: _number(v[r]) for name, v in values.items() if np.isfinite(v[r])})

    def artifact(self, path: str | os.PathLike) -> None:
        import wandb

        runs = self._opened()
        if self._runs:
            self._runs[0].log({f"figures/{Path(path).stem}": wandb.Image(str(path))}, step=runs.num_updates)

    def close(self) -> None:
        for run in self._runs:
            run.finish()
        self._runs = []


def make_trackers(names: Sequence[str], folder: str | os.PathLike, experiment: str) -> list[Tracker]:
    """The trackers ``names`` (each one of :data:`TRACKERS`, at most once), writing under
    ``<folder>/<experiment>/<kind>`` (W&B: its runs under ``<folder>/<experiment>/wandb``);
    a missing optional package is a clear ``ImportError`` naming the extra, before any
    training."""
    names = list(names)
    unknown = [n for n in names if n not in TRACKERS]
    if unknown:
        raise ValueError(f"unknown tracker(s) {unknown}: choose from {TRACKERS}")
    if len(set(names)) != len(names):
        raise ValueError(f"a tracker named twice: {names}")
    root = Path(folder) / experiment
    made = {"csv": lambda: CsvLog(root / "csv"), "tensorboard": lambda: TensorBoardLog(root / "tensorboard"),
            "wandb": lambda: WandbLog(root)}
    return [made[n]() for n in names]


def experiment_name(label: str) -> str:
    """``<label>/<date-time>``: a folder of its own for every run of the same label, so
    that a rerun's curves do not join the last one's (``/`` in ``label`` kept as folders)."""
    clean = "".join(c if c.isalnum() or c in "-_.=,/" else "-" for c in label).strip("/") or "run"
    return f"{clean}/{time.strftime('%Y%m%d-%H%M%S')}"


def _require(module: str, extra: str) -> None:
    try:
        __import__(module)
    except ImportError:
        raise ImportError(f"tracking to {extra} needs the {module} package: pip install \"socialjax[{extra}]\"") \
            from None


def _plain(x: Any) -> Any:
    """JSON for numpy values and tuples in the metadata."""
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    if dataclasses.is_dataclass(x):
        return dataclasses.asdict(x)
    return str(x)


__all__ = ["TRACKERS", "CsvLog", "RunSet", "TensorBoardLog", "Tracker", "WandbLog", "experiment_name",
           "make_trackers"]

