"""The one seated step: learners act on their seats, scripted members on theirs, and the
games step. Training (:func:`socialjax.train.population.make_train`), the evaluation
scenarios (:mod:`socialjax.train.evaluation`) and playback
(:mod:`socialjax.train.playback`) all step through :func:`act_and_step`; they differ only
in how seats map to learners (a :class:`~socialjax.train.seating.LearnerSeats`).

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

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from socialjax.agents.networks import COPLAYER
from socialjax.agents.scripted import raw_reward, scripted_actions
from socialjax.core.spaces import Box, Dict
from socialjax.train.seating import LearnerSeats


class Acted(NamedTuple):
    """One seated step. In the learners' block ``(L, M, ...)``: ``obs_l`` (what they
    acted on), ``hidden`` (their new recurrent state), ``action``, ``aux`` (what
    ``learner.act`` returns besides; ``None`` when greedy). Per game ``(E, ...)``: every
    seat's ``actions`` ``(E, N)`` and the step's ``obs``, ``state``, ``reward``, ``done``,
    ``info``."""

    obs_l: Any
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


def learner_obs(obs_flat, view: jax.Array | None):
    """What a learner observes on each seat: the observation, with the view when given."""
    return obs_flat if view is None else {"obs": obs_flat, COPLAYER: view}


def act_and_step(env, params, learner, states, seats: LearnerSeats, members, first: int, seat_member: jax.Array,
                 slots, obs, state, reset_l: jax.Array, hidden_l: jax.Array, key_act: jax.Array,
                 key_script: jax.Array, env_keys: jax.Array, progress_frac=1.0, greedy: bool = False,
                 view: jax.Array | None = None) -> Acted:
    """Learner ``i`` (``states[i]``, recurrent state ``hidden_l[i]``, episode starts
    ``reset_l[i]``) acts on its seats in ``seats``, sampling with ``split(key_act, L)[i]``
    (or ``greedy``); the scripted ``members`` (population members ``first, first + 1,
    ...``) act on the seats ``seat_member`` ``(E * N,)`` gives them (``key_script``); the
    ``E`` games (``obs`` ``(E, N, ...)``, env ``state``) step with ``env_keys`` ``(E,)``.
    ``view`` ``(E * N, K)``: the seats' co-player view (``TrainConfig.coplayer_id``)."""
    E, N, L = seats.num_envs, seats.num_seats, seats.num_learners
    obs_flat = jax.tree_util.tree_map(lambda x: x.reshape(E * N, *x.shape[2:]), obs)
    obs_l = jax.tree_util.tree_map(seats.gather, learner_obs(obs_flat, view))
    if greedy:
        hidden, action = jax.vmap(learner.greedy)(states, hidden_l, obs_l, reset_l)
        aux = None
    else:
        hidden, action, aux = jax.vmap(learner.act, in_axes=(0, 0, 0, 0, 0, None))(
            states, hidden_l, obs_l, reset_l, jax.random.split(key_act, L), progress_frac
        )
    actions = seats.scatter(jnp.zeros((E * N,), jnp.int32), action)
    actions = scripted_actions(members, first, seat_member, slots, obs_flat, key_script, actions).reshape(E, N)
    obs, state, reward, done, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(env_keys, state, actions, params)
    return Acted(obs_l, hidden, action, aux, actions, obs, state, reward, done, info)


class Games(NamedTuple):
    """What the step carries: ``obs`` ``(G, N, ...)``, the env ``state`` (leading ``G``),
    the recurrent ``hidden`` ``(N, G, H)`` and ``reset`` ``(N, G)`` (first step of an
    episode)."""

    obs: Any
    state: Any
    hidden: jax.Array
    reset: jax.Array


def seat_learners(learners, row: jax.Array, num_learners: int):
    """Each seat's learner state ``(N, ...)`` from the stacked learners ``(L, ...)``
    (scripted seats get learner ``L - 1``'s, unused)."""
    return jax.tree_util.tree_map(lambda x: x[jnp.clip(row, 0, num_learners - 1)], learners)


def start(obs, state, num_seats: int, hidden_size: int) -> Games:
    """The carry of ``G`` freshly reset games (``obs`` ``(G, N, ...)``)."""
    G = jax.tree_util.tree_leaves(obs)[0].shape[0]
    return Games(obs, state, jnp.zeros((num_seats, G, hidden_size), jnp.float32), jnp.ones((num_seats, G), bool))


def step(env, params, learner, members, num_learners: int, seat_states, row: jax.Array, slots, games: Games,
         key_act: jax.Array, key_script: jax.Array, env_keys: jax.Array, greedy: bool = False,
         coplayer_id: bool = False):
    """One step of ``G`` games seated by ``row`` (:func:`act_and_step` with every seat
    its own learner: seat ``i`` holds ``seat_states[i]`` in every game, members
    ``num_learners, ...`` are the scripted ``members``). Returns the new :class:`Games`
    and ``(raw reward (G, N), actions (G, N), done (G,), info)``, the reward being the
    environment's own (before any shaping). ``coplayer_id``: the learners see the view."""
    N = row.shape[0]
    G = env_keys.shape[0]
    seats = LearnerSeats(num_learners=N, seats_per_learner=G, num_envs=G, num_seats=N, index=None, layout="transpose")
    seat_member = jnp.broadcast_to(row, (G, N)).reshape(-1)
    view = coplayer_view(members, num_learners, seat_member, slots, N) if coplayer_id else None
    out = act_and_step(env, params, learner, seat_states, seats, members, num_learners, seat_member, slots,
                       games.obs, games.state, games.reset, games.hidden, key_act, key_script, env_keys, greedy=greedy,
                       view=view)
    reset = jnp.broadcast_to(out.done[None, :], (N, G))
    return Games(out.obs, out.state, out.hidden, reset), (raw_reward(out.info, out.reward), out.actions, out.done,
                                                          out.info)
