"""Matchmaking: which population member sits in which seat.

A population has ``L`` learners (members ``0 .. L-1``) and ``S`` scripted members
(``L .. L+S-1``). Each update plays ``E`` games of ``N`` seats; a seating is an
``(E, N) int32`` array of member indices. Every learner holds exactly ``M`` seats, so
that the loop can gather the learners' observations into an ``(L, M, ...)`` block and
run each learner on its own slice (one ``vmap`` over learners, never a gather of
weights). ``order`` lists the flat seat indices sorted by member: its first ``L * M``
entries are the learners' seats, learner by learner.

Modes (``TrainConfig.seating``):

- ``independent``: ``L = N``; learner ``i`` always sits in seat ``i``.
- ``shared``: ``L = 1``; one policy in every seat (parameter sharing).
- ``grouped``: ``groups[i]`` is the learner of seat ``i``; groups must be equal in size.
- ``fixed``: ``seats[i]`` is the member of seat ``i`` (learners and scripted members),
  e.g. ``seats=(0, 1, 2, 2)`` puts two learners against two copies of scripted member
  ``2`` (focal learners with a scripted background). ``seats`` of length ``k * N`` are
  the seats of ``k`` games, repeated over the ``num_envs`` games (a multiple of ``k``):
  in a 2-player game ``seats=(0, 1, 0, 2, 2, 1)`` gives learners 0 and 1 half their games
  against each other and half against scripted member 2.
- ``random``: re-seated every update, uniformly at random: each learner gets exactly
  ``M = E * N * learner_fraction / L`` seats, the remaining seats are drawn uniformly
  from the scripted members, and all are shuffled over the ``E * N`` seats (a member
  may meet itself). The games are reset at each re-seating, so episodes never change
  players midway.

One run holds at most :data:`MAX_SEATS` seats (``num_envs x N``): the seating is built
on the host as an ``(E, N)`` array, and a run beyond that is refused here, with the
numbers, rather than by the host's memory.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from socialjax.train.config import TrainConfig

MAX_SEATS = 2**24  # seats of one run (num_envs x seats per game): 16,777,216


@dataclasses.dataclass(frozen=True)
class SeatPlan:
    num_envs: int  # E
    num_seats: int  # N
    num_learners: int  # L
    num_scripted: int  # S
    seats_per_learner: int  # M
    dynamic: bool  # re-seated every update (random seating)
    static_assign: np.ndarray | None  # (E, N) for the fixed modes

    @property
    def num_members(self) -> int:
        return self.num_learners + self.num_scripted

    @property
    def learner_slots(self) -> int:
        return self.num_learners * self.seats_per_learner

    def learner_seats(self, order: jax.Array) -> LearnerSeats:
        """How the learners' ``(L, M)`` block sits in the seats, given the seating's
        ``order``; a fixed seating ignores ``order`` and uses the plan's own (known when
        tracing)."""
        E, N, L, M = self.num_envs, self.num_seats, self.num_learners, self.seats_per_learner
        if self.dynamic:
            return LearnerSeats(L, M, E, N, order[: L * M], "gather")
        static = np.argsort(self.static_assign.ravel(), kind="stable")[: L * M]
        if np.array_equal(static, np.arange(L * M)):
            layout = "reshape"
        elif (L, M) == (N, E) and np.array_equal(static, np.arange(E * N).reshape(E, N).T.ravel()):
            layout = "transpose"
        else:
            layout = "gather"
        return LearnerSeats(L, M, E, N, jnp.asarray(static, jnp.int32), layout)

    def seat(self, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        """A seating: ``(assign (E, N) int32, order (E * N,) int32)``."""
        E, N, L, S = self.num_envs, self.num_seats, self.num_learners, self.num_scripted
        if not self.dynamic:
            assign = jnp.asarray(self.static_assign, jnp.int32)
            return assign, jnp.asarray(np.argsort(self.static_assign.ravel(), kind="stable"), jnp.int32)
        key_fill, key_perm = jax.random.split(key)
        learners = jnp.repeat(jnp.arange(L, dtype=jnp.int32), self.seats_per_learner)
        rest = E * N - self.learner_slots
        scripted = L + jax.random.randint(key_fill, (rest,), 0, max(S, 1), jnp.int32)
        pool = jnp.concatenate([learners, scripted])
        assign = jax.random.permutation(key_perm, pool).reshape(E, N)
        return assign, jnp.argsort(assign.ravel(), stable=True).astype(jnp.int32)


@dataclasses.dataclass(frozen=True)
class LearnerSeats:
    """Moves per-seat arrays between the flat seat axis ``(E * N, ...)`` (game-major)
    and the learners' block ``(L, M, ...)``.

    With a fixed seating the learners' seats are known when the program is traced, and
    the two common layouts need no gather at all: every seat held by one learner, in
    order (``shared``), is a reshape; learner ``i`` in seat ``i`` of every game
    (``independent``) is a transpose. Other seatings gather with the seat indices
    (constant for fixed seatings, the update's draw for random seating).
    """

    num_learners: int  # L
    seats_per_learner: int  # M
    num_envs: int  # E
    num_seats: int  # N
    index: Any  # (L * M,) int32: the learners' flat seats, learner by learner
    layout: str  # "reshape" | "transpose" | "gather"

    def gather(self, flat: jax.Array) -> jax.Array:
        """``(E * N, ...) -> (L, M, ...)``."""
        L, M, E, N = self.num_learners, self.seats_per_learner, self.num_envs, self.num_seats
        rest = flat.shape[1:]
        if self.layout == "reshape":
            return flat[: L * M].reshape(L, M, *rest)
        if self.layout == "transpose":
            return jnp.swapaxes(flat.reshape(E, N, *rest), 0, 1)
        return flat[self.index].reshape(L, M, *rest)

    def scatter(self, flat: jax.Array, values: jax.Array) -> jax.Array:
        """``flat`` ``(E * N, ...)`` with the learners' ``values`` ``(L, M, ...)`` written
        into their seats."""
        L, M, E, N = self.num_learners, self.seats_per_learner, self.num_envs, self.num_seats
        rest = flat.shape[1:]
        values = values.astype(flat.dtype)
        if self.layout == "transpose":
            return jnp.swapaxes(values, 0, 1).reshape(E * N, *rest)
        if self.layout == "reshape":
            values = values.reshape(L * M, *rest)
            return values if L * M == E * N else flat.at[: L * M].set(values)
        return flat.at[self.index].set(values.reshape(L * M, *rest))


def make_plan(config: TrainConfig, num_seats: int) -> SeatPlan:
    """Check the population against the seats and build the plan (errors before
    compiling)."""
    E, N, S = config.num_envs, num_seats, len(config.scripted)
    if E * N > MAX_SEATS:
        raise ValueError(f"num_envs={E} games of {N} seats are {E * N:,} seats, more than the {MAX_SEATS:,} one run "
                         "holds (its seating is built on the host): use fewer games per run and more seeds")
    mode = config.seating
    L = config.num_learners
    if mode == "independent":
        if L not in (None, N):
            raise ValueError(f"independent seating needs num_learners = num_agents = {N}, got {L}")
        if S:
            raise ValueError("independent seating has no seats for scripted members; use seating='fixed' or 'random'")
        return _fixed_plan(np.arange(N), E, N, N, S)
    if mode == "shared":
        if L not in (None, 1):
            raise ValueError(f"shared seating has one learner, got num_learners={L}")
        if S:
            raise ValueError("shared seating has no seats for scripted members; use seating='fixed' or 'random'")
        return _fixed_plan(np.zeros(N, np.int64), E, N, 1, S)
    if mode == "grouped":
        groups = config.groups
        if groups is None or len(groups) != N:
            raise ValueError(f"grouped seating needs groups: a learner index for each of the {N} seats, got {groups}")
        g = np.asarray(groups, np.int64)
        G = int(g.max()) + 1
        if g.min() < 0 or set(g.tolist()) != set(range(G)):
            raise ValueError(f"groups must use the learner indices 0..G-1 with none missing, got {groups}")
        if L not in (None, G):
            raise ValueError(f"groups define {G} learners, but num_learners={L}")
        if S:
            raise ValueError("grouped seating has no seats for scripted members; use seating='fixed' or 'random'")
        return _fixed_plan(g, E, N, G, S)
    if mode == "fixed":
        seats = config.seats
        if seats is None or not seats or len(seats) % N:
            raise ValueError(f"fixed seating needs seats: a member index for each of the {N} seats (or of k games' "
                             f"k * {N} seats), got {seats}")
        s = np.asarray(seats, np.int64)
        L = L if L is not None else int(s.max()) + 1 - S  # scripted members take the top indices
        if L < 1:
            raise ValueError(f"seats {seats} with {S} scripted members leave no learner")
        if s.min() < 0 or s.max() >= L + S:
            raise ValueError(f"seats refer to members 0..{L + S - 1} ({L} learners, {S} scripted), got {seats}")
        return _fixed_plan(s, E, N, L, S)
    return _random_plan(config, E, N, N if L is None else L, S)


def _fixed_plan(assign_row: np.ndarray, E: int, N: int, L: int, S: int) -> SeatPlan:
    """A fixed seating's plan: ``assign_row``, the seats of ``k`` games (``k * N``
    members), repeated over the ``E`` games; every one of the ``L`` learners holds a
    seat, each as many as the others."""
    games = np.asarray(assign_row, np.int64).reshape(-1, N)
    if E % len(games):
        raise ValueError(f"seats give {len(games)} games' seats; num_envs={E} must be a multiple of {len(games)}")
    assign = np.tile(games, (E // len(games), 1))
    counts = np.bincount(assign.ravel(), minlength=L + S)
    if np.any(counts[:L] == 0):
        missing = np.flatnonzero(counts[:L] == 0).tolist()
        raise ValueError(f"learners {missing} hold no seat in seating {tuple(assign_row)}")
    if len(set(counts[:L].tolist())) != 1:
        raise ValueError(
            f"every learner must hold the same number of seats; seating {tuple(assign_row)} gives "
            f"{counts[:L].tolist()}"
        )
    return SeatPlan(E, N, L, S, int(counts[0]), False, assign.astype(np.int32))


def _random_plan(config: TrainConfig, E: int, N: int, L: int, S: int) -> SeatPlan:
    """A random seating's plan: the ``E * N`` seats, the learners' share
    (``learner_fraction``) divided evenly among the ``L`` learners, the rest left to
    the ``S`` scripted members."""
    if L < 1:
        raise ValueError(f"num_learners must be >= 1, got {L}")
    frac = config.learner_fraction if config.learner_fraction is not None else (1.0 if S == 0 else L / (L + S))
    if S == 0 and frac < 1.0:
        raise ValueError(f"learner_fraction={frac} < 1 leaves seats to scripted members, but none are given")
    total = E * N
    slots = total * frac / L
    if abs(slots - round(slots)) > 1e-9 or round(slots) < 1:
        raise ValueError(
            f"the population cannot fill the seats: {total} seats (num_envs={E} x {N}) times learner_fraction={frac:g} "
            f"must divide evenly among {L} learners (got {slots:g} each)"
        )
    M = int(round(slots))
    if total > M * L and S == 0:
        raise ValueError("seats are left over for scripted members, but none are given")
    return SeatPlan(E, N, L, S, M, True, None)

