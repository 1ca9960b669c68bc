"""The machinery of ``socialjax reproduce``: an :class:`Entry` is a published
experiment stored as data (its conditions at each scale, what is measured, the
published values with their sources, and the criterion that turns numbers into a
verdict); :func:`reproduce` trains every condition, measures, runs the entry's
:class:`Analysis` of the trained populations when it has one, writes the figure with
the published values overlaid, the published-vs-ours table and the verdict.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import platform
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

import socialjax as sj
from socialjax.reproduce.staging import Staging, kept_text
from socialjax.train import Interrupted, TrainConfig, run, save_run, store
from socialjax.train.config import SWEEPABLE
from socialjax.train.formats import config_to_dict
from socialjax.train.run import replay
from socialjax.train.tracking import Listeners, experiment_name, make_trackers, new_folder
from socialjax.viz.plots import mean_ci95, pyplot

# The sizes an entry can run at: ``small``, a check that the pipeline runs (a minute or
# less on a 2-core CPU; what the fast test tier runs); ``cpu``, sized so that the published
# direction can emerge in at most 10 minutes on a 2-core CPU (the default of ``socialjax
# reproduce``); ``gpu``, at most 6 minutes on one H100-class GPU (gridworld entries);
# ``paper``, the published configuration. An entry declares the scales it has by its
# ``seeds`` (one count per scale).
SCALES = ("small", "cpu", "gpu", "paper")
DEFAULT_SCALE = "cpu"
VERDICTS = ("reproduced", "partly", "not reproduced")
KIND = "reproduction"
TABLE_FILE, FIGURE_FILE, SUMMARY_FILE, RESULT_FILE = "table.csv", "figure.png", "summary.txt", "reproduction.json"
FINAL_SHARE = 0.2  # a run's value of a measure: its mean over the last (or first) 20% of updates
WINDOWS = ("end", "start")


@dataclasses.dataclass(frozen=True)
class Condition:
    """One arm of the experiment, per scale: a population trained on
    ``sj.make(env[scale], **env_options[scale])`` with ``TrainConfig(**config[scale])``;
    run at the ``scales`` listed, by default every scale ``config`` has (an arm too costly
    for the CPU is given ``paper``, and perhaps ``gpu``, only)."""

    name: str
    env: Mapping[str, str]  # scale -> registered env name
    env_options: Mapping[str, Mapping[str, Any]]  # scale -> options
    config: Mapping[str, Mapping[str, Any]]  # scale -> TrainConfig fields
    scales: tuple[str, ...] = ()

    def __post_init__(self):
        if not self.scales:
            object.__setattr__(self, "scales", tuple(s for s in SCALES if s in self.config))
        unknown = set(self.scales) - set(SCALES)
        if unknown:
            raise ValueError(f"{self.name}: unknown scales {sorted(unknown)}; the scales are {SCALES}")


@dataclasses.dataclass(frozen=True)
class Measure:
    """A quantity of a run: ``metric`` of the training metrics (``(U,)`` or ``(U, P)``,
    averaged over members ``members`` when given), its value the mean over the last
    (``window="end"``) or the first (``"start"``) :data:`FINAL_SHARE` of updates."""

    name: str
    metric: str
    label: str
    members: slice | None = None  # for (U, P) metrics: the members averaged (default all)
    window: str = "end"

    def __post_init__(self):
        if self.window not in WINDOWS:
            raise ValueError(f"{self.name}: window must be one of {WINDOWS}, got {self.window!r}")


@dataclasses.dataclass(frozen=True)
class Analysis:
    """What an entry measures on the trained populations after training (e.g. playing
    learners of two conditions together). ``keys[scale]`` are the ``(row, quantity)``
    pairs it returns at that scale, declared so that references can be checked without
    running; ``compute(runs, scale, seeds, base_seed)`` gets ``{condition: (RunResult,
    env, TrainConfig)}`` and returns ``{key: (S,) values}``, its randomness drawn from
    the seed numbers ``base_seed .. base_seed + seeds - 1`` or from
    :func:`stream_key` (so ``--seed`` gives it a new seed set too). ``series[scale]`` are further keys
    whose values are ``(S, X)`` sequences (e.g. one value per generation): they go to
    :attr:`Reproduction.curves` for the figure, not to the table."""

    keys: Mapping[str, tuple[tuple[str, str], ...]]
    compute: Callable[[dict, str, int], dict[tuple[str, str], np.ndarray]]
    series: Mapping[str, tuple[tuple[str, str], ...]] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Reference:
    """A published value: ``value`` of ``measure`` in ``condition`` (``None`` for a
    qualitative finding stated in ``note``), its ``source`` (paper, section, figure or
    table) and ``how`` it was read (``"text"``, ``"table"``, ``"figure, approximate"``)."""

    condition: str
    measure: str
    value: float | None
    source: str
    how: str
    note: str = ""


@dataclasses.dataclass(frozen=True)
class Entry:
    """A published experiment. ``criterion(finals)`` gets ``{(condition, measure):
    (S,) final values}`` and returns ``(verdict, reason)`` with the verdict one of
    :data:`VERDICTS`; ``criterion_text`` states it for the reader. ``plot(rep, path)``,
    when given, draws the entry's figure in place of :func:`plot_reproduction`."""

    name: str
    title: str
    citation: str
    conditions: tuple[Condition, ...]
    measures: tuple[Measure, ...]
    references: tuple[Reference, ...]
    criterion: Callable[[dict[tuple[str, str], np.ndarray]], tuple[str, str]]
    criterion_text: str
    seeds: Mapping[str, int] = dataclasses.field(default_factory=lambda: {"small": 2, "paper": 3})
    notes: str = ""
    analysis: Analysis | None = None
    plot: Callable[[Reproduction, Path], None] | None = None

    @property
    def scales(self) -> tuple[str, ...]:
        """The scales the entry runs at (those it has a seed count for), in
        :data:`SCALES` order."""
        return tuple(s for s in SCALES if s in self.seeds)

    def conditions_at(self, scale: str) -> tuple[Condition, ...]:
        return tuple(c for c in self.conditions if scale in c.scales)

    def keys(self, scale: str) -> list[tuple[str, str]]:
        """Every ``(row, quantity)`` the entry reports at ``scale``: each condition's
        measures, then the analysis's keys."""
        keys = [(c.name, m.name) for c in self.conditions_at(scale) for m in self.measures]
        return keys + list(self.analysis.keys[scale] if self.analysis is not None else ())

    def condition(self, name: str) -> Condition:
        for c in self.conditions:
            if c.name == name:
                return c
        raise KeyError(name)


