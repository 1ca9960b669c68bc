"""Scripted bots of Territory (``socialjax/envs/territory.py``): ``considerate_claimer``,
``inconsiderate_claimer``, ``destroyer``, ``zapper`` (:func:`territory_bot`; their goals:
the game's ``BOTS``).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from socialjax.agents.bots.grid import beam_bot
from socialjax.envs.grid import constants as C
from socialjax.envs.territory import BOTS, MAX_PLAYERS, PAINT, RESOURCE, Territory


def territory_bot(env: Territory, name: str):
    """``act(key, slot, obs) -> (B,) int32`` of a scripted Territory bot (see
    :data:`socialjax.envs.territory.BOTS`). The bot reads its own index from its own cell of the window (code
    ``96 + 4 j + h`` on row ``ahead``, column ``side``), so it knows which walls are its
    own; it goes for the nearest wall it does not hold (or the nearest other player) and
    fires when that target is straight ahead within reach, with the movement of
    :func:`socialjax.agents.bots.grid.beam_bot`. The brush-only claimer and the destroyer
    go only for walls they can come up to: the cell in front of the wall on the bot's
    side (one row nearer, or one column nearer for a wall level with the bot) must be
    floor or a player, so a neighbour's wall behind the bot's own is not a target. The
    inconsiderate claimer also goes for those: its beam reaches them through the wall
    in between. Melting Pot's territory bots are trained policies steered by a
    puppeteer; these are scripted. A removed bot does nothing."""
    if name not in BOTS:
        raise ValueError(f"unknown territory bot {name!r}; known: {tuple(BOTS)}")
    goal, fire, reach = BOTS[name]
    ahead, _, side = env.view
    V, W = env.offsets.shape[1:3]
    centre = ahead * W + side
    rows, cols = np.meshgrid(np.arange(V), np.arange(W), indexing="ij")
    dr, dc = rows - ahead, cols - side
    approach = np.where(dr != 0, (rows - np.sign(dr)) * W + cols, rows * W + cols - np.sign(dc)).reshape(-1)
    touch_only = name != "inconsiderate_claimer"

    def wanted(grid):
        if goal == "players":
            return (grid >= C.AGENT_BASE) & (jnp.arange(grid.shape[1]) != centre)[None, :]
        me = (grid[:, centre] - C.AGENT_BASE) // 4  # (B,)
        painted = (grid >= PAINT) & (grid < PAINT + 4 * MAX_PLAYERS)
        walls = (grid == RESOURCE) | (grid == RESOURCE + 1) | (painted & ((grid - PAINT) // 4 != me[:, None]))
        if touch_only:
            front = grid[:, approach]
            walls = walls & ((front == C.FLOOR) | (front >= C.AGENT_BASE))
        return walls

    seek = beam_bot(env, wanted, fire=fire, reach=reach)

    def act(key, slot, obs):
        on_map = obs["grid"][:, ahead, side] >= C.AGENT_BASE
        return jnp.where(on_map, seek(key, slot, obs), env.noop_action).astype(jnp.int32)

    return act
