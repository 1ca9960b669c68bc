"""Cultural evolution in the donor game (Vallinder & Hughes 2024), fully compiled.

Each generation the population of ``N`` parametric trace strategies
(:mod:`socialjax.agents.donor_strategies`) plays one episode of ``donor_game`` (two
games with swapped roles). Fitness is an agent's final resources averaged over the
games. The top ``survival_fraction`` (50%) survive unchanged; the rest are replaced by
mutated copies of the survivors, survivor ``k`` (in rank order) parenting replacement
``k``, cycling when there are fewer survivors than replacements. Ties in fitness are
broken uniformly at random.

``make_donor_evolution(env, config)`` returns a :class:`DonorEvolution`, a pure
``job(key) -> (thetas, metrics)`` (``jax.jit(jax.vmap(job))(keys)`` runs many seeds in
one call) and a job of the one engine that runs every long job
(:mod:`socialjax.train.engine`: init / updates / finish, the generations as its updates,
the multiplier as its hyperparameter): :func:`run_experiment` runs it there, and so
gains the segments, snapshots, Ctrl-C handling and devices of
:func:`socialjax.train.run`. ``metrics`` holds ``(num_generations,)`` arrays:

- ``mean_final_resources``: final resources averaged over agents and games, the
  paper's published metric;
- ``mean_fraction_given``: the mean signed fraction chosen over all donor turns;
- ``mean_bias``, ``mean_reciprocity``: population means of ``theta[0]`` and ``theta[1]``
  (in the ``"reciprocal"`` and ``"sanctioning"`` strategy spaces: the opening gift and the
  reciprocity).

``DonorEvolutionConfig.strategy_space`` picks the strategies that evolve
(:data:`socialjax.agents.donor_strategies.SPACES`): ``"linear"`` (default; a bias and
weights on the recipient's trace), ``"reciprocal"`` (an opening gift to a recipient
with no history and otherwise a multiple of the recipient's last gift) or
``"sanctioning"`` (the reciprocal rule with a standard: a recipient whose last gift fell
short of it is fined, where punishment is allowed); ``init_gift_max`` bounds the initial
population's bias (or opening gift), uniform in ``[0, init_gift_max]`` (default 1), and
the sanctioning space's standard and fine likewise.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from socialjax.agents import donor_strategies as ds
from socialjax.core.registry import make
from socialjax.envs.donor.env import DonorGame, DonorParams
from socialjax.train import results, store
from socialjax.train.engine import run_job
from socialjax.train.reports import format_donor_summary, plot_donor_curves
from socialjax.train.runner import JobKind, register_kind, run_spec
from socialjax.train.spec import JobSpec
from socialjax.train.tracking import Listeners, Tracker
from socialjax.viz.plots import mean_ci95


@dataclass(frozen=True)
class DonorEvolutionConfig:
    num_generations: int = 10  # Vallinder & Hughes 2024 ran 10 generations
    survival_fraction: float = 0.5  # top 50% by final resources survive
    mutation_std: float = 0.1  # std of the Gaussian mutation of each coefficient
    init_weight_scale: float = 0.5  # std of the initial trace weights
    # ours: which parametric strategies evolve (socialjax.agents.donor_strategies.SPACES)
    strategy_space: str = "linear"
    # ours: the initial bias (linear) or opening gift (reciprocal, sanctioning) is uniform in [0, init_gift_max]
    init_gift_max: float = 1.0

    def __post_init__(self):
        ds.check_space(self.strategy_space)
        if not isinstance(self.num_generations, int) or self.num_generations < 1:
            raise ValueError(f"num_generations must be an int >= 1, got {self.num_generations!r}")
        if not 0.0 < self.survival_fraction <= 1.0:
            raise ValueError(f"survival_fraction must be in (0, 1], got {self.survival_fraction!r}")
        if isinstance(self.init_gift_max, bool) or not isinstance(self.init_gift_max, (int, float)) \
                or not 0 <= self.init_gift_max <= 1:
            raise ValueError(f"init_gift_max must be a number in [0, 1], got {self.init_gift_max!r}")
        for name in ("mutation_std", "init_weight_scale"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")

    def replace(self, **changes) -> DonorEvolutionConfig:
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


def play_generation(env: DonorGame, params: DonorParams, key: jax.Array, thetas: jax.Array,
                    space: str = "linear"):
    """One episode of ``env`` with every agent playing its strategy of ``space``.

    Returns ``final (G, N)`` resources per game and the mean fraction given by donors."""
    obs, state = env.reset(jax.random.fold_in(key, 0), params)

    def body(carry, t):
        obs, state = carry
        actions = ds.act(thetas, obs, env.trace_depth, env.punishment, space)
        obs, state, _, _, info = env.step(jax.random.fold_in(key, t + 1), state, actions, params)
        given = jnp.sum(actions * info["is_donor"]) / jnp.maximum(jnp.sum(info["is_donor"]), 1)
        return (obs, state), (given, info["generation_final_resources"])

    _, (given, finals) = jax.lax.scan(body, (obs, state), jnp.arange(env.episode_length))
    return finals[-1], jnp.mean(given)


class EvolutionState(NamedTuple):
    """One run between generations: ``thetas`` ``(N, P)``, the population's strategies
    (``P = ds.num_params(D, strategy_space)``),
    and ``key``, the key every generation draws its own from."""

    thetas: jax.Array
    key: jax.Array


@dataclasses.dataclass(frozen=True, eq=False)
class DonorEvolution:
    """Cultural evolution of ``env``'s strategies under ``config``, as a job of the one
    engine (:mod:`socialjax.train.engine`): a run is one population evolved over
    ``config.num_generations`` generations (its updates), its hyperparameter the
    multiplier (``hparams = {"multiplier": ()}``, the grid ``multipliers``; ``params``
    for the rest, and for the multiplier without ``hparams``).

    ``job(key) -> (final thetas (N, P), metrics)``: one whole run at ``params``; the
    same run at its seams: ``state = job.init(key)``, then ``state, m = job.updates(state,
    start, length=K)`` for consecutive segments, ``state.thetas`` at the end."""

    env: DonorGame
    config: DonorEvolutionConfig
    params: DonorParams
    multipliers: tuple[float, ...] = ()  # the grid of run_experiment (default: params.multiplier)
    log_every: int = 1  # a progress line per generation
    grows_with: str = "the number of agents (num_agents) and the episode's length (games_per_generation)"

    def __post_init__(self):
        if not isinstance(self.env, DonorGame):
            raise TypeError(f"cultural evolution needs a donor_game environment, got {self.env!r}")
        if self.env.action_levels is not None:
            raise ValueError("parametric trace strategies give continuous fractions: make the env with "
                             "action_levels=None")

    @property
    def num_updates(self) -> int:
        return self.config.num_generations

    def hparam_grid(self) -> dict[str, np.ndarray]:
        """``{"multiplier": (M,)}``, float32."""
        return {"multiplier": np.asarray(self.multipliers or (self.params.multiplier,), np.float32)}

    def init(self, key: jax.Array, hparams: dict | None = None) -> EvolutionState:
        """The run before its first generation: the random strategies and the key the
        generations draw from."""
        key_init, key_loop = jax.random.split(key)
        c = self.config
        thetas = ds.random_strategies(key_init, self.env.num_agents, self.env.trace_depth, c.init_weight_scale,
                                      c.init_gift_max, c.strategy_space)
        return EvolutionState(thetas, key_loop)

    def updates(self, state: EvolutionState, start, hparams: dict | None = None, *,
                length: int | None = None) -> tuple[EvolutionState, dict]:
        """Generations ``start .. start + length - 1`` (default: all): ``(state, metrics)``,
        ``metrics`` ``{name: (length,)}``. Generation ``i`` draws its key from the run's key
        and ``i`` alone, so any split into segments gives the same run."""
        G = self.config.num_generations
        length = G if length is None else length
        params = self.params if hparams is None else self.params.replace(multiplier=hparams["multiplier"])
        keys = jax.random.split(state.key, G)
        if length != G:
            keys = jax.lax.dynamic_slice_in_dim(keys, jnp.asarray(start, jnp.int32), length)
        # the final selection step is applied too: the returned thetas are the next generation
        thetas, metrics = jax.lax.scan(functools.partial(self._generation, params), state.thetas, keys)
        return EvolutionState(thetas, state.key), metrics

    def finish(self, state: EvolutionState, hparams: dict | None = None) -> tuple[EvolutionState, dict]:
        """The evolved run as it is (its last selection was the last generation's)."""
        return state, {}

    def __call__(self, key: jax.Array) -> tuple[jax.Array, dict[str, jax.Array]]:
        state, metrics = self.updates(self.init(key), 0)
        return state.thetas, metrics

    def _generation(self, params: DonorParams, thetas: jax.Array, key: jax.Array):
        """One generation: play, rank by fitness, select. ``(next thetas, metrics)``."""
        key_play, key_select = jax.random.split(key)
        finals, given = play_generation(self.env, params, key_play, thetas, self.config.strategy_space)
        fitness = jnp.mean(finals, axis=0)
        metrics = {
            "mean_final_resources": jnp.mean(finals),
            "mean_fraction_given": given,
            "mean_bias": jnp.mean(thetas[:, 0]),
            "mean_reciprocity": jnp.mean(thetas[:, 1]),
        }
        num_survivors = max(1, int(round(self.config.survival_fraction * self.env.num_agents)))
        return truncation_select(key_select, thetas, fitness, num_survivors, self.config.mutation_std), metrics

    #: what a progress line and a live display show
    headline = ("mean_final_resources", "mean_fraction_given")

    @property
    def meta(self) -> dict:
        return {"env": "donor_game", "config": dataclasses.asdict(self.config),
                "params": {f.name: np.asarray(getattr(self.params, f.name)).tolist()
                           for f in dataclasses.fields(self.params)}}

    def tracked(self, metrics: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Every generation's metrics, one number per run already (``(R, K)``)."""
        return {k: np.asarray(v, np.float32) for k, v in metrics.items()}

    def summarised(self, extra: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Nothing beyond the last generation's metrics: the finish measures nothing."""
        return {}

    @staticmethod
    def progress_line(step: int, values: dict[str, np.ndarray]) -> str:
        return (f"mean final resources {values['mean_final_resources'].mean():8.2f}   "
                f"mean fraction given {values['mean_fraction_given'].mean():.3f}")


def make_donor_evolution(env: DonorGame, config: DonorEvolutionConfig = DonorEvolutionConfig(),
                         params: DonorParams | None = None, multipliers: tuple[float, ...] = ()) -> DonorEvolution:
    """The :class:`DonorEvolution` of ``env`` under ``config`` at ``params`` (checked;
    default the env's), over ``multipliers`` when run by the engine; see the module docs."""
    return DonorEvolution(env, config, env._resolve_params(params), tuple(multipliers))


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
    log: Sequence[Tracker] | Listeners = (),
    **evolution,
) -> dict:
    """Cultural evolution of parametric donor strategies for ``num_seeds`` seeds and each
    multiplier ``g`` (the paper's ablation): the spec :func:`donor_spec` on the one runner
    (:func:`socialjax.train.runner.run_spec`) as the job :class:`DonorEvolution`, its runs
    every (multiplier, seed) pair, multiplier-major, run ``(g, s)`` keyed
    ``fold_in(key(seed), s)``; ``evolution`` sets the other :class:`DonorEvolutionConfig`
    fields. Writes ``metrics.npz``, ``summary.csv``, ``config.json`` and
    ``donor_evolution.png`` to ``out_dir`` (whole or not at all; replaced only with
    ``overwrite``), printing a line per generation and the summary when ``verbose``.
    ``checkpoint_every=K`` saves the runs in ``out_dir/resume/`` every ``K`` generations
    (the one checkpoint format, :func:`socialjax.train.results.save_checkpoint`);
    ``resume=True`` continues that run (same settings, same bits). A signal stops it
    after the generation under way, saved, with :class:`~socialjax.train.runner.Stopped`;
    a failure to write is :class:`~socialjax.train.runner.Failed`. ``log``: trackers,
    through one :class:`~socialjax.train.tracking.Listeners`. Returns ``{"metrics":
    {name: (M, S, G)}, "multipliers", "seconds", "listener_failures", "out_dir", "plot"}``."""
    mults = _checked_multipliers(num_seeds, multipliers, checkpoint_every)
    DonorEvolutionConfig(num_generations=num_generations, **evolution)  # checked before anything is compiled
    spec = donor_spec(num_seeds, num_generations, multipliers, seed, env_options, **evolution)
    env = make("donor_game", **(env_options or {}))
    env.default_params.replace(multiplier=mults).validate()  # the grid's values, checked before compiling
    result, text = run_spec(spec, out_dir, overwrite=overwrite, checkpoint_every=checkpoint_every, resume=resume,
                            log=log, progress=verbose,
                            start_line=_start_line(env, spec, checkpoint_every, out_dir) if verbose else None)
    if verbose:
        print(text)
    return result


def _start_line(env: DonorGame, spec: JobSpec, checkpoint_every: int | None, out_dir: str) -> str:
    """What a donor-evolution run is about to do, printed before it compiles."""
    every = f", a checkpoint every {checkpoint_every} generations in {out_dir}/resume" if checkpoint_every else ""
    return (f"donor-evolution: {len(spec.config['multipliers'])} multipliers x {len(spec.seeds)} seeds x "
            f"{spec.config['num_generations']} generations, N={env.num_agents} agents, schedule={env.schedule}, "
            f"trace depth {env.trace_depth} on {jax.devices()[0].platform}{every}; compiling...")


def _donor_job(spec: JobSpec) -> DonorEvolution:
    """The engine's job of a donor-evolution spec."""
    settings = donor_settings(spec)
    env = make(spec.env, **settings["env_options"])
    mults = np.asarray(settings["multipliers"], np.float64)
    evolution = {k: v for k, v in settings.items()
                 if k not in ("num_seeds", "num_generations", "multipliers", "seed", "env_options")}
    config = DonorEvolutionConfig(num_generations=settings["num_generations"], **evolution)
    return make_donor_evolution(env, config, multipliers=tuple(mults.astype(np.float32)))


def _train_donor(spec: JobSpec, **engine) -> dict:
    """A donor-evolution spec on the engine: ``{"metrics": {name: (M, S, G)}, "multipliers",
    "seconds", "listener_failures", "out_dir", "plot"}`` (the last two filled by the writer)."""
    job = _donor_job(spec)
    out = run_job(job, spec.seeds, base_seed=spec.base_seed, **engine)
    return {"metrics": out.metrics, "multipliers": job.hparam_grid()["multiplier"], "seconds": out.seconds,
            "listener_failures": out.listener_failures}


def _write_donor(result: dict, spec: JobSpec, out: Path, overwrite: bool) -> str:
    """The result folder of a donor-evolution run (:func:`_write`); its summary text."""
    _write(str(out), result["metrics"], result["multipliers"], {**results.run_meta(spec), "seconds": result["seconds"]},
           len(spec.seeds), overwrite=overwrite)
    result.update(out_dir=str(out), plot=os.path.join(out, FIGURE))
    return format_donor_summary(result)


FIGURE = "donor_evolution.png"
DONOR_EVOLUTION = register_kind(JobKind(
    name="donor-evolution", unit="generation", num_updates=lambda spec: int(spec.config["num_generations"]),
    train=_train_donor, write=_write_donor, figure=FIGURE,
    restore=lambda checkpoint: results.restore_snapshot(checkpoint, _donor_job(checkpoint.spec))))


def donor_spec(num_seeds: int, num_generations: int, multipliers, seed: int = 0, env_options: dict | None = None,
               **evolution) -> JobSpec:
    """The :class:`~socialjax.train.spec.JobSpec` of :func:`run_experiment`'s arguments:
    the donor game with ``env_options``, the evolution's settings and multipliers as its
    config, seeds ``0 .. num_seeds - 1`` from base seed ``seed``."""
    config = {"num_generations": num_generations, "multipliers": [float(g) for g in multipliers], **evolution}
    return JobSpec("donor-evolution", "donor_game", dict(env_options or {}), config, tuple(range(num_seeds)), seed,
                   "donor-evolution")


def donor_settings(spec: JobSpec) -> dict:
    """:func:`run_experiment`'s arguments of a donor-evolution ``spec`` (the inverse of
    :func:`donor_spec`)."""
    config = dict(spec.config)
    if spec.seeds != tuple(range(len(spec.seeds))):
        raise ValueError(f"a donor-evolution run's seeds are 0 .. n-1, got {list(spec.seeds)}")
    return dict(num_seeds=len(spec.seeds), num_generations=config.pop("num_generations"),
                multipliers=tuple(config.pop("multipliers")), seed=spec.base_seed, env_options=dict(spec.env_options),
                **config)


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
        plot_donor_curves(metrics, mults, os.path.join(folder, FIGURE), num_seeds)

    store.write_folder(out_dir, write, kind="donor-evolution", overwrite=overwrite)
