"""Reports of a run: the one-screen summary text and the curves plot.

- :func:`format_summary` / :func:`plot_curves`: a population run
  (:class:`~socialjax.train.RunResult`, or what :func:`socialjax.train.tables.summary`
  rebuilds from a folder): ``summary.txt`` and ``curves.png`` of
  :func:`~socialjax.train.results.save_run`.
- :func:`format_donor_summary` / :func:`plot_donor_curves`: a donor-evolution run
  (:func:`~socialjax.train.cultural_evolution.run_experiment`): its per-generation
  table and ``donor_evolution.png``.

Intervals are the mean across seeds with a bootstrap 95% band
(:func:`socialjax.viz.plots.mean_ci95`, :func:`socialjax.viz.plots.plot_bands`).
"""

from __future__ import annotations

import numpy as np

from socialjax.train.config import TrainConfig
from socialjax.viz.plots import mean_ci95, plot_bands, pyplot

SOCIAL = ("efficiency", "equality", "sustainability", "peace")
WINDOW_FRACTION = 0.1  # "first" and "last" = the first / last 10% of updates
MAX_LEARNER_LINES = 8  # more learners than this: the summary and plot show their mean


def member_names(config: TrainConfig, num_learners: int) -> list[str]:
    """``learner 0 .. L-1`` then the scripted members by name."""
    return [f"learner {i}" for i in range(num_learners)] + [f"{n} (scripted)" for n in config.scripted]


def compile_parts(result) -> str:
    """`` (init 3.1, 1 update 14.2, finish 7.5)``: each stage's compile seconds; a stage
    whose first program did not fit the device shows each program tried (``14.2 + 13.0``)."""
    times = getattr(result, "compile_times", None)
    if not times:
        return ""
    return " (" + ", ".join(f"{name} {' + '.join(f'{t:.1f}' for t in ts)}" for name, ts in times.items()) + ")"


def _window(U: int) -> int:
    return max(1, int(round(U * WINDOW_FRACTION)))


def _ci(values: np.ndarray) -> str:
    """``mean [low, high]`` across the first axis (seeds), NaN seeds left out."""
    values = np.asarray(values, np.float64)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return "undefined"
    mean, low, high = mean_ci95(values)
    if values.size == 1:
        return f"{float(mean):.4g}"
    return f"{float(mean):.4g} [{float(low):.4g}, {float(high):.4g}]"


def _last_defined(series: np.ndarray) -> np.ndarray:
    """``(S, U)`` per-update values (NaN where no episode ended) -> ``(S,)``: the mean over
    the last 10% of the updates in which the value is defined (NaN if never)."""
    out = np.full(series.shape[0], np.nan)
    for s, row in enumerate(np.asarray(series, np.float64)):
        ok = row[np.isfinite(row)]
        if ok.size:
            out[s] = ok[-_window(ok.size):].mean()
    return out


def format_summary(result, *, env_name: str | None = None, env_options: dict | None = None,
                   preset: str | None = None) -> str:
    """The one-screen summary of a :class:`~socialjax.train.RunResult`."""
    config, metrics = result.config, result.metrics
    G, S, U = metrics["reward_rate"].shape[:3]
    P = metrics["reward_rate"].shape[3]
    L = metrics["loss"].shape[3] if "loss" in metrics else P - len(config.scripted)
    names = member_names(config, L)
    N = int(np.asarray(metrics["seat_count"])[0, 0, 0].sum()) // config.num_envs  # seats per game
    lines = _run_lines(result, env_name or result.env_name, env_options, preset, L, N)
    k = _window(U)
    sweep = list(config.sweep_axes())
    for g in range(G):
        rr = np.asarray(metrics["reward_rate"][g], np.float64)  # (S, U, P)
        if G > 1:
            lines.append("grid point " + str(g) + ": " + ", ".join(f"{n}={result.grid[n][g]:g}" for n in sweep))
        lines.append(f"reward per step, first {k} -> last {k} update(s) (mean [95% CI] over {S} seed(s)):")
        first, last = rr[:, :k].mean(axis=1), rr[:, -k:].mean(axis=1)  # (S, P)
        rows = list(range(P))
        if L > MAX_LEARNER_LINES:
            lines.append(f"  {'mean of ' + str(L) + ' learners':26s} {_ci(first[:, :L].mean(1)):>28s} -> "
                         f"{_ci(last[:, :L].mean(1))}")
            rows = list(range(L, P))
        for p in rows:
            lines.append(f"  {names[p]:26s} {_ci(first[:, p]):>28s} -> {_ci(last[:, p])}")
        social = []
        for name in SOCIAL:
            if name in metrics:
                social.append(f"{name} {_ci(_last_defined(metrics[name][g]))}")
        lines.append("social metrics, last 10% of updates with finished episodes: " + "; ".join(social))
        lines.extend(_eval_lines(metrics, g, names, L))
    return "\n".join(lines + _fault_lines(result))


