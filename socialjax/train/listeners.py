"""What follows a run while it trains: the :class:`Tracker` protocol, the
:class:`RunSet` a tracker follows, and :class:`Listeners`, the one fan-out the engine
calls (the trackers, then its own progress lines or live display), which drops a
listener whose call raises with one line and lets the run go on.

The whole story (a tracker's life, the rules of :class:`Listeners`, the folders, the
trackers themselves in :mod:`socialjax.train.trackers`) is told in
:mod:`socialjax.train.tracking`, which all of them can be imported from.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, TextIO

import numpy as np


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
        return ",".join(f"{k}={short_float(self.grid[k][g]):g}" for k in self.swept)

    def name(self, r: int) -> str:
        """The run's name: ``"<point>/seed<seed>"`` (``"seed<seed>"`` without a sweep)."""
        g, seed = self.point(r)
        point = self.point_name(g)
        return f"{point}/seed{seed}" if point else f"seed{seed}"

    def run_meta(self, r: int) -> dict[str, Any]:
        """``meta`` as run ``r`` ran: each swept setting of its ``config`` the run's own
        value, the whole sweep's values under ``sweep`` (``meta`` itself is the
        experiment's: the sweep's lists in its config)."""
        meta = dict(self.meta)
        config, point = meta.get("config"), self.hparams(r)
        swept = [k for k in self.swept if isinstance(config, dict) and k in config]
        if swept:
            meta["sweep"] = {k: config[k] for k in swept}
            meta["config"] = {**config, **{k: point[k] for k in swept}}
        return meta

    def hparams(self, r: int) -> dict[str, float | int]:
        """Run ``r``'s swept hyperparameters and its seed (the rest are in ``meta``)."""
        g, seed = self.point(r)
        return {**{k: short_float(self.grid[k][g]) for k in self.swept}, "seed": seed}


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
    def including(self, *members, runs: RunSet | None = None):
        """``members`` after the ones there for the time of a ``with`` block (the engine's
        live display or progress lines, for one run), opened for ``runs`` when given,
        closed and let go at its end."""
        self.members.extend(members)
        try:
            if runs is not None:
                self._open(members, runs)
            yield self
        finally:
            self.close(members)

    def open(self, runs: RunSet) -> None:
        """Open every member for ``runs``; one that fails is dropped (training goes on without it)."""
        self._open(list(self.members), runs)

    def _open(self, members, runs: RunSet) -> None:
        for member in members:
            opened = self._call(member, "to open", "training goes on without it", member.open, runs)
            if opened and not _holds(self._opened, member):
                self._opened.append(member)

    def log(self, update: int, values: dict[str, np.ndarray]) -> None:
        """A segment's values (see :meth:`Tracker.log`) to every member opened."""
        steps = segment_steps(update, values)
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


def segment_steps(update: int, values: dict[str, np.ndarray]) -> range:
    """The steps (updates done) of a segment's ``values``."""
    K = np.shape(next(iter(values.values())))[1] if values else 0
    return range(update + 1, update + K + 1)


def short_float(x) -> float:
    """A float32 value as the shortest decimal that reads back as it (0.001, not 0.0010000000474974513)."""
    return float(str(np.float32(x)))
