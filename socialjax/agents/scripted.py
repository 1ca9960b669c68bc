"""Scripted population members: fixed strategies that sit in seats and never learn.

A :class:`Scripted` member acts on a batch of seats. Some strategies have per-seat
parameters drawn when the seat is filled (a *random* memory-one co-player draws its
five probabilities once per seating and keeps them for the episode), so a member is a
pair of pure functions::

    slot = member.init_slot(key, B)        # per-seat parameters, leading axis B
    actions = member.act(key, slot, obs)   # obs (B, ...) -> (B,) int32

and, for members that can be described to a learner (``TrainConfig.coplayer_id``),
``member.describe(slot) -> (B, D) float32``: the memory-one strategies give their
log-probabilities (:func:`socialjax.agents.memory_one.log_policy`, ``D = 10``).

Names understood by :func:`make_scripted` (``socialjax train ... --scripted NAME``):

- any environment with a ``Discrete`` action space: ``random`` (uniform actions),
  ``noop`` (the environment's no-op action);
- two-player iterated matrix games (``ipd``, ``stag_hunt``, ``chicken``, ``matrix_game``):
  the memory-one strategies ``allc``, ``alld``, ``tft``, ``wsls``, ``grim``, ``gtft``,
  ``random_strategy`` (a coin flip each round) and ``random_memory_one`` (a memory-one
  strategy drawn uniformly per seating, the co-players of Weis et al.).
- gridworlds (Harvest, Clean Up, Gathering): ``harvester`` walks towards the nearest
  apple in its view and eats it (a greedy harvester that never zaps); in Clean Up,
  ``cleaner`` walks towards the nearest dirt and fires its cleaning beam whenever some
  dirt lies in the beam's footprint (an "always clean" bot). Both read only
  their own egocentric code observation; with nothing in view they walk forward or
  turn at random.
- Cooperative Mining (``coop_mining``): ``iron_miner`` mines only iron, ``gold_miner``
  only gold (raw or partly mined): each walks and turns until the nearest such ore in
  its view lies straight ahead within the mining beam's reach, then mines (a
  "defector" and a "cooperator" with the goals of Melting Pot's ``EXTRACT_IRON`` and
  ``EXTRACT_GOLD`` puppet bots, ``coop_mining__defector_0`` and
  ``coop_mining__cooperator_0``; those are trained policies steered by a puppeteer,
  ours are scripted: :func:`socialjax.agents.bots.grid.beam_bot`).
- Coins (``coins``, both variants): ``coin_cooperator`` walks to the nearest coin of its
  own colour, ``coin_defector`` to the nearest coin of either colour (the goals of
  Melting Pot's coins puppeteer, ``meltingpot/utils/puppeteers/coins.py``, whose bots
  are trained policies; ours are scripted: :func:`socialjax.agents.bots.coins.coin_bot`).
- Gift Refinements (``gift_refinements``): ``gift_cooperator`` collects while its
  inventory is empty, gifts while it holds only raw tokens and consumes once it holds a
  refined one; ``gift_extreme_cooperator`` consumes only once it holds a twice-refined
  token; ``gift_defector`` collects and consumes, never gifts (the goals of Melting Pot's
  ``GiftRefinementsCooperator`` / ``GiftRefinementsExtremeCooperator`` puppeteers,
  ``meltingpot/utils/puppeteers/gift_refinements.py``, and its ``FORAGE`` bot, all trained
  policies; ours are scripted: :func:`socialjax.agents.bots.gift_refinements.gift_bot`).
- *In the Matrix* (``prisoners_dilemma_in_the_matrix``, ``stag_hunt_in_the_matrix``,
  ``chicken_in_the_matrix``): ``collect_cooperate`` / ``collect_defect`` (and the
  aliases ``collect_stag`` / ``collect_hare``, ``collect_dove`` / ``collect_hawk``)
  gather the first / second resource until they hold at least one more of it than of
  the other, then seek a player and interact (the goal of Melting Pot's ``Specialist``
  puppeteer, ``meltingpot/utils/puppeteers/in_the_matrix.py``, whose bots are trained
  policies; ours are scripted: :func:`socialjax.agents.bots.in_the_matrix.matrix_bot`).
- Externality Mushrooms (``mushrooms``): ``collect_red`` walks to the nearest red
  mushroom (it pays only the eater), ``collect_green`` to the nearest green one (it pays
  everyone); both avoid stepping on other mushrooms and never zap (the goals
  ``COLLECT_MUSHROOM_FIZE`` / ``COLLECT_MUSHROOM_HIHE`` of Melting Pot's
  ``externality_mushrooms__dense__puppet_fize_0`` / ``__puppet_hihe_0`` bots, trained
  policies steered by a ``FixedGoal`` puppeteer; ours are scripted:
  :func:`socialjax.agents.bots.mushrooms.mushroom_bot`).
- Territory (``territory_rooms``, ``territory_open``): ``considerate_claimer``,
  ``inconsiderate_claimer``, ``destroyer``, ``zapper``
  (:func:`socialjax.agents.bots.territory.territory_bot`).

The gridworld bots live in :mod:`socialjax.agents.bots` (one module per game family); a
game lists its own bots' names in its ``scripted_bots`` attribute, and
:func:`make_scripted` and :func:`scripted_names` get them through
:func:`socialjax.agents.bots.make_bot` and :func:`socialjax.agents.bots.bot_names`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from socialjax.agents import memory_one
from socialjax.agents.bots import bot_names, make_bot
from socialjax.agents.bots.grid import GRID_BOTS
from socialjax.core.spaces import Discrete
from socialjax.envs.matrix.env import MatrixGame

MEMORY_ONE = {
    "allc": memory_one.ALLC,
    "alld": memory_one.ALLD,
    "tft": memory_one.TFT,
    "wsls": memory_one.WSLS,
    "grim": memory_one.GRIM,
    "gtft": memory_one.GTFT,
    "random_strategy": memory_one.RANDOM,
}
GENERIC = ("random", "noop")


@dataclasses.dataclass(frozen=True)
class Scripted:
    """A fixed strategy: ``init_slot(key, B) -> slot`` and ``act(key, slot, obs) -> (B,)``;
    ``describe(slot) -> (B, D)`` when the strategy can be shown to a learner (else None)."""

    name: str
    init_slot: Callable[[jax.Array, int], Any]
    act: Callable[[jax.Array, Any, Any], jax.Array]
    describe: Callable[[Any], jax.Array] | None = None


def scripted_actions(members, first: int, seat_member: jax.Array, slots, obs, key: jax.Array,
                     actions: jax.Array) -> jax.Array:
    """``actions`` with every seat held by a scripted member replaced by that member's
    action. ``members`` are population members ``first, first + 1, ...``;
    ``seat_member`` ``(B,)`` names each seat's member; ``slots`` holds each member's
    per-seat parameters and ``obs`` ``(B, ...)`` the seats' observations. Every member
    acts on every seat (one batched call each) and ``where`` keeps its own seats."""
    for s, (member, k) in enumerate(zip(members, jax.random.split(key, max(len(members), 1)))):
        actions = jnp.where(seat_member == first + s, member.act(k, slots[s], obs), actions)
    return actions


def raw_reward(info, reward: jax.Array) -> jax.Array:
    """The environment's own reward: ``info["raw_reward"]`` when a reward-shaping
    wrapper (:mod:`socialjax.agents.shaping`) changed the learners' reward, else
    ``reward``. Metrics and returns are reported on it."""
    return info.get("raw_reward", reward) if isinstance(info, dict) else reward


def scripted_names(env) -> tuple[str, ...]:
    """The scripted members available for ``env``."""
    names = list(GENERIC)
    if _is_two_player_matrix(env):
        names += [*MEMORY_ONE, "random_memory_one"]
    names += bot_names(env)  # gridworld bots: the generics, then the game's own
    return tuple(names)


def _is_two_player_matrix(env) -> bool:
    return isinstance(getattr(env, "unwrapped", env), MatrixGame)


def _no_slot(key, batch):
    return jnp.zeros((batch,), jnp.float32)


def make_scripted(name: str, env) -> Scripted:
    """A scripted member by name for ``env`` (see the module docstring)."""
    space = env.action_space(env.default_params)
    if not isinstance(space, Discrete):
        raise ValueError(f"scripted members need a Discrete action space, {env!r} has {space}")
    if name == "random":
        n = space.n
        return Scripted(name, _no_slot, lambda key, slot, obs: jax.random.randint(key, slot.shape, 0, n, jnp.int32))
    if name == "noop":
        noop = int(env.unwrapped.noop_action if hasattr(env, "unwrapped") else env.noop_action)
        return Scripted(name, _no_slot, lambda key, slot, obs: jnp.full(slot.shape, noop, jnp.int32))
    if name in MEMORY_ONE or name == "random_memory_one":
        if not _is_two_player_matrix(env):
            raise ValueError(f"scripted member {name!r} needs a two-player matrix game; "
                             f"available: {scripted_names(env)}")
        base = env.unwrapped if hasattr(env, "unwrapped") else env
        memory = base.memory

        def act(key, slot, obs):
            return memory_one.act(key, slot, memory_one.last_outcome(obs, memory))

        if name == "random_memory_one":
            return Scripted(name, lambda key, batch: memory_one.random_memory_one(key, (batch,)), act,
                            memory_one.log_policy)
        strategy = jnp.asarray(MEMORY_ONE[name], jnp.float32)
        return Scripted(name, lambda key, batch: jnp.broadcast_to(strategy, (batch, strategy.shape[0])), act,
                        memory_one.log_policy)
    if name in bot_names(env):
        return Scripted(name, _no_slot, make_bot(env, name))
    if name in GRID_BOTS:
        raise ValueError(
            f"scripted member {name!r} needs a gridworld with code observations"
            f"{' and a cleaning beam (Clean Up)' if name == 'cleaner' else ''}; available for {env!r}: "
            f"{scripted_names(env)}"
        )
    raise ValueError(f"unknown scripted member {name!r} for {env!r}; available: {scripted_names(env)}")