def _run_lines(result, env_name: str, env_options: dict | None, preset: str | None, L: int, N: int) -> list[str]:
    """The summary's head: the game, the learners and the seats (``L`` learners, ``N``
    seats per game), the runs, how they shared the devices, and the time they took."""
    config = result.config
    G, S, U = result.metrics["reward_rate"].shape[:3]
    E, T = config.num_envs, config.rollout_len
    opts = ", ".join(f"{k}={v!r}" for k, v in (env_options or {}).items())
    lines = []
    head = f"{preset}: " if preset else ""
    lines.append(f"{head}{env_name}{f' ({opts})' if opts else ''}, {config.algo.upper()}, seating {config.seating}: "
                 f"{L} learner(s), {len(config.scripted)} scripted member(s), {N} seats per game")
    env_steps = G * S * U * E * T
    lines.append(f"{G * S} run(s) = {G} grid point(s) x {S} seed(s); each {U} updates x {E} games x {T} steps")
    compile_s = float(getattr(result, "compile_seconds", 0.0))
    run_s = max(result.seconds - compile_s, 1e-9)
    per_device = getattr(result, "per_device", None)
    if per_device:
        chunk = getattr(result, "chunk", None)
        together = f"computed {chunk} at a time" if chunk else "computed together"
        lines.append(f"{per_device} run(s) per device, " + together
                     + (f"; the program needs {getattr(result, 'memory_bytes', 0) / 2**20:,.1f} MiB per device"
                        if getattr(result, "memory_bytes", 0) else ""))
    lines.append(f"wall time {result.seconds:.1f} s = compile {compile_s:.1f} s{compile_parts(result)} + run "
                 f"{run_s:.1f} s; "
                 f"{env_steps / run_s:,.0f} env-steps/s, {env_steps * N / run_s:,.0f} agent-steps/s over the run "
                 "(training and evaluation time, training steps counted)")
    return lines


def _fault_lines(result) -> list[str]:
    """The summary's tail: the runs whose losses went non-finite, and the listeners
    dropped while they trained."""
    lines = []
    if result.nan_runs:
        lines.append(f"non-finite losses in {len(result.nan_runs)} run(s):")
        lines.extend(f"  {line}" for line in result.nan_runs)
    else:
        lines.append("non-finite losses: none")
    failures = getattr(result, "listener_failures", None)  # a result rebuilt from a folder has none
    if failures:
        lines.append(f"listeners dropped while the runs trained (the training went on without them): "
                     f"{len(failures)}")
        lines.extend(f"  {line}" for line in failures)
    return lines


