"""Save, summarise and reload the results of :func:`socialjax.train.run`.

    import socialjax as sj
    from socialjax.train import run
    from socialjax.train.results import save_run, load_run

    env = sj.make("ipd", num_rounds=100)
    result = run(env, config, seeds=8)
    text = save_run(result, "results/my-run", env_name="ipd", env_options={"num_rounds": 100})
    print(text)                                  # the one-screen summary

    loaded = load_run("results/my-run")          # works in a fresh process / notebook
    loaded.train                                 # make_train(env, config), rebuilt (not compiled)
    out = sj.train.play(loaded.train, loaded.learners(0, 3), jax.random.key(0), 200)

``save_run`` writes to ``out_dir``:

- ``metrics.npz``: every array of ``result.metrics`` with axes ``(grid, seed, update,
  member...)`` (see :func:`socialjax.train.make_train`; ``eval/...`` arrays have no
  update axis), plus ``grid/<hyperparameter>`` ``(G,)`` and ``seeds`` ``(S,)``;
- ``config.json``: the :class:`~socialjax.train.TrainConfig` fields, the environment's
  registered name and options (for :func:`socialjax.make`), the preset name, the
  seeds, the base seed and the wall time;
- ``checkpoint.msgpack``: ``result.states`` (the trained learners of every run: leaves
  with leading axes ``(G, S)``), written with ``flax.serialization.to_bytes``;
- ``curves.png``: reward per step of each member and the social metrics per update, the
  mean across seeds with a bootstrap 95% band (:func:`socialjax.viz.plots.plot_bands`);
- ``summary.txt``: the text that ``save_run`` returns (:func:`format_summary`).

``load_run(dir)`` reads them back into a :class:`LoadedRun`: the config, the
environment (rebuilt with ``sj.make``), ``train = make_train(env, config)``, the
metrics, and the states restored onto the structure ``make_train`` gives, bit for bit.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from socialjax.train import store
from socialjax.train.config import TrainConfig

METRICS_FILE = "metrics.npz"
CONFIG_FILE = "config.json"
CHECKPOINT_FILE = "checkpoint.msgpack"
CURVES_FILE = "curves.png"
SUMMARY_FILE = "summary.txt"
OUTPUT_FILES = (METRICS_FILE, CONFIG_FILE, CHECKPOINT_FILE, CURVES_FILE, SUMMARY_FILE, store.MANIFEST)
SOCIAL = ("efficiency", "equality", "sustainability", "peace")
WINDOW_FRACTION = 0.1  # "first" and "last" = the first / last 10% of updates
MAX_LEARNER_LINES = 8  # more learners than this: the summary and plot show their mean
FORMAT_VERSION = 1
KIND = "population"
STATE_FILE = "state.npz"  # an unfinished run's checkpoint: resume/state.npz and resume/run.json
RUN_FILE = "run.json"


# ----------------------------------------------------------------------------- save
def save_run(
    result,
    out_dir: str | os.PathLike,
    *,
    env_name: str | None = None,
    env_options: dict[str, Any] | None = None,
    preset: str | None = None,
    base_seed: int = 0,
    plot: bool = True,
    overwrite: bool = False,
) -> str:
    """Write ``result`` (a :class:`~socialjax.train.RunResult`) to ``out_dir`` (see the
    module docstring) and return the summary text (also in ``summary.txt``).

    ``env_name`` and ``env_options`` must rebuild the environment with
    ``sj.make(env_name, **env_options)`` (``env_name`` defaults to ``result.env_name``);
    ``base_seed`` is the one passed to ``run``. The folder is written whole or not at
    all (:mod:`socialjax.train.store`); an earlier result there is replaced only with
    ``overwrite=True``."""
    import flax.serialization

    out = Path(out_dir)
    env_name = env_name or result.env_name
    env_options = dict(env_options or {})
    arrays = {name: np.asarray(v) for name, v in result.metrics.items()}
    arrays.update({f"grid/{k}": np.asarray(v) for k, v in result.grid.items()})
    arrays["seeds"] = np.asarray(result.seeds)
    meta = run_meta(result.config, env_name, env_options, preset, result.seeds, base_seed)
    meta.update({
        "seconds": float(result.seconds),
        "compile_seconds": float(getattr(result, "compile_seconds", 0.0)),
        "per_device": int(getattr(result, "per_device", 0)),
        "chunk": getattr(result, "chunk", None),
        "memory_bytes": int(getattr(result, "memory_bytes", 0)),
        "nan_runs": list(result.nan_runs),
    })
    files = [METRICS_FILE, CONFIG_FILE, CHECKPOINT_FILE] + ([CURVES_FILE] if plot else []) + [SUMMARY_FILE]
    text = format_summary(result, env_name=env_name, env_options=env_options, preset=preset)
    text += f"\nwrote {out}/{{{', '.join(files)}, {store.MANIFEST}}}"

    def write(tmp: Path) -> None:
        np.savez(tmp / METRICS_FILE, **arrays)
        (tmp / CONFIG_FILE).write_text(json.dumps(meta, indent=2, default=_json_default) + "\n")
        (tmp / CHECKPOINT_FILE).write_bytes(flax.serialization.to_bytes(result.states))
        if plot:
            plot_curves(result.metrics, result.grid, result.config, tmp / CURVES_FILE, title=preset or env_name)
        (tmp / SUMMARY_FILE).write_text(text + "\n")

    store.write_folder(out, write, kind=KIND, overwrite=overwrite, info={"env": env_name, "preset": preset})
    return text


def run_meta(config: TrainConfig, env_name: str, env_options: dict, preset: str | None, seeds, base_seed: int) -> dict:
    """What rebuilds a run: the environment, the config, the seeds (``config.json``, and
    an unfinished run's ``resume/run.json``)."""
    return {
        "format_version": FORMAT_VERSION,
        "job": KIND,
        "preset": preset,
        "env": env_name,
        "env_options": dict(env_options),
        "config": config_to_dict(config),
        "seeds": [int(s) for s in seeds],
        "base_seed": int(base_seed),
        "sweep": sorted(config.sweep_axes()),
    }


def config_to_dict(config: TrainConfig) -> dict[str, Any]:
    """The config's fields as JSON-ready values (tuples and arrays become lists)."""
    return {f.name: _plain(getattr(config, f.name)) for f in dataclasses.fields(config)}


def config_from_dict(fields: dict[str, Any]) -> TrainConfig:
    """Inverse of :func:`config_to_dict` (lists become tuples)."""
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(fields) - known)
    if unknown:
        raise ValueError(f"the saved config has fields this version of TrainConfig does not know: {unknown}")
    return TrainConfig(**{k: _tuples(v) for k, v in fields.items()})


