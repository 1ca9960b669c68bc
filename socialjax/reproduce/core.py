"""The machinery of ``socialjax reproduce``: :func:`reproduce` trains every condition
of an :class:`~socialjax.reproduce.entry.Entry` (a published experiment stored as data,
:mod:`socialjax.reproduce.entry`) or runs its model, measures, runs the entry's analysis
of the trained populations when it has one, and writes the figure with the published values overlaid,
the published-vs-ours table and the verdict (:mod:`socialjax.reproduce.report`). The
names of both modules are importable from here too, as entries import them.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

import socialjax as sj
from socialjax.reproduce.entry import (  # noqa: F401 (re-exported: the entries import them from here)
    DEFAULT_SCALE,
    FINAL_SHARE,
    KIND,
    SCALES,
    VERDICTS,
    WINDOWS,
    Analysis,
    Condition,
    Entry,
    Measure,
    Reference,
    Reproduction,
    combined_verdict,
    final_values,
    interval,
    measure_curve,
    model_condition,
    ordered_verdict,
    separated,
    sign_verdict,
    stream_key,
)
from socialjax.reproduce.report import (  # noqa: F401 (re-exported)
    FIGURE_FILE,
    RESULT_FILE,
    SUMMARY_FILE,
    TABLE_FILE,
    analysis_panel,
    finish_figure,
    format_table,
    plot_reproduction,
    seed_text,
    summary,
    table_rows,
    to_json,
    write_table,
)
from socialjax.reproduce.staging import Staging, kept_text
from socialjax.reproduce.timings import Timings
from socialjax.train import Interrupted, TrainConfig, run, runner, save_run, store
from socialjax.train.config import SWEEPABLE
from socialjax.train.formats import config_from_dict, config_to_dict
from socialjax.train.models import MODEL, ModelRun, compute, model_spec, stream
from socialjax.train.models import write as write_model_run
from socialjax.train.run import replay
from socialjax.train.spec import JobSpec
from socialjax.train.tracking import Listeners, experiment_name, make_trackers, new_folder


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
    on (:class:`~socialjax.train.tracking.Listeners`). A model condition's run logs its
    series and values (:func:`socialjax.train.models.stream`).
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
    plans, computed = _plans(entry, scale, seeds, base_seed)
    groups = group_plans(plans, scale)
    names = [", ".join(c.name for c, _, _ in group) for group in groups] + [c.name for c, _ in computed]
    trackers = {}  # every run's trackers made before any training, in one folder of this reproduction's
    if log and names:
        root = new_folder(Path(log_dir) / experiment_name(f"reproduce/{entry.name}-{scale}"))
        trackers = {name: Listeners(make_trackers(log, root, name.replace(", ", "+"))) for name in names}
    elif log:
        print(f"socialjax: {entry.name} runs nothing at scale {scale} (its analysis computes the result): "
              f"--log {' '.join(log)} has nothing to stream", file=sys.stderr, flush=True)
    staging = None
    if out is not None:  # an unfinished run of the same settings is continued
        out = store.check_out_dir(out, overwrite=overwrite, resume=True)
        staging = Staging(out, {"job": "reproduce", "entry": entry.name, "scale": scale, "seeds": seeds,
                                "base_seed": base_seed}, overwrite=overwrite)
    try:
        rep = _train_and_judge(entry, scale, seeds, base_seed, out, staging, plans, groups, computed, progress,
                               trackers)
        for listeners in trackers.values() if out is not None else ():
            listeners.artifact(Path(out) / FIGURE_FILE)
    finally:
        for listeners in trackers.values():
            listeners.close()
    return rep


def _plans(entry: Entry, scale: str, seeds: int, base_seed: int) -> tuple[list, list]:
    """Every condition checked before anything is compiled: ``[(condition, env,
    TrainConfig)]`` of the populations, ``[(condition, JobSpec)]`` of the models."""
    plans, computed = [], []
    for cond in entry.trained_at(scale):
        env = sj.make(cond.env[scale], **dict(cond.env_options[scale]))
        config = TrainConfig().replace(**dict(cond.config[scale]))
        config.validate()
        plans.append((cond, env, config))
    for cond in entry.computed_at(scale):
        model, settings = cond.model(scale)
        spec = model_spec(model.name, settings, seeds, base_seed, f"{entry.name}/{cond.name}")
        model.settings_of(spec)
        computed.append((cond, spec))
    return plans, computed


def _train_and_judge(entry: Entry, scale: str, seeds: int, base_seed: int, out: Path | None, staging, plans: list,
                     groups: list, computed: list, progress: bool, trackers: dict) -> Reproduction:
    """:func:`reproduce` once its arguments are checked and its trackers made, each phase
    timed (:class:`~socialjax.reproduce.timings.Timings`)."""
    timings = Timings()
    finals, curves, steps = {}, {}, {}
    with timings.training.measure():
        runs = _train_populations(entry, scale, seeds, base_seed, staging, groups, progress, trackers, timings)
    for cond, env, config in plans:
        result = runs[cond.name][0]
        steps[cond.name] = np.arange(1, config.num_updates + 1) * config.num_envs * config.rollout_len
        for m in entry.measures:
            curve = measure_curve(result.metrics, m, runs[cond.name][1])
            curves[(cond.name, m.name)] = curve
            finals[(cond.name, m.name)] = final_values(curve, m.window)
    with timings.models.measure():
        model_runs = {cond.name: _model_run(entry, staging, cond.name, spec, trackers, progress)
                      for cond, spec in computed}
    for result in model_runs.values():
        finals.update({k: result.values[k] for k in result.keys})
        curves.update({k: result.values[k] for k in result.series})
    if entry.analysis is not None:
        if progress:
            print(f"[{entry.name}] analysing" + (" the trained populations" if plans else ""), flush=True)
        with timings.analysis.measure():
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
    rep = Reproduction(entry, scale, seeds, base_seed, finals, curves, steps, verdict, reason,
                       table_rows(entry, finals, seeds, scale), timings)
    if out is not None:
        _write(rep, out, plans, runs, model_runs)  # closes the timings before its summary
    else:
        timings.close()
    return rep


def _train_populations(entry: Entry, scale: str, seeds: int, base_seed: int, staging, groups: list, progress: bool,
                       trackers: dict, timings: Timings) -> dict:
    """Every group of conditions trained as one run, or read back from an earlier try:
    ``{condition: (RunResult, env, TrainConfig)}``; the env steps trained are added to
    ``timings``."""
    runs = {}
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
            result = _train(staging, names, JobSpec(runner.POPULATION.name, cond.env[scale],
                                                    dict(cond.env_options[scale]), config_to_dict(grid),
                                                    tuple(range(seeds)), base_seed, f"{entry.name}/{names}"),
                            trackers.get(names) or Listeners(), progress, env)
            timings.env_steps += result.num_runs * grid.num_updates * grid.num_envs * grid.rollout_len
        elif names in trackers:  # trained by an earlier try: its curves streamed as they were then
            replay(result, env, trackers[names], label=names)
        for cond, env, config in group:
            one = result if len(group) == 1 else result.point(grid_index(result, config), config)
            runs[cond.name] = (one, env, config)
    return runs


def _model_run(entry: Entry, staging: Staging | None, name: str, spec: JobSpec, trackers: dict,
               progress: bool) -> ModelRun:
    """The model run of the condition ``name``: read back when an earlier try finished
    it with the same settings (its values streamed to the trackers as they were then),
    otherwise computed through the runner (:func:`_train`)."""
    result = None if staging is None else staging.get_model(name)
    if result is not None and not result.spec.same_settings(spec):
        result = None  # saved by another version of the entry: computed again
    if result is None:
        return _train(staging, name, spec, trackers.get(name) or Listeners(), progress)
    if progress:
        print(f"[{entry.name}] {name}: finished in an earlier try, read back from {staging.folder}", flush=True)
    if name in trackers:
        stream(result, trackers[name], name)
    return result


def _train(staging: Staging | None, names: str, spec: JobSpec, listeners: Listeners, progress: bool, env=None):
    """The run of the conditions ``names`` (a population, on ``env`` when it is made, or
    a model): through the runner into the staging folder (kept when it finishes, its
    state saved when stopped), or, with no output folder, in memory; a stop is
    :class:`Stopped` (a failure the runner's ``Failed``), naming the run and what is kept."""
    if staging is None and spec.kind == MODEL.name:
        return compute(spec, progress=progress, label=names, trackers=listeners)
    if staging is None:
        config = config_from_dict(dict(spec.config))
        try:
            return run(env if env is not None else sj.make(spec.env, **spec.env_options), config,
                       seeds=len(spec.seeds), base_seed=spec.base_seed, progress=progress, label=names, log=listeners)
        except Interrupted as stop:
            raise Stopped(f"stopped during {names} (update {stop.snapshot.updates_done} of {config.num_updates}); "
                          "nothing is kept without an output folder") from None
    out = staging.folder.parent
    try:
        return staging.train(names, spec, listeners, progress)
    except runner.Stopped as stop:
        raise Stopped(f"stopped during {names}: {stop}{kept_text(out)}", stop.at_once) from None
    except runner.Failed as err:
        raise runner.Failed(f"{names}: {err}{kept_text(out)}") from None


def _write(rep: Reproduction, out: Path, plans: list, runs: dict, model_runs: dict) -> None:
    """The reproduction's folder: each condition's run (a population's or a model's),
    the table, the figure, the summary and the JSON record. The folder was checked at
    the start and is held by this job: the finished runs kept in it are replaced."""
    entry, scale, writing_from = rep.entry, rep.scale, time.perf_counter()

    def write(tmp: Path) -> None:
        for cond, _, _ in plans:
            save_run(runs[cond.name][0], tmp / cond.name, env_name=cond.env[scale],
                     env_options=dict(cond.env_options[scale]), preset=f"{entry.name}/{cond.name}", plot=False)
        for name, result in model_runs.items():
            write_model_run(result, result.spec, tmp / name, overwrite=False)
        write_table(rep.rows, tmp / TABLE_FILE)
        (entry.plot or plot_reproduction)(rep, tmp / FIGURE_FILE)
        rep.timings.close(writing_from)
        (tmp / SUMMARY_FILE).write_text(summary(rep) + "\n")
        (tmp / RESULT_FILE).write_text(json.dumps(to_json(rep), indent=2) + "\n")

    store.write_folder(out, write, kind=KIND, overwrite=True, info={"entry": entry.name, "scale": scale,
                                                                       "base_seed": rep.base_seed})


class Stopped(runner.Stopped):
    """A reproduction stopped by Ctrl-C or SIGTERM: the runs it finished, and the state
    of the one under way, are kept in its output folder, and the same command continues
    from them (``at_once``: a second signal, or one while compiling, gave no time to
    save the run under way)."""