def _eval_lines(metrics, g: int, names: list[str], L: int) -> list[str]:
    out = []
    if "eval/crossplay" in metrics:
        cp = np.asarray(metrics["eval/crossplay"][g], np.float64)  # (S, L, L)
        diag = np.diagonal(cp, axis1=1, axis2=2).mean(axis=1)
        text = f"evaluation: cross-play reward/step of the seat-0 learner: self-play (diagonal) {_ci(diag)}"
        if L > 1:
            off = (cp.sum(axis=(1, 2)) - np.diagonal(cp, axis1=1, axis2=2).sum(axis=1)) / (L * (L - 1))
            text += f", with other learners (off-diagonal) {_ci(off)}"
        out.append(text)
    if "eval/reward_rate" in metrics:
        ev = np.asarray(metrics["eval/reward_rate"][g], np.float64)  # (S, P)
        if L > MAX_LEARNER_LINES:
            cells = [f"mean of {L} learners {_ci(ev[:, :L].mean(axis=1))}"]
            cells += [f"{names[p]} {_ci(ev[:, p])}" for p in range(L, ev.shape[1])]
        else:
            cells = [f"{names[p]} {_ci(ev[:, p])}" for p in range(ev.shape[1])]
        out.append("evaluation: reward/step in the training seating: " + "; ".join(cells))
    if "eval/focal_reward_rate" in metrics:
        focal = np.asarray(metrics["eval/focal_reward_rate"][g], np.float64).mean(axis=1)
        back = np.asarray(metrics["eval/background_reward_rate"][g], np.float64).mean(axis=1)
        out.append(f"evaluation: focal learners vs background bots: focal reward/step {_ci(focal)}, "
                   f"background {_ci(back)}")
    return out


def plot_curves(metrics: dict[str, np.ndarray], grid: dict[str, np.ndarray], config: TrainConfig, path,
                title: str | None = None) -> None:
    """``curves.png``: reward per step per member (one line per member, or per grid point
    in a sweep) and each social metric that is defined, against the update; mean over
    seeds with a bootstrap 95% band (:func:`~socialjax.viz.plots.plot_bands`)."""
    plt = pyplot()
    G, S, U, P = metrics["reward_rate"].shape
    L = metrics["loss"].shape[3] if "loss" in metrics else P - len(config.scripted)
    names = member_names(config, L)
    sweep = list(config.sweep_axes())
    x = np.arange(1, U + 1)
    xr, rewards = _reward_series(metrics["reward_rate"], names, L, grid, sweep)
    panels = [("reward per step", [(xr, {k: v}) for k, v in rewards.items()])]
    for name in SOCIAL:
        if name not in metrics:
            continue
        lines = []  # (x, {label: (S, len(x))}) per grid point: episodes may end at different updates
        for g in range(G):
            filled, keep = _forward_fill(np.asarray(metrics[name][g], np.float64))
            if keep.any():
                lines.append((x[keep], {_grid_label(grid, sweep, g) or name: filled[:, keep]}))
        if lines:
            panels.append((f"{name} (finished episodes)", lines))
    ncols = min(3, len(panels))
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols, 3.6 * nrows), squeeze=False)
    for ax, (label, lines) in zip(axes.ravel(), panels):
        for xs, series in lines:
            plot_bands(ax, xs, series, label)
        ax.set_xlabel("update")
    for ax in axes.ravel()[len(panels):]:
        ax.axis("off")
    if title:
        fig.suptitle(title)
    fig.text(0.01, 0.005, f"{S} seed(s) per line: solid = mean, dark band = bootstrap 95% CI of the mean, "
             "dashed = median, light band = 5-95% of seeds", fontsize=7)
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _grid_label(grid, sweep, g) -> str:
    return ", ".join(f"{n}={grid[n][g]:g}" for n in sweep)


def _reward_series(rr: np.ndarray, names, L: int, grid, sweep):
    G, S, U, P = rr.shape
    x = np.arange(1, U + 1)
    series = {}
    if G > 1:  # one line per grid point: the learners' mean (and the scripted members' mean)
        for g in range(G):
            series[f"learners, {_grid_label(grid, sweep, g)}"] = rr[g, :, :, :L].mean(axis=-1)
        return x, series
    members = range(P) if L <= MAX_LEARNER_LINES else [None, *range(L, P)]
    for p in members:
        if p is None:
            series[f"mean of {L} learners"] = rr[0, :, :, :L].mean(axis=-1)
        else:
            series[names[p]] = rr[0, :, :, p]
    return x, series