def _plain(v):
    if isinstance(v, (tuple, list)):
        return [_plain(x) for x in v]
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    return v


def _tuples(v):
    return tuple(_tuples(x) for x in v) if isinstance(v, list) else v


def _json_default(v):
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, tuple):
        return list(v)
    raise TypeError(f"cannot write {type(v).__name__} {v!r} to JSON")


# ----------------------------------------------------------------------------- load
@dataclasses.dataclass
class LoadedRun:
    """What :func:`load_run` returns. ``states`` leaves have leading axes ``(G, S)``."""

    path: Path
    preset: str | None
    env_name: str
    env_options: dict[str, Any]
    config: TrainConfig
    env: Any
    train: Any  # make_train(env, config): carries env, learner, scripted members, seat plan
    seeds: np.ndarray
    base_seed: int
    grid: dict[str, np.ndarray]
    metrics: dict[str, np.ndarray]
    states: Any  # TrainState, numpy leaves (G, S, ...)
    meta: dict[str, Any]

    @property
    def grid_size(self) -> int:
        return int(len(next(iter(self.grid.values()))))

    def learners(self, g: int = 0, s: int = 0):
        """The learners of run ``(grid point g, seed index s)``, for :func:`~socialjax.train.play`."""
        G, S = self.grid_size, len(self.seeds)
        if not (0 <= g < G and 0 <= s < S):
            raise ValueError(f"run ({g}, {s}) is outside the {G} grid point(s) x {S} seed(s) of {self.path}")
        from socialjax.train.playback import as_run

        return as_run(self.states.learners, g, s)


