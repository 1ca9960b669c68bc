"""Scripted bots of the *in the Matrix* games (``socialjax/envs/in_the_matrix.py``):
``collect_<first>`` / ``collect_<second>`` (per game ``collect_cooperate`` /
``collect_defect``, ``collect_stag`` / ``collect_hare``, ``collect_dove`` /
``collect_hawk``; ``collect_cooperate`` / ``collect_defect`` name them in every game)
collect their resource until they hold one more of it than of the other, then seek a
player in view and interact (:func:`matrix_bot`).
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from socialjax.agents.bots.grid import action_finder
from socialjax.envs.grid import constants as C
from socialjax.envs.in_the_matrix import BOT_RESOURCES, INTERACT, RESOURCE_1, InTheMatrix


def specialist_bot(env: InTheMatrix, name: str) -> Callable:
    """The act function of the bot ``name`` (one of ``env.scripted_bots``): the
    :func:`matrix_bot` that collects the resource the game's ``BOT_RESOURCES`` gives it."""
    resources = BOT_RESOURCES[env.game]
    if name not in resources:
        raise ValueError(f"unknown {env.game}_in_the_matrix bot {name!r}; known: {env.scripted_bots}")
    return matrix_bot(env, resources[name])


def matrix_bot(env, target: int, margin: int = 1, explore: float = 0.1) -> Callable:
    """The act function of an *in the Matrix* bot (``socialjax/envs/in_the_matrix.py``)
    with the goal of Melting Pot's ``Specialist`` puppeteer
    (``meltingpot/utils/puppeteers/in_the_matrix.py``): collect resource ``target`` (0:
    the first resource, cooperate / stag / dove; 1: the second) until the inventory holds
    at least ``margin`` more of it than of the other, then seek a player and interact.

    Reads only its own observation: ``inventory`` and the egocentric ``grid`` (the bot
    stands on row ``ahead``, column ``side``, facing up). Collecting: step towards the
    nearest resource of the target class in view (along the longer axis of the offset).
    Interacting: fire when a player stands in the beam's footprint; else, with a player
    ahead, walk forward or strafe towards it; level with the bot or behind, turn towards
    it. With probability ``explore``, or with nothing to go to in view, it walks forward
    or turns at random.
    """
    ahead, _, side = env.view

    action_of = action_finder(env)

    forward, backward = action_of(C.FORWARD), action_of(C.BACKWARD)
    left, right = action_of(C.LEFT), action_of(C.RIGHT)
    turn_left, turn_right = action_of(C.NO_MOVE, -1), action_of(C.NO_MOVE, 1)
    wander = jnp.asarray([forward, forward, turn_left, turn_right], jnp.int32)
    V, W = env.offsets.shape[1:3]
    footprint = np.zeros((V, W), bool)  # window cells the interaction beam covers
    for (f, lateral), ok in zip(env.zap_rays.frame.reshape(-1, 2), env.zap_rays.valid.reshape(-1)):
        if ok and 0 <= ahead - f < V and 0 <= side + lateral < W:
            footprint[ahead - f, side + lateral] = True
    footprint = jnp.asarray(footprint.reshape(-1))
    dr = (jnp.arange(V)[:, None] - ahead + 0 * jnp.arange(W)[None, :]).reshape(-1)  # < 0: ahead
    dc = (jnp.arange(W)[None, :] - side + 0 * jnp.arange(V)[:, None]).reshape(-1)  # > 0: to the right
    dist = jnp.abs(dr) + jnp.abs(dc)
    me = ahead * W + side

    def nearest(found):
        best = jnp.argmin(jnp.where(found, dist[None, :], jnp.iinfo(jnp.int32).max), axis=1)
        return dr[best], dc[best], found.any(axis=1)

    def act(key, slot, obs):
        grid = obs["grid"].reshape(obs["grid"].shape[0], -1).astype(jnp.int32)  # (B, V * W)
        inv = obs["inventory"]
        others = jnp.where(jnp.arange(inv.shape[1]) == target, -jnp.inf, inv)
        enough = inv[:, target] - jnp.max(others, axis=1) >= margin
        # collect
        r, c, seen_res = nearest(grid == RESOURCE_1 + target)
        collect = jnp.where(jnp.abs(r) >= jnp.abs(c), jnp.where(r < 0, forward, backward),
                            jnp.where(c > 0, right, left))
        # interact
        player = (grid >= C.AGENT_BASE) & (jnp.arange(grid.shape[1]) != me)[None, :]
        in_reach = jnp.any(player & footprint[None, :], axis=1)
        r, c, seen_player = nearest(player)
        seek = jnp.where(r < 0, jnp.where(c == 0, forward, jnp.where(c > 0, right, left)),
                         jnp.where(c > 0, turn_right, jnp.where(c < 0, turn_left, turn_right)))
        seek = jnp.where(in_reach, INTERACT, seek)
        move = jnp.where(enough, seek, collect)
        seen = jnp.where(enough, seen_player, seen_res)
        k_roam, k_explore = jax.random.split(key)
        batch = grid.shape[0]
        roam = wander[jax.random.randint(k_roam, (batch,), 0, wander.shape[0])]
        explore_now = (jax.random.uniform(k_explore, (batch,)) < explore) & ~(enough & in_reach)
        return jnp.where(seen & ~explore_now, move, roam).astype(jnp.int32)

    return act