@dataclasses.dataclass
class Reproduction:
    """What :func:`reproduce` measured: ``finals[(condition, measure)]`` ``(S,)``,
    ``curves[(condition, measure)]`` ``(S, U)`` (and the analysis's ``series``, ``(S,
    X)``), ``steps[condition]`` ``(U,)`` env steps after each update, the verdict and its
    reason, and the table rows."""

    entry: Entry
    scale: str
    seeds: int
    base_seed: int
    finals: dict[tuple[str, str], np.ndarray]
    curves: dict[tuple[str, str], np.ndarray]
    steps: dict[str, np.ndarray]
    verdict: str
    reason: str
    rows: list[dict[str, Any]]
    seconds: float


# ------------------------------------------------------------------------------- seeding
def stream_key(stream: int, base_seed: int = 0) -> jax.Array:
    """The key of an analysis's random stream ``stream`` (a number fixed in the entry):
    ``key(stream)`` on the default seed set (``base_seed=0``, the one REPRODUCTIONS.md's
    rows were measured on), folded with ``base_seed`` on any other, so that
    ``--seed S`` draws a seed set disjoint from the default one."""
    key = jax.random.key(stream)
    return key if base_seed == 0 else jax.random.fold_in(key, base_seed)


# ------------------------------------------------------------------------------ measuring
def measure_curve(metrics: Mapping[str, np.ndarray], measure: Measure) -> np.ndarray:
    """``(S, U)`` curve of ``measure`` from one condition's metrics (leading ``(G=1, S,
    U, ...)``)."""
    values = np.asarray(metrics[measure.metric], np.float64)[0]  # (S, U, ...)
    if values.ndim == 3:
        values = values[:, :, measure.members if measure.members is not None else slice(None)]
        values = np.nanmean(values, axis=2)
    return values