def load_run(path: str | os.PathLike) -> LoadedRun:
    """Reload a folder written by :func:`save_run` (or ``socialjax train``). The folder
    is checked against its manifest first: a partial, damaged or foreign folder raises
    :class:`~socialjax.train.store.ResultError` naming the file."""
    import flax.serialization
    import jax

    from socialjax.train.population import make_train

    path = Path(path)
    store.verify(path, kind=KIND)
    meta = _read_json(path / CONFIG_FILE)
    config, env = _rebuild(path / CONFIG_FILE, meta)
    train = make_train(env, config)
    arrays = _read_npz(path / METRICS_FILE)
    if "seeds" not in arrays or not any(k.startswith("grid/") for k in arrays):
        raise store.ResultError(f"{path / METRICS_FILE} is not a population result's metrics (no seeds or grid)")
    seeds = arrays.pop("seeds")
    grid = {k[len("grid/"):]: arrays.pop(k) for k in list(arrays) if k.startswith("grid/")}
    G, S = len(next(iter(grid.values()))), len(seeds)
    template = _state_template(train, config)
    try:
        raw = flax.serialization.msgpack_restore((path / CHECKPOINT_FILE).read_bytes())
        states = flax.serialization.from_state_dict(template, raw)
    except Exception as err:  # msgpack raises several types for damaged bytes
        raise store.ResultError(f"{path / CHECKPOINT_FILE} does not hold the learners of its config.json: "
                                f"{type(err).__name__}: {err}") from None
    want = jax.tree_util.tree_map(lambda t: (G, S) + tuple(t.shape), template)
    got = jax.tree_util.tree_map(lambda x: tuple(np.shape(x)), states)
    if jax.tree_util.tree_structure(states) != jax.tree_util.tree_structure(template) or want != got:
        raise store.ResultError(f"{path / CHECKPOINT_FILE} does not match the learners of its config.json "
                                f"({G} grid point(s) x {S} seed(s))")
    states = jax.tree_util.tree_map(np.asarray, states)
    return LoadedRun(path, meta.get("preset"), meta["env"], _env_options(meta), config, env, train, seeds,
                     int(meta.get("base_seed", 0)), grid, arrays, states, meta)


def _read_json(path: Path) -> dict:
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError, UnicodeDecodeError) as err:
        raise store.ResultError(f"{path} is not readable JSON: {err}") from None
    if not isinstance(meta, dict):
        raise store.ResultError(f"{path} is not a socialjax run description")
    return meta


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except Exception as err:  # zipfile, numpy and OS errors for damaged files
        raise store.ResultError(f"{path} is not a readable .npz file: {type(err).__name__}: {err}") from None


def _env_options(meta: dict) -> dict:
    return {k: _tuples(v) for k, v in meta.get("env_options", {}).items()}


def _rebuild(where: Path, meta: dict):
    """The config and environment a run description names."""
    from socialjax.core.registry import make

    try:
        config = config_from_dict(meta["config"])
        env = make(meta["env"], **_env_options(meta))
    except KeyError as err:
        raise store.ResultError(f"{where} does not describe a run: no {err}") from None
    except (ValueError, TypeError) as err:
        raise store.ResultError(f"{where}: {err}") from None
    return config, env


