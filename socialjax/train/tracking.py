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
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import itertools
import json
import math
import os
import shutil
import socket
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, TextIO

import numpy as np

#: the names :func:`make_trackers` understands (``socialjax train --log NAME``)
TRACKERS = ("csv", "tensorboard", "wandb")
WANDB_MAX_RUNS = 128  # one W&B run per (grid point, seed): more is a sweep for TensorBoard or CSV
WANDB_INIT_TIMEOUT = 30.0  # seconds wandb.init may wait for its server (wandb's default: 90)
WANDB_LOGIN = "W&B needs a login: run `wandb login` or set WANDB_API_KEY, or WANDB_MODE=offline"


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


class TrackerError(RuntimeError):
    """A tracker cannot go on; its message says why in one line (:class:`Listeners`
    shows it as it is)."""


class Listeners:
    """The one place the engine calls what follows a run: ``members`` (trackers, and
    the engine's own progress lines and live display, anything with a
    :class:`Tracker`'s methods), called in order with the same values.

    A member whose call raises an ``Exception`` is dropped: one line on ``stream``
    (default: stderr at the time) names it (its ``listener_name``, e.g. ``"the csv
    tracker"``), where and why, the line without its ``socialjax:`` head is kept in
    :attr:`failures`, the member is closed quietly (an error of that close ignored), and
    the other members go on; a ``KeyboardInterrupt`` is not caught. :meth:`log`,
    :meth:`summary` and :meth:`artifact` reach only the members opened by :meth:`open`.
    No call of a :class:`Listeners` raises."""

    def __init__(self, members: Sequence[Tracker] = (), stream: TextIO | None = None):
        self.members: list = list(members)
        self.failures: list[str] = []
        self.stream = stream
        self._opened: list = []

    def __len__(self) -> int:
        return len(self.members)

    @contextlib.contextmanager
    def including(self, *members):
        """``members`` after the ones there for the time of a ``with`` block (the engine's
        live display or progress lines, for one run), closed and let go at its end."""
        self.members.extend(members)
        try:
            yield self
        finally:
            self.close(members)

    def open(self, runs: RunSet) -> None:
        """Open every member for ``runs``; one that fails is dropped (training goes on without it)."""
        for member in list(self.members):
            opened = self._call(member, "to open", "training goes on without it", member.open, runs)
            if opened and not _holds(self._opened, member):
                self._opened.append(member)

    def log(self, update: int, values: dict[str, np.ndarray]) -> None:
        """A segment's values (see :meth:`Tracker.log`) to every member opened."""
        steps = _steps(update, values)
        where = f"at update {steps[-1] if steps else update}"
        for member in self._open_members():
            self._call(member, where, "training goes on without it", member.log, update, values)

    def summary(self, values: dict[str, np.ndarray]) -> None:
        """The run's end (see :meth:`Tracker.summary`) to every member opened."""
        for member in self._open_members():
            self._call(member, "at the run's summary", "the run goes on without it", member.summary, values)

    def artifact(self, path: str | os.PathLike) -> None:
        """A file made from the run to every member opened (one never opened is skipped)."""
        for member in self._open_members():
            self._call(member, f"adding {Path(path).name}", "it is dropped", member.artifact, path)

    def close(self, members: Sequence | None = None) -> None:
        """Close ``members`` (default: all) and let them go; a failure is one line."""
        for member in list(self.members if members is None else members):
            if not _holds(self.members, member):
                continue
            self._forget(member)
            self._call(member, "to close", "", member.close)

    def _open_members(self) -> list:
        return [m for m in self.members if _holds(self._opened, m)]

    def _forget(self, member) -> None:
        self.members = [m for m in self.members if m is not member]
        self._opened = [m for m in self._opened if m is not member]

    def _call(self, member, where: str, after: str, fn, *args) -> bool:
        """``fn(*args)``; on an exception, the member dropped with its line. Whether it succeeded."""
        try:
            fn(*args)
            return True
        except Exception as err:  # noqa: BLE001 (a listener's failure must never end the run)
            name = getattr(member, "listener_name", None) or f"the tracker {type(member).__name__}"
            line = f"{name} failed {where} ({_cause(err)})"
            self.failures.append(line)
            self._say(f"socialjax: {line}" + (f"; {after}" if after else ""))
            if _holds(self.members, member):
                self._forget(member)
                with contextlib.suppress(Exception):
                    member.close()
            return False

    def _say(self, line: str) -> None:
        with contextlib.suppress(Exception):  # a broken stderr must not end the run either
            print(line, file=self.stream or sys.stderr, flush=True)