def final_values(curve: np.ndarray, window: str = "end") -> np.ndarray:
    """``(S,)``: each run's mean over the last (``window="end"``) or first (``"start"``)
    :data:`FINAL_SHARE` of updates (NaN updates, where no episode ended, skipped)."""
    k = max(1, int(round(curve.shape[1] * FINAL_SHARE)))
    last = curve[:, -k:] if window == "end" else curve[:, :k]
    ok = np.isfinite(last)
    return np.where(ok.any(axis=1), np.where(ok, last, 0.0).sum(axis=1) / np.maximum(ok.sum(axis=1), 1), np.nan)


def interval(values: np.ndarray) -> tuple[float, float, float]:
    """Mean and 95% bootstrap interval over seeds (:func:`socialjax.viz.plots.mean_ci95`)."""
    values = np.asarray(values, np.float64)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return float("nan"), float("nan"), float("nan")
    mean, low, high = mean_ci95(values)
    return float(mean), float(low), float(high)


# ------------------------------------------------------------------------------- criteria
def separated(higher: np.ndarray, lower: np.ndarray) -> str:
    """``"clear"`` when the 95% intervals of the two sets of finals do not overlap with
    ``higher`` above, ``"means"`` when only the means are ordered, ``"no"`` otherwise."""
    hi, hi_low, _ = interval(higher)
    lo, _, lo_high = interval(lower)
    if not (np.isfinite(hi) and np.isfinite(lo)):
        return "no"
    if hi_low > lo_high:
        return "clear"
    return "means" if hi > lo else "no"


def ordered_verdict(finals, higher: tuple[str, str], lower: tuple[str, str], what: str) -> tuple[str, str]:
    """Verdict of "``higher`` exceeds ``lower``": reproduced when the intervals are
    separated, partly when only the means are ordered, not reproduced otherwise."""
    how = separated(finals[higher], finals[lower])
    a, b = interval(finals[higher])[0], interval(finals[lower])[0]
    i = 0 if higher[0] != lower[0] else 1  # name the conditions, or the quantities of one row
    text = f"{what}: {higher[i]} {a:.3g} vs {lower[i]} {b:.3g}"
    if how == "clear":
        return "reproduced", text + " (95% intervals over seeds separated)"
    if how == "means":
        return "partly", text + " (means in the expected order, intervals overlap)"
    return "not reproduced", text + " (not in the expected order)"


def sign_verdict(values: np.ndarray, what: str, positive: bool = True) -> tuple[str, str]:
    """Verdict of "``values`` (one per seed) are above zero" (below with ``positive=False``):
    reproduced when the 95% interval excludes zero on that side, partly when only the
    mean does, not reproduced otherwise."""
    mean, low, high = interval(values)
    sign = 1.0 if positive else -1.0
    text = f"{what}: {mean:.3g} [{low:.3g}, {high:.3g}]"
    if not np.isfinite(mean):
        return "not reproduced", text + " (undefined)"
    if sign * low > 0 and sign * high > 0:
        return "reproduced", text + " (95% interval excludes 0)"
    if sign * mean > 0:
        return "partly", text + " (mean on the expected side of 0, interval includes it)"
    return "not reproduced", text + " (mean on the wrong side of 0)"


