"""Commons Harvest: ``harvest_open``, ``harvest_closed``, ``harvest_partnership`` (Melting
Pot 2.0) and ``harvest_ssd`` (the original sequential-social-dilemma Harvest).

Rules (Melting Pot's commons_harvest configs and the SSD code; docs/gridworlds.md):
+1 for entering a cell with a live apple (the apple is
eaten). Each step an empty apple cell regrows with probability ``regrowth[min(n, 3)]``,
where ``n`` counts live apples among its neighbours: within Euclidean distance 2 (the 12
surrounding cells) in Melting Pot; in the 3x3 square in SSD (the original code's radius
test reduced radius 2 to that square). Regrowth happens even under a standing agent; the
apple is eaten only by entering the cell.

Melting Pot presets: 7 players, agents 0 and 1 start on the inside spawn points
``Q``, the rest on ``P``; respawns use ``P``. The zap removes a hit player for
``respawn_delay`` steps; zapping costs nothing.

SSD preset: 5 players, fixed 1000 steps, 15x15 centred view, SSD actions; the fire beam
(length 5, width 3) costs the shooter 1 and each player hit 50, and removes nobody. As
in the original code, no apple spawns on a cell an agent stands on (docs/gridworlds.md,
"Reference behaviour", compares a random policy's apple count with the reference one).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from socialjax.core.params import param
from socialjax.envs.grid import constants as C
from socialjax.envs.grid import engine as E
from socialjax.envs.grid.base import GridEnv, GridParams, SSDFines
from socialjax.envs.grid.maps import game_map, tile

# -- maps (Melting Pot meltingpot/configs/substrates/commons_harvest__open/closed/partnership.py) --
OPEN_MAP = """
WWWWWWWWWWWWWWWWWWWWWWWW
WAAA    A      A    AAAW
WAA    AAA    AAA    AAW
WA    AAAAA  AAAAA    AW
W      AAA    AAA      W
W       A      A       W
W  A                A  W
W AAA  Q        Q  AAA W
WAAAAA            AAAAAW
W AAA              AAA W
W  A                A  W
W                      W
W                      W
W                      W
W  PPPPPPPPPPPPPPPPPP  W
W PPPPPPPPPPPPPPPPPPPP W
WPPPPPPPPPPPPPPPPPPPPPPW
WWWWWWWWWWWWWWWWWWWWWWWW
"""

CLOSED_MAP = """
WWWWWWWWWWWWWWWWWWWWWWWW
WAAA    A  WW  A    AAAW
WAA    AAA WW AAA    AAW
WA    AAAAAWWAAAAA    AW
W      AAA WW AAA      W
W       A  WW  A       W
W  A       WW       A  W
W AAA  Q   WW   Q  AAA W
WAAAAA     WW     AAAAAW
W AAA  WWWWWWWWWW  AAA W
W  A       WW       A  W
WWWWWWWWWW WW WWWWWWWWWW
W          WW          W
W  WWWWWWWWWWWWWWWWWW  W
W  PPPPPPPPPPPPPPPPPP  W
W PPPPPPPPPPPPPPPPPPPP W
WPPPPPPPPPPPPPPPPPPPPPPW
WWWWWWWWWWWWWWWWWWWWWWWW
"""


def _partnership_map() -> str:
    """The closed map with the ``WW`` column replaced by ``II`` in rows 1-6 and 8."""
    rows = CLOSED_MAP.strip("\n").split("\n")
    for r in (1, 2, 3, 4, 5, 6, 8):
        rows[r] = rows[r][:11] + "II" + rows[r][13:]
    return "\n".join(rows)


PARTNERSHIP_MAP = _partnership_map()

SSD_MAP = """
@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@
@ P   P      A    P AAAAA    P  A P  @
@  P     A P AA    P    AAA    A  A  @
@     A AAA  AAA    A    A AA AAAA   @
@ A  AAA A    A  A AAA  A  A   A A   @
@AAA  A A    A  AAA A  AAA        A P@
@ A A  AAA  AAA  A A    A AA   AA AA @
@  A A  AAA    A A  AAA    AAA  A    @
@   AAA  A      AAA  A    AAAA       @
@ P  A       A  A AAA    A  A      P @
@A  AAA  A  A  AAA A    AAAA     P   @
@    A A   AAA  A A      A AA   A  P @
@     AAA   A A  AAA      AA   AAA P @
@ A    A     AAA  A  P          A    @
@       P     A         P  P P     P @
@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@
"""

MELTINGPOT_LEGEND = {
    "W": tile(C.WALL),
    "A": tile(C.APPLE, "apple_cell"),
    "P": tile(C.FLOOR, "spawn"),
    "Q": tile(C.FLOOR, "inside_spawn"),
    "I": tile(C.FLOOR),  # partnership role tile: no effect for default roles
    " ": tile(C.FLOOR),
}
APPLES_REQUIRED = (("apple_cell", "apple cells: nothing could grow"),)
SSD_LEGEND = {"@": tile(C.WALL), "A": tile(C.APPLE, "apple_cell"), "P": tile(C.FLOOR, "spawn"), " ": tile(C.FLOOR)}

# Regrowth probabilities indexed by min(neighbouring apples, 3) and zap settings
# (cooldown, length, radius, respawn delay) of the Melting Pot presets: each config's
# REGROWTH_PROBABILITIES and Zapper cooldownTime, beamLength, beamRadius, framesTillRespawn.
PRESETS = {
    "open": dict(map=OPEN_MAP, regrowth=(0.0, 0.0025, 0.005, 0.025), zap=(2, 3, 1, 4)),
    "closed": dict(map=CLOSED_MAP, regrowth=(0.0, 0.001, 0.005, 0.025), zap=(1, 4, 1, 100)),
    "partnership": dict(map=PARTNERSHIP_MAP, regrowth=(0.0, 0.001, 0.005, 0.025), zap=(1, 4, 1, 100)),
}
SSD_REGROWTH = (0.0, 0.005, 0.02, 0.05)  # SSD Harvest, indexed by min(n, 3) in the 3x3 square
SSD_BEAM_LENGTH, SSD_BEAM_WIDTH = 5, 3
SSD_FIRE_COST, SSD_HIT_PENALTY = -1.0, -50.0
MELTINGPOT_VIEW = (9, 1, 5)  # 11x11: 9 ahead, 1 behind, 5 each side
SSD_VIEW = (7, 7, 7)  # 15x15 centred


@struct.dataclass
class HarvestParams(GridParams):
    regrowth: jax.Array = param(np.array(PRESETS["open"]["regrowth"], np.float32), 0.0, 1.0,
                                doc="regrowth probability by min(neighbouring apples, 3)")

    def check(self):
        if not isinstance(self.regrowth, jax.core.Tracer) and np.shape(self.regrowth) != (4,):
            raise ValueError(f"HarvestParams.regrowth must have shape (4,), got {np.shape(self.regrowth)}")


class Harvest(GridEnv):
    """Melting Pot Commons Harvest. Static options: ``preset`` ("open", "closed",
    "partnership"), ``num_agents`` (7), ``episode`` ("meltingpot" stochastic ending or
    "fixed"), ``episode_length`` (for "fixed", 1000), ``obs_mode`` ("codes" | "rgb"),
    ``view`` ((ahead, behind, side), default (9, 1, 5)), ``ascii_map`` (a custom map with
    the preset's legend; agents 0 and 1 start on its ``Q`` cells when it has any, everyone
    else, and every respawn, on ``P``)."""

    params_cls = HarvestParams
    action_names = C.MELTINGPOT_ACTION_NAMES[:8]  # Melting Pot's Harvest: no clean action

    def __init__(self, preset: str = "open", num_agents: int = 7, episode: str = "meltingpot",
                 episode_length: int = 1000, obs_mode: str = "codes", view: tuple = MELTINGPOT_VIEW,
                 ascii_map: str | None = None):
        if preset not in PRESETS:
            raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {preset!r}")
        self.preset = preset
        cfg = PRESETS[preset]
        _, length, radius, _ = cfg["zap"]
        grid_map = game_map(f"harvest_{preset}", ascii_map, cfg["map"], MELTINGPOT_LEGEND, APPLES_REQUIRED)
        inside = ("inside_spawn", "inside_spawn") if grid_map.role("inside_spawn").any() else ()
        super().__init__(
            grid_map, num_agents, 8, tuple(view), E.meltingpot_beam(length, radius), episode=episode,
            episode_length=episode_length, obs_mode=obs_mode, first_spawn=inside,
        )
        self.apple_cells = self.map.points("apple_cell")
        self.neighbours = E.neighbour_offsets(4)  # Euclidean distance <= 2: 12 cells

    def make_default_params(self):
        cooldown, _, _, delay = PRESETS[self.preset]["zap"]
        return HarvestParams(regrowth=np.array(PRESETS[self.preset]["regrowth"], np.float32),
                             zap_cooldown=cooldown, respawn_delay=delay)

    def update_world(self, key, state, params):
        return state.replace(cells=regrow_apples(key, state.cells, self.apple_cells, self.neighbours, params.regrowth))


def regrow_apples(key, cells, apple_cells: np.ndarray, neighbours: np.ndarray, regrowth) -> jax.Array:
    """Each empty apple cell becomes an apple with probability
    ``regrowth[min(n, 3)]``, ``n`` = live apples at the ``neighbours`` offsets. One
    uniform draw per apple cell (``apple_cells`` is the static ``(K, 2)`` list)."""
    live = cells == C.APPLE
    n = E.count_neighbours_at(live, neighbours, apple_cells)
    p = jnp.asarray(regrowth)[jnp.minimum(n, 3)]
    rows, cols = apple_cells[:, 0], apple_cells[:, 1]
    grow = (cells[rows, cols] == C.APPLE_CELL) & (jax.random.uniform(key, (len(apple_cells),)) < p)
    return cells.at[rows, cols].set(jnp.where(grow, jnp.uint8(C.APPLE), cells[rows, cols]))


class HarvestSSD(SSDFines, GridEnv):
    """The original SSD Harvest (Hughes et al. 2018; Jaques et al. 2019): 5 players,
    fixed 1000 steps, 15x15 view, SSD actions, fines instead of removal; ``ascii_map``: a
    custom map with the SSD legend."""

    params_cls = HarvestParams
    spawn_under_agents = False  # the original code never spawns an apple under an agent
    action_table = C.SSD_ACTIONS[:8]
    action_names = C.SSD_ACTION_NAMES[:8]

    def __init__(self, num_agents: int = 5, episode_length: int = 1000, obs_mode: str = "codes",
                 view: tuple = SSD_VIEW, ascii_map: str | None = None):
        super().__init__(
            game_map("harvest_ssd", ascii_map, SSD_MAP, SSD_LEGEND, APPLES_REQUIRED), num_agents, 8, tuple(view),
            E.ssd_beam(SSD_BEAM_LENGTH, SSD_BEAM_WIDTH), episode="fixed", episode_length=episode_length,
            obs_mode=obs_mode,
        )
        self.noop_action = C.SSD_NOOP
        self.apple_cells = self.map.points("apple_cell")
        self.neighbours = E.neighbour_offsets(1, square=True)  # the 3x3 square

    def make_default_params(self):
        return HarvestParams(regrowth=np.array(SSD_REGROWTH, np.float32), zap_cooldown=0,
                             zap_cost=SSD_FIRE_COST, zap_penalty=SSD_HIT_PENALTY)

    def update_world(self, key, state, params):
        return state.replace(cells=regrow_apples(key, state.cells, self.apple_cells, self.neighbours, params.regrowth))