def _holds(members: list, member) -> bool:
    return any(m is member for m in members)


def _cause(err: Exception) -> str:
    """An exception as the few words of a failure line: an OS error's file and the
    system's words, our own errors' messages as they are, other errors with their type."""
    if isinstance(err, OSError) and err.strerror:
        return f"{err.filename}: {err.strerror}" if err.filename is not None else err.strerror
    text = (str(err).strip().splitlines() or [""])[0]
    text = text if len(text) <= 300 else text[:297] + "..."
    if text and isinstance(err, (TrackerError, ImportError, ValueError)):
        return text
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


@contextlib.contextmanager
def _writing(path: Path):
    """An ``OSError`` inside as a :class:`TrackerError` naming ``path`` (a write into an
    open file does not say which file: ``cannot write .../metrics.csv: No space left on device``)."""
    try:
        yield
    except OSError as err:
        raise TrackerError(f"cannot write {path}: {err.strerror or err}") from err


class _Lifecycle:
    """What every tracker shares: the :class:`RunSet` of its current ``open``, the
    folder that open writes (:attr:`record`), and the context manager that closes it."""

    runs: RunSet | None = None
    folder: Path | None = None
    record: Path | None = None  # where the current open writes: folder, or folder/<n> from the second open
    _opens = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _opened(self) -> RunSet:
        if self.runs is None:
            raise RuntimeError(f"{type(self).__name__} is not open: open(runs) comes first")
        return self.runs

    def _new_record(self) -> Path:
        """The folder this ``open`` writes, made: :attr:`folder` at the first open, a
        new ``<folder>/<n>`` at every later one (``2``, ``3``, ...: the first number not
        taken), so that a second run through this object keeps the first one's record."""
        self._opens += 1
        with _writing(self.folder):
            self.folder.mkdir(parents=True, exist_ok=True)
            if self._opens == 1:
                self.record = self.folder
            else:
                self.record = _first_new(self.folder / str(n) for n in itertools.count(self._opens))
        return self.record


def _steps(update: int, values: dict[str, np.ndarray]) -> range:
    """The steps (updates done) of a segment's ``values``."""
    K = np.shape(next(iter(values.values())))[1] if values else 0
    return range(update + 1, update + K + 1)