def combined_verdict(parts: list[tuple[str, str]]) -> tuple[str, str]:
    """Several findings together: reproduced when all are, not reproduced when none is
    even partly, partly otherwise; the reasons joined."""
    verdicts = [v for v, _ in parts]
    if all(v == "reproduced" for v in verdicts):
        verdict = "reproduced"
    elif all(v == "not reproduced" for v in verdicts):
        verdict = "not reproduced"
    else:
        verdict = "partly"
    return verdict, "; ".join(reason for _, reason in parts)


# ------------------------------------------------------------------------------- running
def group_plans(plans: list, scale: str) -> list[list]:
    """Conditions that differ only in the values of sweepable hyperparameters (same env,
    options and every other setting, no sweep of their own) train as one run over the
    grid of those values: one compilation instead of one per condition."""
    groups: dict[Any, list] = {}
    for cond, env, config in plans:
        fixed = {k: v for k, v in dataclasses.asdict(config).items() if k not in SWEEPABLE}
        key = (cond.env[scale], repr(sorted(dict(cond.env_options[scale]).items())), repr(sorted(fixed.items())))
        if config.sweep_axes():
            key = (key, cond.name)  # a condition with its own sweep runs alone
        groups.setdefault(key, []).append((cond, env, config))
    return list(groups.values())


def merged_config(group: list):
    """The config of a group's run: each hyperparameter the conditions disagree on swept
    over their values (the outer product; points no condition asked for are run too)."""
    configs = [config for _, _, config in group]
    axes = {}
    for name in SWEEPABLE:
        values = sorted({float(getattr(c, name)) for c in configs})
        if len(values) > 1:
            axes[name] = values
    return configs[0].replace(**axes)


def grid_index(result, config) -> int:
    """The grid point of ``result`` whose hyperparameters are ``config``'s."""
    G = len(next(iter(result.grid.values())))
    for g in range(G):
        if all(np.isclose(result.grid[k][g], np.float32(getattr(config, k))) for k in result.grid):
            return g
    raise ValueError("no grid point has this condition's hyperparameters")


def reproduce(entry: Entry, scale: str = DEFAULT_SCALE, seeds: int | None = None, *, base_seed: int = 0,
              out: str | Path | None = None, overwrite: bool = False, progress: bool = True,
              log: Sequence[str] = (), log_dir: str | Path = "runs") -> Reproduction:
    """Train every condition of ``entry`` at ``scale`` with ``seeds`` seeds (default the
    entry's) numbered from ``base_seed`` (0, the default seed set; any other number draws
    a seed set of its own, for checking a result on seeds nobody tuned to), measure,
    judge, and (with ``out``) write the folder atomically:
    ``figure.png``, ``table.csv``, ``summary.txt``, ``reproduction.json`` and each
    condition's run (``<condition>/``, as ``socialjax train`` writes it).

    ``log``: tracker names (:data:`socialjax.train.tracking.TRACKERS`): every training
    run (one per group of conditions trained together) streams its metrics under
    ``<log_dir>/reproduce/<entry>-<scale>/<date-time>[-n]/<conditions>/``, and each gets
    the figure at the end; a run read back from an earlier, stopped try is streamed
    there as it trained then (:func:`socialjax.train.run.replay`), so the folder holds
    every run. A tracker that fails is dropped with one line and the reproduction goes
    on (:class:`~socialjax.train.tracking.Listeners`). An entry that trains no population
    at ``scale`` (its analysis computes everything) says so on stderr: nothing to log.
    In Jupyter, ``progress`` is a live display per run."""

    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    if scale not in entry.scales:
        raise ValueError(f"{entry.name} has no {scale!r} scale; its scales are {entry.scales}")
    seeds = entry.seeds[scale] if seeds is None else seeds
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 2:
        raise ValueError(f"seeds must be an int >= 2 (the verdict compares intervals over seeds), got {seeds!r}")
    if isinstance(base_seed, bool) or not isinstance(base_seed, int) or not 0 <= base_seed < 2**31:
        raise ValueError(f"base_seed must be an int in [0, 2**31), got {base_seed!r}")
    plans = []
    for cond in entry.conditions_at(scale):  # every config checked before anything is compiled
        env = sj.make(cond.env[scale], **dict(cond.env_options[scale]))
        config = TrainConfig().replace(**dict(cond.config[scale]))
        config.validate()
        plans.append((cond, env, config))
    groups = group_plans(plans, scale)
    trackers = {}  # every group's trackers made before any training, in one folder of this reproduction's
    if log and groups:
        root = new_folder(Path(log_dir) / experiment_name(f"reproduce/{entry.name}-{scale}"))
        trackers = {names: Listeners(make_trackers(log, root, names.replace(", ", "+")))
                    for names in (", ".join(c.name for c, _, _ in group) for group in groups)}
    elif log:
        print(f"socialjax: {entry.name} trains no population at scale {scale} (its analysis computes the result): "
              f"--log {' '.join(log)} has nothing to stream", file=sys.stderr, flush=True)
    staging = None
    if out is not None:  # an unfinished run of the same settings is continued
        out = store.check_out_dir(out, overwrite=overwrite, resume=True)
        staging = Staging(out, {"job": "reproduce", "entry": entry.name, "scale": scale, "seeds": seeds,
                                "base_seed": base_seed}, overwrite=overwrite)
    try:
        rep = _train_and_judge(entry, scale, seeds, base_seed, out, staging, plans, groups, progress, trackers)
        for listeners in trackers.values() if out is not None else ():
            listeners.artifact(Path(out) / FIGURE_FILE)
    finally:
        for listeners in trackers.values():
            listeners.close()
    return rep


