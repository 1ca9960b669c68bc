"""Gift Refinements (Melting Pot 2.0 ``gift_refinements``): ``gift_refinements``.

Source: ``meltingpot/configs/substrates/gift_refinements.py`` (map, players, actions,
the prefabs' component kwargs) and ``meltingpot/lua/levels/gift_refinements/components.lua``
(``FixedRateRegrow``, ``Pickable``, ``GiftBeam``, ``Inventory``) of google-deepmind/meltingpot.
A spatial trust game: a token gifted to another player arrives multiplied and refined,
so gifting back and forth is positive-sum, but every gift is a loss to the giver.

Rules, each with its source:

- **Map and players.** The config's ``ASCII_MAP`` (27 x 27): ``W`` wall, ``T`` a token
  cell (538 of them), ``P`` a spawn point (18; not a token cell). 6 players
  (``default_player_roles``); static ``num_agents`` (1 .. 18). Tokens lie on the
  ``lowerPhysical`` layer and players on ``upperPhysical``: players walk over token cells.
- **Tokens** (the token prefab's ``StateManager``): ``tokenWait`` (empty, invisible:
  ``FLOOR`` here) and ``token`` (:data:`TOKEN`). Every token cell starts empty
  (``initialState`` ``tokenWait``).
- **Spawning** (:func:`regrow_tokens`; ``FixedRateRegrow`` ``regrowRate`` 0.0002): each
  step an empty token cell with no player on it becomes a token with probability
  ``regrow_rate``. Melting Pot runs it in the component ``update``, before the step's
  moves, with the players where the previous step left them; here it runs at the end
  of the step with the players where this step leaves them: the same positions. (The
  first draw is at the end of step 1 rather than before it.)
- **Collecting** (:func:`collect_tokens`; ``Pickable:onEnter``, ``rewardForPicking`` 0):
  a player entering a cell with a token takes it: one token of the rawest level (level
  1) is added to its inventory (``addTokens(1, 1)``), clamped at the capacity (a token
  picked up with a full level-1 slot is lost), and the cell is empty again.
- **Inventory** (``Inventory``: ``numTokenTypes`` 3, ``capacityPerType`` 15): ``(3,)``
  counts of tokens of refinement level 1, 2, 3, each at most ``capacity``; observed as
  ``inventory`` (Melting Pot's ``INVENTORY`` observation).
- **Actions** (``ACTION_SET``): 0 no-op, 1 forward, 2 backward, 3 step left, 4 step
  right, 5 turn left, 6 turn right, 7 refine-and-gift, 8 consume. Moves and turns are
  the engine's.
- **Gift beam** (``GiftBeam``: ``beamLength`` 5, ``beamRadius`` 0, ``cooldownTime`` 3):
  one ray, cells 1..5 straight ahead, stopped by walls (``BeamBlocker`` ``gift``) and by
  the first player on it, who is hit (``GiftBeam:onHit`` returns true). The timer counts
  down *before* it is tested, so a player gifting at every chance fires every 3 steps:
  the engine's ``zap_cooldown`` 2 (see the coop_mining docstring). ``ready_to_zap`` is 1
  when a gift on the next step would fire.
- **Gifting** (:func:`resolve_gifts`; ``GiftBeam:onHit``): if the giver holds any token,
  it loses one of its *most refined* level held (``getHighestTypeAvailable``; the
  config's docstring says "rawest", the code gives the most refined), and the player hit
  receives ``gift_multiplier`` tokens (``giftMultiplier`` 5; the docstring says three)
  of the next level, clamped at the capacity; a level-3 token is passed on as one
  level-3 token. A giver with an empty inventory still stops the beam, and nothing
  changes hands. The docstring's "while their inventory is not full" is not in the code
  either: tokens over the receiver's capacity are lost. Several gifts of one step
  resolve one giver at a time in a uniformly random order (Melting Pot: the avatars'
  updaters of one priority run in an unspecified order), each seeing the inventories
  the earlier ones left.
- **Gifting pays the giver** ``role_gift_reward`` per hit (``roleRewardForGifting`` of
  the player's role, ``agentRole`` ``"none"``: 0.0) plus ``role_gift_reward x
  successful_gift_factor`` (``successfulGiftReward`` 10) per refining gift: 0 with the
  config's role. (Melting Pot's ``"gifter"`` and ``"selfish"`` roles, 0.2 and -2.0, are
  reachable by setting ``role_gift_reward``.)
- **Consuming** (:func:`consume_tokens`; ``Inventory:update``, ``consumptionCooldown``
  default 0): the consume action turns every token held into reward, ``token_value_1``
  / ``_2`` / ``_3`` per token of each level ("All tokens are worth 1 reward regardless
  of refinement level": 1.0 each), and empties the inventory. It runs in the component
  ``update``, before the grid's updaters: it consumes the inventory as it was before this
  step's pick-ups and gifts. Order within a step: consume, move and collect, gift,
  tokens spawn (:meth:`GiftRefinements.transition`).
- **No zapping, no removal**: the only beam is the gift beam and nobody is removed
  (``respawn_delay``, ``zap_cost`` and ``zap_penalty`` are inert and raise if set).
- **Episode end**: ``StochasticIntervalEpisodeEnding`` (``minimumFramesPerEpisode``
  1000, ``intervalLength`` 100, ``probabilityTerminationPerInterval`` 0.2) and
  ``maxEpisodeLengthFrames`` 5000 (``episode="meltingpot"``), or ``episode="fixed"``.
- **Observation**: the engine's 11 x 11 window (the Avatar's ``view``: 9 ahead, 1 behind,
  5 each side), ``ready_to_zap`` (``READY_TO_SHOOT`` of the ``GiftBeam``, 0 or 1 here,
  a fraction there) and ``inventory`` ``(N, 3) float32``.

``info`` per step ``(N,)``: ``tokens_collected``; ``tokens_consumed`` and per level
``consumed_1``, ``consumed_2``, ``consumed_3``; ``gifts_given`` (beams that hit a player
while the giver held a token), ``refined_gifts`` (those that refined: level 1 or 2
given), ``gifts_received``, ``tokens_received`` (tokens actually added to the
receiver's inventory), ``tokens_lost`` (tokens that did not fit: pick-ups and gifts),
``times_zapped`` (gift beams that hit this player) and the engine's ``zaps_fired`` (gift
beams fired).

Left out: Melting Pot's ``TokenTracker`` per-pair matrices (debug observations; the
counts above carry their sums) and the ``Hunger`` drive (no component of this config).
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
from socialjax.envs.grid.base import END_INTERVAL, MAX_STEPS, GridEnv, GridParams, GridState
from socialjax.envs.grid.maps import parse_map, tile

# ----------------------------------------------------------------------- cell codes
BLOCK = "gift_refinements"


def _token_sprite() -> np.ndarray:
    s = np.broadcast_to(np.asarray(R.COLOURS[C.FLOOR], np.uint8), (R.SPRITE, R.SPRITE, 3)).copy()
    yy, xx = np.mgrid[: R.SPRITE, : R.SPRITE]
    disc = (yy - 3.5) ** 2 + (xx - 3.5) ** 2
    s[disc <= 8] = TOKEN_COLOUR[1]
    s[disc <= 4] = TOKEN_COLOUR[0]
    return s


# shapes.py COIN_PALETTE: "@" (220, 220, 60) face, "&" (180, 180, 40) rim
TOKEN_COLOUR = ((220, 220, 60), (180, 180, 40))
TOKEN = R.define_object(BLOCK, 32, "token", TOKEN_COLOUR[0], _token_sprite())
EMPTY_TOKEN_CELL = C.FLOOR  # tokenWait: invisible

# ------------------------------------------------------------------ Melting Pot numbers
NUM_AGENTS = 6  # gift_refinements.py get_config: default_player_roles ("default",) * 6
NUM_TOKEN_TYPES = 3  # NUM_TOKEN_TYPES (Inventory numTokenTypes)
CAPACITY = 15  # MAX_TOKENS_PER_TYPE (Inventory capacityPerType)
REGROW_RATE = 0.0002  # TOKEN FixedRateRegrow regrowRate
PICK_REWARD = 0.0  # TOKEN Pickable rewardForPicking
BEAM_LENGTH = 5  # GiftBeam beamLength (beamRadius 0)
GIFT_PERIOD = 3  # GiftBeam cooldownTime: one gift every 3 steps
GIFT_MULTIPLIER = 5  # GiftBeam giftMultiplier
SUCCESSFUL_GIFT_FACTOR = 10.0  # GiftBeam successfulGiftReward
ROLE_GIFT_REWARD = 0.0  # GiftBeam roleRewardForGifting["none"] (agentRole "none")
TOKEN_VALUE = 1.0  # Inventory:update: reward = number of tokens, every level alike
MIN_STEPS, END_PROB = 1000, 0.2  # SCENE StochasticIntervalEpisodeEnding (intervalLength 100)
VIEW = (9, 1, 5)  # Avatar view: forward 9, backward 1, left = right = 5

# ACTION_SET: the engine's seven moves and turns, then REFINE_AND_GIFT (the zap beam
# slot) and CONSUME_TOKENS (no beam; recognised by its index)
ACTION_TABLE = np.concatenate([C.MELTINGPOT_ACTIONS[:8], [[C.NO_MOVE, 0, C.NO_BEAM]]]).astype(np.int32)
ACTION_NAMES = C.MELTINGPOT_ACTION_NAMES[:7] + ("refine_and_gift", "consume")
GIFT, CONSUME = 7, 8

GIFT_BOTS = ("gift_cooperator", "gift_extreme_cooperator", "gift_defector")  # scripted bots (socialjax.agents.bots)

ASCII_MAP = """
WWWWWWWWWWWWWWWWWWWWWWWWWWW
WTTTTTTTTTTTTTTTTTTTTTTTTTW
WTPTTTTTTTTTPTTTTTPTTTTTPTW
WTTTTTTTTWTTTTTTTTTTTTTTTTW
WTTTTTTTTWTTTTTTTTTTWTTTTTW
WTTTTTTTTWTTTTTTTTTTWTTTTTW
WTTTTTTTTWWWWWWWTTTTWTTTPTW
WTPTWWTTTTWTTTTTTTTTWTTTTTW
WTTTTTTTTTWTTPTTTTTTTTTTTTW
WTTTTTTTTTWTTTTTWWWTTTTTTTW
WTTTTTTTTTWTTTTTTTTTTTTTTTW
WTTTTTTTTTTTTTTTTTTTTTTTPTW
WTPTTTWWWTTTTTTWWWWWWWWTTTW
WTTWWWWTTTTTTTTTTTTTTTTTTTW
WTTTTTWTTTTWTTTTTPTTTTTTTTW
WTTTTTWTTTTWTTTTTTTTTTTTPTW
WTTTTTWTTTTTWTTTTTTTTWTTTTW
WTTTTTTWTTTTTWWWWTTTTWTTTTW
WTPTTTTTWTTTTTTTTTTTTWTTTTW
WTTTTTTTTWTTTPTTTTTTTTTTPTW
WTTTTTTTTTWTTTTTTTTWTTTTTTW
WTTTTWTTTTTTTTTTTTTWTTTTTTW
WTTTTWTTTTTTTTTWWWWWWWWTTTW
WTTTTWTTTTTTTTTTTTWTTTTTTTW
WTPTTTTTTPTTTTTTTPTTTTTTPTW
WTTTTTTTTTTTTTTTTTTTTTTTTTW
WWWWWWWWWWWWWWWWWWWWWWWWWWW
"""  # gift_refinements.py ASCII_MAP (CHAR_PREFAB_MAP: P spawn_point, W wall, T token)

LEGEND = {
    "W": tile(C.WALL),
    "T": tile(EMPTY_TOKEN_CELL, "token"),
    "P": tile(C.FLOOR, "spawn"),
}


@struct.dataclass
class GiftRefinementsParams(GridParams):
    regrow_rate: float = param(REGROW_RATE, 0.0, 1.0, doc="probability an empty token cell grows a token per step")
    gift_multiplier: int = param(GIFT_MULTIPLIER, 1, None,
                                 doc="tokens of the next level the receiver of a refining gift gets")
    token_value_1: float = param(TOKEN_VALUE, doc="reward per consumed token of level 1 (raw)")
    token_value_2: float = param(TOKEN_VALUE, doc="reward per consumed token of level 2 (refined once)")
    token_value_3: float = param(TOKEN_VALUE, doc="reward per consumed token of level 3 (refined twice)")
    pick_reward: float = param(PICK_REWARD, doc="reward for picking up a token")
    role_gift_reward: float = param(ROLE_GIFT_REWARD, doc="giver's reward per gift beam that hits a player")
    successful_gift_factor: float = param(SUCCESSFUL_GIFT_FACTOR,
                                          doc="a refining gift also pays the giver role_gift_reward x this")
    zap_cooldown: int = param(GIFT_PERIOD - 1, 0, None, doc="gift beam cooldown: one gift every cooldown + 1 steps")
    min_steps: int = param(MIN_STEPS, 1, None, doc="stochastic ending: no end before this step")
    end_interval: int = param(END_INTERVAL, 1, None, doc="stochastic ending: steps between end draws")
    end_prob: float = param(END_PROB, 0.0, 1.0, doc="stochastic ending: probability per draw")

    def check(self):
        m = self.gift_multiplier
        if not isinstance(m, jax.core.Tracer) and np.any(np.asarray(m) % 1 != 0):
            raise ValueError(f"GiftRefinementsParams.gift_multiplier={brief(m)} must be a whole number of tokens")


@struct.dataclass
class GiftRefinementsState(GridState):
    inventory: jax.Array  # (N, 3) int32 tokens held per refinement level
    collected: jax.Array  # (N,) int32 tokens picked up in the last step
    pick_lost: jax.Array  # (N,) int32 tokens picked up in the last step that did not fit


# ---------------------------------------------------------------------------- rules
def consume_tokens(inventory: jax.Array, consuming: jax.Array, params):
    """Players with ``consuming (N,) bool`` turn their whole ``inventory (N, K) int32``
    into reward (``token_value_k`` per token of level ``k``) and hold nothing after.
    Returns ``(inventory, consumed (N, K) int32, reward (N,) float32)``."""
    consumed = jnp.where(consuming[:, None], inventory, 0)
    values = jnp.stack([params.token_value_1, params.token_value_2, params.token_value_3]).astype(jnp.float32)
    reward = jnp.sum(consumed.astype(jnp.float32) * values, axis=1)
    return inventory - consumed, consumed, reward


def collect_tokens(cells: jax.Array, pos: jax.Array, moved: jax.Array, inventory: jax.Array, capacity: int):
    """Players that moved (``moved (N,) bool``) onto a token take it: level 1 of their
    ``inventory (N, K)`` grows by one up to ``capacity`` (a token that does not fit is
    lost) and the cell is empty again. Returns ``(cells, inventory, collected (N,) int32,
    lost (N,) int32)``."""
    here = cells[pos[:, 0], pos[:, 1]]
    took = moved & (here == TOKEN)
    rows = jnp.where(took, pos[:, 0], cells.shape[0])
    cells = cells.at[rows, pos[:, 1]].set(EMPTY_TOKEN_CELL, mode="drop")
    raw = inventory[:, 0] + took
    lost = (raw > capacity).astype(jnp.int32)
    inventory = inventory.at[:, 0].set(jnp.minimum(raw, capacity))
    return cells, inventory, took.astype(jnp.int32), lost


def resolve_gifts(order: jax.Array, target: jax.Array, inventory: jax.Array, multiplier, capacity: int):
    """The gifts of one step, one giver at a time in ``order (N,)``, each seeing the
    inventories the earlier ones left. ``target (N,) int32`` is the player each giver's
    beam hit (-1: none). A giver holding any token gives one of its most refined level
    ``s``: the target gets ``multiplier`` tokens of level ``s + 1``, or one token of level
    ``s`` when ``s`` is the last level, clamped at ``capacity``.

    ``inventory (N, K) int32``. Returns ``(inventory, events)`` with ``events`` the
    ``(N,) int32`` counts ``gifts_given``, ``refined_gifts``, ``gifts_received``,
    ``tokens_received``, ``tokens_lost``."""
    n, k = inventory.shape
    ids = jnp.arange(n)
    levels = jnp.arange(k)
    given = jnp.zeros(n, jnp.int32)
    refined = jnp.zeros(n, jnp.int32)
    got = jnp.zeros(n, jnp.int32)
    received = jnp.zeros(n, jnp.int32)
    lost = jnp.zeros(n, jnp.int32)
    for step in range(n):  # n is static and small: unrolled
        i = order[step]
        j = target[i]
        held = inventory[i] > 0
        gives = (j >= 0) & held.any()
        src = jnp.max(jnp.where(held, levels, 0))  # the most refined level held
        top = src == k - 1
        dst = jnp.minimum(src + 1, k - 1)
        amount = jnp.where(top, 1, multiplier).astype(jnp.int32)
        jj = jnp.maximum(j, 0)
        before = inventory[jj, dst]
        after = jnp.minimum(before + amount, capacity)
        inventory = inventory.at[i, src].add(-gives.astype(jnp.int32))
        inventory = inventory.at[jj, dst].set(jnp.where(gives, after, before))
        me, them = (ids == i) & gives, (ids == jj) & gives
        given = given + me
        refined = refined + (me & ~top)
        got = got + them
        received = received + jnp.where(them, after - before, 0)
        lost = lost + jnp.where(them, before + amount - after, 0)
    events = {"gifts_given": given, "refined_gifts": refined, "gifts_received": got,
              "tokens_received": received, "tokens_lost": lost}
    return inventory, events


def regrow_tokens(key: jax.Array, cells: jax.Array, token_cells: jax.Array, pos: jax.Array, rate) -> jax.Array:
    """Each empty token cell (``token_cells (H, W) bool``) with no player on it
    (``pos (N, 2)``) grows a token with probability ``rate`` (``FixedRateRegrow``).
    Returns the new ``cells (H, W) uint8``."""
    occupied = jnp.zeros(cells.shape, bool).at[pos[:, 0], pos[:, 1]].set(True)
    grow = token_cells & (cells == EMPTY_TOKEN_CELL) & ~occupied & (jax.random.uniform(key, cells.shape) < rate)
    return jnp.where(grow, jnp.asarray(TOKEN, cells.dtype), cells)


# ------------------------------------------------------------------------------ env
class GiftRefinements(GridEnv):
    """Gift Refinements (Melting Pot 2.0). Static options: ``num_agents`` (6; 1 .. 18),
    ``episode`` ("meltingpot" | "fixed"), ``episode_length`` (for "fixed"), ``obs_mode``
    ("codes" | "rgb"), ``view`` ((ahead, behind, side), default (9, 1, 5)),
    ``capacity`` (tokens per level, 15). Params: :class:`GiftRefinementsParams`. Rules:
    the module docstring."""

    params_cls = GiftRefinementsParams
    action_table = ACTION_TABLE
    action_names = ACTION_NAMES
    event_keys = ("tokens_collected", "tokens_consumed", "gifts_given", "refined_gifts", "tokens_received",
                  "zaps_fired")

    def __init__(self, num_agents: int = NUM_AGENTS, episode: str = "meltingpot", episode_length: int = 1000,
                 obs_mode: str = "codes", view: tuple = VIEW, capacity: int = CAPACITY):
        if not isinstance(capacity, int) or isinstance(capacity, bool) or capacity < 1:
            raise ValueError(f"capacity must be a positive int (tokens per level), got {capacity!r}")
        self.capacity = capacity
        grid_map = parse_map("gift_refinements", ASCII_MAP, LEGEND)
        super().__init__(
            grid_map, num_agents, len(ACTION_TABLE), tuple(view), E.straight_beam(BEAM_LENGTH),
            episode=episode, episode_length=episode_length, max_steps=MAX_STEPS, obs_mode=obs_mode,
        )
        self.token_cells = grid_map.role("token")

    def inert_params(self):
        why = "the gift beam removes and fines nobody (its payoffs: role_gift_reward)"
        return {**super().inert_params(), "respawn_delay": why, "zap_cost": why, "zap_penalty": why}

    def initial_state(self, key, params):
        state = super().initial_state(key, params)
        n = self.num_agents
        zeros = jnp.zeros(n, jnp.int32)
        return GiftRefinementsState(**vars(state), inventory=jnp.zeros((n, NUM_TOKEN_TYPES), jnp.int32),
                                    collected=zeros, pick_lost=zeros)

    def eat(self, state, moved, params):
        cells, inventory, collected, lost = collect_tokens(state.cells, state.pos, moved, state.inventory,
                                                           self.capacity)
        return state.replace(cells=cells, inventory=inventory, collected=collected, pick_lost=lost), collected

    def on_zap_hits(self, hits, state, params):
        return state  # the gift beam removes nobody; gifts resolve in transition

    def transition(self, key, state, actions, params):
        k_base, k_order, k_grow = jax.random.split(key, 3)
        n = self.num_agents
        # 1. consume (Inventory:update, before the grid's updaters): the inventory before this step
        inventory, consumed, pay = consume_tokens(state.inventory, actions == CONSUME, params)
        # 2. the engine: moves, collecting (eat), the gift beam's cooldown (info["zaps_fired"])
        new, reward, done, info = super().transition(k_base, state.replace(inventory=inventory), actions, params)
        reward = reward + (params.pick_reward - 1.0) * new.collected  # the engine pays +1 per pick-up
        # 3. gifts from the new positions (nobody is ever removed)
        firing = info["zaps_fired"] > 0
        agents = E.agent_grid(self.map.shape, new.pos, jnp.ones(n, bool))
        ray_cells, reached = E.trace_beams(self.zap_rays, new.pos, new.heading, firing, jnp.asarray(self.walls),
                                           agents)
        hits = E.beam_hits(ray_cells, reached, agents)  # (N, N): at most one target per giver
        target = jnp.where(hits.sum(1) > 0, jnp.argmax(hits, axis=1), -1).astype(jnp.int32)
        inventory, events = resolve_gifts(E.random_order(k_order, n), target, new.inventory,
                                          params.gift_multiplier, self.capacity)
        hit_someone = (target >= 0).astype(jnp.float32)
        gift_pay = params.role_gift_reward * (hit_someone + params.successful_gift_factor * events["refined_gifts"])
        # 4. tokens spawn where no player stands
        cells = regrow_tokens(k_grow, new.cells, jnp.asarray(self.token_cells), new.pos, params.regrow_rate)
        new = new.replace(cells=cells, inventory=inventory)
        info = {
            **info, **events,
            "tokens_collected": new.collected,
            "tokens_lost": events["tokens_lost"] + new.pick_lost,
            "tokens_consumed": consumed.sum(1),
            **{f"consumed_{k + 1}": consumed[:, k] for k in range(NUM_TOKEN_TYPES)},
            "times_zapped": hits.sum(0),
        }
        return new, reward + pay + gift_pay, done, info

    def get_obs(self, state, params):
        return {**super().get_obs(state, params), "inventory": state.inventory.astype(jnp.float32)}

    def observation_space(self, params=None):
        spaces = dict(super().observation_space(params).spaces)
        spaces["inventory"] = Box(0.0, float(self.capacity), (NUM_TOKEN_TYPES,), jnp.float32)
        return Dict(spaces)

    @property
    def scripted_bots(self) -> tuple[str, ...]:
        """Names of this game's scripted bots (built by
        :mod:`socialjax.agents.bots.gift_refinements`): they read the code observation."""
        return GIFT_BOTS if self.obs_mode == "codes" else ()
