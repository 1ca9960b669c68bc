"""A live display of a training run in Jupyter: the progress line and a small curve per
headline metric, one line per grid point (the mean over its seeds), redrawn in place
every progress tick.

``sj.train.run`` and ``sj.reproduce.reproduce`` show it instead of their text lines when
they run in a Jupyter kernel (:func:`in_notebook`); the console keeps the lines. It is a
tracker (:class:`socialjax.train.tracking.Tracker`): the engine hands it each segment's
values as it hands them to TensorBoard or CSV, so it costs no transfer of its own.
"""

from __future__ import annotations

import base64
import io
import sys
import time
import warnings
from collections.abc import Callable

import numpy as np
from matplotlib.figure import Figure

MARKER = "socialjax-live"  # the class of the display's HTML (tests find it by this)


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (where a rich display shows)."""
    shell = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    return shell is not None and type(shell).__name__ in ("ZMQInteractiveShell", "Shell")  # Shell: Colab's


class LiveDisplay:
    """One run's live display (see the module docstring): ``headline`` the metrics drawn
    (names of the job's tracked values), ``line(step, values)`` the progress line's text
    from each run's headline values at a step, redrawn every ``every`` updates and at the
    last, at most every ``min_seconds``. ``show(html)`` puts the display on screen and
    returns a function that replaces it (default: IPython's ``display(..., display_id=True)``).
    The engine calls it through its :class:`~socialjax.train.tracking.Listeners`: a
    display that fails is dropped with one line and the training goes on."""

    listener_name = "the live display"

    def __init__(self, headline: tuple[str, ...], line: Callable[[int, dict[str, np.ndarray]], str], every: int,
                 label: str = "", min_seconds: float = 0.5, show: Callable[[str], Callable[[str], None]] | None = None):
        self.headline, self.line, self.every, self.label = tuple(headline), line, max(int(every), 1), label
        self.min_seconds = min_seconds
        self._show = show or _ipython_show
        self._update: Callable[[str], None] | None = None
        self.runs = None
        self.html = ""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def open(self, runs) -> None:
        """Start a display for ``runs`` (a :class:`~socialjax.train.tracking.RunSet`)."""
        self.runs = runs
        U = runs.num_updates
        self._curves = {k: np.full((runs.num_points, len(runs.seeds), U), np.nan) for k in self.headline}
        self._done, self._drawn_at, self._last_draw = 0, 0, 0.0
        self._start = time.perf_counter()
        self.html = self._html(f"{self._prefix()}compiled; training...", None)
        self._update = self._show(self.html)

    def log(self, update: int, values: dict[str, np.ndarray]) -> None:
        runs = self.runs
        G, S = runs.num_points, len(runs.seeds)
        for k in self.headline:
            v = np.asarray(values[k], np.float64)
            self._curves[k][:, :, update:update + v.shape[1]] = v.reshape(G, S, -1)
            self._done = update + v.shape[1]
        tick = self._done // self.every > self._drawn_at // self.every  # a multiple of every passed since the last draw
        if self._done == runs.num_updates or (tick and time.perf_counter() - self._last_draw >= self.min_seconds):
            self.draw()

    def draw(self) -> None:
        """Redraw the display with the updates so far."""
        if self._update is None or self._done == 0:
            return
        step = self._done - 1
        values = {k: c[:, :, step].reshape(-1) for k, c in self._curves.items()}
        elapsed = time.perf_counter() - self._start
        text = f"{self._prefix()}[{self._done}/{self.runs.num_updates}] {self.line(step, values)} ({elapsed:.1f}s)"
        self.html = self._html(text, self._figure())
        self._update(self.html)
        self._drawn_at, self._last_draw = self._done, time.perf_counter()

    def summary(self, values: dict[str, np.ndarray]) -> None:
        """The run's end (its evaluation) as a line under the curves: each value's mean over the runs."""
        with warnings.catch_warnings():  # a value no run measured: NaN
            warnings.simplefilter("ignore", RuntimeWarning)
            means = "  ".join(f"{k} {np.nanmean(v):.4g}" for k, v in sorted(values.items()))
        if means and self._update is not None:
            self.html = self.html.replace("</pre>", f"\nend of the run: {_escape(means)}</pre>", 1)
            self._update(self.html)

    def artifact(self, path) -> None:
        """Nothing to keep: the display is on screen (and in the saved notebook)."""

    def close(self) -> None:
        if self.runs is not None and self._drawn_at != self._done:
            self.draw()

    def _prefix(self) -> str:
        return f"{self.label} " if self.label else ""

    def _figure(self) -> str:
        """The curves as a base64 PNG: one small panel per headline metric, a line per grid point."""
        runs, n = self.runs, len(self.headline)
        fig = Figure(figsize=(3.2 * n, 2.2), dpi=80, layout="constrained")
        x = np.arange(1, self._done + 1)
        for i, k in enumerate(self.headline):
            ax = fig.add_subplot(1, n, i + 1)
            for g in range(runs.num_points):
                with warnings.catch_warnings():  # an update where no seed ended an episode has no return: NaN
                    warnings.simplefilter("ignore", RuntimeWarning)
                    mean = np.nanmean(self._curves[k][g, :, :self._done], axis=0)
                ok = np.isfinite(mean)  # joined over the updates without a value (no episode ended)
                ax.plot(x[ok], mean[ok], lw=1.2, marker="." if ok.sum() < 30 else None, ms=3,
                        label=runs.point_name(g) or None)
            ax.set_title(k, fontsize=9)
            ax.set_xlabel("update", fontsize=8)
            ax.tick_params(labelsize=7)
            if runs.swept and i == 0:
                ax.legend(fontsize=6)
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        return base64.b64encode(buf.getvalue()).decode()

    @staticmethod
    def _html(text: str, png: str | None) -> str:
        image = f'<br><img src="data:image/png;base64,{png}">' if png else ""
        return f'<div class="{MARKER}"><pre style="margin:0">{_escape(text)}</pre>{image}</div>'


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _ipython_show(html: str) -> Callable[[str], None]:
    from IPython.display import HTML, display

    handle = display(HTML(html), display_id=True)
    return lambda new: handle.update(HTML(new))
