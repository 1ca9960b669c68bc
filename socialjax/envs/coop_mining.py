"""Cooperative Mining (Melting Pot 2.0 ``coop_mining``): ``coop_mining``.

Source: ``meltingpot/configs/substrates/coop_mining.py`` (map, players, actions, the
prefabs' component kwargs) and ``meltingpot/lua/levels/coop_mining/components.lua``
(``Ore``, ``FixedRateRegrow``, ``MineBeam``) of google-deepmind/meltingpot. A
stag-hunt in space: iron pays one miner a little, gold pays two miners a lot.

Rules, each with its source:

- **Map and players.** The config's ``ASCII_MAP`` (27 x 27): ``W`` wall, ``O`` an ore
  cell, ``P`` a spawn point (not an ore cell; 18 of them; 538 ore cells). 6 players
  (``default_player_roles``); static ``num_agents`` (1 .. 18). Ore lies on the
  ``lowerPhysical`` layer and players on ``upperPhysical``, so players walk over ore
  cells of every state (:meth:`CoopMining.walkable`: anything but walls).
- **Ore states** (the ore prefab's ``StateManager``): ``oreWait`` (empty, invisible: code
  ``FLOOR`` here), ``ironRaw`` (:data:`IRON`), ``goldRaw`` (:data:`GOLD`),
  ``goldPartial`` (:data:`GOLD_PARTIAL`: gold that one player has mined, it "flashes").
  Every ore cell starts empty (``initialState`` ``oreWait``).
- **Regrowth** (:func:`regrow_ore`; ``FixedRateRegrow``: ``liveRates`` 0.0002 for
  ``ironRaw``, 0.00008 for ``goldRaw``): each step an empty ore cell becomes iron with
  probability ``iron_regrowth`` and gold with probability ``gold_regrowth``, but not
  while a player stands on it (the updater checks ``upperPhysical`` for an avatar). Melting
  Pot runs the two updaters one after the other; we draw one uniform number per cell,
  so iron and gold have exactly their rates (run in turn, the two updaters could differ
  from that by at most 0.0002 x 0.00008 = 1.6e-8 per cell and step).
- **Actions** (``ACTION_SET``): 0 no-op, 1 forward, 2 backward, 3 step left, 4 step
  right, 5 turn left, 6 turn right, 7 mine. Moves and turns are the engine's.
- **Mining beam** (``MineBeam``: ``beamLength`` 3, ``beamRadius`` 0, ``cooldownTime``
  3): one ray, cells 1..3 straight ahead, stopped by walls (the wall's ``BeamBlocker``
  for ``mine``) and by the first raw or partial ore on it, which it hits (``Ore:onHit``
  returns true); it passes through players and empty ore cells (no component of theirs
  answers a ``mine`` hit). ``MineBeam:update`` counts its timer down *before* testing
  it, so a player mining at every chance mines every 3 steps; the engine's cooldown
  (fire at 0, then set to ``zap_cooldown``, count down while above 0) gives every
  ``zap_cooldown + 1`` steps, so the default ``zap_cooldown`` is 2.
  ``ready_to_zap`` is 1 when a mine on the next step would fire (Melting Pot's
  ``READY_TO_SHOOT`` is the fraction ``1 - timer / cooldownTime``).
- **Iron** (the second ``Ore`` component: ``minNumMiners`` 1): a hit extracts it at
  once; the miner gets ``iron_reward`` (``roleRewardForExtracting`` of role ``none``:
  1) and the cell is empty again.
- **Gold** (the first ``Ore`` component: ``minNumMiners`` 2, ``miningWindow`` 3;
  :func:`mine_ore`): a hit on raw gold makes it partial and records the miner; a hit by
  a *different* player while it is partial extracts it and pays **both** miners
  ``gold_reward`` (``roleRewardForExtracting`` ``none``: 8; ``Ore:onHit`` pays every
  recorded miner); a hit by the same player again only restarts the window
  (``Ore:addMiner``). The window: each hit sets the cell's timer to ``gold_window``
  (3); at the end of every step the timer counts down and a partial ore whose timer
  reaches 0 reverts to raw gold with no miners (``Ore:update`` / ``Ore:reset``). So a
  partial ore made in step ``t`` can be finished in steps ``t .. t + 2`` and is raw
  again in the state after step ``t + 2``. The first miner is paid even if it has
  walked away. A third miner cannot join: gold is extracted as soon as two have mined.
- **Mining itself pays nothing** (``roleRewardForMining`` of role ``none``: 0, 0).
- **Order within a step.** Moves, then beams from the new positions, one player at a
  time in a uniformly random order (Melting Pot: the order of the avatars' updates),
  each beam seeing what the earlier ones left: two players hitting one iron ore in the
  same step give it to the first, and the second beam goes on to the next ore behind it;
  two players hitting raw gold in the same step extract it together. Then the gold
  windows count down, then ore regrows (:meth:`CoopMining.transition`).
- **No zapping, no removal**: the only beam is the mining beam and nobody is removed
  (``respawn_delay`` and ``zap_penalty`` are inert and raise an error if set).
- **Episode end**: ``StochasticIntervalEpisodeEnding`` (``minimumFramesPerEpisode``
  1000, ``intervalLength`` 100, ``probabilityTerminationPerInterval`` 0.2) and
  ``maxEpisodeLengthFrames`` 5000 (the engine's Melting Pot ending, ``end_prob`` 0.2);
  ``episode="fixed"`` gives fixed-length episodes.
- **Observation**: the engine's 11 x 11 window (the Avatar's ``view``: 9 ahead, 1 behind,
  5 each side) and ``ready_to_zap``. Nobody carries anything, so there is no inventory.

``info`` per step ``(N,)``: ``iron_extracted`` (iron ores this player extracted),
``gold_mined`` (hits that made or kept a gold ore partial), ``gold_extracted`` (gold ores
this player was paid for: both miners count one), besides the engine's keys
(``zaps_fired`` counts mining beams fired; ``apples_eaten``, ``times_zapped``,
``cells_cleaned`` are 0). The reward is ``iron_reward * iron_extracted + gold_reward *
gold_extracted + zap_cost * zaps_fired``.

SocialJax's own ``coop_mining`` (cooperativex/SocialJax,
``socialjax/environments/coop_mining/coop_mining.py``) differs from Melting Pot in: 4
players by default; gold pays only the player who finishes it; no mining cooldown;
players mine in index order; fixed 1000-step episodes; a shared reward by default. We
follow Melting Pot.
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

# -- cell codes (block "coop_mining"; colours: the "&" entries of IRON_PALETTE and GOLD_PALETTE
#    in the config, the partial ore drawn with the palette's light "@" shade)
IRON = R.define_object("coop_mining", 16, "iron ore", (140, 120, 140))
GOLD = R.define_object("coop_mining", 17, "gold ore", (180, 180, 40))
GOLD_PARTIAL = R.define_object("coop_mining", 18, "gold ore, partly mined", (220, 220, 60))
EMPTY_ORE = C.FLOOR  # the oreWait state is invisible (shapes.INVISIBLE_PALETTE)

# -- the map (config ASCII_MAP; CHAR_PREFAB_MAP: P spawn_point, W wall, O ore)
COOP_MINING_MAP = """
WWWWWWWWWWWWWWWWWWWWWWWWWWW
WOOOOOOOOOOOOOOOOOOOOOOOOOW
WOPOOOOOOOOOPOOOOOPOOOOOPOW
WOOOOOOOOWOOOOOOOOOOOOOOOOW
WOOOOOOOOWOOOOOOOOOOWOOOOOW
WOOOOOOOOWOOOOOOOOOOWOOOOOW
WOOOOOOOOWWWWWWWOOOOWOOOPOW
WOPOWWOOOOWOOOOOOOOOWOOOOOW
WOOOOOOOOOWOOPOOOOOOOOOOOOW
WOOOOOOOOOWOOOOOWWWOOOOOOOW
WOOOOOOOOOWOOOOOOOOOOOOOOOW
WOOOOOOOOOOOOOOOOOOOOOOOPOW
WOPOOOWWWOOOOOOWWWWWWWWOOOW
WOOWWWWOOOOOOOOOOOOOOOOOOOW
WOOOOOWOOOOWOOOOOPOOOOOOOOW
WOOOOOWOOOOWOOOOOOOOOOOOPOW
WOOOOOWOOOOOWOOOOOOOOWOOOOW
WOOOOOOWOOOOOWWWWOOOOWOOOOW
WOPOOOOOWOOOOOOOOOOOOWOOOOW
WOOOOOOOOWOOOPOOOOOOOOOOPOW
WOOOOOOOOOWOOOOOOOOWOOOOOOW
WOOOOWOOOOOOOOOOOOOWOOOOOOW
WOOOOWOOOOOOOOOWWWWWWWWOOOW
WOOOOWOOOOOOOOOOOOWOOOOOOOW
WOPOOOOOOPOOOOOOOPOOOOOOPOW
WOOOOOOOOOOOOOOOOOOOOOOOOOW
WWWWWWWWWWWWWWWWWWWWWWWWWWW
"""
LEGEND = {"W": tile(C.WALL), "O": tile(EMPTY_ORE, "ore"), "P": tile(C.FLOOR, "spawn")}

NUM_AGENTS = 6  # default_player_roles
VIEW = (9, 1, 5)  # Avatar view: forward 9, backward 1, left / right 5
BEAM_LENGTH = 3  # MineBeam beamLength (beamRadius 0: one ray)
MINE = 7  # ACTION_SET index of MINE
ACTION_NAMES = C.MELTINGPOT_ACTION_NAMES[:7] + ("mine",)
IRON_REWARD = 1.0  # MineBeam roleRewardForExtracting["none"][1]
GOLD_REWARD = 8.0  # MineBeam roleRewardForExtracting["none"][2]
GOLD_WINDOW = 3  # gold Ore miningWindow (minNumMiners 2)
IRON_REGROWTH = 0.0002  # FixedRateRegrow liveRates, ironRaw
GOLD_REGROWTH = 0.00008  # FixedRateRegrow liveRates, goldRaw
MINE_PERIOD = 3  # MineBeam cooldownTime: one mine every 3 steps (see the module docstring)
END_PROB = 0.2  # StochasticIntervalEpisodeEnding probabilityTerminationPerInterval


@struct.dataclass
class CoopMiningParams(GridParams):
    iron_reward: float = param(IRON_REWARD, doc="reward for extracting an iron ore (one miner)")
    gold_reward: float = param(GOLD_REWARD, doc="reward to each of the two miners of a gold ore")
    gold_window: int = param(GOLD_WINDOW, 1, None, doc="steps a partly mined gold ore waits for a second miner")
    iron_regrowth: float = param(IRON_REGROWTH, 0.0, 1.0, doc="probability an empty ore cell becomes iron per step")
    gold_regrowth: float = param(GOLD_REGROWTH, 0.0, 1.0, doc="probability an empty ore cell becomes gold per step")
    zap_cooldown: int = param(MINE_PERIOD - 1, 0, None, doc="mining beam cooldown: one mine every cooldown + 1 steps")
    min_steps: int = param(MIN_STEPS, 1, None, doc="stochastic ending: no end before this step")
    end_interval: int = param(END_INTERVAL, 1, None, doc="stochastic ending: steps between end draws")
    end_prob: float = param(END_PROB, 0.0, 1.0, doc="stochastic ending: probability per draw")

    def check(self):
        iron, gold, window = self.iron_regrowth, self.gold_regrowth, self.gold_window
        concrete = not isinstance(iron, jax.core.Tracer) and not isinstance(gold, jax.core.Tracer)
        if concrete and np.any(np.asarray(iron) + np.asarray(gold) > 1):
            raise ValueError(f"CoopMiningParams: iron_regrowth + gold_regrowth must be <= 1, "
                             f"got {brief(iron)} + {brief(gold)}")
        if not isinstance(window, jax.core.Tracer) and np.any(np.asarray(window) % 1 != 0):
            raise ValueError(f"CoopMiningParams.gold_window={brief(window)} must be a whole number of steps")


@struct.dataclass
class CoopMiningState(GridState):
    miner: jax.Array  # (H, W) int32 the player who made a gold ore partial (-1: none)
    window: jax.Array  # (H, W) int32 steps left in a partial gold ore's window (0: none)


class CoopMining(GridEnv):
    """Cooperative Mining (Melting Pot 2.0). Static options: ``num_agents`` (6),
    ``episode`` ("meltingpot" | "fixed"), ``episode_length`` (for "fixed"), ``obs_mode``
    ("codes" | "rgb"), ``view`` ((ahead, behind, side), default (9, 1, 5)). Params:
    :class:`CoopMiningParams`. Rules: the module docstring."""

    params_cls = CoopMiningParams
    action_table = C.MELTINGPOT_ACTIONS[:8]
    action_names = ACTION_NAMES
    event_keys = ("iron_extracted", "gold_mined", "gold_extracted", "zaps_fired")
    #: scripted bots (:mod:`socialjax.agents.bots.coop_mining`): name -> the ore codes they mine, preferred first
    BOT_TARGETS = {"iron_miner": (IRON,), "gold_miner": (GOLD_PARTIAL, GOLD)}
    scripted_bots = tuple(BOT_TARGETS)

    def __init__(self, num_agents: int = NUM_AGENTS, episode: str = "meltingpot", episode_length: int = 1000,
                 obs_mode: str = "codes", view: tuple = VIEW):
        grid_map = parse_map("coop_mining", COOP_MINING_MAP, LEGEND)
        rays = E.meltingpot_beam(BEAM_LENGTH, 0)
        super().__init__(
            grid_map, num_agents, len(self.action_table), tuple(view), rays,
            episode=episode, episode_length=episode_length, max_steps=MAX_STEPS, obs_mode=obs_mode,
        )
        self.ore_cells = grid_map.role("ore")

    def inert_params(self):
        why = "coop_mining's only beam is the mining beam, which hits ore, not players"
        return {**super().inert_params(), "respawn_delay": why, "zap_penalty": why}

    def initial_state(self, key, params):
        state = super().initial_state(key, params)
        shape = self.map.shape
        return CoopMiningState(**vars(state), miner=jnp.full(shape, -1, jnp.int32),
                               window=jnp.zeros(shape, jnp.int32))

    def eat(self, state, moved, params):
        return state, jnp.zeros(self.num_agents, jnp.int32)  # nothing is eaten

    def on_zap_hits(self, hits, state, params):
        return state  # the mining beam removes nobody

    def transition(self, key, state, actions, params):
        # the engine moves the players and runs the beam's cooldown (info["zaps_fired"]:
        # who mines this step); nobody is ever removed, so new.pos are the positions after
        # this step's moves, where the beams start
        k_base, k_order, k_grow = jax.random.split(key, 3)
        new, reward, done, info = super().transition(k_base, state, actions, params)
        firing = info["zaps_fired"] > 0
        ray_cells, reached = E.trace_beams(self.zap_rays, new.pos, new.heading, firing, jnp.asarray(self.walls), None)
        order = E.random_order(k_order, self.num_agents)
        cells, miner, window, pay, events = mine_ore(
            order, new.cells, new.miner, new.window, ray_cells[:, 0], reached[:, 0], params
        )
        cells, miner, window = close_windows(cells, miner, window)
        cells = regrow_ore(k_grow, cells, jnp.asarray(self.ore_cells), new.pos, params)
        new = new.replace(cells=cells, miner=miner, window=window)
        info = {**info, **events, "times_zapped": jnp.zeros(self.num_agents, jnp.int32)}
        return new, reward + pay, done, info


def mine_ore(order, cells, miner, window, ray_cells, reached, params):
    """The mining beams of one step, one player at a time in ``order (N,)``, each seeing
    the cells the earlier ones left. Player ``i``'s beam hits the first raw or partial
    ore among its ``reached (N, L) bool`` cells ``ray_cells (N, L, 2)`` (walls already
    cut the ray; ``reached`` is all False for a player not mining). Iron is extracted
    (``iron_reward``); raw gold becomes partial with ``miner = i`` and ``window =
    gold_window``; partial gold hit by its own miner restarts its window, hit by another
    player is extracted and pays both ``gold_reward``.

    ``cells (H, W) uint8``, ``miner``, ``window (H, W) int32``. Returns ``(cells, miner,
    window, reward (N,) float32, events)`` with ``events`` the ``(N,) int32`` counts
    ``iron_extracted``, ``gold_mined``, ``gold_extracted``."""
    n = ray_cells.shape[0]
    h = cells.shape[0]
    reward = jnp.zeros(n, jnp.float32)
    iron_out = jnp.zeros(n, jnp.int32)
    gold_hits = jnp.zeros(n, jnp.int32)
    gold_out = jnp.zeros(n, jnp.int32)
    ids = jnp.arange(n)
    for k in range(n):  # n is static and small: unrolled
        i = order[k]
        ray = ray_cells[i]  # (L, 2)
        codes = E.gather(cells, ray, C.WALL)
        is_ore = reached[i] & ((codes == IRON) | (codes == GOLD) | (codes == GOLD_PARTIAL))
        hit = jnp.any(is_ore)
        r, c = ray[jnp.argmax(is_ore)]
        r, c = jnp.clip(r, 0, h - 1), jnp.clip(c, 0, cells.shape[1] - 1)
        code, first = cells[r, c], miner[r, c]
        iron = hit & (code == IRON)
        start = hit & (code == GOLD)
        again = hit & (code == GOLD_PARTIAL) & (first == i)
        finish = hit & (code == GOLD_PARTIAL) & (first != i)
        new_code = jnp.where(iron | finish, EMPTY_ORE, jnp.where(start | again, GOLD_PARTIAL, code))
        cells = cells.at[r, c].set(new_code.astype(cells.dtype))
        miner = miner.at[r, c].set(jnp.where(start, i, jnp.where(finish, -1, first)))
        window = window.at[r, c].set(
            jnp.where(start | again, params.gold_window, jnp.where(finish, 0, window[r, c])).astype(window.dtype)
        )
        me, partner = ids == i, ids == first
        paid = (me | partner) & finish
        reward = reward + jnp.where(me & iron, params.iron_reward, 0.0) + jnp.where(paid, params.gold_reward, 0.0)
        iron_out = iron_out + (me & iron)
        gold_hits = gold_hits + (me & (start | again))
        gold_out = gold_out + paid
    events = {"iron_extracted": iron_out, "gold_mined": gold_hits, "gold_extracted": gold_out}
    return cells, miner, window, reward, events


def close_windows(cells, miner, window):
    """End of step: every running gold window counts down by one; a partial gold ore
    whose window reaches 0 reverts to raw gold with no miner (``Ore:update`` /
    ``Ore:reset``). ``cells (H, W) uint8``, ``miner``, ``window (H, W) int32``."""
    window = jnp.maximum(window - 1, 0)
    expired = (cells == GOLD_PARTIAL) & (window == 0)
    cells = jnp.where(expired, jnp.asarray(GOLD, cells.dtype), cells)
    return cells, jnp.where(expired, -1, miner), window


def regrow_ore(key, cells, ore_cells, pos, params):
    """Each empty ore cell (``ore_cells (H, W) bool`` and code ``EMPTY_ORE``) with no
    player on it (``pos (N, 2)``) becomes iron with probability ``iron_regrowth`` and
    gold with probability ``gold_regrowth`` (one uniform draw per cell; Melting Pot's
    ``FixedRateRegrow``). Returns the new ``cells (H, W) uint8``."""
    occupied = jnp.zeros(cells.shape, bool).at[pos[:, 0], pos[:, 1]].set(True)
    empty = ore_cells & (cells == EMPTY_ORE) & ~occupied
    u = jax.random.uniform(key, cells.shape)
    iron = empty & (u < params.iron_regrowth)
    gold = empty & ~iron & (u < params.iron_regrowth + params.gold_regrowth)
    cells = jnp.where(iron, jnp.asarray(IRON, cells.dtype), cells)
    return jnp.where(gold, jnp.asarray(GOLD, cells.dtype), cells)
