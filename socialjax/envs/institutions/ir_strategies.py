"""Scripted strategies for :mod:`~socialjax.envs.institutions.indirect_reciprocity` and
their evolution (Nowak & Sigmund 1998; Ohtsuki & Iwasa 2004).

Strategies (:func:`strategy_actions`): ``ALLC``, ``ALLD``, ``DISC`` (C iff the partner
is GOOD in one's own view) and image-score thresholds ``k in -5..6`` (C iff the
partner's image score >= k; id :func:`image_score_strategy`); :func:`play_rounds` plays
them. :func:`evolve_strategies` runs payoff-proportional reproduction (:func:`reproduce`) over generations inside
``jit``.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from socialjax.core.params import is_concrete
from socialjax.envs.institutions.indirect_reciprocity import (
    COOPERATE,
    DEFECT,
    MAX_SCORE,
    MIN_SCORE,
    OBS_PARTNER_GOOD,
    OBS_PARTNER_SCORE,
    IndirectReciprocity,
    IndirectReciprocityParams,
)
from socialjax.rollout import scan_steps

# Scripted strategy ids
ALLC, ALLD, DISC = 0, 1, 2
THRESHOLDS = tuple(range(MIN_SCORE, MAX_SCORE + 2))  # k in -5..6 (Nowak & Sigmund 1998)
THRESHOLD_BASE = 3  # id of threshold k is THRESHOLD_BASE + (k - MIN_SCORE)
NUM_STRATEGIES = THRESHOLD_BASE + len(THRESHOLDS)  # 15


def image_score_strategy(k: int) -> int:
    """Strategy id of "cooperate iff the partner's image score >= k", ``k in -5..6``."""
    if not isinstance(k, (int, np.integer)) or not MIN_SCORE <= k <= MAX_SCORE + 1:
        raise ValueError(f"image-score threshold k must be an int in [{MIN_SCORE}, {MAX_SCORE + 1}], got {k!r}")
    return THRESHOLD_BASE + int(k) - MIN_SCORE


def strategy_name(strategy_id: int) -> str:
    if strategy_id == ALLC:
        return "ALLC"
    if strategy_id == ALLD:
        return "ALLD"
    if strategy_id == DISC:
        return "DISC"
    if THRESHOLD_BASE <= strategy_id < NUM_STRATEGIES:
        return f"score>={strategy_id - THRESHOLD_BASE + MIN_SCORE}"
    raise ValueError(f"unknown strategy id {strategy_id!r}; ids are 0..{NUM_STRATEGIES - 1}")


def strategy_actions(strategy_ids: jax.Array, obs: jax.Array) -> jax.Array:
    """Scripted actions. ``strategy_ids (N,) int``, ``obs (N, 4) float32`` (the env's
    observation); returns ``(N,) int32`` (``0`` = C). Pure: usable under jit/vmap. An id
    outside ``0..NUM_STRATEGIES - 1`` defects."""
    ids = jnp.asarray(strategy_ids)
    good = obs[:, OBS_PARTNER_GOOD] >= 0.5
    threshold = (ids - THRESHOLD_BASE + MIN_SCORE).astype(jnp.float32)
    by_score = (obs[:, OBS_PARTNER_SCORE] >= threshold) & (ids >= THRESHOLD_BASE) & (ids < NUM_STRATEGIES)
    coop = (ids == ALLC) | ((ids == DISC) & good) | by_score
    return jnp.where(coop, COOPERATE, DEFECT).astype(jnp.int32)


# ---------------------------------------------------------------- evolutionary dynamics
def reproduce(
    key: jax.Array,
    strategy_ids: jax.Array,
    payoffs: jax.Array,
    mutation_rate=0.0,
    baseline=0.0,
    pool: Sequence[int] = tuple(range(NUM_STRATEGIES)),
) -> jax.Array:
    """One Wright-Fisher generation with payoff-proportional reproduction.

    Fitness ``w_i = payoff_i - min_j payoff_j + baseline`` (shifted to be nonnegative;
    ``baseline >= 0`` weakens selection). Each of the N agents of the next generation
    independently picks a parent ``i`` with probability ``w_i / sum_j w_j`` (uniformly if
    every ``w`` is 0) and copies its strategy, so strategy ``s`` is drawn with probability
    proportional to the total fitness of its players; then, with probability
    ``mutation_rate``, it switches to a uniformly random strategy of ``pool``.
    ``strategy_ids``, ``payoffs``: ``(N,)``; returns ``(N,) int32``."""
    key_parent, key_mut, key_new = jax.random.split(key, 3)
    n = strategy_ids.shape[0]
    fitness = payoffs - jnp.min(payoffs) + baseline
    total = jnp.sum(fitness)
    logits = jnp.where(total > 0, jnp.log(fitness), 0.0)
    parents = jax.random.categorical(key_parent, logits, shape=(n,))
    children = strategy_ids[parents]
    pool_arr = jnp.asarray(pool, jnp.int32)
    mutant = pool_arr[jax.random.randint(key_new, (n,), 0, pool_arr.shape[0])]
    mutate = jax.random.uniform(key_mut, (n,)) < mutation_rate
    return jnp.where(mutate, mutant, children).astype(jnp.int32)


def play_rounds(env: IndirectReciprocity, state, strategy_ids: jax.Array, key: jax.Array, rounds: int,
                params: IndirectReciprocityParams):
    """Play ``rounds`` rounds from ``state`` with every agent following its strategy
    (``strategy_ids`` ``(N,)``; no episode cap, no auto-reset); pure, runs under ``jit``
    (``rounds`` static). Returns the final state, each agent's summed reward ``(N,)``
    and the number of donations made."""

    def tally(carry, step):
        payoff, coop = carry
        return (payoff + step.reward, coop + jnp.sum(step.info["cooperated"])), None

    run = scan_steps(env, (env.get_obs(state, params), state), lambda _, obs, s: strategy_actions(strategy_ids, obs),
                     keys=jax.random.split(key, rounds), params=params, record=tally, auto_reset=False,
                     carry=(jnp.zeros(env.num_agents, jnp.float32), jnp.zeros((), jnp.int32)))
    payoff, coop = run.carry
    return run.state, payoff, coop


def evolve_strategies(
    key: jax.Array,
    env: IndirectReciprocity,
    strategy_ids: jax.Array,
    generations: int,
    rounds_per_generation: int,
    params: IndirectReciprocityParams | None = None,
    mutation_rate=0.0,
    baseline=0.0,
    pool: Sequence[int] = tuple(range(NUM_STRATEGIES)),
) -> tuple[dict[str, jax.Array], jax.Array]:
    """Evolution of scripted strategies; pure, runs under ``jit`` (``env``,
    ``generations``, ``rounds_per_generation`` and ``pool`` are static).

    Each generation starts from a fresh ``env`` state (labels and image scores reset, as
    children inherit no reputation), plays ``rounds_per_generation`` rounds with every
    agent following its strategy (:func:`strategy_actions`; no episode cap, no
    auto-reset), sums each agent's rewards, then :func:`reproduce` draws the next
    generation's strategies from those payoffs.

    ``strategy_ids``: ``(N,) int``. Returns ``(history, final_ids)``: ``history`` holds
    per generation (leading axis ``generations``) ``frequencies (G, NUM_STRATEGIES)``
    float32 (of the population that played that generation), ``mean_payoff`` (per agent
    per round), ``cooperation_rate`` (donations per donor turn) and ``good_fraction``
    (mean label at the end of the generation); ``final_ids`` ``(N,) int32`` is the
    population after the last reproduction."""
    if not isinstance(env, IndirectReciprocity):
        raise TypeError(f"env must be an IndirectReciprocity, got {type(env).__name__}")
    for name, value in (("generations", generations), ("rounds_per_generation", rounds_per_generation)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    strategy_ids = jnp.asarray(strategy_ids)
    if strategy_ids.shape != (env.num_agents,) or not jnp.issubdtype(strategy_ids.dtype, jnp.integer):
        raise ValueError(
            f"strategy_ids must be ({env.num_agents},) integers, "
            f"got shape {strategy_ids.shape} dtype {strategy_ids.dtype}"
        )
    if is_concrete(strategy_ids):
        concrete = np.asarray(strategy_ids)
        if np.any((concrete < 0) | (concrete >= NUM_STRATEGIES)):
            raise ValueError(f"strategy_ids must lie in 0..{NUM_STRATEGIES - 1}, got {concrete}")
    for name, value in (("mutation_rate", mutation_rate), ("baseline", baseline)):
        if is_concrete(value):
            v = float(value)
            if not (np.isfinite(v) and v >= 0.0 and (name == "baseline" or v <= 1.0)):
                raise ValueError(f"{name} must be in {'[0, 1]' if name == 'mutation_rate' else '[0, inf)'}, got {v}")
    pool = tuple(int(s) for s in pool)
    if not pool or any(not 0 <= s < NUM_STRATEGIES for s in pool):
        raise ValueError(f"pool must be a non-empty sequence of ids in 0..{NUM_STRATEGIES - 1}, got {pool}")
    params = env._resolve_params(params)
    n = env.num_agents

    def generation(ids, key):
        key_reset, key_play, key_rep = jax.random.split(key, 3)
        state = env.initial_state(key_reset, params)
        state, payoff, coop = play_rounds(env, state, ids, key_play, rounds_per_generation, params)
        out = {
            "frequencies": jnp.bincount(ids, length=NUM_STRATEGIES).astype(jnp.float32) / n,
            "mean_payoff": jnp.mean(payoff) / rounds_per_generation,
            "cooperation_rate": coop.astype(jnp.float32) / (rounds_per_generation * (n // 2)),
            "good_fraction": jnp.mean(state.reputation.astype(jnp.float32)),
        }
        return reproduce(key_rep, ids, payoff, mutation_rate, baseline, pool), out

    final_ids, history = jax.lax.scan(generation, strategy_ids.astype(jnp.int32), jax.random.split(key, generations))
    return history, final_ids
