"""Externality Mushrooms (Melting Pot 2.0 ``externality_mushrooms__dense``): ``mushrooms``.

Source: ``meltingpot/configs/substrates/externality_mushrooms.py`` (prefabs, their
component kwargs, avatar, scene), ``externality_mushrooms__dense.py`` (the map and the
player count) and ``meltingpot/lua/levels/externality_mushrooms/components.lua``
(``MushroomEating``, ``MushroomRegrowth``, ``MushroomGrowable``, ``Destroyable``,
``Perishable``), with the Avatar, Zapper and ``GraduatedSanctionsMarking`` of
``meltingpot/lua/modules/avatar_library.lua``, of google-deepmind/meltingpot. An
immediate-feedback social dilemma: some mushrooms pay the eater alone, some everyone,
some only the others.

Rules, each with its source:

- **Map and players.** ``externality_mushrooms__dense.py`` ``ASCII_MAP`` (14 x 23; the
  fence characters are walls): an 11 x 21 interior whose 221 empty cells are spawn
  points and potential mushroom cells (``" "``: ``spawn_point``,
  ``potential_mushroom``) and 10 starting mushrooms (3 red ``R``, 3 green ``G``, 3 blue
  ``B``, 1 orange ``O``), whose cells become potential once they are empty. 5 players (``default_player_roles``); static
  ``num_agents`` (2 .. 40). The base config defines no map of its own (only ``__dense``
  is a substrate), so ``map="dense"`` is the only map. Mushrooms lie on
  ``lowerPhysical`` and players on ``upperPhysical``: players walk over them
  (:meth:`Mushrooms.walkable`: anything but walls).
- **Kinds** (``MushroomEating``; Melting Pot's state names): red
  ``fullInternalityZeroExternality`` (:data:`RED`), green
  ``halfInternalityHalfExternality`` (:data:`GREEN`), blue
  ``zeroInternalityFullExternality`` (:data:`BLUE`), orange
  ``negativeInternalityNegativeExternality`` (:data:`ORANGE`).
- **Eating** (``MushroomEating:onEnter``, ``_rewardEveryone``; ``totalReward`` 1, 2, 3,
  -1): entering a cell with a mushroom eats it. Red pays the eater ``reward_red`` (1);
  green pays every player ``reward_green / N`` (2/N, the eater included); blue pays each
  *other* player ``reward_blue / (N - 1)`` (3/(N-1)), the eater nothing; orange pays
  every player ``reward_orange / N`` (-1/N). N counts every player, but a player that is
  removed (off the map) at the start of the step gets nothing (``Avatar:addReward`` with
  ``skipWaitStateRewards``, default true: no reward in the wait state), so the shares
  then add up to less than the total (:func:`mushroom_rewards`).
- **Digestion** (``digestionTimes`` 0, 10, 15, 15; ``Avatar:disallowMovementUntil`` and
  ``Avatar:_handleTimedFreeze``): eating a mushroom with digestion time ``T > 0`` sets
  the eater's freeze counter to ``T``. Melting Pot counts the counter down at the start
  of each frame (``Avatar:update`` runs before the move updater) and lets the player move
  once the old counter was 1, so a player that eats in step ``s`` ignores its move and
  turn actions in steps ``s + 1 .. s + T - 1`` (``T - 1`` steps) and moves again in step
  ``s + T``. The freeze stops movement and turning only: a digesting player may still
  zap (the Zapper does not ask ``isMovementAllowed``). Here ``frozen`` holds the steps
  left to ignore (``T - 1`` after eating) (:func:`freeze_after_eating`).
- **Spores** (``numSporesReleasedWhenEaten`` 3, 3, 3, 1; ``MushroomRegrowth``
  ``mushroomsToProbabilities``, ``minPotentialMushrooms`` 1): eating releases spores, for
  each spore and each kind in turn a draw: with probability ``p[eaten, kind]`` a mushroom
  of that kind appears on a uniformly random potential cell, unless a player stands
  there (then nothing grows). ``p``: after red, red 0.25; after green, red 0.25 and green
  0.4; after blue, red 0.25, green 0.4, blue 0.6; after orange, orange 1.0 (every other
  entry 0) (params ``regrow_red``, ``regrow_green``, ``regrow_blue``, ``regrow_orange``,
  each in its column of the table). Nothing grows while fewer than ``min_potential``
  cells are potential. The potential cells are the cells that were empty at the start of
  the step (Melting Pot registers a cell as potential in an updater, one frame late), so
  a spore may land on a mushroom that another spore grew in the same step and replace it
  (:func:`release_spores`).
- **Orange destroys red** (``destroyOnEating``: ``typeToDestroy``
  ``fullInternalityZeroExternality``, ``percentToDestroy`` 0.25;
  ``getGroupShuffledWithProbability``): eating an orange mushroom then removes each red
  mushroom on the map independently with probability ``orange_destroy`` (0.25).
  Eaters are processed one at a time in a uniformly random order (Melting Pot: the
  avatars' update order), each seeing the cells the earlier ones left.
- **Perishing** (``Perishable`` ``delayPerState``: red 200, green 100, blue 75, orange
  1e7): a mushroom disappears ``perish_*`` steps after it appeared: one present at reset
  or grown in step ``s`` is gone after step ``s + delay`` (it can be eaten up to that
  step) (:func:`perish`). (The config's docstring says 75, 100, 200 for red, green, blue
  and digestion 0, 5, 10; the kwargs, which run, say otherwise; we follow the kwargs.)
- **Actions** (``ACTION_SET``): 0 no-op, 1 forward, 2 backward, 3 step left, 4 step
  right, 5 turn left, 6 turn right, 7 zap; the engine's movement (docs/gridworlds.md).
- **Zap** (``Zapper``: ``cooldownTime`` 3, ``beamLength`` 3, ``beamRadius`` 1,
  ``removeHitPlayer`` False): the engine's Melting Pot beam and cooldown (one zap every
  4 steps). A beam destroys every mushroom on the cells it reaches and goes on
  (``Destroyable``: ``initialHealth`` 1, "beams pass through a destroyed
  destroyable"), and stops at the first player (:func:`zap_mushrooms`).
- **Graduated sanctions** (``GraduatedSanctionsMarking``: ``hitLogic`` level 1 ``freeze``
  25, level 2 ``remove``, ``recoveryTime`` 50; ``Zapper`` ``framesTillRespawn`` 50): a
  player at level 1 that is hit is frozen (move, turn and zap) for 25 frames and goes to
  level 2: it ignores move and turn in the next 24 steps, and its zap timer is set to
  ``zap_freeze + zap_cooldown`` (it may zap again 29 steps after the hit, as Melting
  Pot's ``Zapper:update`` holds the timer at ``cooldownTime + 1`` while zapping is
  disallowed). A player at level 2 that is hit is removed and goes back to level 1;
  two hits in one step on a level-1 player do both. Melting Pot removes it one frame
  after the hit (``removeAfterDelay(1)``) and respawns it ``framesTillRespawn`` frames
  later: the engine's removal with ``respawn_delay`` 51 (the only difference: the
  engine takes it off the map in the observation of the hit step already). A player
  hit at step ``t`` is back at level 1 from step ``t + recovery`` on (``recovery`` 50):
  ``resetToInitialLevel`` counts the frames on the map from the hit frame, the hit
  frame included, and a new hit starts the count again
  (:func:`socialjax.envs.grid.engine.sanction`, :func:`~socialjax.envs.grid.engine.recover`).
  The level is not observed (Melting Pot shows it as an overlay sprite; the code
  observation has no layer for it). Zapping pays nothing
  (``sourceReward``, ``targetReward``, ``rewardForZapping``, ``penaltyForBeingZapped``
  0).
- **Episode end**: ``StochasticIntervalEpisodeEnding`` (``minimumFramesPerEpisode``
  1000, ``intervalLength`` 100, ``probabilityTerminationPerInterval`` 0.2) and
  ``maxEpisodeLengthFrames`` 5000 (``end_prob`` 0.2); ``episode="fixed"`` gives fixed
  lengths.
- **Observation**: the engine's 11 x 11 window (the Avatar's ``view``: 9 ahead, 1
  behind, 5 each side) and ``ready_to_zap``. Nobody carries anything.

``info`` per step ``(N,)``: ``red_eaten``, ``green_eaten``, ``blue_eaten``,
``orange_eaten`` (mushrooms of each kind this player ate), ``mushrooms_destroyed`` (by its
beam), ``frozen`` (bool: its moves are ignored in the next step), besides the engine's
``apples_eaten`` (all mushrooms eaten), ``zaps_fired``, ``times_zapped``, ``removed``.

Left out: Melting Pot's ``Cumulants`` debug observations (``info`` has the counts).

SocialJax's own ``mushrooms`` (cooperativex/SocialJax,
``socialjax/environments/mushrooms/mushrooms.py``) differs from Melting Pot in: orange pays
every player -0.2 and destroys nothing; digestion 10, 15, 20 steps for red, green, blue; 2
spore draws per mushroom eaten, capped at 5 cells per kind; no perishing; 6 players,
fixed 1000-step episodes, a shared reward by default. We follow Melting Pot.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from socialjax.core.params import param
from socialjax.envs.grid import constants as C
from socialjax.envs.grid import engine as E
from socialjax.envs.grid import render as R
from socialjax.envs.grid.base import END_INTERVAL, MAX_STEPS, MIN_STEPS, GridEnv, GridParams, GridState
from socialjax.envs.grid.maps import parse_map, tile

# -- cell codes (block "mushrooms"; colours: the "w" entry of shapes.MUSHROOM_*_PALETTE)
RED = R.define_object("mushrooms", 24, "red mushroom", (184, 99, 92))
GREEN = R.define_object("mushrooms", 25, "green mushroom", (37, 161, 72))
BLUE = R.define_object("mushrooms", 26, "blue mushroom", (30, 168, 161))
ORANGE = R.define_object("mushrooms", 27, "orange mushroom", (242, 140, 40))
KINDS = (RED, GREEN, BLUE, ORANGE)
KIND_NAMES = ("red", "green", "blue", "orange")
EMPTY = C.FLOOR  # the mushroom's "wait" state is invisible

# -- the map (externality_mushrooms__dense.py ASCII_MAP; fence characters are walls)
DENSE_MAP = """
/_____________________+
'#####################`
!                     |
! R             G     |
!        R            |
!                     |
!           G         |
!   B     O           |
!                  B  |
!        R            |
!                     |
!    B        G       |
!                     |
(---------------------)
"""
LEGEND = {
    **{ch: tile(C.WALL) for ch in "/_+'#`!|(-)<>"},
    " ": tile(EMPTY, "spawn", "potential"),
    "R": tile(RED, "potential"),
    "G": tile(GREEN, "potential"),
    "B": tile(BLUE, "potential"),
    "O": tile(ORANGE, "potential"),
}
MAPS = {"dense": DENSE_MAP}

NUM_AGENTS = 5  # externality_mushrooms__dense.py default_player_roles
VIEW = (9, 1, 5)  # Avatar view: forward 9, backward 1, left / right 5
ZAP_LENGTH, ZAP_RADIUS, ZAP_COOLDOWN = 3, 1, 3  # Zapper beamLength, beamRadius, cooldownTime
ZAP_FREEZE = 25  # GraduatedSanctionsMarking hitLogic[1].freeze
RECOVERY = 50  # GraduatedSanctionsMarking recoveryTime
RESPAWN_DELAY = 51  # removeAfterDelay(1) + Zapper framesTillRespawn 50
SPORES = (3, 3, 3, 1)  # MushroomEating numSporesReleasedWhenEaten (red, green, blue, orange)
# MushroomRegrowth mushroomsToProbabilities: which kinds a spore of the eaten kind (row)
# may grow (column); the probability of column k is the param regrow_<k>
GROWS = np.array([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [0, 0, 0, 1]], bool)
END_PROB = 0.2  # StochasticIntervalEpisodeEnding probabilityTerminationPerInterval


@struct.dataclass
class MushroomsParams(GridParams):
    reward_red: float = param(1.0, doc="red (totalReward): paid to the eater alone")
    reward_green: float = param(2.0, doc="green (totalReward): split equally among all N players")
    reward_blue: float = param(3.0, doc="blue (totalReward): split among the N - 1 other players")
    reward_orange: float = param(-1.0, doc="orange (totalReward): split equally among all N players")
    digest_red: int = param(0, 0, None, doc="red digestionTimes: eater ignores moves for digest - 1 steps")
    digest_green: int = param(10, 0, None, doc="green digestionTimes")
    digest_blue: int = param(15, 0, None, doc="blue digestionTimes")
    digest_orange: int = param(15, 0, None, doc="orange digestionTimes")
    perish_red: int = param(200, 1, None, doc="red Perishable delay: steps a red mushroom lasts")
    perish_green: int = param(100, 1, None, doc="green Perishable delay")
    perish_blue: int = param(75, 1, None, doc="blue Perishable delay")
    perish_orange: int = param(10_000_000, 1, None, doc="orange Perishable delay (1e7: never)")
    regrow_red: float = param(0.25, 0.0, 1.0, doc="per spore of a red, green or blue eaten: P(a red grows)")
    regrow_green: float = param(0.4, 0.0, 1.0, doc="per spore of a green or blue eaten: P(a green grows)")
    regrow_blue: float = param(0.6, 0.0, 1.0, doc="per spore of a blue eaten: P(a blue grows)")
    regrow_orange: float = param(1.0, 0.0, 1.0, doc="per spore of an orange eaten: P(an orange grows)")
    orange_destroy: float = param(0.25, 0.0, 1.0, doc="eating orange removes each red with this probability")
    min_potential: int = param(1, 0, None, doc="no spore grows while fewer cells are potential")
    zap_cooldown: int = param(ZAP_COOLDOWN, 0, None, doc="steps between zaps (Zapper cooldownTime)")
    zap_freeze: int = param(ZAP_FREEZE, 1, None, doc="frames a first hit freezes the target")
    recovery: int = param(RECOVERY, 1, None, doc="steps unhit after which a marked player returns to level 1")
    respawn_delay: int = param(RESPAWN_DELAY, 1, None, doc="steps a second hit removes a player")
    min_steps: int = param(MIN_STEPS, 1, None, doc="stochastic ending: no end before this step")
    end_interval: int = param(END_INTERVAL, 1, None, doc="stochastic ending: steps between end draws")
    end_prob: float = param(END_PROB, 0.0, 1.0, doc="stochastic ending: probability per draw")


@struct.dataclass
class MushroomsState(GridState):
    age: jax.Array  # (H, W) int32 steps since the mushroom on the cell appeared
    frozen: jax.Array  # (N,) int32 coming steps in which the player's moves and turns are ignored
    level: jax.Array  # (N,) int32 sanction level, 1 or 2
    since_hit: jax.Array  # (N,) int32 steps on the map since the last hit (level 2)
    kind_eaten: jax.Array  # (N,) int32 kind index eaten this step (0..3; -1 none)


def kind_index(codes: jax.Array) -> jax.Array:
    """Kind index (0 red .. 3 orange) of mushroom codes, -1 for anything else."""
    idx = jnp.asarray(codes, jnp.int32) - RED
    return jnp.where((idx >= 0) & (idx < 4), idx, -1)


def by_kind(params, prefix: str) -> jax.Array:
    """``(4,)`` the params ``<prefix>_red .. <prefix>_orange``."""
    return jnp.stack([jnp.asarray(getattr(params, f"{prefix}_{k}")) for k in KIND_NAMES])


def mushroom_rewards(kind_eaten: jax.Array, on_map: jax.Array, params) -> jax.Array:
    """``(N,) float32`` rewards of one step from ``kind_eaten (N,)`` (kind index, -1:
    none): red pays the eater, green and orange pay every player total / N, blue pays
    every other player total / (N - 1) (``MushroomEating:_rewardEveryone``); a player not
    ``on_map (N,) bool`` gets nothing (``skipWaitStateRewards``)."""
    n = kind_eaten.shape[0]
    ate = kind_eaten[:, None] == jnp.arange(4)[None, :]  # (N, 4)
    counts = ate.sum(0).astype(jnp.float32)  # (4,)
    own = ate.astype(jnp.float32)
    reward = params.reward_red * own[:, 0]
    reward = reward + params.reward_green * counts[1] / n + params.reward_orange * counts[3] / n
    reward = reward + params.reward_blue * (counts[2] - own[:, 2]) / (n - 1)
    return jnp.where(on_map, reward, 0.0)


def freeze_after_eating(frozen: jax.Array, kind_eaten: jax.Array, params) -> jax.Array:
    """``(N,)`` steps to ignore moves: an eater of a kind with digestion time ``T > 0``
    ignores its moves and turns in the next ``T - 1`` steps (see the module docstring)."""
    digest = by_kind(params, "digest")[jnp.maximum(kind_eaten, 0)]
    return jnp.where((kind_eaten >= 0) & (digest > 0), digest - 1, frozen)


def release_spores(key, cells, age, potential, pos, kind_eaten, order, params):
    """Spores and orange's destruction of red, eater by eater in ``order (N,)``.

    ``cells (H, W) uint8``, ``age (H, W) int32``, ``potential (H, W) bool`` (cells empty
    at the start of the step), ``pos (N, 2)`` (where players stand; a row outside the map
    for a player off the map), ``kind_eaten (N,)``.
    For each spore (``SPORES[kind]``) and each kind ``k`` that the eaten kind may grow
    (``GROWS``), with probability ``regrow_<k>`` a uniformly random potential cell gets a
    mushroom of kind ``k`` (age 0) unless a player stands there; then, after an orange,
    every red mushroom is removed with probability ``orange_destroy``. Returns
    ``(cells, age)``.

    The sequence is resolved at once: every draw has a rank (eater's place in ``order``,
    then spore, then kind); a cell takes the kind of its highest-ranked successful draw
    (a later spore replaces an earlier one), and a red is destroyed by an orange eater
    ranked after the draw that made it (or any orange eater, for a red already there):
    with ``m`` such eaters, by one draw with probability ``1 - (1 - orange_destroy)^m``,
    the chance that at least one of ``m`` independent draws removes it."""
    n = pos.shape[0]
    h, w = cells.shape
    max_spores = max(SPORES)
    per_eater = max_spores * 4
    occupied = jnp.zeros((h, w), bool).at[pos[:, 0], pos[:, 1]].set(True, mode="drop").reshape(-1)
    flat_pot = potential.reshape(-1)
    enough = (flat_pot.sum() >= params.min_potential) & jnp.any(flat_pot)
    k_u, k_cell, k_destroy = jax.random.split(key, 3)
    kind = kind_eaten[order]  # (N,) by rank
    ki = jnp.maximum(kind, 0)
    u = jax.random.uniform(k_u, (n, max_spores, 4))
    # a uniform potential cell per draw: the pick-th potential cell in index order (a
    # binary search of the running count; a sort of the map cost 3x the whole step)
    count = jnp.cumsum(flat_pot, dtype=jnp.int32)
    pick = jax.random.randint(k_cell, (n, max_spores, 4), 0, jnp.maximum(count[-1], 1))
    where = jnp.minimum(jnp.searchsorted(count, pick, side="right"), h * w - 1)
    spore_ok = jnp.arange(max_spores)[None, :] < jnp.asarray(SPORES)[ki][:, None]  # (N, S)
    draw = (kind >= 0)[:, None, None] & enough & spore_ok[:, :, None] & jnp.asarray(GROWS)[ki][:, None, :]
    grow = draw & (u < by_kind(params, "regrow")[None, None, :]) & ~occupied[where]
    rank = jnp.arange(n * per_eater).reshape(n, max_spores, 4)
    winner = jnp.full(h * w, -1, jnp.int32).at[where.reshape(-1)].max(jnp.where(grow, rank, -1).reshape(-1))
    codes = jnp.asarray(KINDS, cells.dtype)
    flat = cells.reshape(-1)
    flat = jnp.where(winner >= 0, codes[jnp.maximum(winner, 0) % 4], flat)
    flat_age = jnp.where(winner >= 0, 0, age.reshape(-1))
    # orange eaters, by rank, each remove every red made before them with probability orange_destroy
    made_at = jnp.where(winner >= 0, winner // per_eater, -1)  # eater rank that made the cell's mushroom
    # m orange eaters after the red's maker remove it with probability 1 - (1 - p)^m: one draw per cell
    m = jnp.sum((kind == 3)[:, None] & (jnp.arange(n)[:, None] > made_at[None, :]), axis=0)
    survive = jnp.where(m > 0, (1.0 - params.orange_destroy) ** m, 1.0)
    destroy = (flat == RED) & (jax.random.uniform(k_destroy, (h * w,)) >= survive)
    flat = jnp.where(destroy, jnp.asarray(EMPTY, cells.dtype), flat)
    flat_age = jnp.where(destroy, 0, flat_age)
    return flat.reshape(h, w), flat_age.reshape(h, w)


def perish(cells: jax.Array, age: jax.Array, params):
    """End of the world update: every mushroom ages by one step; one whose age reaches its
    kind's ``perish_*`` delay disappears (``Perishable``). Returns ``(cells, age)``."""
    kind = kind_index(cells)
    live = kind >= 0
    age = jnp.where(live, age + 1, 0)
    gone = live & (age >= by_kind(params, "perish")[jnp.maximum(kind, 0)])
    return jnp.where(gone, jnp.asarray(EMPTY, cells.dtype), cells), jnp.where(gone, 0, age)


