"""Matplotlib plots of results arrays (runs on the host, after the compiled loop)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


def pyplot():
    """matplotlib's pyplot on the file-only Agg backend, for the figures the library
    writes. Imported on call, not at the top: pyplot is slow to import (``import
    socialjax`` would pay for it), and choosing its backend at import time would change
    the backend of a notebook that only imports socialjax."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def mean_ci95(values: np.ndarray, axis: int = 0, resamples: int = 2000, seed: int = 0) -> tuple[np.ndarray, np.ndarray,
                                                                                                np.ndarray]:
    """Mean and bootstrap 95% confidence interval of the mean along ``axis``
    (percentile bootstrap with ``resamples`` resamples). Unlike ``mean +/- 1.96 sem``
    it stays inside the range of the data when the values are heavy-tailed, as final
    resources under multiplicative growth are. Returns ``(mean, low, high)``."""
    values = np.moveaxis(np.asarray(values, dtype=np.float64), axis, 0)
    n = values.shape[0]
    mean = values.mean(axis=0)
    if n < 2:
        return mean, mean.copy(), mean.copy()
    idx = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    boot = values[idx].mean(axis=1)
    low, high = np.percentile(boot, [2.5, 97.5], axis=0)
    return mean, low, high


def plot_bands(ax, x: np.ndarray, series: Mapping[str, np.ndarray], ylabel: str, title: str = "", logy: bool = False):
    """One line per series (the mean across the first axis, the seeds) with its 95% CI
    band, a lighter 5-95 percentile band of the seeds themselves, and the median
    dashed (which differs from the mean when a few seeds dominate it)."""
    for label, values in series.items():
        values = np.asarray(values)
        mean, low, high = mean_ci95(values)
        line, = ax.plot(x, mean, marker="o", ms=3, label=label)
        ax.fill_between(x, low, high, color=line.get_color(), alpha=0.3, lw=0)
        p5, p50, p95 = np.percentile(values, [5, 50, 95], axis=0)
        ax.fill_between(x, p5, p95, color=line.get_color(), alpha=0.08, lw=0)
        ax.plot(x, p50, ls="--", lw=1, color=line.get_color())
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    if logy:
        ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return ax