def _forward_fill(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(S, U)`` with NaN where no episode ended -> each seed's value of its last finished
    episode, and the updates to plot: those at which some seed finished an episode and
    every seed has finished one by then."""
    ended = np.any(np.isfinite(values), axis=0)
    out = values.copy()
    for row in out:
        for t in range(1, row.size):
            if not np.isfinite(row[t]):
                row[t] = row[t - 1]
    return out, ended & np.all(np.isfinite(out), axis=0)

def format_donor_summary(result: dict) -> str:
    """A donor-evolution run's one-screen table: per generation, mean [95% CI] across
    seeds, per multiplier. ``result``: :func:`~socialjax.train.cultural_evolution.run_experiment`'s
    dict (``metrics``: ``{name: (M, S, G)}``, ``multipliers`` ``(M,)``, ``seconds``, ``out_dir``)."""
    metrics, mults = result["metrics"], result["multipliers"]
    _, num_seeds, num_gens = metrics["mean_final_resources"].shape
    lines = [
        "",
        f"Average final resources per generation (mean [95% CI of the mean] over {num_seeds} seeds)",
        "gen  " + "".join(f"{'g = ' + format(g, 'g'):>26}" for g in mults),
    ]
    stats = [mean_ci95(metrics["mean_final_resources"][i]) for i in range(len(mults))]
    given = [mean_ci95(metrics["mean_fraction_given"][i])[0] for i in range(len(mults))]
    for gen in range(num_gens):
        cells = "".join(f"{m[gen]:9.2f} [{lo[gen]:7.2f},{hi[gen]:7.2f}]" for m, lo, hi in stats)
        lines.append(f"{gen + 1:3d}  {cells}")
    medians = [np.median(metrics["mean_final_resources"][i][:, -1]) for i in range(len(mults))]
    lines.append("median across seeds, last generation: " + ", ".join(
        f"g={g:g}: {m:.2f}" for g, m in zip(mults, medians)) + " (heavy tails: a few seeds can dominate the mean)")
    lines.append("mean fraction given, first -> last generation: " + ", ".join(
        f"g={g:g}: {v[0]:.3f} -> {v[-1]:.3f}" for g, v in zip(mults, given)))
    lines.append("reference: a population that never gives ends every game with its initial 10.")
    runs = len(mults) * num_seeds
    lines.append(f"{runs} runs in {result['seconds']:.1f} s including compilation; wrote {result['out_dir']}/"
                 "{metrics.npz, summary.csv, config.json, donor_evolution.png, manifest.json}")
    return "\n".join(lines)


def plot_donor_curves(metrics: dict[str, np.ndarray], mults: np.ndarray, path, num_seeds: int) -> None:
    """``donor_evolution.png``: average final resources and mean fraction given per
    generation, a line per multiplier (``metrics``: ``{name: (M, S, G)}``)."""
    plt = pyplot()
    gens = np.arange(1, metrics["mean_final_resources"].shape[-1] + 1)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    label = lambda g: f"multiplier g = {g:g}"
    plot_bands(axes[0], gens, {label(g): metrics["mean_final_resources"][i] for i, g in enumerate(mults)},
               "average final resources", "Donor game: cultural evolution", logy=True)
    plot_bands(axes[1], gens, {label(g): metrics["mean_fraction_given"][i] for i, g in enumerate(mults)},
               "mean fraction given by donors", "Generosity")
    for ax in axes:
        ax.set_xlabel("generation")
    fig.text(0.01, 0.01, f"{num_seeds} seeds per line: solid = mean, dark band = bootstrap 95% CI of the mean, "
             "dashed = median, light band = 5-95% of seeds",
             fontsize=7)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)