def _train_and_judge(entry: Entry, scale: str, seeds: int, base_seed: int, out: Path | None, staging, plans: list,
                     groups: list, progress: bool, trackers: dict) -> Reproduction:
    """:func:`reproduce` once its arguments are checked and its trackers made."""
    start = time.perf_counter()
    runs, finals, curves, steps = {}, {}, {}, {}  # runs: condition -> (RunResult, env, TrainConfig)
    for group in groups:
        (cond, env, config), names = group[0], ", ".join(c.name for c, _, _ in group)
        grid = merged_config(group)  # a lone condition's own config
        result = None if staging is None else staging.get(names)
        # compared as the JSON they are saved as (a saved sweep reads back as a tuple, a new one is a list)
        if result is not None and config_to_dict(result.config) != config_to_dict(grid):
            result = None  # saved by another version of the entry: trained again
        if progress:
            print(f"[{entry.name}] {names}: "
                  + (f"finished in an earlier try, read back from {staging.folder}" if result is not None else
                     f"{grid.num_updates} updates x {grid.num_envs} games x {grid.rollout_len} steps, {seeds} seeds"
                     + ("" if len(group) == 1 else f", one run over {len(group)} grid points")), flush=True)
        if result is None:
            try:
                result = run(env, grid, seeds=seeds, base_seed=base_seed, progress=progress, label=names,
                             log=trackers.get(names, ()))
            except Interrupted as stop:
                raise Stopped(stop.snapshot.updates_done, grid.num_updates, names, out) from None
            if staging is not None:
                staging.put(names, result, env_name=cond.env[scale], env_options=dict(cond.env_options[scale]),
                            preset=f"{entry.name}/{names}", base_seed=base_seed)
        elif names in trackers:  # trained by an earlier try: its curves streamed as they were then
            replay(result, env, trackers[names], label=names)
        for cond, env, config in group:
            one = result if len(group) == 1 else result.point(grid_index(result, config), config)
            runs[cond.name] = (one, env, config)
    for cond, env, config in plans:
        result = runs[cond.name][0]
        steps[cond.name] = np.arange(1, config.num_updates + 1) * config.num_envs * config.rollout_len
        for m in entry.measures:
            curve = measure_curve(result.metrics, m)
            curves[(cond.name, m.name)] = curve
            finals[(cond.name, m.name)] = final_values(curve, m.window)
    if entry.analysis is not None:
        if progress:
            print(f"[{entry.name}] analysing" + (" the trained populations" if plans else ""), flush=True)
        extra = entry.analysis.compute(runs, scale, seeds, base_seed)
        series = tuple(entry.analysis.series.get(scale, ()))
        missing = set(entry.analysis.keys[scale]).union(series) - set(extra)
        if missing:
            raise ValueError(f"{entry.name}: the analysis did not return {sorted(missing)}")
        finals.update({k: np.asarray(extra[k], np.float64) for k in entry.analysis.keys[scale]})
        curves.update({k: np.asarray(extra[k], np.float64) for k in series})
    verdict, reason = entry.criterion(finals)
    if verdict not in VERDICTS:
        raise ValueError(f"{entry.name}: criterion returned {verdict!r}, not one of {VERDICTS}")
    rows = table_rows(entry, finals, seeds, scale)
    rep = Reproduction(entry, scale, seeds, base_seed, finals, curves, steps, verdict, reason, rows,
                       time.perf_counter() - start)
    if out is not None:
        def write(tmp: Path) -> None:
            for cond, _, _ in plans:
                save_run(runs[cond.name][0], tmp / cond.name, env_name=cond.env[scale],
                         env_options=dict(cond.env_options[scale]), preset=f"{entry.name}/{cond.name}", plot=False)
            write_table(rows, tmp / TABLE_FILE)
            (entry.plot or plot_reproduction)(rep, tmp / FIGURE_FILE)
            (tmp / SUMMARY_FILE).write_text(summary(rep) + "\n")
            (tmp / RESULT_FILE).write_text(json.dumps(to_json(rep), indent=2) + "\n")

        # the folder was checked at the start and is held by this job: the finished runs kept in it are replaced
        store.write_folder(out, write, kind=KIND, overwrite=True, info={"entry": entry.name, "scale": scale,
                                                                           "base_seed": base_seed})
    return rep