class CsvLog(_Lifecycle):
    """A folder of CSV: ``metrics.csv`` (columns ``run, grid_point, seed, update`` and one
    per metric; a row per run and update, flushed after every segment), ``runs.csv`` (a
    row per run: its name, grid point, seed and hyperparameters), ``meta.json``, and each
    artifact copied in. An empty cell is a NaN (e.g. a return where no episode ended).
    The first ``open`` writes in ``folder``, a later one in ``folder/2``, ``folder/3``, ...
    (:attr:`record`), never over an earlier run's files."""

    listener_name = "the csv tracker"

    def __init__(self, folder: str | os.PathLike):
        self.folder = Path(folder)
        self._file = None
        self._writer = None
        self._columns: list[str] | None = None

    def open(self, runs: RunSet) -> None:
        self.close()
        self.runs = runs
        record = self._new_record()
        with _writing(record / "meta.json"):
            (record / "meta.json").write_text(json.dumps({"experiment": runs.experiment, **runs.meta}, indent=2,
                                                         default=_plain) + "\n")
        with _writing(record / "runs.csv"), open(record / "runs.csv", "w", newline="") as f:
            rows = [{"run": runs.name(r), "grid_point": runs.point(r)[0], **runs.hparams(r)} for r in range(len(runs))]
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        with _writing(record / "metrics.csv"):
            self._file = open(record / "metrics.csv", "w", newline="")  # noqa: SIM115 (open across log calls)
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
        with _writing(self.record / "metrics.csv"):
            self._writer.writerows(rows)
            self._file.flush()

    def summary(self, values: dict[str, np.ndarray]) -> None:
        """``summary.csv``: a row per run (``run, grid_point, seed`` and one column per value)."""
        runs = self._opened()
        names = sorted(values)
        with _writing(self.record / "summary.csv"), open(self.record / "summary.csv", "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["run", "grid_point", "seed", *names])
            for r in range(len(runs)):
                writer.writerow([runs.name(r), *runs.point(r), *(_cell(np.float32(values[k][r])) for k in names)])

    def artifact(self, path: str | os.PathLike) -> None:
        self._opened()
        shutil.copy2(path, self.record / Path(path).name)

    def close(self) -> None:
        if self._file is not None:
            file, self._file = self._file, None
            with _writing(self.record / "metrics.csv"):
                file.close()


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
    ``tensorboard --logdir <folder>`` shows a sweep while it runs. The first ``open``
    writes in ``folder``, a later one in ``folder/2``, ``folder/3``, ... (:attr:`record`:
    TensorBoard shows them as runs ``2/<run name>``), never into an earlier run's files."""

    listener_name = "the tensorboard tracker"

    def __init__(self, folder: str | os.PathLike):
        _require("tensorboard", "tensorboard")
        self.folder = Path(folder)
        self._paths: list[Path] = []

    def open(self, runs: RunSet) -> None:
        from tensorboard.plugins.hparams import summary_v2 as hparams_summary

        self.runs = runs
        self._new_record()
        meta = json.dumps({"experiment": runs.experiment, **runs.meta}, indent=2, default=_plain)
        self._paths = [self._new_file(runs.name(r)) for r in range(len(runs))]
        for r, path in enumerate(self._paths):
            pb = hparams_summary.hparams_pb(runs.hparams(r), trial_id=runs.name(r))
            self._write(path, [_event(0, pb), _event(0, _text_summary("meta", meta))])

    def _new_file(self, run: str) -> Path:
        folder = self.record / run
        with _writing(folder):
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

        with _writing(path), open(path, "ab") as f:
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
    ``max_runs`` runs (a W&B run each): a larger sweep belongs in TensorBoard or CSV.
    Every ``open`` starts new W&B runs. Online without credentials (no ``WANDB_API_KEY``,
    no ``wandb login``), ``open`` fails at once with one line (:data:`WANDB_LOGIN`),
    checked on this machine without the network; a server that does not answer fails
    it after :data:`WANDB_INIT_TIMEOUT` seconds (wandb's ``init_timeout``)."""

    listener_name = "the wandb tracker"

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
        self._check_login()
        self.runs = runs
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)
        settings = wandb.Settings(silent=True, console="off", x_disable_stats=True, init_timeout=WANDB_INIT_TIMEOUT)
        for r in range(len(runs)):  # one by one: the runs started before a failure are finished by close
            self._runs.append(
                wandb.init(project=self.project, entity=self.entity, group=runs.experiment, name=runs.name(r),
                           config={**json.loads(json.dumps(runs.meta, default=_plain)), "hparams": runs.hparams(r),
                                   "seed": runs.point(r)[1]},
                           dir=None if self.folder is None else str(self.folder), mode=self.mode,
                           reinit="create_new", settings=settings))

    def _check_login(self) -> None:
        """Online (``mode``, or wandb's own setting) without credentials, ``wandb.init``
        would prompt or wait on the server: a :class:`TrackerError` at once instead. The
        credentials are looked up as wandb does (``WANDB_API_KEY``, ``~/.netrc``, its
        settings) by ``wandb.login(prompt=False, verify=False)``: nothing goes over the
        network."""
        import wandb
        from wandb.sdk import wandb_setup  # wandb's settings (environment, settings files); starts no service

        offline = ("offline", "dryrun", "disabled")
        # the mode asked for, else WANDB_MODE now (wandb's settings object is made once per process), else the
        # settings files
        mode = self.mode or os.environ.get("WANDB_MODE") or wandb_setup.singleton().settings.mode
        if mode in offline or wandb.run is not None:
            return  # offline; or wandb.login cannot tell (it answers False offline, or once a run is going)
        with contextlib.redirect_stderr(io.StringIO()):  # wandb's lines on where it found the key
            logged_in = wandb.login(prompt=False, verify=False)
        if not logged_in:
            raise TrackerError(WANDB_LOGIN)

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
        return _first_new(path if n == 1 else path.with_name(f"{path.name}-{n}") for n in itertools.count(1))
    except OSError:
        return path


def _first_new(candidates) -> Path:
    """The first of ``candidates`` that ``mkdir`` makes (each tried once, exclusively)."""
    for candidate in candidates:
        try:
            candidate.mkdir()
            return candidate
        except FileExistsError:
            continue
    raise AssertionError("unreachable: the candidates are endless")


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


__all__ = ["TRACKERS", "CsvLog", "Listeners", "RunSet", "TensorBoardLog", "Tracker", "TrackerError", "WandbLog",
           "experiment_name", "make_trackers", "new_folder"]

