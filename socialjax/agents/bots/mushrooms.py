"""Scripted bots of Externality Mushrooms (``socialjax/envs/mushrooms.py``): ``collect_red``
and ``collect_green`` (:func:`mushroom_bot`; their goals: the game's ``BOTS``).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from socialjax.agents.bots.grid import NOOP, seek_or_roam
from socialjax.envs.grid import constants as C
from socialjax.envs.mushrooms import BOTS, KINDS


def mushroom_bot(env, name: str):
    """``act(key, slot, obs) -> (B,) int32`` of a scripted mushroom bot reading only its
    own code observation. ``collect_red`` (a "defector": red pays only the eater) walks to
    the nearest red mushroom in view, ``collect_green`` (a "cooperator": green pays
    everyone) to the nearest green one; both avoid stepping onto any other mushroom (it
    would be eaten). The goals of Melting Pot's ``externality_mushrooms__dense__puppet_fize_0``
    and ``__puppet_hihe_0`` bots (trained policies steered by a ``FixedGoal`` puppeteer);
    ours are scripted. The bot steps along the longer axis of the offset to the nearest
    target (Manhattan distance in the window), else along the other axis, else turns;
    with no target in view it walks forward or turns at random (turning instead of
    stepping onto a mushroom). It never zaps."""
    if name not in BOTS:
        raise ValueError(f"unknown mushrooms bot {name!r}; known: {tuple(BOTS)}")
    ahead, behind, side = env.view
    V, W = env.offsets.shape[1:3]
    dr = (jnp.arange(V)[:, None] - ahead + 0 * jnp.arange(W)[None, :]).reshape(-1)  # < 0: ahead
    dc = (jnp.arange(W)[None, :] - side + 0 * jnp.arange(V)[:, None]).reshape(-1)  # > 0: to the right
    dist = jnp.abs(dr) + jnp.abs(dc)
    here = ahead * W + side
    dest = np.array([here - W, here + W if behind else here, here - 1, here + 1])  # fwd, back, left, right
    targets = jnp.asarray(BOTS[name], jnp.int32)
    mushrooms = jnp.asarray(KINDS, jnp.int32)

    def act(key, slot, obs):
        grid = obs["grid"].reshape(obs["grid"].shape[0], -1).astype(jnp.int32)  # (B, V * W)
        wanted = jnp.any(grid[..., None] == targets, -1)
        at = grid[:, dest]
        avoid = jnp.any(at[..., None] == mushrooms, -1) & ~jnp.any(at[..., None] == targets, -1)  # (B, 4)
        present = grid[:, here] >= C.AGENT_BASE
        return jnp.where(present, seek_or_roam(key, wanted, avoid, dist, dr, dc), NOOP).astype(jnp.int32)

    return act
