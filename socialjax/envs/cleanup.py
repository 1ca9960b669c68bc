"""Clean Up: ``cleanup`` (Melting Pot 2.0 ``clean_up``, the default) and ``cleanup_ssd``
(the original sequential-social-dilemma Cleanup of Hughes et al. 2018 / Jaques et al. 2019).

A public-good game: apples grow in an orchard at a rate that falls as the river gets
dirtier, and only cleaning the river (which pays nothing) keeps them growing.

Rules, Melting Pot preset (meltingpot/configs/substrates/clean_up.py; docs/gridworlds.md):

- 7 players, Melting Pot action set (9 actions: ... 7 zap, 8 clean), 11x11 view.
- +1 for entering a cell with a live apple (the apple is eaten).
- Dirt fraction ``f = dirt cells / potential-dirt cells`` (the ``F`` and ``H`` cells: 147
  on the map, 79 dirty at reset, so ``f = 0.537``).
- Each step every empty apple cell (``B``, ``T``: 122, all empty at reset) grows an apple
  with probability ``apple_rate * clip((threshold - f) / threshold, 0, 1)``: nothing grows
  while ``f >= threshold``. Apples grow under a standing player too (eaten only on entry).
- Dirt spawn: in every step after the first ``dirt_spawn_start`` (50) steps, with
  probability ``dirt_spawn_prob`` (0.5) one uniformly chosen clean potential-dirt cell
  becomes dirty, whatever ``f`` is. Dirt may appear under a player standing on a clean
  river cell; that player can still step off.
- Dirt does not block movement: avatars walk over dirty and clean river alike (the
  Melting Pot config puts avatars and walls on the ``superOverlay`` layer and dirt on
  ``upperPhysical``, and only pieces on the same layer block each other). The static
  option ``dirt_blocks_movement=True`` (before issue 27 the default, with no published
  source) makes dirt a wall.
- Clean beam (cooldown 2, length 3, radius 1, the zap's footprint): on each ray the first
  dirt cell becomes clean; the beam passes through players and stops at walls. Cleaning
  pays nothing; ``info["cells_cleaned"]`` counts the cells each player cleaned.
- Zap: cooldown 10, length 3, radius 1; a hit player is removed for 50 steps.
- Stochastic Melting Pot ending (see :mod:`socialjax.envs.grid.base`) with
  ``end_prob = 0.2``: the clean_up config's ``probabilityTerminationPerInterval`` (the
  commons_harvest substrates use 0.15, the base-class default).

Within a step the world update comes after the beams: ``f`` is measured once after this
step's cleaning, drives apple growth, and then dirt spawns.

SSD preset (``cleanup_ssd``): the 25x18 map, 5 players, fixed 1000 steps, 15x15 centred
view, 9 SSD actions (``constants.SSD_ACTIONS``: left, right, up, down, stay, turn cw, turn
ccw, fire, clean). ``H`` river with waste at reset, ``R`` clean river, ``S`` stream (never
waste), ``B`` orchard (empty at reset). Waste density ``d = waste / (H + R cells)`` (119
cells, ``d = 0.47`` at reset). Apple probability per empty orchard cell: the same formula,
``0.05 * clip(1 - d / 0.4, 0, 1)``. Waste spawns only while ``d < 0.4``: the original
visits the clean river cells in random order with a Bernoulli(0.5) draw each and adds the
first success, i.e. exactly one new waste cell with probability ``1 - 0.5^k`` (``k`` =
clean river cells), uniformly placed, and none otherwise; this is implemented as that
distribution (one draw of "whether", then a uniformly random clean cell). River and
waste are walkable. The clean beam is three rays of length 5
(:func:`~socialjax.envs.grid.engine.ssd_beam`: centre 1..5 ahead, sides 0..4), each cleaning its
first waste cell. The fire beam is Harvest SSD's: the shooter pays 1, each player hit pays 50, nobody is removed.

Known difference from Melting Pot (kept for one shared engine): when two beams reach the
same dirt cell in one step, Melting Pot credits only the first and lets the second pass
on to the next dirt; here both players count it in ``cells_cleaned`` and the cell is
cleaned once. As in the original SSD code, ``cleanup_ssd`` spawns neither apples nor
waste under a standing agent, starts the side rays of its beams beside the agent (cells
0..4 ahead; the centre ray 1..5), and stops every beam, the clean beam too, at the first
agent.

Shapes (``N`` players): actions ``(N,) int32``; observation ``{"grid": (N, Vh, Vw)
uint8, "ready_to_zap": (N,) uint8}`` (codes: see :mod:`socialjax.envs.grid.constants`;
dirt/waste is ``DIRT``, clean river ``RIVER``, stream ``STREAM``); reward ``(N,) float32``;
``info`` per-agent ``(N,)`` events ``apples_eaten``, ``zaps_fired``, ``times_zapped``,
``cells_cleaned``, ``removed``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from socialjax.core.params import brief, check_bool, param
from socialjax.envs.grid import constants as C
from socialjax.envs.grid import engine as E
from socialjax.envs.grid.base import GridEnv, GridParams, SSDFines
from socialjax.envs.grid.maps import game_map, tile

# -- maps (Melting Pot meltingpot/configs/substrates/clean_up.py, ASCII_MAP) -------------
MELTINGPOT_MAP = """
WWWWWWWWWWWWWWWWWWWWWWWWWWWWWW
WHFFFHFFHFHFHFHFHFHFHHFHFFFHFW
WHFHFHFFHFHFHFHFHFHFHHFHFFFHFW
WHFFHFFHHFHFHFHFHFHFHHFHFFFHFW
WHFHFHFFHFHFHFHFHFHFHHFHFFFHFW
WHFFFFFFHFHFHFHFHFHFHHFHFFFHFW
W==============+~FHHHHHHf====W
W   P    P      ===+~SSf     W
W     P     P   P  <~Sf  P   W
W             P   P<~S>      W
W   P    P         <~S>   P  W
W               P  <~S>P     W
W     P           P<~S>      W
W           P      <~S> P    W
W  P             P <~S>      W
W^T^T^T^T^T^T^T^T^T;~S,^T^T^TW
WBBBBBBBBBBBBBBBBBBBssBBBBBBBW
WBBBBBBBBBBBBBBBBBBBBBBBBBBBBW
WBBBBBBBBBBBBBBBBBBBBBBBBBBBBW
WBBBBBBBBBBBBBBBBBBBBBBBBBBBBW
WWWWWWWWWWWWWWWWWWWWWWWWWWWWWW
"""

# SSD cleanup map (eugenevinitsky/sequential_social_dilemma_games, social_dilemmas/maps.py CLEANUP_MAP)
SSD_MAP = """
@@@@@@@@@@@@@@@@@@
@RRRRRR     BBBBB@
@HHHHHH      BBBB@
@RRRRRR     BBBBB@
@RRRRR  P    BBBB@
@RRRRR    P BBBBB@
@HHHHH       BBBB@
@RRRRR      BBBBB@
@HHHHHHSSSSSSBBBB@
@HHHHHHSSSSSSBBBB@
@RRRRR   P P BBBB@
@HHHHH   P  BBBBB@
@RRRRRR    P BBBB@
@HHHHHH P   BBBBB@
@RRRRR       BBBB@
@HHHH    P  BBBBB@
@RRRRR       BBBB@
@HHHHH  P P BBBBB@
@RRRRR       BBBB@
@HHHH       BBBBB@
@RRRRR       BBBB@
@HHHHH      BBBBB@
@RRRRR       BBBB@
@HHHH       BBBBB@
@@@@@@@@@@@@@@@@@@
"""

# Roles: "river" marks the potential-dirt cells (the dirt fraction's denominator),
# "apple_cell" the cells where apples grow, "spawn" the spawn points.
MELTINGPOT_LEGEND = {
    "W": tile(C.WALL),
    "P": tile(C.FLOOR, "spawn"),
    "F": tile(C.DIRT, "river"),  # river with dirt at reset
    "H": tile(C.RIVER, "river"),  # river, clean at reset, can get dirty
    "S": tile(C.STREAM),  # river that never gets dirty
    "~": tile(C.STREAM),  # river (with a shadow) that never gets dirty
    "B": tile(C.APPLE_CELL, "apple_cell"),  # grass, apple cell (empty at reset)
    "T": tile(C.APPLE_CELL, "apple_cell"),  # grass edge, apple cell (empty at reset)
    # walkable floor decoration (sand, grass, grass edges, shadows): rendered as floor
    **{ch: tile(C.FLOOR) for ch in " =+^<>;,fs"},
}
SSD_LEGEND = {
    "@": tile(C.WALL),
    "P": tile(C.FLOOR, "spawn"),
    "H": tile(C.DIRT, "river"),  # river with waste at reset
    "R": tile(C.RIVER, "river"),  # clean river
    "S": tile(C.STREAM),  # stream, never waste
    "B": tile(C.APPLE_CELL, "apple_cell"),  # orchard (empty at reset)
    " ": tile(C.FLOOR),
}

# -- Melting Pot clean_up config (meltingpot/configs/substrates/clean_up.py) --------------
MP_APPLE_RATE = 0.05  # AppleGrow.maxAppleGrowthRate
MP_THRESHOLD = 0.4  # AppleGrow.thresholdDepletion (thresholdRestoration = 0)
MP_DIRT_SPAWN_PROB = 0.5  # DirtSpawner.dirtSpawnProbability
MP_DIRT_SPAWN_START = 50  # DirtSpawner.delayStartOfDirtSpawning (spawns when step > 50)
MP_ZAP = (10, 3, 1, 50)  # Zapper: cooldownTime, beamLength, beamRadius, framesTillRespawn
MP_CLEAN = (2, 3, 1)  # Cleaner: cooldownTime, beamLength, beamRadius
MP_END_PROB = 0.2  # StochasticIntervalEpisodeEnding.probabilityTerminationPerInterval
MELTINGPOT_VIEW = (9, 1, 5)  # Avatar view: 9 forward, 1 backward, 5 left/right
NUM_MELTINGPOT_ACTIONS = 9  # ACTION_SET, incl. FIRE_CLEAN

# -- SSD (social_dilemmas/envs/cleanup.py, map_env.py) -----------------------------------
SSD_APPLE_RATE = 0.05  # appleRespawnProbability
SSD_THRESHOLD = 0.4  # thresholdDepletion (thresholdRestoration = 0)
SSD_WASTE_SPAWN_PROB = 0.5  # wasteSpawnProbability (per clean cell, first success only)
SSD_BEAM_LENGTH, SSD_BEAM_WIDTH = 5, 3  # ACTIONS["FIRE"] = ACTIONS["CLEAN"] = 5, 3 rays
SSD_FIRE_COST, SSD_HIT_PENALTY = -1.0, -50.0  # as Harvest SSD: shooter pays 1, target 50
SSD_VIEW = (7, 7, 7)  # 15x15 centred
NUM_SSD_ACTIONS = 9


@struct.dataclass
class CleanUpParams(GridParams):
    """Clean Up numbers (defaults: the Melting Pot preset; ``cleanup_ssd`` sets its own)."""

    apple_rate: float = param(MP_APPLE_RATE, 0.0, 1.0,
                              doc="apple growth probability per empty apple cell and step with a clean river")
    threshold: float = param(MP_THRESHOLD, 0.0, 1.0,
                             doc="dirt fraction at and above which no apple grows (> 0); SSD: no waste "
                                 "spawns either")
    dirt_spawn_prob: float = param(MP_DIRT_SPAWN_PROB, 0.0, 1.0,
                                   doc="Melting Pot: probability per step that one dirt cell appears; SSD: "
                                       "Bernoulli probability per clean river cell (one cell appears with "
                                       "probability 1 - (1 - p)^k)")
    dirt_spawn_start: int = param(MP_DIRT_SPAWN_START, 0, None,
                                  doc="no dirt spawns during the first this many steps")

    def check(self):
        if not isinstance(self.threshold, jax.core.Tracer) and not np.all(np.asarray(self.threshold) > 0):
            raise ValueError(f"CleanUpParams.threshold must be > 0, got {brief(self.threshold)}")


# ------------------------------------------------------------------------------ rules
def dirt_fraction(cells: jax.Array, river_cells: np.ndarray) -> jax.Array:
    """``() float32``: dirty cells among the static potential-dirt cells ``(K, 2)``."""
    return jnp.mean(cells[river_cells[:, 0], river_cells[:, 1]] == C.DIRT, dtype=jnp.float32)


def apple_probability(fraction: jax.Array, apple_rate, threshold) -> jax.Array:
    """``apple_rate * clip((threshold - f) / threshold, 0, 1)``: the full rate on a clean
    river, falling linearly to 0 at ``f = threshold`` (Melting Pot ``AppleGrow`` with
    ``thresholdRestoration = 0``; the same as the SSD rule)."""
    return apple_rate * jnp.clip((threshold - fraction) / threshold, 0.0, 1.0)


def grow_apples(u: jax.Array, apple: jax.Array, prob: jax.Array) -> jax.Array:
    """Each empty apple cell becomes an apple with probability ``prob``. ``apple (A,)``
    codes of the apple cells, ``u (A,)`` one uniform draw per cell. Returns ``(A,)``."""
    return jnp.where((apple == C.APPLE_CELL) & (u < prob), jnp.uint8(C.APPLE), apple)


def spawn_dirt(u: jax.Array, river: jax.Array, prob: jax.Array) -> jax.Array:
    """With probability ``prob`` one uniformly chosen clean cell becomes dirty (nothing if
    none is clean). ``river (K,)`` codes of the potential-dirt cells, ``u (2,)`` uniform
    draws: whether, and which (the ``j``-th clean cell, ``j = floor(u k)``). Returns ``(K,)``."""
    clean = river == C.RIVER
    num_clean = jnp.sum(clean, dtype=jnp.float32)
    j = jnp.minimum(jnp.floor(u[1] * num_clean), num_clean - 1)  # guard u * k rounding up to k
    chosen = clean & (jnp.cumsum(clean, dtype=jnp.float32) == j + 1)
    return jnp.where(chosen & (u[0] < prob), jnp.uint8(C.DIRT), river)


def meltingpot_dirt_spawn_prob(t: jax.Array, fraction: jax.Array, num_clean: jax.Array,
                               params: CleanUpParams) -> jax.Array:
    """Melting Pot: ``dirt_spawn_prob`` in the steps after the first ``dirt_spawn_start``
    (``t`` = steps already taken), whatever the dirt fraction."""
    return jnp.where(t >= params.dirt_spawn_start, params.dirt_spawn_prob, 0.0)


def ssd_waste_spawn_prob(t: jax.Array, fraction: jax.Array, num_clean: jax.Array,
                         params: CleanUpParams) -> jax.Array:
    """SSD: ``1 - (1 - dirt_spawn_prob)^k`` (``k`` clean river cells: the chance that one
    of the original's sequential Bernoulli draws succeeds) while the waste density is
    below ``threshold``, else 0."""
    p = 1.0 - (1.0 - params.dirt_spawn_prob) ** num_clean
    return jnp.where((fraction < params.threshold) & (t >= params.dirt_spawn_start), p, 0.0)


# ------------------------------------------------------------------------------ envs
RIVER_REQUIRED = (("river", "potential-dirt (river) cells: the dirt fraction is undefined"),)


class _CleanUpBase(GridEnv):
    """The world update both presets share; they differ in :meth:`dirt_spawn_prob`."""

    params_cls = CleanUpParams
    event_keys = (*GridEnv.event_keys, "cells_cleaned")  # the clean beam's cells

    def _set_cells(self):
        self.apple_cells = self.map.points("apple_cell")  # (A, 2)
        self.river_cells = self.map.points("river")  # (K, 2) potential-dirt cells
        self.world_cells = np.concatenate([self.apple_cells, self.river_cells])  # disjoint roles

    def dirt_spawn_prob(self, t, fraction, num_clean, params) -> jax.Array:
        raise NotImplementedError

    def update_world(self, key, state, params):
        """Apples grow at the rate set by the dirt fraction ``f`` (measured after this
        step's cleaning), then dirt spawns. One gather, ``A + 2`` uniform draws, one
        scatter."""
        num_apple = len(self.apple_cells)
        rows, cols = self.world_cells[:, 0], self.world_cells[:, 1]
        here = state.cells[rows, cols]
        apple, river = here[:num_apple], here[num_apple:]
        u = jax.random.uniform(key, (num_apple + 2,))
        num_dirty = jnp.sum(river == C.DIRT, dtype=jnp.float32)
        fraction = num_dirty / len(self.river_cells)
        apple = grow_apples(u[:num_apple], apple, apple_probability(fraction, params.apple_rate, params.threshold))
        prob = self.dirt_spawn_prob(state.t, fraction, len(self.river_cells) - num_dirty, params)
        river = spawn_dirt(u[num_apple:], river, prob)
        return state.replace(cells=state.cells.at[rows, cols].set(jnp.concatenate([apple, river])))


class CleanUp(_CleanUpBase):
    """Melting Pot Clean Up (see the module docstring for the rules).

    Static options: ``num_agents`` (7), ``episode`` ("meltingpot" stochastic ending or
    "fixed"), ``episode_length`` (for "fixed", 1000), ``obs_mode`` ("codes" | "rgb"),
    ``view`` ((ahead, behind, side), default (9, 1, 5)), ``dirt_blocks_movement`` (False),
    ``ascii_map`` (a custom map with the same legend; default the Melting Pot map).
    """

    def __init__(self, num_agents: int = 7, episode: str = "meltingpot", episode_length: int = 1000,
                 obs_mode: str = "codes", view: tuple = MELTINGPOT_VIEW, dirt_blocks_movement: bool = False,
                 ascii_map: str | None = None):
        dirt_blocks_movement = check_bool("dirt_blocks_movement", dirt_blocks_movement)
        _, zap_length, zap_radius, _ = MP_ZAP
        _, clean_length, clean_radius = MP_CLEAN
        super().__init__(
            game_map("cleanup", ascii_map, MELTINGPOT_MAP, MELTINGPOT_LEGEND, RIVER_REQUIRED),
            num_agents, NUM_MELTINGPOT_ACTIONS, tuple(view), E.meltingpot_beam(zap_length, zap_radius),
            clean_rays=E.meltingpot_beam(clean_length, clean_radius), episode=episode,
            episode_length=episode_length, obs_mode=obs_mode,
        )
        self.dirt_blocks_movement = dirt_blocks_movement
        self._set_cells()

    def make_default_params(self):
        zap_cooldown, _, _, delay = MP_ZAP
        return CleanUpParams(zap_cooldown=zap_cooldown, respawn_delay=delay, clean_cooldown=MP_CLEAN[0],
                             end_prob=MP_END_PROB)

    def walkable(self, cells):
        """Anything but walls (and, with ``dirt_blocks_movement``, dirt)."""
        ok = cells != C.WALL
        return ok & (cells != C.DIRT) if self.dirt_blocks_movement else ok

    def dirt_spawn_prob(self, t, fraction, num_clean, params):
        return meltingpot_dirt_spawn_prob(t, fraction, num_clean, params)


class CleanUpSSD(SSDFines, _CleanUpBase):
    """The original SSD Cleanup (Hughes et al. 2018; Jaques et al. 2019): 5 players,
    fixed 1000 steps, 15x15 view, SSD actions, fines instead of removal (see the module
    docstring). Static options: ``num_agents`` (5), ``episode_length`` (1000),
    ``obs_mode``, ``view`` ((7, 7, 7)), ``ascii_map`` (custom map, SSD legend)."""

    action_table = C.SSD_ACTIONS
    action_names = C.SSD_ACTION_NAMES
    spawn_under_agents = False  # the original spawns no apple or waste under an agent
    clean_stops_at_agents = True  # the original's beams all stop at the first agent

    def __init__(self, num_agents: int = 5, episode_length: int = 1000, obs_mode: str = "codes",
                 view: tuple = SSD_VIEW, ascii_map: str | None = None):
        beam = E.ssd_beam(SSD_BEAM_LENGTH, SSD_BEAM_WIDTH)
        super().__init__(
            game_map("cleanup_ssd", ascii_map, SSD_MAP, SSD_LEGEND, RIVER_REQUIRED), num_agents,
            NUM_SSD_ACTIONS, tuple(view), beam, clean_rays=beam, episode="fixed",
            episode_length=episode_length, obs_mode=obs_mode,
        )
        self.noop_action = C.SSD_NOOP
        self._set_cells()

    def make_default_params(self):
        return CleanUpParams(
            apple_rate=SSD_APPLE_RATE, threshold=SSD_THRESHOLD, dirt_spawn_prob=SSD_WASTE_SPAWN_PROB,
            dirt_spawn_start=0, zap_cooldown=0, clean_cooldown=0, zap_cost=SSD_FIRE_COST,
            zap_penalty=SSD_HIT_PENALTY,
        )

    def dirt_spawn_prob(self, t, fraction, num_clean, params):
        return ssd_waste_spawn_prob(t, fraction, num_clean, params)
