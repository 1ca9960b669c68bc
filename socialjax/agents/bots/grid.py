"""Bots for any gridworld with code observations, and the beam bot that games' bots build on.

- ``harvester`` (:func:`grid_bot`): walks towards the nearest apple in its view and eats
  it (a greedy harvester that never zaps).
- ``cleaner`` (:func:`grid_bot`, Clean Up: a game with a cleaning beam): walks towards the
  nearest dirt and fires its cleaning beam whenever some dirt lies in the beam's
  footprint (an "always clean" bot).
- :func:`beam_bot`: walks and turns until the nearest target in view lies straight ahead
  within reach, then fires (Cooperative Mining's miners, Territory's bots).

All read only their own egocentric code observation; with nothing in view they walk
forward or turn at random. Each builder returns ``act(key, slot, obs) -> (B,) int32``.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from socialjax.envs.grid import constants as C

#: the bots every gridworld with code observations has (``cleaner``: with a cleaning beam)
GRID_BOTS = ("harvester", "cleaner")
# the Melting Pot action set's moves (ACTION_SET of the substrate configs)
NOOP, FORWARD, BACKWARD, STEP_LEFT, STEP_RIGHT, TURN_LEFT, TURN_RIGHT = range(7)
STEP_MOVES = (FORWARD, BACKWARD, STEP_LEFT, STEP_RIGHT)  # the order of a bot's four step cells


def seek_or_roam(key: jax.Array, wanted: jax.Array, avoid: jax.Array, dist: jax.Array, dr: jax.Array,
                 dc: jax.Array) -> jax.Array:
    """A window-reading bot's move: towards the nearest wanted cell (``wanted (B, V*W)``,
    Manhattan ``dist``, row / column offsets ``dr`` (< 0: ahead), ``dc`` (> 0: right), each
    ``(V*W,)``) along the longer axis of the offset, else along the other, else a random
    turn, never onto a cell it avoids (``avoid (B, 4)``: the cells a step forward,
    backward, left, right enters); with nothing wanted in view, forward or a random turn
    (a turn where forward is avoided). ``(B,) int32``."""
    batch = wanted.shape[0]
    step_moves = jnp.asarray(STEP_MOVES, jnp.int32)
    best = jnp.argmin(jnp.where(wanted, dist[None, :], jnp.iinfo(jnp.int32).max), axis=1)
    r, c = dr[best], dc[best]
    vertical = jnp.where(r < 0, 0, 1)  # index into STEP_MOVES
    lateral = jnp.where(c > 0, 3, 2)
    longer = jnp.abs(r) >= jnp.abs(c)
    first = jnp.where(longer, vertical, lateral)
    second = jnp.where(longer, jnp.where(c != 0, lateral, -1), jnp.where(r != 0, vertical, -1))
    rows = jnp.arange(batch)
    ok_first = ~avoid[rows, first]
    ok_second = (second >= 0) & ~avoid[rows, jnp.maximum(second, 0)]
    k_roam, k_turn = jax.random.split(key)
    turn = jnp.where(jax.random.bernoulli(k_turn, 0.5, (batch,)), TURN_LEFT, TURN_RIGHT)
    move = jnp.where(ok_first, step_moves[first], jnp.where(ok_second, step_moves[jnp.maximum(second, 0)], turn))
    roam = jnp.asarray([FORWARD, FORWARD, TURN_LEFT, TURN_RIGHT], jnp.int32)[jax.random.randint(k_roam, (batch,), 0, 4)]
    roam = jnp.where((roam == FORWARD) & avoid[:, 0], turn, roam)
    return jnp.where(wanted.any(axis=1), move, roam)


def action_finder(env) -> Callable[..., int]:
    """``action_of(move, turn=0, beam=NO_BEAM)``: the first index of ``env``'s action
    table with that (relative move, turn, beam); an error naming the env if none."""
    table = np.asarray(env.action_table)

    def action_of(move: int, turn: int = 0, beam: int = C.NO_BEAM) -> int:
        hits = np.flatnonzero((table[:, 0] == move) & (table[:, 1] == turn) & (table[:, 2] == beam))
        if hits.size == 0:
            raise ValueError(f"{env!r} has no action for move={move}, turn={turn}, beam={beam}")
        return int(hits[0])

    return action_of


def grid_bot(env, name: str) -> Callable:
    """The act function of a greedy gridworld bot (see the module docstring).

    In the egocentric window the bot stands on row ``ahead``, column ``side``, facing
    up. It picks the nearest target cell (Manhattan distance; ties go to the first in
    row-major order, i.e. the farthest ahead), and steps along the longer axis of the
    offset: forward/backward, else strafe left/right. The cleaner fires instead when any
    dirt cell in view lies on the cleaning beam's rays (walls and agents that would
    stop the beam are not checked).
    """
    ahead, _, side = env.view

    action_of = action_finder(env)

    forward, backward = action_of(C.FORWARD), action_of(C.BACKWARD)
    left, right = action_of(C.LEFT), action_of(C.RIGHT)
    wander = jnp.asarray([forward, forward, action_of(C.NO_MOVE, -1), action_of(C.NO_MOVE, 1)], jnp.int32)
    target = C.DIRT if name == "cleaner" else C.APPLE
    clean = action_of(C.NO_MOVE, 0, C.CLEAN) if name == "cleaner" else -1
    V, W = env.offsets.shape[1:3]
    footprint = np.zeros((V, W), bool)  # window cells the cleaning beam can reach
    if name == "cleaner":
        for (f, lateral), ok in zip(env.clean_rays.frame.reshape(-1, 2), env.clean_rays.valid.reshape(-1)):
            if ok and 0 <= ahead - f < V and 0 <= side + lateral < W:
                footprint[ahead - f, side + lateral] = True
    footprint = jnp.asarray(footprint.reshape(-1))
    dr = jnp.arange(V)[:, None] - ahead + 0 * jnp.arange(W)[None, :]  # < 0: ahead
    dc = jnp.arange(W)[None, :] - side + 0 * jnp.arange(V)[:, None]  # > 0: to the right
    dist = (jnp.abs(dr) + jnp.abs(dc)).reshape(-1)

    def act(key, slot, obs):
        grid = obs["grid"].reshape(obs["grid"].shape[0], -1)  # (B, V * W)
        found = grid == target
        best = jnp.argmin(jnp.where(found, dist[None, :], jnp.iinfo(jnp.int32).max), axis=1)
        any_found = found.any(axis=1)
        r, c = dr.reshape(-1)[best], dc.reshape(-1)[best]
        move = jnp.where(
            jnp.abs(r) >= jnp.abs(c),
            jnp.where(r < 0, forward, backward),
            jnp.where(c > 0, right, left),
        )
        if name == "cleaner":
            move = jnp.where(jnp.any(found & footprint[None, :], axis=1), clean, move)
        roam = wander[jax.random.randint(key, (grid.shape[0],), 0, wander.shape[0])]
        return jnp.where(any_found, move, roam).astype(jnp.int32)

    return act


def beam_bot(env, targets, explore: float = 0.1, prefer: int = 6, fire: int | None = None,
             reach: int | None = None) -> Callable:
    """The act function of a bot that fires its zap-slot beam (coop_mining: the mining
    beam, one ray ``env.zap_rays.length`` cells straight ahead) at the nearest cell in
    view whose code is in ``targets`` (a code earlier in ``targets`` counts as ``prefer``
    cells nearer than a later one: the gold miner goes to gold another player has
    started before raw gold). ``targets`` may instead be a function of the flattened
    code window ``(B, V * W) int32 -> (B, V * W) bool`` marking the target cells (a bot
    that reads its own index from the window, as Territory's do). ``fire`` (an action
    index; default the zap-slot beam) is taken when the target is straight ahead within
    ``reach`` cells (default the zap beam's length).

    In the egocentric window the bot stands on row ``ahead``, column ``side``, facing
    up. Target ahead in its own column within reach: fire; farther ahead: forward; ahead
    in another column: strafe towards it; level with the bot: turn towards it; behind:
    turn right; under the bot: step back. With probability ``explore``, or with no
    target in view, it walks forward or turns at random (which also frees it when a
    wall stands between it and the target).
    """
    ahead, _, side = env.view

    action_of = action_finder(env)

    forward, backward = action_of(C.FORWARD), action_of(C.BACKWARD)
    left, right = action_of(C.LEFT), action_of(C.RIGHT)
    turn_left, turn_right = action_of(C.NO_MOVE, -1), action_of(C.NO_MOVE, 1)
    fire = action_of(C.NO_MOVE, 0, C.ZAP) if fire is None else int(fire)
    reach = int(env.zap_rays.length) if reach is None else int(reach)
    wander = jnp.asarray([forward, forward, turn_left, turn_right], jnp.int32)
    V, W = env.offsets.shape[1:3]
    dr = (jnp.arange(V)[:, None] - ahead + 0 * jnp.arange(W)[None, :]).reshape(-1)  # < 0: ahead
    dc = (jnp.arange(W)[None, :] - side + 0 * jnp.arange(V)[:, None]).reshape(-1)  # > 0: to the right
    dist = jnp.abs(dr) + jnp.abs(dc)
    if callable(targets):
        def scored(grid):
            return targets(grid), dist[None, :]
    else:
        codes = jnp.asarray(targets)
        handicap = prefer * jnp.arange(len(targets))

        def scored(grid):
            match = grid[..., None] == codes  # (B, V * W, K)
            return jnp.any(match, axis=-1), dist[None, :] + jnp.sum(jnp.where(match, handicap, 0), axis=-1)

    def act(key, slot, obs):
        grid = obs["grid"].reshape(obs["grid"].shape[0], -1).astype(jnp.int32)  # (B, V * W)
        found, score = scored(grid)
        best = jnp.argmin(jnp.where(found, score, jnp.iinfo(jnp.int32).max), axis=1)
        r, c = dr[best], dc[best]
        move = jnp.where(
            r < 0,
            jnp.where(c == 0, jnp.where(-r <= reach, fire, forward), jnp.where(c > 0, right, left)),
            jnp.where(r == 0, jnp.where(c > 0, turn_right, jnp.where(c < 0, turn_left, backward)), turn_right),
        )
        k_roam, k_explore = jax.random.split(key)
        batch = grid.shape[0]
        roam = wander[jax.random.randint(k_roam, (batch,), 0, wander.shape[0])]
        explore_now = jax.random.uniform(k_explore, (batch,)) < explore
        return jnp.where(found.any(axis=1) & ~explore_now, move, roam).astype(jnp.int32)

    return act
