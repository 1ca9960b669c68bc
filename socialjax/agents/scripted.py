"""Scripted population members: fixed strategies that sit in seats and never learn.

A :class:`Scripted` member acts on a batch of seats. Some strategies have per-seat
parameters drawn when the seat is filled (a *random* memory-one co-player draws its
five probabilities once per seating and keeps them for the episode), so a member is a
pair of pure functions::

    slot = member.init_slot(key, B)        # per-seat parameters, leading axis B
    actions = member.act(key, slot, obs)   # obs (B, ...) -> (B,) int32

Names understood by :func:`make_scripted` (``socialjax train ... --scripted NAME``):

- any environment with a ``Discrete`` action space: ``random`` (uniform actions),
  ``noop`` (the environment's no-op action);
- two-player iterated matrix games (``ipd``, ``stag_hunt``, ``chicken``, ``matrix_game``):
  the memory-one strategies ``allc``, ``alld``, ``tft``, ``wsls``, ``grim``, ``gtft``,
  ``random_strategy`` (a coin flip each round) and ``random_memory_one`` (a memory-one
  strategy drawn uniformly per seating, the co-players of Weis et al.).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax
import jax.numpy as jnp

from socialjax.agents import memory_one
from socialjax.core.spaces import Discrete

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
    """A fixed strategy: ``init_slot(key, B) -> slot`` and ``act(key, slot, obs) -> (B,)``."""

    name: str
    init_slot: Callable[[jax.Array, int], Any]
    act: Callable[[jax.Array, Any, Any], jax.Array]


def scripted_names(env) -> tuple[str, ...]:
    """The scripted members available for ``env``."""
    names = list(GENERIC)
    if _is_two_player_matrix(env):
        names += [*MEMORY_ONE, "random_memory_one"]
    return tuple(names)


def _is_two_player_matrix(env) -> bool:
    from socialjax.envs.matrix.env import MatrixGame

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
            raise ValueError(f"scripted member {name!r} needs a two-player matrix game; available: {scripted_names(env)}")
        base = env.unwrapped if hasattr(env, "unwrapped") else env
        memory = base.memory

        def act(key, slot, obs):
            return memory_one.act(key, slot, memory_one.last_outcome(obs, memory))

        if name == "random_memory_one":
            return Scripted(name, lambda key, batch: memory_one.random_memory_one(key, (batch,)), act)
        strategy = jnp.asarray(MEMORY_ONE[name], jnp.float32)
        return Scripted(name, lambda key, batch: jnp.broadcast_to(strategy, (batch, strategy.shape[0])), act)
    raise ValueError(f"unknown scripted member {name!r} for {env!r}; available: {scripted_names(env)}")