# ----------------------------------------------------------------------------- checkpoints
def save_checkpoint(out_dir: str | os.PathLike, snapshot, meta: dict, *, segment: int,
                    memory: int | None = None) -> Path:
    """Write an unfinished run's checkpoint, ``out_dir/resume/`` (``state.npz``: the
    :class:`~socialjax.train.run.Snapshot`'s state leaves and metrics; ``run.json``:
    ``meta`` from :func:`run_meta` and the segment bookkeeping), atomically: the old
    checkpoint is replaced only once the new one is complete. ``out_dir`` holds nothing
    else until the run finishes and its results replace the checkpoint."""
    import jax

    out = Path(out_dir)
    leaves = jax.tree_util.tree_leaves(snapshot.state)
    arrays = {f"state/{i:05d}": np.asarray(x) for i, x in enumerate(leaves)}
    arrays.update({f"metrics/{k}": np.asarray(v) for k, v in snapshot.metrics.items()})
    info = {**meta, "updates_done": int(snapshot.updates_done), "per_device": int(snapshot.per_device),
            "chunk": snapshot.chunk, "segment": int(segment), "memory": memory}

    def write(folder: Path) -> None:
        np.savez(folder / STATE_FILE, **arrays)
        (folder / RUN_FILE).write_text(json.dumps(info, indent=2, default=_json_default) + "\n")

    if store.folder_state(out) == "unfinished":
        return store.write_subfolder(out / store.RESUME_DIR, write, kind="checkpoint")

    def wrap(tmp: Path) -> None:  # a new unfinished-run folder, replacing what --overwrite allowed
        store.write_subfolder(tmp / store.RESUME_DIR, write, kind="checkpoint")

    store.write_folder(out, wrap, kind=None, overwrite=True)
    return out / store.RESUME_DIR


@dataclasses.dataclass
class Checkpoint:
    """An unfinished run read back by :func:`load_checkpoint`: ``meta`` (``run.json``;
    ``meta["job"]`` is ``population`` or ``donor-evolution``), the rebuilt ``config``
    and ``env`` of a population run (``None`` for donor-evolution), and the arrays (``state`` leaves in order,
    ``metrics``) for :func:`restore_snapshot`."""

    path: Path
    meta: dict
    config: TrainConfig
    env: Any
    leaves: list
    metrics: dict


def load_checkpoint(out_dir: str | os.PathLike) -> Checkpoint:
    """Read ``out_dir/resume/``, checked against its manifest."""
    out = Path(out_dir)
    state = store.folder_state(out)
    if state != "unfinished":
        what = {"missing": "does not exist", "empty": "is empty", "result": "holds a finished result",
                "foreign": "is not a socialjax output folder"}[state]
        raise store.ResultError(f"{out} {what}: there is no unfinished run to resume "
                                f"(a run saves one with --checkpoint-every K)")
    folder = out / store.RESUME_DIR
    store.verify(folder, kind="checkpoint")
    meta = _read_json(folder / RUN_FILE)
    config = env = None  # a donor-evolution run is rebuilt by run_experiment from its settings
    if meta.get("job", KIND) == KIND:
        config, env = _rebuild(folder / RUN_FILE, meta)
    arrays = _read_npz(folder / STATE_FILE)
    leaves = [arrays[k] for k in sorted(k for k in arrays if k.startswith("state/"))]
    metrics = {k[len("metrics/"):]: v for k, v in arrays.items() if k.startswith("metrics/")}
    return Checkpoint(folder, meta, config, env, leaves, metrics)


