"""The trackers: a run's metrics written while it trains, one curve per (grid point,
seed), as CSV (:class:`CsvLog`), TensorBoard event files (:class:`TensorBoardLog`) or
Weights & Biases runs (:class:`WandbLog`), each a :class:`~socialjax.train.listeners.Tracker`
with the same life: ``open`` (the first in its folder, a later one in ``<folder>/2``,
``3``, ...), ``log``, ``summary``, ``artifact``, ``close``. What each writes, and what
the optional packages are: :mod:`socialjax.train.tracking`.
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
import time
from pathlib import Path
from typing import Any

import numpy as np

from socialjax.train.listeners import RunSet, TrackerError, segment_steps, short_float

WANDB_MAX_RUNS = 128  # one W&B run per (grid point, seed): more is a sweep for TensorBoard or CSV
WANDB_INIT_TIMEOUT = 30.0  # seconds wandb.init may wait for its server (wandb's default: 90)
WANDB_LOGIN = "W&B needs a login: run `wandb login` or set WANDB_API_KEY, or WANDB_MODE=offline"


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
                self.record = first_new(self.folder / str(n) for n in itertools.count(self._opens))
        return self.record


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
                                                         default=json_plain) + "\n")
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
            for k, step in enumerate(segment_steps(update, values)):
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
        require("tensorboard", "tensorboard")
        self.folder = Path(folder)
        self._paths: list[Path] = []

    def open(self, runs: RunSet) -> None:
        from tensorboard.plugins.hparams import summary_v2 as hparams_summary

        self.runs = runs
        self._new_record()
        meta = json.dumps({"experiment": runs.experiment, **runs.meta}, indent=2, default=json_plain)
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
                               for k, step in enumerate(segment_steps(update, values))])

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
    grouped by experiment, its config the metadata as the run ran it
    (:meth:`RunSet.run_meta`: a swept setting is the run's own value, the sweep's lists
    under ``sweep``) with the run's ``hparams`` and ``seed``; the step logged is the
    number of updates done. ``mode``: ``"offline"`` (no network: ``wandb sync
    <dir>/wandb/offline-run-*`` uploads later), ``"online"``, or ``None`` (wandb's
    settings: ``WANDB_MODE``); ``project`` ``None``: ``WANDB_PROJECT``
    or ``"socialjax"``. Artifacts are logged as images of the first run. At most
    ``max_runs`` runs (a W&B run each): a larger sweep belongs in TensorBoard or CSV.
    Every ``open`` starts new W&B runs. Online without credentials (no ``WANDB_API_KEY``,
    no ``wandb login``), ``open`` fails at once with one line (:data:`WANDB_LOGIN`),
    checked on this machine without the network; a server that does not answer fails
    it after :data:`WANDB_INIT_TIMEOUT` seconds (wandb's ``init_timeout``)."""

    listener_name = "the wandb tracker"

    def __init__(self, folder: str | os.PathLike | None = None, *, project: str | None = None,
                 entity: str | None = None, mode: str | None = None, max_runs: int = WANDB_MAX_RUNS):
        require("wandb", "wandb")
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
                           config={**json.loads(json.dumps(runs.run_meta(r), default=json_plain)),
                                   "hparams": runs.hparams(r), "seed": runs.point(r)[1]},
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
            for k, step in enumerate(segment_steps(update, values)):
                run.log({name: short_float(a[r, k]) for name, a in arrays.items() if np.isfinite(a[r, k])}, step=step)

    def summary(self, values: dict[str, np.ndarray]) -> None:
        """Each run's W&B summary (the numbers its row shows in a project's table)."""
        self._opened()
        for r, run in enumerate(self._runs):
            run.summary.update({name: short_float(v[r]) for name, v in values.items() if np.isfinite(v[r])})

    def artifact(self, path: str | os.PathLike) -> None:
        import wandb

        runs = self._opened()
        if self._runs:
            self._runs[0].log({f"figures/{Path(path).stem}": wandb.Image(str(path))}, step=runs.num_updates)

    def close(self) -> None:
        for run in self._runs:
            run.finish()
        self._runs = []


def first_new(candidates) -> Path:
    """The first of ``candidates`` that ``mkdir`` makes (each tried once, exclusively)."""
    for candidate in candidates:
        try:
            candidate.mkdir()
            return candidate
        except FileExistsError:
            continue
    raise AssertionError("unreachable: the candidates are endless")


def require(module: str, extra: str) -> None:
    try:
        __import__(module)
    except ImportError:
        raise ImportError(f"tracking to {extra} needs the {module} package: pip install \"socialjax[{extra}]\"") \
            from None


def json_plain(x: Any) -> Any:
    """JSON for numpy values and tuples in the metadata."""
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    if dataclasses.is_dataclass(x):
        return dataclasses.asdict(x)
    return str(x)
