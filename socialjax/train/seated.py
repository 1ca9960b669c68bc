"""The one seated step: learners act on their seats, scripted members on theirs, and the
games step. Training (:func:`socialjax.train.population.make_train`), the evaluation
scenarios (:mod:`socialjax.train.evaluation`) and playback
(:mod:`socialjax.train.playback`) all step through :func:`act_and_step`, given one
:class:`Table` (the game, the learner and who sits where: a :class:`Seating` and the
learners' :class:`~socialjax.train.seating.LearnerSeats`) and carrying one
:class:`Games`; they differ only in how seats map to learners.

With ``TrainConfig.coplayer_id`` a learner also sees who it plays (the "Opponent ID"
ablation of Weis et al. 2026): its observation becomes ``{"obs": own observation,
"coplayer": view}``, the view holding each other seat's description in seat order from
its own (seats ``n + 1, n + 2, ...`` mod ``N``): a scripted member's ``describe(slot)``
(a memory-one strategy's log-probabilities), zeros for a learner. A seating fixes the
view for its games (:func:`coplayer_view`).

Training batches a learner's seats together (``L`` learners, ``M`` seats each), so a step
costs one forward pass per learner. Evaluation and playback seat population members by a
row ``(N,)`` that is the same in every game: each seat's member state is gathered once,
before the scan (:func:`seat_learners`, leading axis ``N``), and the seats play as ``N``
"learners" of ``G`` seats each (:func:`step`), one forward pass per seat.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from socialjax.agents.networks import ACTOR, COPLAYER, GLOBAL, SEAT
from socialjax.agents.scripted import raw_reward, scripted_actions
from socialjax.core.spaces import Box, Dict
from socialjax.train.seating import LearnerSeats


class Acted(NamedTuple):
    """One seated step. In the learners' block ``(L, M, ...)``: ``obs_l`` (what they
    acted on), ``reset_l`` (whether it started an episode), ``hidden`` (their new
    recurrent state), ``action``, ``aux`` (what ``learner.act`` returns besides; ``None``
    when greedy). Per game ``(E, ...)``: every
    seat's ``actions`` ``(E, N)`` and the step's ``obs``, ``state``, ``reward``, ``done``,
    ``info``."""

    obs_l: Any
    reset_l: jax.Array
    hidden: jax.Array
    action: jax.Array
    aux: Any
    actions: jax.Array
    obs: Any
    state: Any
    reward: jax.Array
    done: jax.Array
    info: dict


def descriptor_size(members) -> int:
    """``D``: the width of one seat's description (every scripted member must describe
    itself, with the same width)."""
    sizes = {}
    for m in members:
        if m.describe is None:
            raise ValueError(f"coplayer_id: scripted member {m.name!r} cannot be described to a learner "
                             "(only the memory-one strategies can)")
        sizes[m.name] = int(jax.eval_shape(lambda k: m.describe(m.init_slot(k, 1)), jax.random.key(0)).shape[-1])
    if len(set(sizes.values())) > 1:
        raise ValueError(f"coplayer_id: the scripted members' descriptions differ in width: {sizes}")
    return next(iter(sizes.values()), 1)  # learners only: a zero view of width 1


def coplayer_space(space, members, num_seats: int):
    """A learner's observation space with the co-player view (``TrainConfig.coplayer_id``)."""
    width = (num_seats - 1) * descriptor_size(members)
    return Dict({"obs": space, COPLAYER: Box(-np.inf, np.inf, (width,), np.float32)})


def coplayer_view(members, first: int, seat_member: jax.Array, slots, num_seats: int) -> jax.Array:
    """Each seat's view of its co-players ``(E * N, (N - 1) * D)`` for the seating
    ``seat_member`` ``(E * N,)`` (see the module docstring)."""
    D = descriptor_size(members)
    desc = jnp.zeros((seat_member.shape[0], D), jnp.float32)
    for s, member in enumerate(members):
        desc = jnp.where((seat_member == first + s)[:, None], member.describe(slots[s]).astype(jnp.float32), desc)
    desc = desc.reshape(-1, num_seats, D)
    others = [jnp.roll(desc, -k, axis=1) for k in range(1, num_seats)]  # seat n sees n + k (mod N)
    return jnp.concatenate(others, axis=-1).reshape(seat_member.shape[0], -1)