def restore_snapshot(checkpoint: Checkpoint, train):
    """The :class:`~socialjax.train.run.Snapshot` of a checkpoint, its state leaves
    checked against the run state ``train.init`` makes (``train`` =
    ``make_train(checkpoint.env, checkpoint.config)``)."""
    import jax
    import jax.numpy as jnp

    from socialjax.train.run import Snapshot, _key_data

    meta = checkpoint.meta
    if checkpoint.config is None:
        raise store.ResultError(f"{checkpoint.path} holds a {meta.get('job')} run, not a population run")
    R = len(meta["seeds"]) * len(next(iter(checkpoint.config.hparam_grid().values())))
    hp = {k: jnp.float32(v[0]) for k, v in checkpoint.config.hparam_grid().items()}
    shapes = jax.eval_shape(lambda k: jax.tree_util.tree_map(_key_data, train.init(k, hp)), jax.random.key(0))
    want = jax.tree_util.tree_leaves(shapes)
    where = checkpoint.path / STATE_FILE
    if len(want) != len(checkpoint.leaves):
        raise store.ResultError(f"{where} holds {len(checkpoint.leaves)} state arrays; the run of its run.json has "
                                f"{len(want)} (written by another version or job?)")
    for i, (w, x) in enumerate(zip(want, checkpoint.leaves)):
        if x.shape != (R, *w.shape) or x.dtype != w.dtype:
            raise store.ResultError(f"{where}: state array {i} is {x.dtype}{list(x.shape)}, the run of its run.json "
                                    f"needs {w.dtype}{[R, *w.shape]}")
    state = jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(shapes), checkpoint.leaves)
    done = int(meta["updates_done"])
    for k, v in checkpoint.metrics.items():
        if v.shape[:2] != (R, done):
            raise store.ResultError(f"{where}: metrics/{k} has shape {list(v.shape)}, "
                                    f"expected {R} runs x {done} updates")
    return Snapshot(done, state, checkpoint.metrics, int(meta["per_device"]), meta["chunk"])


def _state_template(train, config: TrainConfig):
    """The structure (shapes and dtypes) of one run's :class:`TrainState`, from the
    learner's ``init``, without tracing the training loop."""
    import jax
    import jax.numpy as jnp

    from socialjax.train.population import TrainState, learner_hparams

    L = train.plan.num_learners
    hp = {k: jnp.zeros((L,), jnp.float32) for k in learner_hparams(config)}

    def init():
        learners = jax.vmap(train.learner.init)(jax.random.split(jax.random.key(0), L), hp)
        return TrainState(learners=learners, halted=jnp.zeros((), bool))

    return jax.eval_shape(init)


# ----------------------------------------------------------------------------- summary
def member_names(config: TrainConfig, num_learners: int) -> list[str]:
    """``learner 0 .. L-1`` then the scripted members by name."""
    return [f"learner {i}" for i in range(num_learners)] + [f"{n} (scripted)" for n in config.scripted]


def _window(U: int) -> int:
    return max(1, int(round(U * WINDOW_FRACTION)))


def _ci(values: np.ndarray) -> str:
    """``mean [low, high]`` across the first axis (seeds), NaN seeds left out."""
    from socialjax.viz.plots import mean_ci95

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
    E, T = config.num_envs, config.rollout_len
    N = int(np.asarray(metrics["seat_count"])[0, 0, 0].sum()) // E
    env_name = env_name or result.env_name
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
    lines.append(f"wall time {result.seconds:.1f} s = compile {compile_s:.1f} s + run {run_s:.1f} s; "
                 f"{env_steps / run_s:,.0f} env-steps/s, {env_steps * N / run_s:,.0f} agent-steps/s over the run "
                 "(training and evaluation time, training steps counted)")
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
    if result.nan_runs:
        lines.append(f"non-finite losses in {len(result.nan_runs)} run(s):")
        lines.extend(f"  {line}" for line in result.nan_runs)
    else:
        lines.append("non-finite losses: none")
    return "\n".join(lines)


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


# ----------------------------------------------------------------------------- plots
def plot_curves(metrics: dict[str, np.ndarray], grid: dict[str, np.ndarray], config: TrainConfig, path,
                title: str | None = None) -> None:
    """``curves.png``: reward per step per member (one line per member, or per grid point
    in a sweep) and each social metric that is defined, against the update; mean over
    seeds with a bootstrap 95% band (:func:`~socialjax.viz.plots.plot_bands`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from socialjax.viz.plots import plot_bands

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


from socialjax.train.tables import to_frame, write_csv  # noqa: E402,F401
