"""What a reproduction writes and shows: the published-vs-ours table
(:func:`table_rows`, :func:`write_table`, :func:`format_table`), the summary text
(:func:`summary`), the JSON record (:func:`to_json`) and the figure with the published
values overlaid (:func:`plot_reproduction`; entries that draw their own use
:func:`analysis_panel` and :func:`finish_figure`).
"""

from __future__ import annotations

import csv
import platform
from pathlib import Path
from typing import Any

import numpy as np

from socialjax.reproduce.entry import Entry, Reproduction, interval
from socialjax.viz.plots import mean_ci95, pyplot

# the files of a reproduction's folder
TABLE_FILE, FIGURE_FILE, SUMMARY_FILE, RESULT_FILE = "table.csv", "figure.png", "summary.txt", "reproduction.json"

def table_rows(entry: Entry, finals, seeds: int, scale: str) -> list[dict[str, Any]]:
    """One row per (condition, measure) and per analysis key: published value and
    source, ours with its 95% interval over seeds."""
    published = {(r.condition, r.measure): r for r in entry.references}
    rows = []
    for name, measure in entry.keys(scale):
        mean, low, high = interval(finals[(name, measure)])
        ref = published.get((name, measure))
        rows.append({
            "condition": name, "measure": measure,
            "published": None if ref is None or ref.value is None else ref.value,
            "published_note": "" if ref is None else ref.note,
            "source": "" if ref is None else f"{ref.source} ({ref.how})",
            "ours": mean, "ours_ci_low": low, "ours_ci_high": high, "seeds": seeds,
        })
    return rows


def write_table(rows: list[dict[str, Any]], path: Path) -> None:
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def format_table(rows: list[dict[str, Any]]) -> str:
    """The table as aligned text (what ``summary.txt`` and the command print)."""
    wc = max([24] + [len(r["condition"]) for r in rows])
    wm = max([20] + [len(r["measure"]) for r in rows])
    lines = [f"{'condition':{wc}s} {'measure':{wm}s} {'published':>10s} {'ours [95% CI]':>28s}"]
    for r in rows:
        pub = "-" if r["published"] is None else f"{r['published']:.3g}"
        ours = f"{r['ours']:.3g} [{r['ours_ci_low']:.3g}, {r['ours_ci_high']:.3g}]"
        lines.append(f"{r['condition']:{wc}s} {r['measure']:{wm}s} {pub:>10s} {ours:>28s}")
    return "\n".join(lines)


def summary(rep: Reproduction) -> str:
    e = rep.entry
    refs = "\n".join(f"- {r.condition} / {r.measure}: "
                     f"{'(qualitative) ' + r.note if r.value is None else f'{r.value:g}'} "
                     f"- {r.source} ({r.how}){'; ' + r.note if r.note and r.value is not None else ''}"
                     for r in e.references)
    return (f"{e.name}: {e.title}\n{e.citation}\n\nscale {rep.scale}, {seed_text(rep)}, "
            f"{rep.timings.total:.0f} s on {platform.machine()} ({platform.system()})\n{rep.timings.line()}\n\n"
            f"verdict: {rep.verdict.upper()}: {rep.reason}\ncriterion: {e.criterion_text}\n\n"
            f"{format_table(rep.rows)}\n\npublished values:\n{refs}"
            + (f"\n\nnotes: {e.notes}" if e.notes else ""))


def seed_text(rep: Reproduction) -> str:
    """``"4 seeds"``, or ``"4 seeds from 1000"`` on a seed set other than the default."""
    return f"{rep.seeds} seeds" + (f" from {rep.base_seed}" if rep.base_seed else "")


def to_json(rep: Reproduction) -> dict[str, Any]:
    def plain(x):
        return None if x is None or (isinstance(x, float) and not np.isfinite(x)) else x

    return {
        "entry": rep.entry.name, "scale": rep.scale, "seeds": rep.seeds, "base_seed": rep.base_seed,
        "verdict": rep.verdict,
        "reason": rep.reason, "criterion": rep.entry.criterion_text, "seconds": rep.timings.total,
        "timings": rep.timings.to_json(),
        "rows": [{k: plain(v) for k, v in r.items()} for r in rep.rows],
        "finals": {f"{c}/{m}": [plain(float(v)) for v in vals] for (c, m), vals in rep.finals.items()},
    }


def plot_reproduction(rep: Reproduction, path: Path) -> None:
    """One panel per measure: each condition's curve (mean over seeds, 95% band)
    against env steps, the published values as dashed lines in the condition's colour;
    and, for an entry with models or an analysis, a panel of their values (mean and 95% interval,
    the published value beside each)."""
    plt = pyplot()

    e = rep.entry
    measures = e.measures if e.trained_at(rep.scale) else ()
    extra = e.values_keys(rep.scale)
    panels = len(measures) + bool(extra)
    if panels == 0:
        raise ValueError(f"{e.name}: nothing to plot (no condition at scale {rep.scale!r} and no analysis)")
    fig, axes = plt.subplots(1, panels, figsize=(4.6 * panels, 3.6), squeeze=False)
    published = {(r.condition, r.measure): r for r in e.references if r.value is not None}
    if extra:
        analysis_panel(axes[0][-1], rep, extra, "after training" if measures else "values")
    for ax, m in zip(axes[0], measures):
        for i, cond in enumerate(e.trained_at(rep.scale)):
            curve = rep.curves[(cond.name, m.name)]
            ok = np.isfinite(curve).all(axis=0)  # updates in which an episode ended (in every seed)
            x = rep.steps[cond.name][ok]
            mean, low, high = mean_ci95(curve[:, ok]) if ok.any() else (x, x, x)
            line, = ax.plot(x, mean, marker="o", ms=3, label=f"{cond.name} (ours)")
            ax.fill_between(x, low, high, color=line.get_color(), alpha=0.25, lw=0)
            if not ok.any():
                ax.text(0.5, 0.6 - 0.1 * i, f"{cond.name}: undefined in every update", transform=ax.transAxes,
                        ha="center", fontsize=7)
            ref = published.get((cond.name, m.name))
            if ref is not None:
                ax.axhline(ref.value, ls="--", color=line.get_color(), lw=1.2, label=f"{cond.name} (reference)")
        ax.set_xlabel("env steps")
        ax.set_ylabel(m.label)
        ax.set_title(m.label)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    finish_figure(fig, rep, path)


def analysis_panel(ax, rep: Reproduction, keys: list[tuple[str, str]], title: str = "after training") -> None:
    """The values of ``keys`` (mean and 95% interval over seeds, a row each) with the
    published values beside them."""
    published = {(r.condition, r.measure): r.value for r in rep.entry.references if r.value is not None}
    stats = np.array([interval(rep.finals[k]) for k in keys])  # (K, 3): mean, low, high
    y = np.arange(len(keys))
    ax.errorbar(stats[:, 0], y, xerr=np.abs(stats[:, 1:].T - stats[:, 0]), fmt="o", label="ours (95% CI)")
    refs = [(i, published[k]) for i, k in enumerate(keys) if k in published]
    if refs:
        ax.plot([v for _, v in refs], [i for i, _ in refs], "x", color="k", label="published")
    ax.set_yticks(y, [f"{row} / {quantity}" for row, quantity in keys], fontsize=7)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)


def finish_figure(fig, rep: Reproduction, path: Path) -> None:
    """Title ``fig`` with the entry, scale, seeds and verdict, save it to ``path`` and
    close it (every entry's figure ends this way)."""
    plt = pyplot()
    fig.suptitle(f"{rep.entry.name} ({rep.scale} scale, {seed_text(rep)}): {rep.verdict}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
