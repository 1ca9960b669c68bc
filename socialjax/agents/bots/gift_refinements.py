"""Scripted bots of Gift Refinements (``socialjax/envs/gift_refinements.py``):
``gift_cooperator``, ``gift_extreme_cooperator``, ``gift_defector`` (:func:`gift_bot`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from socialjax.envs.gift_refinements import BEAM_LENGTH, CONSUME, GIFT, GIFT_BOTS, TOKEN, GiftRefinements
from socialjax.envs.grid import constants as C


def gift_bot(env: GiftRefinements, name: str):
    """``act(key, slot, obs) -> (B,) int32`` of a scripted Gift Refinements bot, reading
    only the player's own observation (``grid`` codes and ``inventory``). Melting Pot's
    bots are trained policies steered by a puppeteer
    (``meltingpot/utils/puppeteers/gift_refinements.py``, scenarios in
    ``meltingpot/configs/bots/__init__.py``); these are scripted with the same goals:

    - ``gift_cooperator`` (``GiftRefinementsCooperator``): collect while the inventory is
      empty; holding only raw tokens, gift; holding any refined token, consume.
    - ``gift_extreme_cooperator`` (``GiftRefinementsExtremeCooperator``): the same, but
      consume only when holding a twice-refined (level 3) token; otherwise gift.
    - ``gift_defector`` (the ``FixedGoal`` ``FORAGE`` bot): collect and consume, never gift.

    Collecting: walk to the nearest token in view (Manhattan distance; a step along the
    longer axis of the offset), else walk forward or turn at random. Gifting: fire when
    another player stands in the column straight ahead within the beam's reach with no
    wall before it; else step sideways to bring the nearest player in view into that
    column (forward when it is in the column but out of reach), or turn towards a player
    beside or behind; with nobody in view, roam
    (collecting on the way)."""
    if name not in GIFT_BOTS:
        raise ValueError(f"unknown gift_refinements bot {name!r}; known: {GIFT_BOTS}")
    ahead, behind, side = env.view
    V, W = env.offsets.shape[1:3]
    dr = (jnp.arange(V)[:, None] - ahead + 0 * jnp.arange(W)[None, :]).reshape(-1)  # < 0: ahead
    dc = (jnp.arange(W)[None, :] - side + 0 * jnp.arange(V)[:, None]).reshape(-1)  # > 0: to the right
    dist = jnp.abs(dr) + jnp.abs(dc)
    big = jnp.iinfo(jnp.int32).max
    noop, forward, backward, left, right, turn_l, turn_r = range(7)
    reach = min(BEAM_LENGTH, ahead)
    column = np.array([(ahead - f) * W + side for f in range(1, reach + 1)], np.int32)  # cells 1..reach ahead
    centre_idx = ahead * W + side

    def toward(r, c):
        """A step along the longer axis of the offset ``(r, c)``."""
        vertical = jnp.where(r < 0, forward, backward)
        lateral = jnp.where(c > 0, right, left)
        return jnp.where(jnp.abs(r) >= jnp.abs(c), vertical, lateral)

    def act(key, slot, obs):
        grid = obs["grid"].reshape(obs["grid"].shape[0], -1).astype(jnp.int32)  # (B, V * W)
        inv = obs["inventory"]
        batch = grid.shape[0]
        k_roam, k_turn = jax.random.split(key)
        turn = jnp.where(jax.random.bernoulli(k_turn, 0.5, (batch,)), turn_l, turn_r)
        roam = jnp.asarray([forward, forward, turn_l, turn_r], jnp.int32)[jax.random.randint(k_roam, (batch,), 0, 4)]
        # collect
        token = grid == TOKEN
        best = jnp.argmin(jnp.where(token, dist[None, :], big), axis=1)
        collect = jnp.where(token.any(axis=1), toward(dr[best], dc[best]), roam)
        # gift
        other = (grid >= C.AGENT_BASE) & (jnp.arange(V * W) != centre_idx)[None, :]
        line = grid[:, column]  # (B, reach)
        is_agent, is_wall = line >= C.AGENT_BASE, line == C.WALL
        clear = jnp.cumprod(~is_wall, axis=1).astype(bool)
        in_line = jnp.any(is_agent & clear, axis=1)
        who = jnp.argmin(jnp.where(other, dist[None, :], big), axis=1)
        r, c = dr[who], dc[who]
        approach = jnp.where(r < 0, jnp.where(c > 0, right, jnp.where(c < 0, left, forward)),
                             jnp.where(c > 0, turn_r, jnp.where(c < 0, turn_l, turn)))
        gift = jnp.where(in_line, GIFT, jnp.where(other.any(axis=1), approach, collect))
        # goals (the puppeteers' step functions)
        holding = inv.sum(axis=1) > 0
        if name == "gift_defector":
            action = jnp.where(holding, CONSUME, collect)
        else:
            enough = inv[:, 2] > 0 if name == "gift_extreme_cooperator" else (inv[:, 1] + inv[:, 2]) > 0
            action = jnp.where(holding, jnp.where(enough, CONSUME, gift), collect)
        present = grid[:, centre_idx] >= C.AGENT_BASE
        return jnp.where(present, action, noop).astype(jnp.int32)

    return act
