"""*In the Matrix* games (Melting Pot 2.0): ``prisoners_dilemma_in_the_matrix``,
``stag_hunt_in_the_matrix``, ``chicken_in_the_matrix``, each with ``variant="arena"``
(8 players) or ``variant="repeated"`` (2 players).

A 2x2 matrix game played through a gridworld: players collect resources of two kinds
(the two pure strategies), and an interaction beam pairs two players, who are paid by
the matrix at the *mixtures* their inventories hold. Sources: the configs
``meltingpot/configs/substrates/{prisoners_dilemma,stag_hunt,chicken}_in_the_matrix__{arena,
repeated}.py`` and the components in ``meltingpot/lua/levels/the_matrix/components.lua``
(``Resource``, ``Destroyable``, ``TheMatrix``, ``GameInteractionZapper``,
``SpawnResourcesWhenAllPlayersZapped``, ``InventoryObserver``, ``Taste``,
``InteractionTaste``), and ``Avatar.disallowMovementUntil`` in
``meltingpot/lua/modules/avatar_library.lua``. Rules, each a function below:

- **Resources** (``Resource``). Map cells ``1`` / ``2`` hold a resource of class 1 / 2;
  each ``a`` cell holds class 1 or 2, drawn uniformly per cell at every reset (the
  ``"choice"`` entry of ``CHAR_PREFAB_MAP``). Entering a cell with a visible resource
  collects it: the player's inventory of that class grows by 1 and the cell empties
  (:meth:`InTheMatrix.eat`, :func:`collect`). Collecting pays ``collect_reward`` = 0
  (``Taste``: ``mostTastyResourceClass`` -1, so every class pays the default 0).
- **Regrowth** (``Resource``: ``regenerationRate`` 0.04 arena / 0.02 repeated,
  ``regenerationDelay`` 10). An empty resource cell is eligible ``regen_delay`` steps
  after it was emptied; from then on it regrows with probability ``regen_rate`` per step,
  never under a player (:func:`regrow`).
- **Refill** (repeated only, ``SpawnResourcesWhenAllPlayersZapped``): in a step in which
  no player is on the map, every empty resource cell regrows (:func:`refill`).
- **Inventories** (``TheMatrix``: ``zeroInitialInventory`` false) start at 1 of each
  class (``initial_inventory``) and are reset to that after each interaction. A player
  is *ready* once it has collected a resource since its last reset
  (``playerCollectedAtLeastOneResource``).
- **The interaction beam** (``GameInteractionZapper``: ``cooldownTime`` 2, ``beamLength``
  3, ``beamRadius`` 1): action 7 fires the Melting Pot footprint (docs/gridworlds.md,
  "Beams") with the engine's cooldown. A ray stops at a wall (not reached), at the first
  player (hit) and at a visible resource (hit; ``Destroyable``): a resource loses one
  health per hit (``initialHealth`` 3) and is destroyed at 0 (the cell empties, health
  back to 3), and a ray passes through a resource that its hit destroys
  (:func:`trace_interaction_beams`).
- **Pairing** (``GameInteractionZapper.onHit``, ``_preventExtraSimultaneousInteraction``):
  each shooter's beam acts on the first player it hits (nearest ahead; on a tie the
  centre ray, then left, then right); shooters are taken in a uniformly random order,
  and a player takes part in at most one pairing per step (a pairing marks both
  players even when it then has no effect). A marked pair interacts only when the
  target is not already frozen in an interaction and, with ``require_ready``
  (``disallowUnreadyInteractions`` true in every config), both players are ready
  (:func:`pair_shooters`).
- **Payoff** (``GameInteractionZapper._resolve``): the shooter is the row player and the
  target the column player; with mixtures ``p = inv_row / sum(inv_row)`` and
  ``q = inv_col / sum(inv_col)`` the row player gets ``p @ row_payoff @ q`` and the column
  player ``p @ col_payoff @ q`` (:func:`interaction_payoffs`).
- **After an interaction** (``freezeOnInteraction`` 16; ``reset_winner_inventory``,
  ``reset_loser_inventory``, ``losingPlayerDies``, ``winningPlayerDies`` all true): both
  players freeze (no move, turn or beam; the beam cooldown pauses) and are shown on the
  map; ``freeze_steps`` steps after the interaction step both receive their payoffs,
  their inventories are reset and both are removed for ``respawn_delay`` steps
  (``framesTillRespawn`` 50 arena / 5 repeated), then respawn on a random free spawn
  point (:func:`apply_effects`). The row player's inventory is reset at once when its
  payoff is at least the column player's (the Lua resets the winner's inventory
  immediately in that branch; ties go to the row player, ``randomTieBreaking`` false).
- **Episode end** (``StochasticIntervalEpisodeEnding``, ``minimumFramesPerEpisode`` 1000,
  ``intervalLength`` 100, ``probabilityTerminationPerInterval``; ``maxEpisodeLengthFrames``):
  the engine's stochastic ending; ``end_prob`` and the cap per game in :data:`GAMES`.
- **Actions** (``ACTION_SET``): 0 no-op, 1 forward, 2 backward, 3 step left, 4 step right,
  5 turn left, 6 turn right, 7 interact.
- **Observation**: the engine's egocentric window, 11x11 in the arena (``view`` forward 9,
  backward 1, left / right 5) and 5x5 in the repeated game (forward 3, backward 1, left /
  right 2); ``ready_to_zap``; and ``inventory`` ``(N, K) float32`` (``INVENTORY``,
  ``InventoryObserver``).
- **Info**: ``resources_collected``, ``interactions`` (1 on the interaction step for
  both players), ``zaps_fired``, ``times_zapped`` (interaction beams that hit the player),
  ``resources_destroyed`` (resources the player's beam destroyed), ``interaction_payoff``
  (the payoff this step's interaction will pay ``freeze_steps`` later), and
  ``interaction_inventories`` ``(N, 2, K)``: own and partner inventory at this step's
  interaction, -1 when none (Melting Pot's debug observation ``INTERACTION_INVENTORIES``,
  which the configs say policies must not use, so it is not in the observation).

Scripted bots (``scripted_bots``; :func:`socialjax.agents.bots.in_the_matrix.matrix_bot`):
``collect_cooperate`` / ``collect_defect`` (aliases per game: ``collect_stag`` /
``collect_hare``, ``collect_dove`` / ``collect_hawk``) collect their resource until they
hold one more of it than of the other, then seek a player in view and interact: the goal
of Melting Pot's ``Specialist`` puppeteer (``meltingpot/utils/puppeteers/in_the_matrix.py``),
which steers trained policies there; ours are scripted.

Departures (ours): Melting Pot observes RGB, where each avatar carries a marker that
shows whether it is ready and, during a freeze, its payoff's colour band
(``ReadyToInteractMarker``); the code observation does not show other players'
readiness. ``READY_TO_SHOOT`` is 1 - timer / cooldown in Melting Pot (0, 0.5, 1), here the
engine's 0/1 flag. Several beams hitting one resource in a step all count; whether a ray
passes through a resource is decided from its health at the start of the step; the
nearest-first rule above replaces the order in which Lab2D's beam meets players.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from socialjax.core.params import brief, param
from socialjax.core.spaces import Box, Dict
from socialjax.envs.grid import constants as C
from socialjax.envs.grid import engine as E
from socialjax.envs.grid import render as R
from socialjax.envs.grid.base import GridEnv, GridParams, GridState
from socialjax.envs.grid.maps import parse_map, tile
from socialjax.envs.melting_pot_maps import ARENA_MAP, REPEATED_MAP, STAG_HUNT_ARENA_MAP, STAG_HUNT_REPEATED_MAP

# -- cell codes (block "in_the_matrix"); colours: the configs' RESOURCE1_COLOR, RESOURCE2_COLOR
BLOCK = "in_the_matrix"
RESOURCE_1 = R.define_object(BLOCK, 40, "resource 1 (cooperate / stag / dove)", (30, 225, 185))
RESOURCE_2 = R.define_object(BLOCK, 41, "resource 2 (defect / hare / hawk)", (225, 30, 70))
NUM_RESOURCES = 2  # NUM_RESOURCES in every config: the matrices are 2x2
RESOURCE_CODES = (RESOURCE_1, RESOURCE_2)

# -- maps: ASCII_MAP of each config (socialjax/envs/melting_pot_maps.py)
LEGEND = {
    "W": tile(C.WALL),
    "1": tile(RESOURCE_1, "resource"),
    "2": tile(RESOURCE_2, "resource"),
    "a": tile(RESOURCE_1, "resource", "choice"),  # class drawn at reset
    "n": tile(C.FLOOR, "spawn"),
    "P": tile(C.FLOOR, "spawn"),
    " ": tile(C.FLOOR),
}

# -- the games: TheMatrix ``matrix`` (row player) and ``columnPlayerMatrix``; resource 1 is
# the first row / column. Episode ending: probabilityTerminationPerInterval and
# maxEpisodeLengthFrames per variant.
GAMES = {
    "prisoners_dilemma": dict(  # C, D
        row=((3.0, 0.0), (5.0, 1.0)), col=((3.0, 5.0), (0.0, 1.0)),
        end_prob={"arena": 0.15, "repeated": 0.1}, max_steps={"arena": 5000, "repeated": 5000},
        maps={"arena": ARENA_MAP, "repeated": REPEATED_MAP},
    ),
    "stag_hunt": dict(  # stag, hare
        row=((4.0, 0.0), (2.0, 2.0)), col=((4.0, 2.0), (0.0, 2.0)),
        end_prob={"arena": 0.1, "repeated": 0.1}, max_steps={"arena": 5000, "repeated": 2500},
        maps={"arena": STAG_HUNT_ARENA_MAP, "repeated": STAG_HUNT_REPEATED_MAP},
    ),
    "chicken": dict(  # dove, hawk
        row=((3.0, 2.0), (5.0, 0.0)), col=((3.0, 5.0), (2.0, 0.0)),
        end_prob={"arena": 0.2, "repeated": 0.1}, max_steps={"arena": 5000, "repeated": 5000},
        maps={"arena": ARENA_MAP, "repeated": REPEATED_MAP},
    ),
}
# per variant: default_player_roles, Avatar view (forward, backward, left/right),
# Resource regenerationRate, GameInteractionZapper framesTillRespawn, and whether the
# scene has SpawnResourcesWhenAllPlayersZapped
VARIANTS = {
    "arena": dict(num_agents=8, view=(9, 1, 5), regen_rate=0.04, respawn_delay=50, refill=False),
    "repeated": dict(num_agents=2, view=(3, 1, 2), regen_rate=0.02, respawn_delay=5, refill=True),
}
# the strategies the two resources stand for (the configs' comments), for the bots' names
BOT_NAMES = {"prisoners_dilemma": ("cooperate", "defect"), "stag_hunt": ("stag", "hare"),
             "chicken": ("dove", "hawk")}
#: per game, scripted bot name -> the resource it collects before it interacts (0: the
#: first, 1: the second); ``collect_cooperate`` / ``collect_defect`` in every game
BOT_RESOURCES = {game: {**{f"collect_{name}": k for k, name in enumerate(names)}, "collect_cooperate": 0,
                        "collect_defect": 1} for game, names in BOT_NAMES.items()}
REGEN_DELAY = 10  # Resource: regenerationDelay
RESOURCE_HEALTH = 3  # Destroyable: initialHealth
FREEZE_STEPS = 16  # GameInteractionZapper: freezeOnInteraction
INITIAL_INVENTORY = 1.0  # TheMatrix: zeroInitialInventory false -> 1 of each
ZAP_COOLDOWN, BEAM_LENGTH, BEAM_RADIUS = 2, 3, 1  # GameInteractionZapper
INTERACT = 7  # ACTION_SET index of INTERACT

# Melting Pot ACTION_SET of the in-the-matrix configs: the engine table without the
# engine's zap (the interaction beam is this module's)
ACTIONS = np.array(C.MELTINGPOT_ACTIONS[:8])
ACTIONS[INTERACT] = [C.NO_MOVE, 0, C.NO_BEAM]
ACTION_NAMES = C.MELTINGPOT_ACTION_NAMES[:7] + ("interact",)


@struct.dataclass
class MatrixParams(GridParams):
    row_payoff: jax.Array = param(np.array(GAMES["prisoners_dilemma"]["row"], np.float32),
                                  doc="(K, K) payoff of the row player (the shooter), row: its strategy")
    col_payoff: jax.Array = param(np.array(GAMES["prisoners_dilemma"]["col"], np.float32),
                                  doc="(K, K) payoff of the column player (the target), row: the shooter's strategy")
    regen_rate: float = param(0.04, 0.0, 1.0, doc="probability per step that an eligible empty resource regrows")
    regen_delay: int = param(REGEN_DELAY, 0, None, doc="steps after collection before a resource may regrow")
    resource_health: int = param(RESOURCE_HEALTH, 1, None, doc="beam hits that destroy a resource")
    freeze_steps: int = param(FREEZE_STEPS, 0, None,
                              doc="steps from an interaction to its payoffs, inventory reset and removal")
    initial_inventory: float = param(INITIAL_INVENTORY, 0.0, None, doc="inventory of each class after a reset")
    collect_reward: float = param(0.0, doc="reward for collecting a resource (Taste: 0)")
    require_ready: bool = param(True, doc="interact only when both players collected since their last reset")
    zap_cooldown: int = param(ZAP_COOLDOWN, 0, None, doc="steps between interaction beams")
    respawn_delay: int = param(50, 1, None, doc="steps both players stay removed after an interaction")

    def check(self):
        for name in ("row_payoff", "col_payoff"):
            value = getattr(self, name)
            if not isinstance(value, jax.core.Tracer) and np.shape(value)[-2:] != (NUM_RESOURCES, NUM_RESOURCES):
                raise ValueError(f"MatrixParams.{name} must have shape ({NUM_RESOURCES}, {NUM_RESOURCES}), "
                                 f"got {np.shape(value)}")
        for name in ("regen_delay", "resource_health", "freeze_steps"):
            value = getattr(self, name)
            if not isinstance(value, jax.core.Tracer) and np.any(np.asarray(value) % 1 != 0):
                raise ValueError(f"MatrixParams.{name}={brief(value)} must be a whole number")


@struct.dataclass
class MatrixState(GridState):
    inventory: jax.Array  # (N, K) float32
    ready: jax.Array  # (N,) bool: collected a resource since the last reset
    freeze: jax.Array  # (N,) int32 steps until the pending interaction's effects; -1: none
    pending: jax.Array  # (N,) float32 payoff delivered when the effects apply
    res_class: jax.Array  # (H, W) int32 resource class of each cell (1..K), 0: no resource cell
    res_wait: jax.Array  # (H, W) int32 steps since the cell's resource was taken
    res_health: jax.Array  # (H, W) int32 beam hits left before the resource is destroyed


class InTheMatrix(GridEnv):
    """Melting Pot's *in the Matrix* games. Static options: ``game``
    ("prisoners_dilemma", "stag_hunt", "chicken"), ``variant`` ("arena": 8 players,
    11x11 view; "repeated": 2 players, 5x5 view), ``num_agents`` (the variant's by
    default), ``episode`` ("meltingpot" | "fixed"), ``episode_length`` (for "fixed"),
    ``obs_mode`` ("codes" | "rgb"), ``view``. Params: :class:`MatrixParams` (the two
    payoff matrices are params, so games can be swept with ``vmap``)."""

    params_cls = MatrixParams
    action_table = ACTIONS
    action_names = ACTION_NAMES
    event_keys = ("resources_collected", "interactions", "zaps_fired", "times_zapped", "resources_destroyed")

    def __init__(self, game: str = "prisoners_dilemma", variant: str = "arena", num_agents: int | None = None,
                 episode: str = "meltingpot", episode_length: int = 1000, obs_mode: str = "codes",
                 view: tuple | None = None):
        if game not in GAMES:
            raise ValueError(f"game must be one of {sorted(GAMES)}, got {game!r}")
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {sorted(VARIANTS)}, got {variant!r}")
        self.game, self.variant = game, variant
        cfg, var = GAMES[game], VARIANTS[variant]
        num_agents = var["num_agents"] if num_agents is None else num_agents
        if not isinstance(num_agents, int) or num_agents < 2:
            raise ValueError(f"num_agents must be an int >= 2 (interactions pair players), got {num_agents!r}")
        super().__init__(
            parse_map(f"{game}_in_the_matrix__{variant}", cfg["maps"][variant], LEGEND), num_agents, len(ACTIONS),
            tuple(var["view"] if view is None else view), E.meltingpot_beam(BEAM_LENGTH, BEAM_RADIUS),
            episode=episode, episode_length=episode_length, max_steps=cfg["max_steps"][variant], obs_mode=obs_mode,
        )
        self.refill_when_all_removed = var["refill"]
        self.choice_cells = self.map.role("choice")
        self.resource_cells = self.map.role("resource")
        # ray order for "first player hit": nearest ahead, then centre, left, right
        frame = self.zap_rays.frame  # (R, L, 2) (ahead, right)
        rank = np.arange(self.zap_rays.num_rays)[:, None] + 0 * frame[..., 0]
        self.hit_order = (frame[..., 0] * self.zap_rays.num_rays + rank).astype(np.int32)  # (R, L)

    @property
    def scripted_bots(self) -> tuple[str, ...]:
        """Names of this game's scripted bots (:data:`BOT_RESOURCES`; built by
        :mod:`socialjax.agents.bots.in_the_matrix`)."""
        return tuple(BOT_RESOURCES[self.game])

    def make_default_params(self):
        cfg, var = GAMES[self.game], VARIANTS[self.variant]
        return MatrixParams(row_payoff=np.array(cfg["row"], np.float32), col_payoff=np.array(cfg["col"], np.float32),
                            regen_rate=var["regen_rate"], respawn_delay=var["respawn_delay"],
                            end_prob=cfg["end_prob"][self.variant])

    def inert_params(self):
        why = "the interaction beam pays only through the payoff matrices"
        return {**super().inert_params(), "zap_cost": why, "zap_penalty": why}

    # ------------------------------------------------------------------ state
    def initial_cells(self, key, params):
        cells = jnp.asarray(self.map.cells)
        draw = jax.random.randint(key, cells.shape, 0, NUM_RESOURCES)
        random_class = jnp.asarray(RESOURCE_CODES, cells.dtype)[draw]
        return jnp.where(jnp.asarray(self.choice_cells), random_class, cells)

    def initial_state(self, key, params):
        state = super().initial_state(key, params)
        n, shape = self.num_agents, self.map.shape
        res_class = jnp.where(jnp.asarray(self.resource_cells), state.cells.astype(jnp.int32) - RESOURCE_1 + 1, 0)
        return MatrixState(
            **vars(state),
            inventory=jnp.full((n, NUM_RESOURCES), params.initial_inventory, jnp.float32),
            ready=jnp.zeros(n, bool),
            freeze=jnp.full(n, -1, jnp.int32),
            pending=jnp.zeros(n, jnp.float32),
            res_class=res_class,
            res_wait=jnp.zeros(shape, jnp.int32),
            res_health=jnp.full(shape, params.resource_health, jnp.int32),
        )

    # ------------------------------------------------------------------ hooks
    def eat(self, state, moved, params):
        cells, inventory, got = collect(state.cells, state.pos, moved, state.inventory)
        rows = jnp.where(got, state.pos[:, 0], cells.shape[0])
        res_wait = state.res_wait.at[rows, state.pos[:, 1]].set(0, mode="drop")
        state = state.replace(cells=cells, inventory=inventory, ready=state.ready | got, res_wait=res_wait)
        return state, got.astype(jnp.int32)

    def transition(self, key, state, actions, params):
        k_base, k_order, k_regen = jax.random.split(key, 3)
        n = self.num_agents
        present = state.removed == 0
        frozen = state.freeze >= 0
        # a frozen player neither moves, turns nor fires (Avatar.disallowMovementUntil)
        actions = jnp.where(frozen, self.noop_action, actions)
        new, _, done, info = super().transition(k_base, state, actions, params)
        collected = info["apples_eaten"]

        # the interaction beam, fired from this step's positions by players on the map
        # before this step (players respawned in this step are not there yet)
        shooting = present & ~frozen & (actions == INTERACT) & (state.zap_cooldown == 0)
        agents = E.agent_grid(self.map.shape, new.pos, present)
        target, hit_cells, destroyed_by = trace_interaction_beams(
            self.zap_rays, self.hit_order, new.pos, new.heading, shooting, jnp.asarray(self.walls), agents,
            new.cells, new.res_health,
        )
        times_zapped = jnp.sum((target[:, None] == jnp.arange(n)[None, :]) & (target[:, None] >= 0), axis=0)
        cells, res_health, res_wait = destroy_resources(new.cells, new.res_health, new.res_wait, hit_cells,
                                                        params.resource_health)
        zap_cd = jnp.where(shooting, params.zap_cooldown, jnp.maximum(state.zap_cooldown - 1, 0))
        zap_cd = jnp.where(present & ~frozen, zap_cd, state.zap_cooldown)  # paused while frozen or removed

        # pairing and payoffs
        ready = new.ready
        partner, is_row = pair_shooters(k_order, target, frozen, ready, params.require_ready)
        interacting = partner >= 0
        safe = jnp.maximum(partner, 0)
        row_inv = jnp.where(is_row[:, None], new.inventory, new.inventory[safe])
        col_inv = jnp.where(is_row[:, None], new.inventory[safe], new.inventory)
        r_row, r_col = interaction_payoffs(row_inv, col_inv, params.row_payoff, params.col_payoff)
        payoff = jnp.where(is_row, r_row, r_col)
        inter_inv = jnp.where(interacting[:, None, None], jnp.stack([new.inventory, new.inventory[safe]], 1), -1.0)
        # countdown of earlier interactions, then this step's interactions start theirs
        freeze = jnp.where(frozen, state.freeze - 1, -1)
        freeze = jnp.where(interacting, params.freeze_steps, freeze)
        pending = jnp.where(interacting, payoff, new.pending)
        # the row player's inventory is reset at once when it does at least as well
        reset_now = interacting & is_row & (r_row >= r_col)
        inventory = jnp.where(reset_now[:, None], params.initial_inventory, new.inventory)
        ready = ready & ~reset_now

        # effects that are due: payoffs, inventory reset, removal of both players
        due = freeze == 0
        reward, inventory, ready, removed, pending, freeze = apply_effects(
            due, pending, inventory, ready, new.removed, freeze, params)
        reward = reward + params.collect_reward * collected.astype(jnp.float32)

        # the world: regrowth, and the repeated game's refill when nobody is on the map
        on_map = E.agent_grid(self.map.shape, new.pos, removed == 0) >= 0
        cells, res_wait = regrow(k_regen, cells, new.res_class, res_wait, on_map, params.regen_rate,
                                 params.regen_delay)
        if self.refill_when_all_removed:
            nobody = jnp.all(state.removed > 0) & jnp.all(new.removed > 0)
            cells = refill(cells, new.res_class, nobody)

        new = new.replace(cells=cells, res_health=res_health, res_wait=res_wait, zap_cooldown=zap_cd,
                          inventory=inventory, ready=ready, freeze=freeze, pending=pending, removed=removed)
        info = {
            **info,
            "apples_eaten": jnp.zeros(n, jnp.int32),
            "resources_collected": collected,
            "interactions": interacting.astype(jnp.int32),
            "zaps_fired": shooting.astype(jnp.int32),
            "times_zapped": times_zapped.astype(jnp.int32),
            "resources_destroyed": destroyed_by,
            "interaction_inventories": inter_inv,
            "interaction_payoff": jnp.where(interacting, payoff, 0.0).astype(jnp.float32),
            "removed": removed > 0,
        }
        return new, reward, done, info

    # ------------------------------------------------------------------ observation
    def get_obs(self, state, params):
        out = super().get_obs(state, params)
        out["inventory"] = state.inventory
        return out

    def observation_space(self, params=None):
        spaces = dict(super().observation_space(params).spaces)
        spaces["inventory"] = Box(0.0, float(self.max_steps + 1000), (NUM_RESOURCES,), jnp.float32)
        return Dict(spaces)


# ---------------------------------------------------------------------------- rules
def collect(cells, pos, moved, inventory):
    """Players that moved onto a visible resource collect it (``Resource.onEnter``):
    inventory of its class + 1, the cell empties. ``cells (H, W) uint8``, ``pos (N, 2)``,
    ``moved (N,) bool``, ``inventory (N, K)``. Returns ``(cells, inventory, got (N,) bool)``."""
    here = cells[pos[:, 0], pos[:, 1]].astype(jnp.int32)
    k = here - RESOURCE_1
    got = moved & (k >= 0) & (k < NUM_RESOURCES)
    onehot = (jnp.arange(NUM_RESOURCES)[None, :] == k[:, None]) & got[:, None]
    rows = jnp.where(got, pos[:, 0], cells.shape[0])
    cells = cells.at[rows, pos[:, 1]].set(jnp.uint8(C.FLOOR), mode="drop")
    return cells, inventory + onehot.astype(inventory.dtype), got


def interaction_payoffs(row_inv, col_inv, row_payoff, col_payoff):
    """``GameInteractionZapper._resolve``: mixtures ``p = row_inv / sum``, ``q = col_inv /
    sum`` (an all-zero inventory stays zero); the row player gets ``p @ row_payoff @ q``,
    the column player ``p @ col_payoff @ q``. ``row_inv``, ``col_inv`` ``(..., K)``.
    Returns ``(r_row, r_col)`` of shape ``(...)``."""
    def mix(inv):
        total = inv.sum(-1, keepdims=True)
        return jnp.where(total > 0, inv / jnp.where(total > 0, total, 1.0), inv)

    p, q = mix(row_inv), mix(col_inv)
    r_row = jnp.einsum("...i,...ij,...j->...", p, jnp.broadcast_to(row_payoff, p.shape[:-1] + row_payoff.shape[-2:]), q)
    r_col = jnp.einsum("...i,...ij,...j->...", p, jnp.broadcast_to(col_payoff, p.shape[:-1] + col_payoff.shape[-2:]), q)
    return r_row, r_col


def trace_interaction_beams(rays, hit_order, pos, heading, shooting, walls, agents, cells, res_health):
    """The interaction beam of every shooter (``GameInteractionZapper``, ``Destroyable``).
    A ray stops at a wall (not reached), at the first player and at the first visible
    resource whose health exceeds 1 (both reached); a resource with health 1 is destroyed
    by the hit and the ray goes on. Returns ``target (N,) int32`` (the first player each
    shooter's beam hits, by ``hit_order (R, L)``, -1: none), ``hit_cells (N, R, L, 3)``
    (row, col, 1 where a resource is hit) and ``destroyed_by (N,) int32`` (resources each
    shooter's beam finished off, judged from the start-of-step health)."""
    n = pos.shape[0]
    is_res = (cells >= RESOURCE_1) & (cells < RESOURCE_1 + NUM_RESOURCES)
    stopper = jnp.where(agents >= 0, agents, jnp.where(is_res & (res_health > 1), n, -1))
    ray_cells, reached = E.trace_beams(rays, pos, heading, shooting, walls, stopper)
    who = jnp.where(reached, E.gather(agents, ray_cells, -1), -1)  # (N, R, L)
    key = jnp.where(who >= 0, jnp.asarray(hit_order)[None], jnp.iinfo(jnp.int32).max)
    flat = key.reshape(n, -1)
    best = jnp.argmin(flat, axis=1)
    target = jnp.where(jnp.min(flat, axis=1) < jnp.iinfo(jnp.int32).max, who.reshape(n, -1)[jnp.arange(n), best], -1)
    res_hit = reached & E.gather(is_res, ray_cells, False)
    destroyed_by = jnp.sum(res_hit & (E.gather(res_health, ray_cells, 0) == 1), axis=(1, 2)).astype(jnp.int32)
    return target, jnp.concatenate([ray_cells, res_hit[..., None].astype(ray_cells.dtype)], -1), destroyed_by


def destroy_resources(cells, res_health, res_wait, hit_cells, full_health):
    """Each beam hit on a visible resource takes one health; at 0 the resource is gone
    (the cell empties, its regrowth wait restarts) and its health is back to
    ``full_health`` (``Destroyable.onHit``). ``hit_cells (N, R, L, 3)`` from
    :func:`trace_interaction_beams`. Returns ``(cells, res_health, res_wait)``."""
    h = cells.shape[0]
    rows = jnp.where(hit_cells[..., 2] > 0, hit_cells[..., 0], h).reshape(-1)
    hits = jnp.zeros(cells.shape, jnp.int32).at[rows, hit_cells[..., 1].reshape(-1)].add(1, mode="drop")
    health = res_health - hits
    gone = (hits > 0) & (health <= 0)
    cells = jnp.where(gone, jnp.uint8(C.FLOOR), cells)
    return cells, jnp.where(gone, full_health, health), jnp.where(gone, 0, res_wait)


def pair_shooters(key, target, frozen, ready, require_ready):
    """Shooters in a uniformly random order; each pairs with its ``target`` unless either
    was already paired this step (``_preventExtraSimultaneousInteraction``: the pairing
    marks both). A marked pair interacts when the target is not frozen and, with
    ``require_ready``, both are ready. ``target (N,)`` (-1: none), ``frozen``, ``ready``
    ``(N,) bool``. Returns ``(partner (N,) int32`` (-1: no interaction), ``is_row (N,)
    bool)`` (the shooter is the row player)."""
    n = target.shape[0]
    order = E.random_order(key, n)
    marked = jnp.zeros(n, bool)
    partner = jnp.full(n, -1, jnp.int32)
    is_row = jnp.zeros(n, bool)
    ids = jnp.arange(n)
    for k in range(n):  # n is static and small: unrolled
        i = order[k]
        j = target[i]
        js = jnp.maximum(j, 0)
        pair = (j >= 0) & ~marked[i] & ~marked[js]
        marked = marked | (pair & ((ids == i) | (ids == js)))
        ok = pair & ~frozen[js] & (~require_ready | (ready[i] & ready[js]))
        partner = jnp.where(ok & (ids == i), js, jnp.where(ok & (ids == js), i, partner))
        is_row = is_row | (ok & (ids == i))
    return partner, is_row


def apply_effects(due, pending, inventory, ready, removed, freeze, params):
    """The scheduled effects of an interaction (``applyScheduledEffects``): the payoff is
    paid, the inventory reset (``resetInventory``) and the player removed for
    ``respawn_delay`` steps (``_avatarDies``). ``due (N,) bool``. Returns ``(reward,
    inventory, ready, removed, pending, freeze)``."""
    reward = jnp.where(due, pending, 0.0).astype(jnp.float32)
    inventory = jnp.where(due[:, None], params.initial_inventory, inventory).astype(inventory.dtype)
    ready = ready & ~due
    removed = jnp.where(due, params.respawn_delay, removed).astype(removed.dtype)
    return reward, inventory, ready, removed, jnp.where(due, 0.0, pending), jnp.where(due, -1, freeze)


def regrow(key, cells, res_class, res_wait, occupied, rate, delay):
    """``Resource`` regrowth: an empty resource cell that has waited at least ``delay``
    steps regrows with probability ``rate`` unless a player stands on it; the wait of
    the cells still empty grows by one. Returns ``(cells, res_wait)``."""
    empty = (res_class > 0) & (cells == C.FLOOR)
    grow = empty & (res_wait >= delay) & ~occupied & (jax.random.uniform(key, cells.shape) < rate)
    cells = jnp.where(grow, (RESOURCE_1 - 1 + res_class).astype(cells.dtype), cells)
    still = empty & ~grow
    return cells, jnp.where(still, res_wait + 1, res_wait)


def refill(cells, res_class, nobody):
    """``SpawnResourcesWhenAllPlayersZapped``: when ``nobody`` (a ``()`` bool) is on the
    map, every empty resource cell regrows."""
    empty = (res_class > 0) & (cells == C.FLOOR)
    return jnp.where(nobody & empty, (RESOURCE_1 - 1 + res_class).astype(cells.dtype), cells)
