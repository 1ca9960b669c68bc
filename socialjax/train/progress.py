"""Progress lines for long compiled loops.

:func:`socialjax.train.run` prints them between segments of the compiled loop, from the
metrics each segment returns (:meth:`Progress.show`): a program with a host callback
inside is never written to JAX's persistent compilation cache, so the training loop
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


def _default_line(step: int, values: dict[str, np.ndarray]) -> str:
    return "  ".join(f"{k}={np.nanmean(v):.4g}" for k, v in values.items())
