"""Progress lines for long compiled loops.

:func:`socialjax.train.run` prints them between segments of the compiled loop, from the
metrics each segment returns (:meth:`Progress.show`, called by :class:`ProgressLines`, a
listener of the engine like the trackers, see :class:`socialjax.train.tracking.Listeners`):
a program with a host callback inside is never written to JAX's persistent compilation cache, so the training loop
itself calls nothing on the host. A loop that must report from inside (one compiled
call, e.g. the donor game's cultural evolution) calls :meth:`Progress.report` from
traced code: ``jax.debug.callback`` inside a ``vmap`` fires once per batch element, so a
line per loop step waits until every run in the batch has reported that step.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import TextIO

import jax
import numpy as np


class Progress:
    """Prints one line per loop step once all ``num_runs`` runs have reached it.

    Under ``jax.distributed`` (several processes) only process 0 prints; every process
    still counts the runs it computes, so ``num_runs`` is this process's runs.

    ``format_line(step, values)`` receives the step and a dict of ``(num_runs,)`` arrays
    (one value per run, in arrival order) and returns the text to print.
    """

    def __init__(
        self,
        total_steps: int,
        num_runs: int = 1,
        label: str = "",
        format_line: Callable[[int, dict[str, np.ndarray]], str] | None = None,
        stream: TextIO | None = None,
        enabled: bool = True,
    ):
        self.total_steps = total_steps
        self.num_runs = num_runs
        self.label = label
        self.format_line = format_line or _default_line
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self._pending: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        self._counts: dict[int, int] = defaultdict(int)
        self._start = time.perf_counter()
        self._lock = threading.Lock()  # several devices report from their own threads

    def _on_host(self, step, values):
        with self._lock:
            self._count(step, values)

    def _count(self, step, values):
        step = int(step)
        # a batched callback (vmap with the "expand_dims" method) delivers several runs at once
        first = next(iter(values.values()), None)
        n = int(np.size(first)) if first is not None else 1
        for name, v in values.items():
            self._pending[step][name].extend(np.ravel(np.asarray(v)).tolist())
        self._counts[step] += n
        if self._counts[step] >= self.num_runs:
            vals = {k: np.asarray(v) for k, v in self._pending.pop(step).items()}
            del self._counts[step]
            self.show(step, vals)

    def show(self, step: int, values: dict[str, np.ndarray]) -> None:
        """Print the line of loop step ``step`` (0-based) now, from every run's values
        (on the host; process 0 alone under ``jax.distributed``)."""
        if self.enabled and jax.process_index() == 0:
            elapsed = time.perf_counter() - self._start
            prefix = f"{self.label} " if self.label else ""
            line = self.format_line(int(step), values)
            print(f"{prefix}[{int(step) + 1}/{self.total_steps}] {line} ({elapsed:.1f}s)", file=self.stream,
                  flush=True)

    def report(self, step: jax.Array, **values: jax.Array) -> None:
        """Call from traced code (inside ``jit``/``vmap``/``scan``): the line is printed
        once all ``num_runs`` runs have reported ``step``."""
        jax.debug.callback(self._on_host, step, values)


class ProgressLines:
    """A :class:`Progress` as a listener of the engine (the shape of a
    :class:`~socialjax.train.tracking.Tracker`): from each segment's tracked values
    ``{name: (R, K)}``, the line of the segment's last update (its ``headline`` values,
    one per run) once ``every`` updates have passed since the last line, and at the last
    update (``num_updates``); the line :meth:`Progress.show` prints. ``every`` counts from
    the first segment's start, so a resumed run prints at the same updates."""

    listener_name = "the progress lines"

    def __init__(self, progress: Progress, headline: tuple[str, ...], every: int, num_updates: int):
        self.progress, self.headline, self.every, self.num_updates = progress, tuple(headline), int(every), num_updates
        self._next: int | None = None  # the update count of the next line

    def open(self, runs) -> None:
        self._next = None

    def log(self, update: int, values: dict[str, np.ndarray]) -> None:
        done = update + (np.shape(next(iter(values.values())))[1] if values else 0)
        if self._next is None:
            self._next = _next_multiple(update, self.every)
        if done > update and (done >= self._next or done == self.num_updates):
            self.progress.show(done - 1, {k: values[k][:, -1] for k in self.headline})
            self._next = _next_multiple(done, self.every)

    def summary(self, values: dict[str, np.ndarray]) -> None:
        """Nothing: the run's summary is printed by its owner."""

    def artifact(self, path) -> None:
        """Nothing: a line has no files."""

    def close(self) -> None:
        """Nothing to release."""


def _next_multiple(done: int, every: int) -> int:
    """The first multiple of ``every`` after ``done`` (``every`` 0: never)."""
    return (done // every + 1) * every if every > 0 else np.iinfo(np.int64).max


def _default_line(step: int, values: dict[str, np.ndarray]) -> str:
    return "  ".join(f"{k}={np.nanmean(v):.4g}" for k, v in values.items())
