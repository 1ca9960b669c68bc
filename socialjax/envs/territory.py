"""Territory (Melting Pot 2.0 ``territory__open`` and ``territory__rooms``):
``territory_open``, ``territory_rooms``.

Source: ``meltingpot/configs/substrates/territory.py`` (prefabs and their component
kwargs, avatar, scene, actions), ``territory__open.py`` and ``territory__rooms.py`` (maps,
topology, players), ``meltingpot/lua/levels/territory/components.lua`` (``Resource``,
``ResourceClaimer``, ``Paintbrush``, ``AllBeamBlocker``) and
``meltingpot/lua/modules/avatar_library.lua`` (``Avatar``, ``Zapper``,
``GraduatedSanctionsMarking``) of google-deepmind/meltingpot. Players claim resource
walls by painting them; a claimed wall pays its painter now and then; walls and players
can be zapped out of the game for good.

Rules, each with its source:

- **Maps and players.** ``map="open"``: the config's 23 x 39 ``ASCII_MAP``, bounded
  (``topology`` ``BOUNDED``), with 88 resource walls (``R``) in its top and left parts
  and 18 spawn points (``P``) in the open bottom rows, at some distance from the walls. ``map="rooms"``:
  21 x 21, a 3 x 3 block of rooms, each a 5 x 5 floor ringed by 20 resource walls with
  plain-wall corners and one spawn point in its centre (180 walls, 9 spawn points), on
  a torus (``topology`` ``TORUS``: moves, beams and views wrap, so every room has four
  neighbours across a double wall). 9 players (``default_player_roles``); static
  ``num_agents`` (1 to the number of spawn points, at most :data:`MAX_PLAYERS`, which
  the cell codes bound). ``F``, ``|``, ``=``, ``T``, ``J``, ``L`` are walls (they carry
  only highlight sprites).
- **Actions** (``ACTION_SET``): 0 no-op, 1 forward, 2 backward, 3 step left, 4 step
  right, 5 turn left, 6 turn right, 7 fire zap, 8 fire claim.
- **Resource walls** (``Resource``, ``upperPhysical``): block movement and zaps; each
  has ``initialHealth`` 2 (:data:`RESOURCE_HEALTH`), an owner (none at reset) and paint
  that is wet or dry.
- **Claiming.** (a) The paintbrush (``Paintbrush``: a ``directionHit`` beam of length 1
  every step, priority 130): every player on the map claims the resource wall directly
  in front of it, every step, whatever it does (frozen players too). (b) The claim beam
  (``ResourceClaimer``: ``beamLength`` 2, ``beamRadius`` 0, ``beamWait`` 0, priority
  100): action 8 claims every resource wall on the two cells ahead; it passes through
  resource walls and players and stops at walls (``AllBeamBlocker``). A claim by
  another player repaints the wall: its owner changes and its paint is wet again
  (``Resource:_claim``, a state change); a claim by the owner changes nothing. Several
  claims on one wall in one step run in Melting Pot's update order: brushes before
  beams, players in some order, the last claim winning. Here the winner is drawn
  uniformly among the beam claimants, or among the brush claimants when nobody fired
  a beam at it (:func:`resolve_claims`); if anyone other than the owner claimed it,
  its paint is wet again even when the owner wins it back (in Lua, the other's claim
  changed the state in between). Destroyed walls cannot be claimed.
- **Reward** (``Resource`` ``reward`` 1, ``rewardRate`` 0.01, ``rewardDelay`` 25): a
  wall held by the same owner for at least 25 steps (``startFrame`` 25 counts from the
  state change of the claim) pays its owner 1 with probability 0.01 each step
  (expected 0.01 per wall and step); its paint is dry from its first payment on (the
  ``RewardIndicator`` shows dry paint once ``_rewardingStatus`` is ``active``). A wall
  claimed in step ``t`` can first pay in step ``t + 25``. An owner off the map is not
  paid. Claiming itself pays nothing (``Taste`` role ``none``).
- **Zap** (``Zapper``: ``cooldownTime`` 4, ``beamLength`` 2, ``beamRadius`` 1,
  ``removeHitPlayer`` False, ``penaltyForBeingZapped`` 0, ``rewardForZapping`` 0): the
  engine's Melting Pot footprint and cooldown (one zap every 5 steps). A ray stops at
  a wall, at the first player (hit) and at the first live resource wall (hit: health -
  1; ``Zaps do not pass through after hitting an undestroyed resource``). A wall whose
  health reaches 0 is destroyed for good: unowned, walkable, and later beams pass
  through it (:func:`fire_zaps`). Zaps go one player at a time in a uniformly random
  order, each seeing the walls the earlier ones destroyed (Melting Pot: the avatars'
  update order).
- **Self-repair** (``Resource:update``: ``delayTillSelfRepair`` 15,
  ``selfRepairProbability`` 0.1): at the start of each step a damaged wall not zapped
  for 15 steps regains 1 health with probability 0.1 (a wall zapped in step ``t`` can
  first heal in step ``t + 16``) (:func:`repair_walls`).
- **Graduated sanctions** (``GraduatedSanctionsMarking``: ``hitLogic`` level 1 ``freeze``
  25, level 2 ``remove``, ``recoveryTime`` 50; ``Zapper`` ``framesTillRespawn`` 1e6): a
  first hit freezes the player (moves and turns ignored in the next 24 steps, next zap
  29 steps after the hit) and marks it; a hit on a marked player, or two hits in one
  step, removes it; removed players never come back (the engine's removal with
  ``respawn_delay`` 1e6, beyond the 5000-step cap). A mark wears off after 50 steps
  counted from the hit step. The shared rules: :func:`socialjax.envs.grid.engine.sanction`,
  :func:`~socialjax.envs.grid.engine.recover`. Melting Pot removes a player one frame
  after the hit (``removeAfterDelay(1)``; it can neither move nor zap in that frame);
  here it is off the map in the observation of the hit step already.
- **A removed player's walls** (``Resource`` ``releaseClaimOfDeadAgent``: priority 2,
  ``startFrame`` 5): go back to unclaimed, each once it has been held for 5 steps.
- **Order within a step** (the Lua priorities): self-repair and the freeze counters;
  moves and turns; zaps; claims (brush, then beam); rewards; releases; the sanction
  marks' recovery.
- **Episode end**: ``StochasticIntervalEpisodeEnding`` (``minimumFramesPerEpisode`` 1000,
  ``intervalLength`` 100, ``probabilityTerminationPerInterval`` 0.2) and
  ``maxEpisodeLengthFrames`` 5000 (``end_prob`` 0.2); ``episode="fixed"`` gives fixed lengths.
- **Observation**: the engine's 11 x 11 window (the Avatar's ``view``: 9 ahead, 1
  behind, 5 each side) and ``ready_to_zap``. A resource wall shows its owner, whether
  its paint is dry and whether it is damaged (Melting Pot's wet and dry paint colours
  and ``damage_indicator`` sprite); the sanction mark is not observed (Melting Pot's
  overlay sprite for level 2 is fully transparent, ``get_marking_palette(0.0)``).

``info`` per step ``(N,)``: ``walls_claimed`` (walls this player holds after the step
and did not hold before it), ``walls_held`` (walls it holds after the step; summed over
an episode, wall-steps), ``walls_zapped`` (zap hits on walls), ``walls_destroyed`` (by
its zaps), ``claims_fired`` (claim beams), besides the engine's ``zaps_fired``,
``times_zapped`` (hits taken), ``removed``; ``apples_eaten`` and ``cells_cleaned`` are 0.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from socialjax.core.params import brief, param
from socialjax.envs.grid import constants as C
from socialjax.envs.grid import engine as E
from socialjax.envs.grid import render as R
from socialjax.envs.grid.base import END_INTERVAL, MAX_STEPS, MIN_STEPS, GridEnv, GridParams, GridState
from socialjax.envs.grid.maps import parse_map, tile
from socialjax.envs.melting_pot_maps import OPEN_MAP, ROOMS_MAP

# ------------------------------------------------------------------ Melting Pot numbers
NUM_AGENTS = 9  # territory__open.py / territory__rooms.py: default_player_roles ("default",) * 9
VIEW = (9, 1, 5)  # Avatar view: forward 9, backward 1, left = right = 5
ZAP_COOLDOWN = 4  # Zapper cooldownTime: one zap every 5 steps (the engine's convention, c + 1)
ZAP_LENGTH, ZAP_RADIUS = 2, 1  # Zapper beamLength, beamRadius
CLAIM_LENGTH = 2  # ResourceClaimer beamLength (beamRadius 0, beamWait 0)
RESOURCE_HEALTH = 2  # Resource initialHealth
RESOURCE_REWARD = 1.0  # Resource reward
REWARD_RATE = 0.01  # Resource rewardRate: probability per step of a payment
REWARD_DELAY = 25  # Resource rewardDelay (startFrame of the reward updater)
RELEASE_DELAY = 5  # startFrame of releaseClaimOfDeadAgent
REPAIR_DELAY = 15  # Resource delayTillSelfRepair
REPAIR_PROB = 0.1  # Resource selfRepairProbability
FREEZE = 25  # GraduatedSanctionsMarking hitLogic[1].freeze
RECOVERY = 50  # GraduatedSanctionsMarking recoveryTime
RESPAWN_DELAY = 1_000_000  # Zapper framesTillRespawn 1e6: "effectively never respawn"
END_PROB = 0.2  # StochasticIntervalEpisodeEnding probabilityTerminationPerInterval

ZAP, CLAIM = 7, 8  # ACTION_SET indices of FIRE_ZAP and FIRE_CLAIM
ACTION_TABLE = np.concatenate([C.MELTINGPOT_ACTIONS[:8], [[C.NO_MOVE, 0, C.CLAIM]]]).astype(np.int32)
ACTION_NAMES = C.MELTINGPOT_ACTION_NAMES[:7] + ("zap", "claim")

# ----------------------------------------------------------------------- cell codes
BLOCK = "territory"
RESOURCE = 48  # an unclaimed resource wall
PAINT = 50  # PAINT + 4 j + 2 dry + damaged: a wall of player j
MAX_PLAYERS = (C.CODE_BLOCKS[BLOCK].stop - PAINT) // 4  # 11: the paint codes of every player fit the block
# Melting Pot's resource_texture palette: "*" (61, 61, 61), the bricks of shapes.WALL, and
# "#" (80, 80, 80), its mortar; wet paint (the resource's colored_square) is the player's
# colour at alpha 75 over them; dry paint (get_dry_painted_wall_palette) is the colour
# scaled by 0.75 at alpha 200 on the bricks and by 0.9 at alpha 150 on the mortar. Player
# colours here are the engine's agent colours (render.AGENT_COLOURS), not Melting Pot's.
BRICK, MORTAR = (61, 61, 61), (80, 80, 80)
WET_ALPHA = 75 / 255
DRY_BRICK, DRY_MORTAR = (0.75, 200 / 255), (0.90, 150 / 255)  # (scale, alpha)


def _bricks() -> np.ndarray:
    """``(8, 8) bool``: the mortar lines of a brick wall (our own drawing)."""
    mortar = np.zeros((R.SPRITE, R.SPRITE), bool)
    mortar[[3, 7], :] = True
    mortar[0:3, 3] = mortar[4:7, 7] = True
    return mortar


def _crack() -> np.ndarray:
    """``(8, 8) bool``: a crack across the wall (the damage indicator; our own drawing)."""
    crack = np.zeros((R.SPRITE, R.SPRITE), bool)
    for r, c in [(0, 2), (1, 2), (2, 3), (3, 3), (4, 4), (5, 4), (5, 5), (6, 6), (7, 6), (2, 5), (1, 6)]:
        crack[r, c] = True
    return crack


def _wall_sprite(brick, mortar, damaged: bool) -> np.ndarray:
    s = np.broadcast_to(np.asarray(brick, np.uint8), (R.SPRITE, R.SPRITE, 3)).copy()
    s[_bricks()] = mortar
    if damaged:
        s[_crack()] = (0, 0, 0)
    return s


def _blend(colour, under, alpha, scale: float = 1.0) -> tuple[int, ...]:
    return tuple(int(round(alpha * scale * a + (1 - alpha) * b)) for a, b in zip(colour, under))


def _define_codes() -> None:
    """Cell codes, names, colours and sprites of the resource walls (the block ``territory``)."""
    for damaged in (0, 1):
        R.define_object(BLOCK, RESOURCE + damaged, "resource wall" + (", damaged" if damaged else ""), BRICK,
                        _wall_sprite(BRICK, MORTAR, bool(damaged)))
    for j in range(MAX_PLAYERS):
        colour = R.AGENT_COLOURS[j % len(R.AGENT_COLOURS)]
        wet = (_blend(colour, BRICK, WET_ALPHA), _blend(colour, MORTAR, WET_ALPHA))
        dry = (_blend(colour, BRICK, DRY_BRICK[1], DRY_BRICK[0]), _blend(colour, MORTAR, DRY_MORTAR[1], DRY_MORTAR[0]))
        for is_dry, (brick, mortar) in enumerate((wet, dry)):
            for damaged in (0, 1):
                name = f"wall of agent {j}, {'dry' if is_dry else 'wet'}" + (", damaged" if damaged else "")
                R.define_object(BLOCK, PAINT + 4 * j + 2 * is_dry + damaged, name, brick,
                                _wall_sprite(brick, mortar, bool(damaged)))


_define_codes()

# ---------------------------------------------------------------------------- maps
# territory__open.py and territory__rooms.py ASCII_MAP (socialjax/envs/melting_pot_maps.py)
MAPS = {"open": (OPEN_MAP, False), "rooms": (ROOMS_MAP, True)}  # name -> (ASCII, torus)
LEGEND = {
    **{ch: tile(C.WALL) for ch in "F|=TJL"},
    ",": tile(C.FLOOR),
    "P": tile(C.FLOOR, "spawn"),
    "R": tile(RESOURCE, "resource"),
}


# ---------------------------------------------------------------------------- params, state
@struct.dataclass
class TerritoryParams(GridParams):
    zap_cooldown: int = param(ZAP_COOLDOWN, 0, None, doc="steps between zaps (Zapper cooldownTime)")
    respawn_delay: int = param(RESPAWN_DELAY, 1, None, doc="steps a removed player stays off (1e6: for good)")
    resource_health: int = param(RESOURCE_HEALTH, 1, None, doc="zap hits that destroy a resource wall")
    resource_reward: float = param(RESOURCE_REWARD, doc="reward of one payment of a held wall")
    reward_rate: float = param(REWARD_RATE, 0.0, 1.0, doc="per step: P(a wall held reward_delay steps pays)")
    reward_delay: int = param(REWARD_DELAY, 0, None, doc="steps a wall must be held before it can pay")
    release_delay: int = param(RELEASE_DELAY, 0, None, doc="a removed player's wall is released once held this long")
    repair_delay: int = param(REPAIR_DELAY, 0, None, doc="steps unzapped before a damaged wall may heal")
    repair_prob: float = param(REPAIR_PROB, 0.0, 1.0, doc="probability per step that a damaged wall heals 1")
    zap_freeze: int = param(FREEZE, 1, None, doc="frames a first hit freezes the target")
    recovery: int = param(RECOVERY, 1, None, doc="steps after a hit until the sanction mark wears off")
    min_steps: int = param(MIN_STEPS, 1, None, doc="stochastic ending: no end before this step")
    end_interval: int = param(END_INTERVAL, 1, None, doc="stochastic ending: steps between end draws")
    end_prob: float = param(END_PROB, 0.0, 1.0, doc="stochastic ending: probability per draw")

    def check(self):
        for name in ("resource_health", "reward_delay", "release_delay", "repair_delay", "zap_freeze", "recovery"):
            value = getattr(self, name)
            if not isinstance(value, jax.core.Tracer) and np.any(np.asarray(value) % 1 != 0):
                raise ValueError(f"TerritoryParams.{name}={brief(value)} must be a whole number")


@struct.dataclass
class TerritoryState(GridState):
    owner: jax.Array  # (K,) int32 the player holding each resource wall (-1: none)
    dry: jax.Array  # (K,) bool the wall has paid its owner since the claim
    held: jax.Array  # (K,) int32 steps the wall has been held by its owner
    health: jax.Array  # (K,) int32 zap hits left (0: destroyed)
    since_zap: jax.Array  # (K,) int32 steps since the wall was last zapped (while damaged)
    frozen: jax.Array  # (N,) int32 coming steps in which the player's moves and turns are ignored
    level: jax.Array  # (N,) int32 sanction level, 1 or 2
    since_hit: jax.Array  # (N,) int32 steps on the map since the last hit (level 2)


# ---------------------------------------------------------------------------- the rules
def repair_walls(key, health, since_zap, params):
    """Start of a step: a damaged, live wall (``0 < health < resource_health``) zapped at
    least ``repair_delay`` steps ago heals 1 with probability ``repair_prob``; every
    damaged wall counts the step (``Resource:update``). ``health``, ``since_zap (K,)
    int32``; returns both."""
    damaged = (health > 0) & (health < params.resource_health)
    heal = damaged & (since_zap >= params.repair_delay) & (jax.random.uniform(key, health.shape) < params.repair_prob)
    return health + heal, jnp.where(damaged, since_zap + 1, since_zap)


def fire_zaps(order, rays, pos, heading, shooting, walls, agents, resource_index, health, torus):
    """The zaps of one step, one shooter at a time in ``order (N,)``. A ray stops at a
    wall (not hit), at the first player (hit) and at the first live resource wall (hit:
    health - 1); a wall whose health reaches 0 is destroyed, and later beams of the step
    pass through it. ``agents (H, W)`` the :func:`~socialjax.envs.grid.engine.agent_grid`
    of the players on the map, ``resource_index (H, W) int32`` each resource wall's index
    (-1 elsewhere), ``health (K,)``. Returns ``(hits (N_shooter, N_target) int32,
    health (K,), zapped (K,) bool: hit this step, walls_zapped (N,), walls_destroyed (N,))``."""
    n = pos.shape[0]
    k = health.shape[0]
    h = walls.shape[0]
    is_wall = resource_index >= 0
    live = is_wall & (health[jnp.maximum(resource_index, 0)] > 0)
    stoppers = jnp.where(agents >= 0, agents, jnp.where(live, n, -1))  # an agent, n for a live wall, -1
    hits = jnp.zeros((n, n), jnp.int32)
    zapped = jnp.zeros(k, bool)
    walls_zapped = jnp.zeros(n, jnp.int32)
    destroyed_by = jnp.zeros(n, jnp.int32)
    for step in range(n):  # n is static and small: unrolled
        i = order[step]
        cells, reached = E.trace_beams(rays, pos[i][None], heading[i][None], shooting[i][None], walls, stoppers,
                                       torus)
        cells, reached = cells[0].reshape(-1, 2), reached[0].reshape(-1)  # (R L, 2), (R L,)
        target = jnp.where(reached, E.gather(stoppers, cells, -1), -1)
        hits = hits.at[i].set(jnp.sum(target[:, None] == jnp.arange(n), axis=0).astype(jnp.int32))
        wall = jnp.where(target == n, E.gather(resource_index, cells, -1), k)  # k: none
        health = health - jnp.zeros(k + 1, jnp.int32).at[wall].add(1)[:k]
        hit_walls = jnp.zeros(k + 1, bool).at[wall].set(True)[:k]
        zapped = zapped | hit_walls
        gone = hit_walls & (health <= 0)
        # destroyed walls stop no later beam of the step
        rows = jnp.where(jnp.append(gone, False)[wall], cells[:, 0], h)
        stoppers = stoppers.at[rows, cells[:, 1]].set(-1, mode="drop")
        walls_zapped = walls_zapped.at[i].add(jnp.sum(hit_walls))
        destroyed_by = destroyed_by.at[i].add(jnp.sum(gone))
    return hits, jnp.maximum(health, 0), zapped, walls_zapped, destroyed_by


def resolve_claims(key, targets, strength, owner, live):
    """The claims of one step. ``targets (N, M) int32``: the resource walls player ``j``
    claims (-1: none; ``M`` claims per player), ``strength (N, M) int32``: 1 for the
    brush, 2 for the claim beam. On each live wall the claims of the highest strength
    compete and one claimant, uniformly at random, wins it. Returns ``(owner (K,),
    repainted (K,) bool)``: ``repainted`` where anyone but the owner claimed (the paint
    is wet again and the holding time restarts, even if the owner won it back)."""
    n, m = targets.shape
    k = owner.shape[0]
    ok = (targets >= 0) & live[jnp.maximum(targets, 0)]
    slot = jnp.where(ok, targets, k).reshape(-1)  # k: dropped
    score = (strength + jax.random.uniform(key, (n, 1))).reshape(-1)  # ties: probability 0
    best = jnp.full(k + 1, -1.0).at[slot].max(score)
    claimant = jnp.broadcast_to(jnp.arange(n)[:, None], (n, m)).reshape(-1)
    winner = jnp.full(k + 1, -1, jnp.int32).at[jnp.where(score == best[slot], slot, k)].set(claimant)[:k]
    other = jnp.zeros(k + 1, jnp.int32).at[slot].max(claimant != jnp.append(owner, -1)[slot])[:k]
    return jnp.where(winner >= 0, winner, owner), other > 0


def wall_codes(owner, dry, health, resource_health):
    """``(K,) uint8`` cell codes of the resource walls: ``FLOOR`` when destroyed,
    ``RESOURCE`` (+1 damaged) when unowned, else ``PAINT + 4 owner + 2 dry + damaged``."""
    damaged = (health < resource_health).astype(jnp.int32)
    code = jnp.where(owner < 0, RESOURCE + damaged, PAINT + 4 * owner + 2 * dry.astype(jnp.int32) + damaged)
    return jnp.where(health > 0, code, C.FLOOR).astype(jnp.uint8)


class Territory(GridEnv):
    """Territory (Melting Pot 2.0 ``territory__open`` / ``territory__rooms``). Static
    options: ``map`` ("open" | "rooms"), ``num_agents`` (9), ``episode`` ("meltingpot" |
    "fixed"), ``episode_length`` (for "fixed"), ``obs_mode`` ("codes" | "rgb"), ``view``.
    Params: :class:`TerritoryParams`. Rules: the module docstring."""

    params_cls = TerritoryParams
    action_table = ACTION_TABLE
    action_names = ACTION_NAMES
    event_keys = ("walls_claimed", "walls_held", "walls_zapped", "walls_destroyed", "claims_fired", "zaps_fired",
                  "times_zapped")

    def __init__(self, map: str = "open", num_agents: int = NUM_AGENTS, episode: str = "meltingpot",
                 episode_length: int = 1000, obs_mode: str = "codes", view: tuple = VIEW):
        if map not in MAPS:
            raise ValueError(f"territory map must be one of {sorted(MAPS)}, got {map!r}")
        if not isinstance(num_agents, int) or isinstance(num_agents, bool) or not 1 <= num_agents <= MAX_PLAYERS:
            raise ValueError(f"territory needs 1 <= num_agents <= {MAX_PLAYERS} (each player's paint has its own "
                             f"cell codes), got {num_agents!r}")
        self.map_name = map
        text, torus = MAPS[map]
        grid_map = parse_map(f"territory_{map}", text, LEGEND)
        super().__init__(
            grid_map, num_agents, len(ACTION_TABLE), tuple(view), E.meltingpot_beam(ZAP_LENGTH, ZAP_RADIUS),
            episode=episode, episode_length=episode_length, max_steps=MAX_STEPS, obs_mode=obs_mode, torus=torus,
        )
        self.claim_rays = E.meltingpot_beam(CLAIM_LENGTH, 0)
        self.resource_pos = grid_map.points("resource")  # (K, 2)
        index = np.full(grid_map.shape, -1, np.int32)
        index[tuple(self.resource_pos.T)] = np.arange(len(self.resource_pos))
        self.resource_index = index

    def inert_params(self):
        return {**super().inert_params(), "zap_cost": "zapping pays nothing here (rewardForZapping 0)",
                "zap_penalty": "being zapped costs nothing here (penaltyForBeingZapped 0)"}

    def walkable(self, cells):
        return (cells != C.WALL) & ((cells < RESOURCE) | (cells >= C.CODE_BLOCKS[BLOCK].stop))

    def eat(self, state, moved, params):
        return state, jnp.zeros(self.num_agents, jnp.int32)  # nothing is eaten

    def on_zap_hits(self, hits, state, params):
        return state  # the engine's own zap is never fired (see transition)

    def initial_state(self, key, params):
        state = super().initial_state(key, params)
        n, k = self.num_agents, len(self.resource_pos)
        return TerritoryState(
            **vars(state), owner=jnp.full(k, -1, jnp.int32), dry=jnp.zeros(k, bool), held=jnp.zeros(k, jnp.int32),
            health=jnp.full(k, params.resource_health, jnp.int32), since_zap=jnp.zeros(k, jnp.int32),
            frozen=jnp.zeros(n, jnp.int32), level=jnp.ones(n, jnp.int32), since_hit=jnp.zeros(n, jnp.int32),
        )

    def transition(self, key, state, actions, params):
        k_base, k_repair, k_order, k_claim, k_pay = jax.random.split(key, 5)
        n = self.num_agents
        actions = jnp.asarray(actions, jnp.int32)
        present = state.removed == 0
        # 0. the start of the frame: walls heal; the freeze counts down
        health, since_zap = repair_walls(k_repair, state.health, state.since_zap, params)
        # 1. moves and turns (the engine's; frozen players' are ignored, beams are fired below)
        blocked = (state.frozen > 0) | (actions == ZAP) | (actions == CLAIM)
        new, _, done, info = super().transition(k_base, state.replace(frozen=jnp.maximum(state.frozen - 1, 0)),
                                                 jnp.where(blocked, self.noop_action, actions), params)
        # 2. zaps (Zapper), one shooter at a time
        shooting = present & (actions == ZAP) & (state.zap_cooldown == 0)
        zap_cd = jnp.where(shooting, params.zap_cooldown, jnp.maximum(state.zap_cooldown - 1, 0))
        zap_cd = jnp.where(present, zap_cd, state.zap_cooldown)
        agents = E.agent_grid(self.map.shape, new.pos, present)
        hits, health, zapped, walls_zapped, walls_destroyed = fire_zaps(
            E.random_order(k_order, n), self.zap_rays, new.pos, new.heading, shooting, jnp.asarray(self.walls),
            agents, jnp.asarray(self.resource_index), health, self.torus,
        )
        since_zap = jnp.where(zapped, 0, since_zap)
        times_zapped = hits.sum(0)
        freeze, remove, level = E.sanction(times_zapped, new.level, present)
        removed = jnp.where(remove, params.respawn_delay, new.removed)
        frozen = jnp.where(freeze, params.zap_freeze - 1, jnp.where(remove, 0, new.frozen))
        zap_cd = jnp.where(freeze, jnp.maximum(zap_cd, params.zap_freeze + params.zap_cooldown), zap_cd)
        since_hit = jnp.where(freeze | remove, 0, new.since_hit)
        # 3. claims: the brush on the cell ahead, then the claim beam (players on the map at the start)
        live = health > 0
        owner = jnp.where(live, state.owner, -1)
        claiming = present & (actions == CLAIM)
        claims = self.claimed_walls(new.pos, new.heading, present, claiming)
        strength = jnp.asarray([1] + [2] * self.claim_rays.length, jnp.int32)[None, :]
        owner_now, repainted = resolve_claims(k_claim, claims, strength, owner, live)
        held = jnp.where(repainted | (owner_now < 0), 0, state.held)
        dry = state.dry & ~repainted & live
        # 4. rewards: a wall held long enough pays its owner (on the map) now and then
        on_map = removed == 0
        paying = (owner_now >= 0) & (held >= params.reward_delay) & on_map[jnp.maximum(owner_now, 0)]
        paying = paying & (jax.random.uniform(k_pay, owner_now.shape) < params.reward_rate)
        payments = jnp.zeros(n + 1, jnp.float32).at[jnp.where(paying, owner_now, n)].add(params.resource_reward)[:n]
        dry = dry | paying
        # 5. walls of removed players go back to unclaimed once held release_delay steps
        release = (owner_now >= 0) & ~on_map[jnp.maximum(owner_now, 0)] & (held >= params.release_delay)
        owner_now = jnp.where(release, -1, owner_now)
        dry = dry & ~release
        held = jnp.where(owner_now >= 0, held + 1, 0)
        # 6. the sanction marks wear off
        level, since_hit = E.recover(level, since_hit, on_map, params.recovery)

        mine = owner_now[None, :] == jnp.arange(n)[:, None]  # (N, K)
        was_mine = owner[None, :] == jnp.arange(n)[:, None]
        codes = wall_codes(owner_now, dry, health, params.resource_health)
        cells = new.cells.at[self.resource_pos[:, 0], self.resource_pos[:, 1]].set(codes)
        new = new.replace(
            cells=cells, owner=owner_now, dry=dry, held=held, health=health, since_zap=since_zap,
            removed=removed, frozen=jnp.where(on_map, frozen, 0), level=level, since_hit=since_hit,
            zap_cooldown=zap_cd,
        )
        info = {
            **info,
            "walls_claimed": jnp.sum(mine & ~was_mine, axis=1, dtype=jnp.int32),
            "walls_held": jnp.sum(mine, axis=1, dtype=jnp.int32),
            "walls_zapped": walls_zapped,
            "walls_destroyed": walls_destroyed,
            "claims_fired": claiming.astype(jnp.int32),
            "zaps_fired": shooting.astype(jnp.int32),
            "times_zapped": times_zapped,
            "removed": removed > 0,
        }
        return new, jnp.where(present, payments, 0.0), done, info

    def claimed_walls(self, pos, heading, present, claiming):
        """``(N, 1 + CLAIM_LENGTH) int32``: the resource wall each player's brush touches
        (the cell ahead), then those its claim beam reaches (cells 1..2 ahead, stopped by
        walls only); -1 where none."""
        index = jnp.asarray(self.resource_index)
        ahead = pos + jnp.asarray(C.DIRECTIONS)[heading]
        if self.torus:
            ahead = E.wrap(ahead, self.map.shape)
        brush = jnp.where(present, E.gather(index, ahead, -1), -1)
        cells, reached = E.trace_beams(self.claim_rays, pos, heading, claiming, jnp.asarray(self.walls), None,
                                       self.torus)
        beam = jnp.where(reached[:, 0], E.gather(index, cells[:, 0], -1), -1)  # (N, L): one ray
        return jnp.concatenate([brush[:, None], beam], axis=1)

    # ------------------------------------------------------------------ scripted bots
    @property
    def scripted_bots(self) -> tuple[str, ...]:
        """Names of this game's scripted bots (:data:`BOTS`; built by
        :mod:`socialjax.agents.bots.territory`): they read the code observation."""
        return tuple(BOTS) if self.obs_mode == "codes" else ()


# ----------------------------------------------------------------------- scripted bots
# (their act functions: socialjax.agents.bots.territory)
#: name -> (what it goes for, the action it fires, the reach of that action). The goals
#: of Melting Pot's territory__rooms puppets (meltingpot/configs/bots/__init__.py:
#: CLAIM_NEAR, CLAIM_FAR, DESTROY_RESOURCE, ZAP_OTHERS)
BOTS = {
    "considerate_claimer": ("walls", 0, 1),  # the brush alone: faces a wall it does not hold
    "inconsiderate_claimer": ("walls", CLAIM, CLAIM_LENGTH),  # also flings paint through to the wall behind
    "destroyer": ("walls", ZAP, ZAP_LENGTH),  # zaps walls it does not hold
    "zapper": ("players", ZAP, ZAP_LENGTH),  # zaps other players
}