def learner_obs(table: Table, games: Games, obs_flat):
    """What the learners observe on their seats ``(L, M, ...)``: each seat's observation
    (``obs_flat``: ``games.obs`` with the games' and seats' axes merged), with the seating's
    co-player view when it has one; for a learner with a centralised critic
    (``CENTRAL_CRITIC``), inside ``{"actor": ..., "global": the game's global observation
    (:meth:`~socialjax.core.environment.Environment.global_observation` of its state),
    "seat": the seat's one-hot in its game}``."""
    view = table.seating.view
    obs = obs_flat if view is None else {"obs": obs_flat, COPLAYER: view}
    if table.learner.CENTRAL_CRITIC:
        E, N = table.seats.num_envs, table.seats.num_seats
        world = jax.vmap(table.env.global_observation, in_axes=(0, None))(games.state, table.params)
        obs = {ACTOR: obs, GLOBAL: jax.tree_util.tree_map(lambda x: jnp.repeat(x, N, axis=0), world),
               SEAT: jnp.tile(jnp.eye(N, dtype=jnp.float32), (E, 1))}
    return jax.tree_util.tree_map(table.seats.gather, obs)


@struct.dataclass(kw_only=True)
class Seating:
    """One draw of who sits where in ``E`` games of ``N`` seats: ``assign`` ``(E, N)
    int32`` (the member in each seat), ``order`` ``(E * N,) int32`` (the flat seats
    sorted by member, see :mod:`socialjax.train.seating`; ``None`` where the layout is
    known when tracing), the scripted members' ``slots`` (their per-seat state, one per
    member, leading ``E * N``) and the seats' co-player ``view`` ``(E * N, K)`` (``None``
    without ``TrainConfig.coplayer_id``). Training carries it from update to update."""

    # fields in alphabetical order: the leaf order of a checkpointed run state
    assign: jax.Array
    order: jax.Array | None = None
    slots: tuple
    view: jax.Array | None = None


@struct.dataclass(kw_only=True)
class Games:
    """What a seated loop carries from step to step, for ``G`` games of ``N`` seats:
    ``obs`` ``(G, N, ...)``, the env ``state`` (leading ``G``), the recurrent ``hidden``
    ``(G * N, H)`` per flat seat and ``reset`` ``(G, N)`` (the seat's observation starts
    an episode). Training also carries each game's social-metric accumulator ``acc``
    (leading ``G``), each seat's return so far ``ep_return`` ``(G, N)`` and, with smoothed
    reward shaping, its ``traces`` ``(G, N)``; elsewhere they are ``None``."""

    # fields in alphabetical order: the leaf order of a checkpointed run state
    acc: Any = None
    ep_return: jax.Array | None = None
    hidden: jax.Array
    obs: Any
    reset: jax.Array
    state: Any
    traces: jax.Array | None = None


@dataclasses.dataclass(frozen=True)
class Table:
    """Everything a seated step needs besides the learners' states and the games: the
    ``env`` and its ``params``, the ``learner``, where the learners' ``(L, M)`` block sits
    (``seats``), the scripted ``members`` (population members ``first, first + 1, ...``)
    and the :class:`Seating` they are playing. Built once per seating, inside the
    compiled program (not a pytree)."""

    env: Any
    params: Any
    learner: Any
    seats: LearnerSeats
    members: tuple
    first: int
    seating: Seating

    @property
    def seat_member(self) -> jax.Array:
        """``(E * N,)``: the member in each flat seat."""
        return self.seating.assign.reshape(-1)