def zap_mushrooms(cells, age, ray_cells, reached):
    """Every mushroom on a cell some beam reached is destroyed (``Destroyable``).
    ``ray_cells (N, R, L, 2)``, ``reached (N, R, L) bool``. Returns ``(cells, age,
    destroyed (N,) int32)`` (the mushrooms each player's beam destroyed; two beams on
    one mushroom both count it)."""
    h = cells.shape[0]
    live = E.gather(kind_index(cells) >= 0, ray_cells, False) & reached
    destroyed = live.sum((1, 2)).astype(jnp.int32)
    rows = jnp.where(live, ray_cells[..., 0], h)
    cells = cells.at[rows, ray_cells[..., 1]].set(EMPTY, mode="drop")
    age = age.at[rows, ray_cells[..., 1]].set(0, mode="drop")
    return cells, age, destroyed


class Mushrooms(GridEnv):
    """Externality Mushrooms (Melting Pot 2.0 ``externality_mushrooms__dense``). Static
    options: ``map`` ("dense"), ``num_agents`` (5), ``episode`` ("meltingpot" | "fixed"),
    ``episode_length`` (for "fixed"), ``obs_mode``, ``view``. Params:
    :class:`MushroomsParams`. Rules: the module docstring."""

    params_cls = MushroomsParams
    action_table = C.MELTINGPOT_ACTIONS[:8]
    action_names = C.MELTINGPOT_ACTION_NAMES[:8]
    # the engine's apples_eaten (all mushrooms eaten) is the sum of the four by colour
    event_keys = ("zaps_fired", "times_zapped", "red_eaten", "green_eaten", "blue_eaten", "orange_eaten",
                  "mushrooms_destroyed")

    def __init__(self, map: str = "dense", num_agents: int = NUM_AGENTS, episode: str = "meltingpot",
                 episode_length: int = 1000, obs_mode: str = "codes", view: tuple = VIEW):
        if map not in MAPS:
            raise ValueError(f"mushrooms map must be one of {sorted(MAPS)} (Melting Pot's only substrate is "
                             f"externality_mushrooms__dense), got {map!r}")
        if not isinstance(num_agents, int) or isinstance(num_agents, bool) or num_agents < 2:
            raise ValueError(f"mushrooms needs num_agents >= 2 (blue pays the N - 1 others), got {num_agents!r}")
        self.map_name = map
        grid_map = parse_map(f"mushrooms_{map}", MAPS[map], LEGEND)
        super().__init__(
            grid_map, num_agents, len(self.action_table), tuple(view), E.meltingpot_beam(ZAP_LENGTH, ZAP_RADIUS),
            episode=episode, episode_length=episode_length, max_steps=MAX_STEPS, obs_mode=obs_mode,
        )
        self.potential_cells = grid_map.role("potential")

    def inert_params(self):
        return {**super().inert_params(), "zap_penalty": "zapping pays nothing here (targetReward 0)"}

    def initial_state(self, key, params):
        state = super().initial_state(key, params)
        n = self.num_agents
        return MushroomsState(
            **vars(state), age=jnp.zeros(self.map.shape, jnp.int32), frozen=jnp.zeros(n, jnp.int32),
            level=jnp.ones(n, jnp.int32), since_hit=jnp.zeros(n, jnp.int32), kind_eaten=jnp.full(n, -1, jnp.int32),
        )

    def eat(self, state, moved, params):
        cells, pos = state.cells, state.pos
        kind = jnp.where(moved, kind_index(cells[pos[:, 0], pos[:, 1]]), -1)
        rows = jnp.where(kind >= 0, pos[:, 0], cells.shape[0])
        cells = cells.at[rows, pos[:, 1]].set(EMPTY, mode="drop")
        age = state.age.at[rows, pos[:, 1]].set(0, mode="drop")
        frozen = freeze_after_eating(state.frozen, kind, params)  # before this step's zap freeze
        return state.replace(cells=cells, age=age, frozen=frozen, kind_eaten=kind), (kind >= 0).astype(jnp.int32)

    def on_zap_hits(self, hits, state, params):
        freeze, remove, level = E.sanction(hits.sum(0), state.level, state.removed == 0)
        removed = jnp.where(remove, params.respawn_delay, state.removed)
        frozen = jnp.where(freeze, params.zap_freeze - 1, jnp.where(remove, 0, state.frozen))
        since = jnp.where(freeze | remove, 0, state.since_hit)
        return state.replace(removed=removed, frozen=frozen, level=level, since_hit=since)

    def update_world(self, key, state, params):
        cells, age = perish(state.cells, state.age, params)
        return state.replace(cells=cells, age=age)

    def transition(self, key, state, actions, params):
        k_base, k_order, k_spore = jax.random.split(key, 3)
        actions = jnp.asarray(actions, jnp.int32)
        # digestion / zap freeze: moves and turns are ignored (a zap is not)
        blocked = (state.frozen > 0) & (actions != 7)
        acts = jnp.where(blocked, self.noop_action, actions)
        before = state.replace(frozen=jnp.maximum(state.frozen - 1, 0))
        new, reward, done, info = super().transition(k_base, before, acts, params)
        present = state.removed == 0
        # the engine paid +1 per mushroom eaten; mushrooms pay by kind, to everyone
        reward = reward - info["apples_eaten"] * present + mushroom_rewards(new.kind_eaten, present, params)
        # zap freeze: the timer holds until zap_freeze + cooldown steps have passed
        zap_frozen = (info["times_zapped"] > 0) & (new.level == 2) & present
        zap_cd = jnp.where(zap_frozen, jnp.maximum(new.zap_cooldown, params.zap_freeze + params.zap_cooldown),
                           new.zap_cooldown)
        # spores (potential cells: empty at the start of the step), then the beams
        potential = jnp.asarray(self.potential_cells) & (kind_index(state.cells) < 0)
        order = E.random_order(k_order, self.num_agents)
        standing = jnp.where(present[:, None], new.pos, jnp.asarray([self.map.shape[0], 0]))  # removed: nowhere
        cells, age = release_spores(k_spore, new.cells, new.age, potential, standing, new.kind_eaten, order, params)
        agents = E.agent_grid(self.map.shape, new.pos, present)
        firing = info["zaps_fired"] > 0
        ray_cells, reached = E.trace_beams(self.zap_rays, new.pos, new.heading, firing, jnp.asarray(self.walls),
                                           agents)
        cells, age, destroyed = zap_mushrooms(cells, age, ray_cells, reached)
        # sanction level recovery (on the map)
        on_map = new.removed == 0
        level, since = E.recover(new.level, new.since_hit, on_map, params.recovery)
        new = new.replace(
            cells=cells, age=age, frozen=jnp.where(on_map, new.frozen, 0), zap_cooldown=zap_cd,
            level=level, since_hit=since,
        )
        ate = new.kind_eaten[:, None] == jnp.arange(4)[None, :]
        events = {f"{k}_eaten": ate[:, j].astype(jnp.int32) for j, k in enumerate(KIND_NAMES)}
        info = {**info, **events, "mushrooms_destroyed": destroyed, "frozen": new.frozen > 0}
        return new, reward, done, info

    @property
    def scripted_bots(self) -> tuple[str, ...]:
        """Names of this game's scripted bots (:data:`BOTS`; built by
        :mod:`socialjax.agents.bots.mushrooms`): they read the code observation."""
        return tuple(BOTS) if self.obs_mode == "codes" else ()


# ----------------------------------------------------------------------- scripted bots
# (their act functions: socialjax.agents.bots.mushrooms)
#: name -> the mushroom codes it eats (Melting Pot's puppet goals COLLECT_MUSHROOM_FIZE,
#: COLLECT_MUSHROOM_HIHE of externality_mushrooms__dense, configs/bots/__init__.py)
BOTS = {"collect_red": (RED,), "collect_green": (GREEN,)}
