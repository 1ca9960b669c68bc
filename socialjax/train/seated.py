"""One step of games whose seats each hold one population member: the step that the
evaluation scenarios (:mod:`socialjax.train.evaluation`) and playback
(:mod:`socialjax.train.playback`) scan over.

``G`` games of ``N`` seats; ``row`` gives each seat's member (learners ``0 .. L-1``,
then scripted members ``L, L+1, ...``), the same in every game. Every seat's learner
state is gathered once, before the scan (``seat_states``, leading axis ``N``), so a step
costs one forward pass per seat. (Training seats a learner on many seats at once and
batches them per learner instead: :func:`socialjax.train.population.make_train`.)
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from socialjax.agents.scripted import raw_reward, scripted_actions


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
         key_act: jax.Array, key_script: jax.Array, env_keys: jax.Array, greedy: bool = False):
    """One step of every game: learners act (sampled with ``key_act``, or ``greedy``),
    scripted members act on their seats (``key_script``), the games step with
    ``env_keys`` ``(G,)``. Returns the new :class:`Games` and ``(raw reward (G, N),
    actions (G, N), done (G,), info)``, the reward being the environment's own (before
    any shaping)."""
    N = row.shape[0]
    G = env_keys.shape[0]
    obs_seat = jax.tree_util.tree_map(lambda x: jnp.swapaxes(x, 0, 1), games.obs)  # (N, G, ...)
    if greedy:
        hidden, act = jax.vmap(learner.greedy)(seat_states, games.hidden, obs_seat, games.reset)
    else:
        hidden, act, _ = jax.vmap(learner.act, in_axes=(0, 0, 0, 0, 0, None))(
            seat_states, games.hidden, obs_seat, games.reset, jax.random.split(key_act, N), 1.0
        )
    actions = jnp.swapaxes(act, 0, 1).reshape(-1)
    obs_flat = jax.tree_util.tree_map(lambda x: x.reshape(G * N, *x.shape[2:]), games.obs)
    seat_member = jnp.broadcast_to(row, (G, N)).reshape(-1)
    actions = scripted_actions(members, num_learners, seat_member, slots, obs_flat, key_script, actions)
    obs, state, reward, done, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
        env_keys, games.state, actions.reshape(G, N), params
    )
    reset = jnp.broadcast_to(done[None, :], (N, G))
    return Games(obs, state, hidden, reset), (raw_reward(info, reward), actions.reshape(G, N), done, info)