def act_and_step(table: Table, states, games: Games, key_act: jax.Array, key_script: jax.Array,
                 env_keys: jax.Array, *, training: bool = False, progress_frac=1.0, greedy: bool = False) -> Acted:
    """Learner ``i`` (``states[i]``) acts on its seats of ``table.seats`` with its
    recurrent state and episode starts from ``games``, sampling with ``split(key_act,
    L)[i]``: while ``training`` with ``learner.act`` at ``progress_frac`` (its ``aux``
    kept for the update), otherwise with ``learner.play`` (the policy a trained member
    plays), or ``greedy``; the scripted members act on the seats the seating gives
    them (``key_script``); the ``E`` games step with ``env_keys`` ``(E,)``. The learners
    see what :func:`learner_obs` gives them."""
    seats, learner, seating = table.seats, table.learner, table.seating
    E, N, L = seats.num_envs, seats.num_seats, seats.num_learners
    obs_flat = jax.tree_util.tree_map(lambda x: x.reshape(E * N, *x.shape[2:]), games.obs)
    obs_l = learner_obs(table, games, obs_flat)
    reset_l = seats.gather(games.reset.reshape(E * N))
    hidden_l = seats.gather(games.hidden)
    keys = jax.random.split(key_act, L)
    aux = None
    if greedy:
        hidden, action = jax.vmap(learner.greedy)(states, hidden_l, obs_l, reset_l)
    elif training:
        hidden, action, aux = jax.vmap(learner.act, in_axes=(0, 0, 0, 0, 0, None))(
            states, hidden_l, obs_l, reset_l, keys, progress_frac
        )
    else:
        hidden, action = jax.vmap(learner.play)(states, hidden_l, obs_l, reset_l, keys)
    actions = seats.scatter(jnp.zeros((E * N,), jnp.int32), action)
    actions = scripted_actions(table.members, table.first, table.seat_member, seating.slots, obs_flat, key_script,
                               actions).reshape(E, N)
    obs, state, reward, done, info = jax.vmap(table.env.step, in_axes=(0, 0, 0, None))(env_keys, games.state, actions,
                                                                                       table.params)
    return Acted(obs_l, reset_l, hidden, action, aux, actions, obs, state, reward, done, info)


def next_games(games: Games, table: Table, out: Acted) -> Games:
    """The games after the step ``out``: its observations and env states, the learners'
    new recurrent states written back to their seats, and every seat of a game that
    ended flagged as starting an episode (the environment auto-resets)."""
    E, N = table.seats.num_envs, table.seats.num_seats
    return games.replace(obs=out.obs, state=out.state, hidden=table.seats.scatter(games.hidden, out.hidden),
                         reset=jnp.broadcast_to(out.done[:, None], (E, N)))


def seat_learners(learners, row: jax.Array, num_learners: int):
    """Each seat's learner state ``(N, ...)`` from the stacked learners ``(L, ...)``
    (scripted seats get learner ``L - 1``'s, unused)."""
    return jax.tree_util.tree_map(lambda x: x[jnp.clip(row, 0, num_learners - 1)], learners)


def start(obs, state, num_seats: int, hidden_size: int) -> Games:
    """The :class:`Games` of ``G`` freshly reset games (``obs`` ``(G, N, ...)``)."""
    G = jax.tree_util.tree_leaves(obs)[0].shape[0]
    return Games(obs=obs, state=state, hidden=jnp.zeros((G * num_seats, hidden_size), jnp.float32),
                 reset=jnp.ones((G, num_seats), bool))


def row_table(env, params, learner, members, num_learners: int, row: jax.Array, slots, num_games: int,
              coplayer_id: bool = False) -> Table:
    """The :class:`Table` of ``num_games`` games ``G`` seated by one ``row`` ``(N,)``
    (evaluation and playback): every seat is its own "learner" of ``G`` seats, holding
    the state :func:`seat_learners` gathered for it; members ``num_learners, ...`` are
    the scripted ``members``. ``coplayer_id``: the learners see the view."""
    N, G = row.shape[0], num_games
    seats = LearnerSeats(num_learners=N, seats_per_learner=G, num_envs=G, num_seats=N, index=None, layout="transpose")
    assign = jnp.broadcast_to(row, (G, N))
    view = coplayer_view(members, num_learners, assign.reshape(-1), slots, N) if coplayer_id else None
    return Table(env, params, learner, seats, tuple(members), num_learners, Seating(assign=assign, slots=slots,
                                                                                     view=view))


def step(table: Table, seat_states, games: Games, key_act: jax.Array, key_script: jax.Array, env_keys: jax.Array,
         greedy: bool = False):
    """One step of the games of a :func:`row_table` (seat ``i`` holds ``seat_states[i]``
    in every game). Returns the new :class:`Games` and ``(raw reward (G, N), actions
    (G, N), done (G,), info)``, the reward being the environment's own (before any
    shaping)."""
    out = act_and_step(table, seat_states, games, key_act, key_script, env_keys, greedy=greedy)
    return next_games(games, table, out), (raw_reward(out.info, out.reward), out.actions, out.done, out.info)
