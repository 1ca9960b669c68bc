"""Cultural evolution in the donor game (Vallinder & Hughes 2024), fully compiled.

Each generation the population of ``N`` parametric trace strategies
(:mod:`socialjax.agents.donor_strategies`) plays one episode of ``donor_game`` (two
games with swapped roles). Fitness is an agent's final resources averaged over the
games. The top ``survival_fraction`` (50%) survive unchanged; the rest are replaced by
mutated copies of the survivors, survivor ``k`` (in rank order) parenting replacement
``k``, cycling when there are fewer survivors than replacements. Ties in fitness are
broken uniformly at random.

``make_donor_evolution(env, config)`` returns a pure ``evolve(key) -> (thetas,
metrics)``; ``jax.jit(jax.vmap(evolve))(keys)`` runs many seeds in one call. ``metrics``
holds ``(num_generations,)`` arrays:

- ``mean_final_resources``: final resources averaged over agents and games, the
  paper's published metric;
- ``mean_fraction_given``: the mean signed fraction chosen over all donor turns;
- ``mean_bias``, ``mean_reciprocity``: population means of ``theta[0]`` and ``theta[1]``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from dataclasses import dataclass
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from socialjax.agents import donor_strategies as ds
from socialjax.core.registry import make
from socialjax.envs.donor.env import DonorGame, DonorParams
from socialjax.train import results, store
from socialjax.train.interrupts import interrupts
from socialjax.train.progress import Progress
from socialjax.train.reports import format_donor_summary, plot_donor_curves
from socialjax.train.run import Snapshot
from socialjax.viz.plots import mean_ci95


@dataclass(frozen=True)
class DonorEvolutionConfig:
    num_generations: int = 10  # Vallinder & Hughes 2024 ran 10 generations
    survival_fraction: float = 0.5  # top 50% by final resources survive
    mutation_std: float = 0.1  # std of the Gaussian mutation of each coefficient
    init_weight_scale: float = 0.5  # std of the initial trace weights

    def __post_init__(self):
        if not isinstance(self.num_generations, int) or self.num_generations < 1:
            raise ValueError(f"num_generations must be an int >= 1, got {self.num_generations!r}")
        if not 0.0 < self.survival_fraction <= 1.0:
            raise ValueError(f"survival_fraction must be in (0, 1], got {self.survival_fraction!r}")
        if self.mutation_std < 0 or self.init_weight_scale < 0:
            raise ValueError("mutation_std and init_weight_scale must be >= 0")

    def replace(self, **changes) -> "DonorEvolutionConfig":
        return dataclasses.replace(self, **changes)


def truncation_select(key: jax.Array, thetas: jax.Array, fitness: jax.Array, num_survivors: int,
                      mutation_std) -> jax.Array:
    """Keep the ``num_survivors`` fittest (random tie-break) and fill the other slots with
    mutated copies of them. ``thetas (N, P)``, ``fitness (N,)`` -> ``(N, P)`` with the
    survivors first, in rank order."""
    n = thetas.shape[0]
    key_tie, key_mut = jax.random.split(key)
    shuffle = jax.random.permutation(key_tie, n)
    ranked = shuffle[jnp.argsort(-fitness[shuffle], stable=True)]
    survivors = ranked[:num_survivors]
    parents = survivors[jnp.arange(n - num_survivors) % num_survivors]
    children = ds.mutate(key_mut, thetas[parents], mutation_std)
    return jnp.concatenate([thetas[survivors], children], axis=0)


def play_generation(env: DonorGame, params: DonorParams, key: jax.Array, thetas: jax.Array):
    """One episode of ``env`` with every agent playing its strategy.

    Returns ``final (G, N)`` resources per game and the mean fraction given by donors."""
    obs, state = env.reset(jax.random.fold_in(key, 0), params)

    def body(carry, t):
        obs, state = carry
        actions = ds.act(thetas, obs, env.trace_depth, env.punishment)
        obs, state, _, _, info = env.step(jax.random.fold_in(key, t + 1), state, actions, params)
        given = jnp.sum(actions * info["is_donor"]) / jnp.maximum(jnp.sum(info["is_donor"]), 1)
        return (obs, state), (given, info["generation_final_resources"])

    _, (given, finals) = jax.lax.scan(body, (obs, state), jnp.arange(env.episode_length))
    return finals[-1], jnp.mean(given)


def make_donor_evolution(
    env: DonorGame,
    config: DonorEvolutionConfig = DonorEvolutionConfig(),
    params: DonorParams | None = None,
    progress: Progress | None = None,
) -> Callable[[jax.Array], tuple[jax.Array, dict[str, jax.Array]]]:
    """Build ``evolve(key) -> (final thetas (N, D+2), metrics)``; see the module docs.
    The same run in segments (how :func:`run_experiment` checkpoints):
    ``state = evolve.init(key)``, then ``state, m = evolve.generations(state, start,
    length=K)`` for consecutive segments; ``state["thetas"]`` at the end."""
    if not isinstance(env, DonorGame):
        raise TypeError(f"cultural evolution needs a donor_game environment, got {env!r}")
    if env.action_levels is not None:
        raise ValueError("parametric trace strategies give continuous fractions: make the env with action_levels=None")
    params = env._resolve_params(params)
    n = env.num_agents
    num_survivors = max(1, int(round(config.survival_fraction * n)))

    def generation(thetas, inputs):
        gen, key = inputs
        key_play, key_select = jax.random.split(key)
        finals, given = play_generation(env, params, key_play, thetas)
        fitness = jnp.mean(finals, axis=0)
        metrics = {
            "mean_final_resources": jnp.mean(finals),
            "mean_fraction_given": given,
            "mean_bias": jnp.mean(thetas[:, 0]),
            "mean_reciprocity": jnp.mean(thetas[:, 1]),
        }
        if progress is not None:
            progress.report(gen, **metrics)
        new = truncation_select(key_select, thetas, fitness, num_survivors, config.mutation_std)
        return new, metrics

    def init(key: jax.Array) -> dict:
        """The run before its first generation: the random strategies and the key the
        generations draw from."""
        key_init, key_loop = jax.random.split(key)
        return {"thetas": ds.random_strategies(key_init, n, env.trace_depth, config.init_weight_scale),
                "key": key_loop}

    def generations(state: dict, start, length: int = config.num_generations):
        """Generations ``start .. start + length - 1``: ``(state, metrics)``. Generation
        ``i`` draws its key from the run's key and ``i`` alone, so any split into
        segments gives the same run."""
        start = jnp.asarray(start, jnp.int32)
        keys = jax.random.split(state["key"], config.num_generations)
        if length != config.num_generations:
            keys = jax.lax.dynamic_slice_in_dim(keys, start, length)
        # the final selection step is applied too: the returned thetas are the next generation
        thetas, metrics = jax.lax.scan(generation, state["thetas"], (start + jnp.arange(length), keys))
        return {"thetas": thetas, "key": state["key"]}, metrics

    def evolve(key: jax.Array):
        state, metrics = generations(init(key), 0)
        return state["thetas"], metrics

    evolve.init, evolve.generations = init, generations
    return evolve


def run_experiment(
    num_seeds: int = 256,
    num_generations: int = 10,
    multipliers: tuple[float, ...] = (1.5, 2.0, 3.0),
    out_dir: str = "results/donor-evolution",
    seed: int = 0,
    env_options: dict | None = None,
    verbose: bool = True,
    overwrite: bool = False,
    checkpoint_every: int | None = None,
    resume: bool = False,
) -> dict:
    """The README's main job: cultural evolution of parametric donor strategies for
    ``num_seeds`` seeds and each multiplier ``g`` (the paper's ablation), all in one
    compiled call (``vmap`` over multipliers of ``vmap`` over seeds).

    Prints progress and a per-generation summary (mean and 95% CI across seeds), and
    writes ``metrics.npz``, ``summary.csv``, ``config.json`` and ``donor_evolution.png``
    to ``out_dir``, whole or not at all (:mod:`socialjax.train.store`; an earlier result
    there is replaced only with ``overwrite=True``, and the folder is checked before
    anything is compiled).

    ``checkpoint_every=K``: the generations run in segments of ``K``, and after each
    the complete state (strategies, keys, metrics so far) is saved atomically in
    ``out_dir/resume/``; Ctrl-C stops at the end of the segment under way.
    ``resume=True`` continues the unfinished run in ``out_dir`` (its settings must be
    the ones given); the result has the same bits as a run never stopped.
    Returns ``{"metrics": {name: (M, S, G) array}, "multipliers": ..., "seconds": ...}``.
    """
    mults = _checked_multipliers(num_seeds, multipliers, checkpoint_every)
    settings = {"job": "donor-evolution", "num_seeds": num_seeds, "num_generations": num_generations,
                "multipliers": [float(g) for g in multipliers], "seed": seed, "env_options": dict(env_options or {})}
    checkpoint = None
    if resume:
        checkpoint = results.load_checkpoint(out_dir)
        saved = {k: checkpoint.meta.get(k) for k in settings}
        if saved != json.loads(json.dumps(settings)):
            raise ValueError(f"{out_dir} holds an unfinished run with other settings: {saved}")
        checkpoint_every = checkpoint_every or int(checkpoint.meta["segment"])
    else:
        store.check_out_dir(out_dir, overwrite=overwrite)
    env = make("donor_game", **(env_options or {}))
    env.default_params.replace(multiplier=mults).validate()  # the vmapped values, checked before compiling
    mults = mults.astype(np.float32)
    config = DonorEvolutionConfig(num_generations=num_generations)
    progress = Progress(num_generations, num_seeds * len(mults), "donor-evolution", _progress_line, enabled=verbose)
    evolution = _evolution(env, config, progress)
    base = jax.random.key(seed)
    # each run's key depends only on its seed index, never on its position in the batch
    keys = jax.vmap(lambda s: jax.random.fold_in(base, s))(jnp.arange(num_seeds))
    if verbose:
        print(
            f"donor-evolution: {len(mults)} multipliers x {num_seeds} seeds x {num_generations} generations, "
            f"N={env.num_agents} agents, schedule={env.schedule}, trace depth {env.trace_depth} "
            f"on {jax.devices()[0].platform}"
            + (f", a checkpoint every {checkpoint_every} generations in {out_dir}/resume" if checkpoint_every else "")
            + "; compiling...",
            flush=True,
        )
    start = time.perf_counter()
    metrics = _evolve_in_segments(evolution, mults, keys, checkpoint, num_generations, checkpoint_every, out_dir,
                                  settings)
    seconds = time.perf_counter() - start
    _write(out_dir, metrics, mults, {**settings, "seconds": seconds}, num_seeds,
           overwrite=overwrite or resume or bool(checkpoint_every))
    plot_path = os.path.join(out_dir, "donor_evolution.png")
    result = {"metrics": metrics, "multipliers": mults, "seconds": seconds, "plot": plot_path, "out_dir": out_dir}
    if verbose:
        print(format_donor_summary(result))
    return result


def _checked_multipliers(num_seeds: int, multipliers, checkpoint_every: int | None) -> np.ndarray:
    """The multipliers ``(M,)`` as float64, after checking the arguments."""
    if num_seeds < 2:
        raise ValueError(f"num_seeds must be >= 2 to report an interval, got {num_seeds}")
    mults = np.asarray(multipliers, np.float64)
    if mults.ndim != 1 or mults.size == 0 or not np.all(np.isfinite(mults)):
        raise ValueError(f"multipliers must be a non-empty list of finite numbers, got {multipliers!r}")
    if checkpoint_every is not None and (isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, int)
                                         or checkpoint_every < 1):
        raise ValueError(f"checkpoint_every must be a positive int or None, got {checkpoint_every!r}")
    return mults


def _evolution(env: DonorGame, config: DonorEvolutionConfig, progress: Progress) -> Callable:
    """``evolution(multiplier)``: one run's ``evolve`` at that multiplier."""

    def evolution(multiplier):
        params = env.default_params.replace(multiplier=multiplier)
        return make_donor_evolution(env, config, params=params, progress=progress)

    return evolution


def _over_runs(fn: Callable, seed_axes: tuple, multiplier_axes: tuple) -> Callable:
    """One run's ``fn(multiplier, *args)`` over (multipliers, seeds), jitted."""
    seeds = jax.vmap(fn, in_axes=(None, *seed_axes))
    return jax.jit(jax.vmap(seeds, in_axes=(0, *multiplier_axes)))


def _evolve_in_segments(evolution: Callable, mults: np.ndarray, keys: jax.Array, checkpoint,
                        num_generations: int, checkpoint_every: int | None, out_dir: str, settings: dict) -> dict:
    """Every run's generations, in segments of ``checkpoint_every`` (all in one
    without), from ``keys`` ``(S,)`` or from the unfinished run of ``checkpoint``; after
    each segment but the last the runs are saved (:func:`~socialjax.train.results.save_checkpoint`),
    and a Ctrl-C raises :class:`Interrupted` there. Returns ``{name: (M, S, G)}``."""
    segment = checkpoint_every or num_generations
    if checkpoint is not None:
        done = int(checkpoint.meta["updates_done"])
        thetas, key_data = checkpoint.leaves
        state = {"thetas": jnp.asarray(thetas), "key": jax.random.wrap_key_data(jnp.asarray(key_data))}
        parts = [checkpoint.metrics]
    else:
        done, parts = 0, []
        state = _over_runs(lambda m, k: evolution(m).init(k), (0,), (None,))(jnp.asarray(mults), keys)
    programs = {}
    with interrupts(enabled=True, stoppable=num_generations - done > segment) as stop:
        while done < num_generations:
            n = min(segment, num_generations - done)
            if n not in programs:
                programs[n] = _over_runs(lambda m, st, at, n=n: evolution(m).generations(st, at, length=n),
                                         (0, None), (0, None))
            state, part = programs[n](jnp.asarray(mults), state, jnp.int32(done))
            parts.append({k: np.asarray(v) for k, v in part.items()})
            done += n
            if done < num_generations and (checkpoint_every or stop.requested):
                parts = [{k: np.concatenate([p[k] for p in parts], axis=2) for k in parts[0]}]
                leaves = [np.asarray(state["thetas"]), np.asarray(jax.random.key_data(state["key"]))]
                if checkpoint_every:
                    results.save_checkpoint(out_dir, Snapshot(done, leaves, parts[0], 0, None), settings,
                                            segment=segment)
                if stop.requested:
                    raise Interrupted(done, num_generations, out_dir, bool(checkpoint_every))
    return {k: np.concatenate([p[k] for p in parts], axis=2) for k in parts[0]}


def _write(out_dir: str, metrics: dict, mults: np.ndarray, meta: dict, num_seeds: int, overwrite: bool) -> None:
    """The result folder, whole or not at all: ``metrics.npz``, ``summary.csv`` (mean
    and 95% CI across seeds per multiplier, metric and generation), ``config.json``
    (``meta``) and ``donor_evolution.png``."""
    rows = []
    for mi, g in enumerate(mults):
        for name in ("mean_final_resources", "mean_fraction_given"):
            mean, low, high = mean_ci95(metrics[name][mi])
            for gen in range(metrics[name].shape[-1]):
                rows.append((float(g), name, gen + 1, mean[gen], low[gen], high[gen]))

    def write(folder):
        np.savez(os.path.join(folder, "metrics.npz"), multipliers=mults, **metrics)
        with open(os.path.join(folder, "summary.csv"), "w") as fh:
            fh.write("multiplier,metric,generation,mean,ci95_low,ci95_high\n")
            for r in rows:
                fh.write(f"{r[0]},{r[1]},{r[2]},{r[3]:.6g},{r[4]:.6g},{r[5]:.6g}\n")
        with open(os.path.join(folder, "config.json"), "w") as fh:
            json.dump(meta, fh, indent=2)
        plot_donor_curves(metrics, mults, os.path.join(folder, "donor_evolution.png"), num_seeds)

    store.write_folder(out_dir, write, kind="donor-evolution", overwrite=overwrite)


class Interrupted(Exception):
    """Raised by :func:`run_experiment` when Ctrl-C stopped it between segments."""

    def __init__(self, done: int, total: int, out_dir: str, saved: bool):
        super().__init__(f"interrupted after generation {done} of {total}")
        self.done, self.total, self.out_dir, self.saved = done, total, out_dir, saved


def _progress_line(step, values):
    return (
        f"mean final resources {values['mean_final_resources'].mean():8.2f}   "
        f"mean fraction given {values['mean_fraction_given'].mean():.3f}"
    )
