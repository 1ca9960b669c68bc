"""Scripted bots of Coins (``socialjax/envs/coins.py``, both variants): ``coin_cooperator``
and ``coin_defector`` (:func:`coin_bot`).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from socialjax.agents.bots.grid import NOOP, seek_or_roam
from socialjax.envs.coins import COIN_BOTS, COIN_CODES, LOLA_NOOP, LOLA_SIZE, CoinGameLOLA
from socialjax.envs.grid import constants as C


def coin_bot(env, name: str):
    """``act(key, slot, obs) -> (B,) int32`` of a scripted coins bot, reading only the
    player's own observation. ``coin_cooperator`` walks to the nearest coin of its own
    colour and avoids stepping on the other's coins, ``coin_defector`` walks to the
    nearest coin of either colour (Melting Pot's coins bots are trained policies steered
    by a puppeteer, ``meltingpot/utils/puppeteers/coins.py``, between cooperating and
    defecting goals; these are scripted).

    Melting Pot variant: the player reads its own index from its own cell of the window
    (code ``96 + 4 j + h`` on row ``ahead``, column ``side``), hence its colour; nearest by
    Manhattan distance in the window; it steps along the longer axis of the offset, else
    (that cell holding a coin it avoids) along the other axis, else it turns; with no
    wanted coin in view it walks forward or turns at random (turning instead of walking
    onto a coin it avoids). LOLA variant: each coin is at most one wrapped step away per
    axis on the 3x3 torus; the bot steps along the row, else the column (the same
    avoidance), and stays on a wanted coin or with nothing to do.
    """
    if name not in COIN_BOTS:
        raise ValueError(f"unknown coins bot {name!r}; known: {COIN_BOTS}")
    greedy = name == "coin_defector"
    if isinstance(env, CoinGameLOLA):
        return _lola_bot(greedy)
    ahead, behind, side = env.view
    V, W = env.offsets.shape[1:3]
    dr = (jnp.arange(V)[:, None] - ahead + 0 * jnp.arange(W)[None, :]).reshape(-1)  # < 0: ahead
    dc = (jnp.arange(W)[None, :] - side + 0 * jnp.arange(V)[:, None]).reshape(-1)  # > 0: to the right
    dist = jnp.abs(dr) + jnp.abs(dc)
    # window cell entered by forward, backward, step left, step right (backward unseen with behind = 0)
    dest = np.array([(ahead - 1) * W + side, (ahead + 1) * W + side if behind else ahead * W + side,
                     ahead * W + side - 1, ahead * W + side + 1])
    codes = jnp.asarray(COIN_CODES, jnp.int32)

    def act(key, slot, obs):
        grid = obs["grid"].reshape(obs["grid"].shape[0], -1).astype(jnp.int32)  # (B, V * W)
        centre = grid[:, ahead * W + side]
        me = jnp.clip((centre - C.AGENT_BASE) // 4, 0, 1)
        mine, theirs = codes[me][:, None], codes[1 - me][:, None]
        wanted = (grid == mine) | (greedy & (grid == theirs))
        avoid = (grid[:, dest] == theirs) & (not greedy)  # (B, 4): forward, backward, left, right
        present = centre >= C.AGENT_BASE
        return jnp.where(present, seek_or_roam(key, wanted, avoid, dist, dr, dc), NOOP).astype(jnp.int32)

    return act


def _lola_bot(greedy: bool):
    cells = np.stack(np.meshgrid(np.arange(LOLA_SIZE), np.arange(LOLA_SIZE), indexing="ij"), -1).reshape(-1, 2)
    # LOLA_MOVES: 0 right (0, +1), 1 left (0, -1), 2 up (+1, 0), 3 down (-1, 0)

    def act(key, slot, obs):
        grid = obs.reshape(obs.shape[0], LOLA_SIZE, LOLA_SIZE, 4)
        where = [jnp.asarray(cells)[jnp.argmax(grid[..., ch].reshape(grid.shape[0], -1), axis=1)] for ch in range(4)]
        me = where[0]
        own, other = [(where[ch] - me + 1) % LOLA_SIZE - 1 for ch in (2, 3)]  # wrapped to {-1, 0, 1}
        d_own, d_other = jnp.abs(own).sum(1), jnp.abs(other).sum(1)
        target = jnp.where((greedy & (d_other < d_own))[:, None], other, own)
        row_step = jnp.where(target[:, 0] > 0, 2, 3)
        col_step = jnp.where(target[:, 1] > 0, 0, 1)
        row_dest = me + jnp.stack([target[:, 0], 0 * target[:, 0]], 1)
        col_dest = me + jnp.stack([0 * target[:, 1], target[:, 1]], 1)
        coin_other = where[3]

        def clear(dest):
            return greedy | ~jnp.all(dest % LOLA_SIZE == coin_other, axis=1)

        use_row = (target[:, 0] != 0) & clear(row_dest)
        use_col = (target[:, 1] != 0) & clear(col_dest)
        return jnp.where(use_row, row_step, jnp.where(use_col, col_step, LOLA_NOOP)).astype(jnp.int32)

    return act
