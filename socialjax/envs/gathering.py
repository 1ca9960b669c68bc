"""Gathering (Leibo et al. 2017, "Multi-agent reinforcement learning in sequential
social dilemmas"): ``gathering``.

Rules (Leibo et al. 2017; docs/gridworlds.md):

- 2 players (static ``num_agents``, up to 6 on this map), +1 for entering a cell with a
  live apple (the apple is collected).
- A collected apple reappears on its cell exactly ``n_apple`` steps later: collected in
  step ``t``, the cell is empty in the states after steps ``t .. t + n_apple - 1`` and
  holds an apple again after step ``t + n_apple``. The per-cell countdown lives in
  ``state.timers`` (:class:`GatheringState`; :func:`start_regrowth`,
  :func:`regrow_apples`). As everywhere on the grid engine, an apple that reappears
  under a standing player is collected only by entering the cell again.
- The beam is a straight ray along the heading, width 1, up to the far side of the map:
  it stops at a wall and at the first player on it (``engine.straight_beam``). Apples do
  not stop it. Beaming costs and pays nothing (``zap_cost = zap_penalty = 0``), and there
  is no cooldown (``zap_cooldown = 0``: a player may beam every step).
- Tagging (:func:`tag_players`): a player hit ``hits_to_tag`` (2) times since it last
  (re-)entered the map is removed for ``n_tagged`` steps, then respawns on a random free
  spawn point with a random heading and a hit count of 0. Hits from several beams in one
  step all count. The removal timing is the engine's (grid/base.py): tagged in step
  ``t``, off the map after steps ``t .. t + n_tagged - 1``, back after ``t + n_tagged``.
  The base param ``respawn_delay`` is not used (``n_tagged`` is Gathering's removal
  time); setting it raises an error that says so.
- 8 actions (``constants.GATHERING_ACTIONS``): 0 forward, 1 backward, 2 step left,
  3 step right, 4 turn left, 5 turn right, 6 beam, 7 stay (the no-op, also what an
  out-of-range action becomes).
- Fixed-length episodes (static ``episode_length``, 1000); the time limit is
  ``truncated``.

The map (our design; the paper's map is not published as data). 11 x 25 cells, walls on
the border, 207 walkable cells; a diamond of 25 apple cells (``A``, ``|dr| + |dc| <= 3``
around row 5, column 12); 3 spawn points on each side (``L`` at column 3, ``R`` at
column 21, rows 4-6), 6 cells from the patch. Player ``i`` starts on the west side
(``L``) when ``i`` is even and on the east side (``R``) when odd, on a random point of
its side; respawns use all 6 points. The map is mirror-symmetric, so neither side is
favoured (the map is ``GATHERING_MAP`` below).

Observation: the engine's egocentric window, by default ``(9, 1, 5)`` (11 x 11: 9 ahead,
1 behind, 5 each side, as the Melting Pot games here, so one network fits all spatial
games); from a spawn point facing the patch a player sees all of it.

Defaults of the swept knobs (ours): Leibo et al. sweep ``n_apple`` (apple respawn time:
abundance) and ``n_tagged`` (tagged time: conflict cost) as the two axes of their
beam-use figure and fix no single operating point we could verify, so the defaults sit
inside the swept range where both matter: ``n_apple = 25`` (the 25-cell patch regrows
about one apple per step: two players eating flat out empty it, so apples are
contested) and ``n_tagged = 25`` (a tag costs about one patch regrowth cycle).
``hits_to_tag = 2`` is the paper's rule ("hit by the beam twice").
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from socialjax.core.params import brief, param
from socialjax.envs.grid import constants as C
from socialjax.envs.grid import engine as E
from socialjax.envs.grid.base import MAX_AGENTS, GridEnv, GridParams, GridState
from socialjax.envs.grid.maps import parse_map, tile

GATHERING_MAP = """
WWWWWWWWWWWWWWWWWWWWWWWWW
W                       W
W           A           W
W          AAA          W
W  L      AAAAA      R  W
W  L     AAAAAAA     R  W
W  L      AAAAA      R  W
W          AAA          W
W           A           W
W                       W
WWWWWWWWWWWWWWWWWWWWWWWWW
"""
LEGEND = {
    "W": tile(C.WALL),
    "A": tile(C.APPLE, "apple_cell"),
    "L": tile(C.FLOOR, "spawn", "spawn_west"),
    "R": tile(C.FLOOR, "spawn", "spawn_east"),
    " ": tile(C.FLOOR),
}
SIDES = ("spawn_west", "spawn_east")  # first spawn of player i: SIDES[i % 2]

N_APPLE = 25  # apple respawn time (steps); swept in Leibo et al. 2017, default ours (see above)
N_TAGGED = 25  # tagged-out time (steps); swept in Leibo et al. 2017, default ours
HITS_TO_TAG = 2  # Leibo et al. 2017: "a player hit by the beam twice is tagged"
EPISODE_LENGTH = 1000  # steps per episode (fixed)
VIEW = (9, 1, 5)  # 11 x 11 egocentric window: 9 ahead, 1 behind, 5 each side


@struct.dataclass
class GatheringParams(GridParams):
    n_apple: int = param(N_APPLE, 1, None, doc="steps before a collected apple reappears on its cell")
    n_tagged: int = param(N_TAGGED, 1, None, doc="steps a tagged player stays removed")
    hits_to_tag: int = param(HITS_TO_TAG, 1, None, doc="beam hits since (re-)entry that tag a player out")
    zap_cooldown: int = param(0, 0, None, doc="steps between beams (Gathering: none, beam every step)")

    def check(self):
        for name in ("n_apple", "n_tagged", "hits_to_tag"):
            value = getattr(self, name)
            if not isinstance(value, jax.core.Tracer) and np.any(np.asarray(value) % 1 != 0):
                raise ValueError(f"GatheringParams.{name}={brief(value)} must be a whole number of steps / hits")


@struct.dataclass
class GatheringState(GridState):
    tagged: jax.Array  # (N,) int32 hits since the player last (re-)entered the map
    timers: jax.Array  # (H, W) int32 steps until each collected apple reappears


class Gathering(GridEnv):
    """Gathering (Leibo et al. 2017). Static options: ``num_agents`` (2, at most 6),
    ``episode_length`` (1000, fixed-length episodes), ``obs_mode`` ("codes" | "rgb"),
    ``view`` ((ahead, behind, side), default (9, 1, 5)). Params: :class:`GatheringParams`.
    """

    params_cls = GatheringParams
    action_table = C.GATHERING_ACTIONS
    action_names = C.GATHERING_ACTION_NAMES

    def __init__(self, num_agents: int = 2, episode_length: int = EPISODE_LENGTH, obs_mode: str = "codes",
                 view: tuple = VIEW):
        grid_map = parse_map("gathering", GATHERING_MAP, LEGEND)
        # the first spawn side of each agent (agents beyond the grid games' cap are refused by GridEnv)
        sides = tuple(SIDES[i % 2] for i in range(min(num_agents, MAX_AGENTS))) if isinstance(num_agents, int) else ()
        super().__init__(
            grid_map, num_agents, len(C.GATHERING_ACTIONS), tuple(view), E.straight_beam(max(grid_map.shape)),
            episode="fixed", episode_length=episode_length, obs_mode=obs_mode, first_spawn=sides,
        )
        self.noop_action = C.GATHERING_NOOP

    def inert_params(self):
        return {**super().inert_params(),
                "respawn_delay": f"Gathering removes a player for n_tagged steps after {HITS_TO_TAG} hits: "
                "set n_tagged"}

    def initial_state(self, key, params):
        state = super().initial_state(key, params)
        return GatheringState(
            **vars(state), tagged=jnp.zeros(self.num_agents, jnp.int32), timers=jnp.zeros(self.map.shape, jnp.int32)
        )

    def transition(self, key, state, actions, params):
        new, reward, done, info = super().transition(key, state, actions, params)
        respawned = (state.removed > 0) & (new.removed == 0)
        return new.replace(tagged=jnp.where(respawned, 0, new.tagged)), reward, done, info

    def eat(self, state, moved, params):
        state, eaten = super().eat(state, moved, params)
        return state.replace(timers=start_regrowth(state.timers, state.pos, eaten, params.n_apple)), eaten

    def on_zap_hits(self, hits, state, params):
        removed, tagged = tag_players(hits.sum(0), state.removed, state.tagged, params.hits_to_tag, params.n_tagged)
        return state.replace(removed=removed, tagged=tagged)

    def update_world(self, key, state, params):
        cells, timers = regrow_apples(state.cells, state.timers)
        return state.replace(cells=cells, timers=timers)


def start_regrowth(timers: jax.Array, pos: jax.Array, eaten: jax.Array, n_apple) -> jax.Array:
    """The cell of each collected apple starts waiting ``n_apple`` steps.
    ``timers (H, W) int32``, ``pos (N, 2)``, ``eaten (N,)``."""
    rows = jnp.where(eaten > 0, pos[:, 0], timers.shape[0])  # out of range -> dropped
    return timers.at[rows, pos[:, 1]].set(jnp.asarray(n_apple, timers.dtype), mode="drop")


def regrow_apples(cells: jax.Array, timers: jax.Array) -> tuple[jax.Array, jax.Array]:
    """End-of-step world update: every empty apple cell whose timer is 0 holds an apple
    again, then every running timer counts down by one. A cell emptied in step ``t``
    (timer ``n``) is counted down in steps ``t .. t + n - 1`` and regrows in step
    ``t + n``. ``cells (H, W) uint8``, ``timers (H, W) int32``."""
    grow = (cells == C.APPLE_CELL) & (timers == 0)
    cells = jnp.where(grow, jnp.asarray(C.APPLE, cells.dtype), cells)
    return cells, jnp.maximum(timers - 1, 0)


def tag_players(hits_taken: jax.Array, removed: jax.Array, tagged: jax.Array, hits_to_tag, n_tagged
                ) -> tuple[jax.Array, jax.Array]:
    """Add this step's hits to each present player's count; a present player whose
    count reaches ``hits_to_tag`` is removed for ``n_tagged`` steps (its count is reset
    when it respawns, by :meth:`Gathering.transition`). ``hits_taken``, ``removed``,
    ``tagged``: ``(N,) int32``. Returns ``(removed, tagged)``."""
    present = removed == 0
    tagged = tagged + jnp.where(present, hits_taken, 0)
    out = present & (tagged >= hits_to_tag)
    return jnp.where(out, n_tagged, removed).astype(removed.dtype), tagged