class Stopped(Exception):
    """A reproduction stopped by Ctrl-C or SIGTERM: the runs it finished are kept in its
    output folder, and the same command continues from them."""

    def __init__(self, done: int, total: int, names: str, out: Path | None):
        where = kept_text(out) or "; no run had finished"
        super().__init__(f"stopped during {names} (update {done} of {total}, which is lost){where}")


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
            f"{rep.seconds:.0f} s on {platform.machine()} ({platform.system()})\n\n"
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
        "reason": rep.reason, "criterion": rep.entry.criterion_text, "seconds": rep.seconds,
        "rows": [{k: plain(v) for k, v in r.items()} for r in rep.rows],
        "finals": {f"{c}/{m}": [plain(float(v)) for v in vals] for (c, m), vals in rep.finals.items()},
    }


def plot_reproduction(rep: Reproduction, path: Path) -> None:
    """One panel per measure: each condition's curve (mean over seeds, 95% band)
    against env steps, the published values as dashed lines in the condition's colour;
    and, for an entry with an analysis, a panel of its values (mean and 95% interval,
    the published value beside each)."""
    plt = pyplot()

    e = rep.entry
    measures = e.measures if e.conditions_at(rep.scale) else ()
    extra = list(e.analysis.keys[rep.scale]) if e.analysis is not None else []
    panels = len(measures) + bool(extra)
    if panels == 0:
        raise ValueError(f"{e.name}: nothing to plot (no condition at scale {rep.scale!r} and no analysis)")
    fig, axes = plt.subplots(1, panels, figsize=(4.6 * panels, 3.6), squeeze=False)
    published = {(r.condition, r.measure): r for r in e.references if r.value is not None}
    if extra:
        analysis_panel(axes[0][-1], rep, extra, "after training" if measures else "values")
    for ax, m in zip(axes[0], measures):
        for i, cond in enumerate(e.conditions_at(rep.scale)):
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
