"""The evolving strategies of the ``donor-evolution`` entry: which populations evolve
(:class:`Population`: a strategy space and a start) and :func:`evolve_runs`, their
cultural evolution in the donor game for each multiplier and run in one compiled call,
with the evolved population's accounts played one more generation
(:func:`generation_accounts`). The experiment, its conditions and its criterion:
:mod:`socialjax.reproduce.donor_evolution`."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from socialjax import make
from socialjax.agents import donor_strategies as ds
from socialjax.rollout import scan_steps
from socialjax.train.cultural_evolution import DonorEvolutionConfig, make_donor_evolution

# Vallinder & Hughes 2024: 12 agents (the env's default), 10 generations, multiplier 2
# with ablations 1.5 and 3, costly punishment as a variant (the paper, and the
# parameters of its released notebook, aronvallinder/llm-donor-game).
MULTIPLIERS = (1.5, 2.0, 3.0)
GENERATIONS = 10
STINGY_START = 0.1  # ours: a population that seldom gives: initial bias / opening gift uniform in [0, 0.1]


class Population(NamedTuple):
    """Which strategies evolve (``space``, :data:`socialjax.agents.donor_strategies.SPACES`)
    from which start (``gift_max``: the initial bias or opening gift is uniform in ``[0,
    gift_max]``), and the prefix of its rows (``label``; none for the linear space from the
    generous start, the entry's original rows)."""

    space: str
    gift_max: float
    label: str


LINEAR = Population("linear", 1.0, "")
LINEAR_STINGY = Population("linear", STINGY_START, "linear, stingy start")
RECIPROCAL = Population("reciprocal", 1.0, "reciprocal")
RECIPROCAL_STINGY = Population("reciprocal", STINGY_START, "reciprocal, stingy start")
SANCTIONING_STINGY = Population("sanctioning", STINGY_START, "sanctioning, stingy start")
NAMED = {"linear": LINEAR, "linear-stingy": LINEAR_STINGY, "reciprocal": RECIPROCAL,
         "reciprocal-stingy": RECIPROCAL_STINGY,
         "sanctioning-stingy": SANCTIONING_STINGY}  # a model run's setting ``population``


def generation_accounts(env, params, key: jax.Array, thetas: jax.Array, space: str = "linear") -> dict[str, jax.Array]:
    """One generation of ``env`` (two games) played by strategies ``thetas (N, P)`` of
    ``space``: the average final resources, and per agent per game the amount donated and
    the resources punishment destroyed (what punishers paid plus the fines applied)."""

    def policy(_, obs, state):
        return ds.act(thetas, obs, env.trace_depth, env.punishment, space)

    def per_step(carry, step):
        loss = jnp.sum(step.info["punish_cost"]) + jnp.sum(step.info["fine"])
        return carry, (jnp.sum(step.info["donated"]), loss, step.info["generation_final_resources"])

    keys = jax.vmap(lambda t: jax.random.fold_in(key, t + 1))(jnp.arange(env.episode_length))  # step t: key t + 1
    donated, loss, finals = scan_steps(env, env.reset(jax.random.fold_in(key, 0), params), policy, keys=keys,
                                       params=params, record=per_step).records
    per_game = env.num_agents * env.games_per_generation
    return {"evolved resources": jnp.mean(finals[-1]), "evolved donated": jnp.sum(donated) / per_game,
            "evolved punishment loss": jnp.sum(loss) / per_game}


def evolve_runs(schedule: str, punishment: bool, seeds: int, multipliers=MULTIPLIERS,
                generations: int = GENERATIONS, base_seed: int = 0,
                population: Population = LINEAR) -> dict[str, np.ndarray]:
    """Cultural evolution of ``population`` for each multiplier and ``seeds`` runs, one
    jitted call: ``mean_final_resources`` and ``mean_fraction_given`` ``(M, S,
    generations)`` and the evolved population's :func:`generation_accounts` ``(M, S)``.
    Run ``s`` draws from ``fold_in(key(0), base_seed + s)`` alone, whatever the number
    of runs."""
    env = make("donor_game", schedule=schedule, punishment=punishment)
    config = DonorEvolutionConfig(num_generations=generations, strategy_space=population.space,
                                  init_gift_max=population.gift_max)

    def one(multiplier, seed):
        params = env.default_params.replace(multiplier=multiplier)
        key_evolve, key_replay = jax.random.split(jax.random.fold_in(jax.random.key(0), seed))
        thetas, metrics = make_donor_evolution(env, config, params=params)(key_evolve)
        # thetas: the population after the last selection, played for one more generation
        return metrics, generation_accounts(env, params, key_replay, thetas, population.space)

    over_seeds = jax.vmap(one, in_axes=(None, 0))
    numbers = np.arange(base_seed, base_seed + seeds, dtype=np.int32)
    metrics, accounts = jax.jit(jax.vmap(over_seeds, in_axes=(0, None)))(np.asarray(multipliers, np.float32), numbers)
    return {k: np.asarray(v, np.float64) for k, v in {**metrics, **accounts}.items()}
