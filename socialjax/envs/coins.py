"""Coins: Melting Pot 2.0 ``coins`` and the LOLA / Pax coin game, ``coins``.

Two players, each with a colour; coins of both colours appear on the map. Taking any
coin pays its taker, taking the other player's colour costs that other player: a
sequential social dilemma in which "collect only your own colour" is the cooperative
strategy.

Melting Pot variant (``variant="meltingpot"``, the default), from
``meltingpot/configs/substrates/coins.py`` (config) and
``meltingpot/lua/levels/coins/components.lua`` (components):

- 2 players (``MANDATED_NUM_PLAYERS``). Player 0's coins are code 8, player 1's code 9
  (``define_object`` below). Melting Pot draws the two colours per build from five
  palettes (``COIN_PALETTES``, ``build``); here they are fixed (blue for player 0,
  yellow for player 1, Melting Pot's ``coin_blue`` and ``coin_yellow``), which only
  changes the picture.
- Map (``get_ascii_map``): an interior of ``width x height`` coin cells (``C``) in a
  ring of walls, anchored top-left and padded with empty space (``" "``, no object; here
  ``OUTSIDE``, unwalkable) to the maximum size; two spawn points ``_`` replace coins at
  interior row 1, second column from the right and interior row ``height - 2``, second
  column from the left (map cells ``(2, width - 1)`` and ``(height - 1, 2)``). Melting
  Pot draws ``width``, ``height`` uniformly in ``[10, 15]`` (``min_width`` ...
  ``max_height``) once per build. Here the static options ``width``, ``height``
  (default 15, the config's maximum; at most 255 here) fix the interior; with ``random_size=True`` each
  episode draws ``width`` in ``[10, width]`` and ``height`` in ``[10, height]`` and
  pads to the static size (:func:`coins_layout`).
- Coins start in their wait state (``StateManager`` ``initialState`` ``"coinWait"``):
  the map starts without coins. Each step every empty coin cell becomes a coin with
  probability ``regrow_rate`` (``ChoiceCoinRegrow``: ``regrowRate`` 0.0005, the
  ``get_prefabs`` default), its colour either player's with probability 1/2
  (``random:choice(liveStates)``); also under a standing player (the coin is on the
  ``superOverlay`` layer, the updater does not look at players), who takes it only by
  entering the cell again (:func:`regrow_coins`).
- Entering a cell with a coin takes it (``Coin:onEnter``). The taker gets
  ``reward_self_match`` (1.0) for its own colour and ``reward_self_mismatch`` (1.0) for
  the other's; the other player gets ``reward_other_match`` (0.0) or
  ``reward_other_mismatch`` (-2.0) (``get_prefabs`` defaults ``reward_self_for_match``
  ... ``reward_other_for_mismatch``; the ``Role`` multipliers are all 1.0)
  (:func:`take_coins`, :func:`coin_rewards`). The cell returns to its wait state.
- 7 actions (``ACTION_SET``): 0 no-op, 1 forward, 2 backward, 3 step left, 4 step
  right, 5 turn left, 6 turn right; the engine's movement (docs/gridworlds.md). No
  zapping: there is no zap action, nobody is ever removed, and ``ready_to_zap`` in the
  observation is always 0 (kept so that one network reads every grid game); the
  engine's zap params have no effect and setting them is an error.
- View: 9 ahead, 1 behind, 5 each side (the Avatar's ``view``).
- Episode: ``StochasticIntervalEpisodeEnding`` with ``minimumFramesPerEpisode`` 300,
  ``intervalLength`` 100, ``probabilityTerminationPerInterval`` 0.05, and
  ``maxEpisodeLengthFrames`` 5000 (``episode="meltingpot"``; params ``min_steps``,
  ``end_interval``, ``end_prob``), or ``episode="fixed"`` with ``episode_length``.
- ``info``: ``coins_collected``, ``own_coins_collected`` (own colour),
  ``other_coins_collected`` (the other's colour: Melting Pot's "mismatch",
  the defection), ``coins_lost`` (own-colour coins the other player took), ``(N,)``.
- Left out: the ``MISMATCHED_COIN_COLLECTED_BY_PARTNER`` observation (a signal for
  Melting Pot's puppeteers, not for policies; ``coins_lost`` in ``info`` carries it).

LOLA variant (``variant="lola"``): the coin game of Foerster et al. 2018 ("Learning
with Opponent-Learning Awareness") as implemented in JAX by Pax
(``pax/envs/coin_game.py`` of the ucl-dark/pax repository, ``CoinGame``, commit
6ae3d07), with Pax's rules, implemented here (:class:`CoinGameLOLA`), not on the grid
engine, because they differ from the Melting Pot avatar:

- a 3x3 torus (positions ``mod 3``), no walls, no headings; 5 absolute actions
  (``MOVES``): 0 right, 1 left, 2 up, 3 down, 4 stay (Pax's names; "up" adds 1 to the
  row); both players move at once and may share a cell;
- always one coin of each colour on the board (Pax's ``red_coin_pos``,
  ``blue_coin_pos``); a player takes a coin when its position after the move equals
  the coin's, also by staying, and both players may take the same coin in one step
  (both are paid); a taken coin reappears at once on a uniformly random cell (possibly
  under a player or on the other coin); at reset the two players and two coins are on
  independent uniform cells;
- payoffs: Pax's ``payoff`` ``[[1, 1, -2], [1, 1, -2]]`` is ``reward_self_match`` 1,
  ``reward_self_mismatch`` 1, ``reward_other_mismatch`` -2 (``reward_other_match`` 0);
- fixed episodes of ``episode_length`` 16 steps (``num_inner_steps: 16`` in Pax's
  ``pax/conf/experiment/cg/*.yaml``), ``truncated``;
- observation (Pax, ``cnn=False``): ``(N, 36) uint8``, a flattened ``3 x 3 x 4`` grid of
  channels [self, other player, own coin, other's coin]; ``egocentric=True`` (Pax's
  configs) centres it on the player (wrapping), ``False`` gives absolute positions (each
  player sees itself as channel 0, as in Pax).

Departure: Pax zeroes both rewards at the step that ends an inner episode (its ``_step``
returns rewards 0 when ``reset_inner``); here that last step pays like every other.
The LOLA paper describes one coin at a time whose colour changes when it is taken; Pax
keeps one coin of each colour, and we follow Pax, whose code we could read.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from socialjax.core.environment import Environment
from socialjax.core.params import EnvParams, param
from socialjax.core.spaces import Box, Discrete
from socialjax.envs.grid import constants as C
from socialjax.envs.grid import engine as E
from socialjax.envs.grid import render as R
from socialjax.envs.grid.base import GridEnv, GridParams, GridState
from socialjax.envs.grid.maps import parse_map, tile

# ----------------------------------------------------------------------- cell codes
BLOCK = "coins"


def _coin_sprite(colour) -> np.ndarray:
    s = np.broadcast_to(np.asarray(R.COLOURS[C.FLOOR], np.uint8), (R.SPRITE, R.SPRITE, 3)).copy()
    yy, xx = np.mgrid[: R.SPRITE, : R.SPRITE]
    s[(yy - 3.5) ** 2 + (xx - 3.5) ** 2 <= 7] = colour
    return s


# Melting Pot coins.py, COIN_PALETTES: coin_blue (68, 119, 170), coin_yellow (204, 187, 68)
COIN_COLOURS = ((68, 119, 170), (204, 187, 68))
COIN_CODES = tuple(
    R.define_object(BLOCK, 8 + j, f"coin of player {j}", COIN_COLOURS[j], _coin_sprite(COIN_COLOURS[j]))
    for j in range(2)
)
COIN_0, COIN_1 = COIN_CODES

# ------------------------------------------------------------------ Melting Pot numbers
NUM_PLAYERS = 2  # coins.py: MANDATED_NUM_PLAYERS
MIN_SIZE, MAX_SIZE = 10, 15  # coins.py get_config: min_width = min_height = 10, max_* = 15
MAX_SIDE = 255  # our limit on width and height: the map is written and parsed cell by cell on the host
REGROW_RATE = 0.0005  # coins.py get_prefabs: regrow_rate (ChoiceCoinRegrow regrowRate)
# coins.py get_prefabs: reward_self_for_match, _self_for_mismatch, _other_for_match, _other_for_mismatch
REWARD_SELF_MATCH, REWARD_SELF_MISMATCH, REWARD_OTHER_MATCH, REWARD_OTHER_MISMATCH = 1.0, 1.0, 0.0, -2.0
# coins.py SCENE, StochasticIntervalEpisodeEnding; build: maxEpisodeLengthFrames 5000
MIN_STEPS, END_INTERVAL, END_PROB, MAX_STEPS = 300, 100, 0.05, 5000
VIEW = (9, 1, 5)  # coins.py get_avatar: view forward 9, backward 1, left = right = 5
NUM_ACTIONS = 7  # coins.py ACTION_SET: noop, forward, backward, step left/right, turn left/right
VARIANTS = ("meltingpot", "lola")

# ------------------------------------------------------------------------ LOLA numbers
LOLA_SIZE = 3  # pax/envs/coin_game.py: positions mod 3
LOLA_EPISODE = 16  # pax/conf/experiment/cg/*.yaml: num_inner_steps 16
# pax/envs/coin_game.py MOVES: right, left, up, down, stay as (drow, dcol)
LOLA_MOVES = np.array([[0, 1], [0, -1], [1, 0], [-1, 0], [0, 0]], np.int32)
LOLA_ACTION_NAMES = ("right", "left", "up", "down", "stay")
LOLA_NOOP = 4

COIN_BOTS = ("coin_cooperator", "coin_defector")  # scripted bots (socialjax.agents.bots.coins)
COIN_EVENTS = ("coins_collected", "own_coins_collected", "other_coins_collected", "coins_lost")


@struct.dataclass
class CoinsParams(GridParams):
    regrow_rate: float = param(REGROW_RATE, 0.0, 1.0, doc="probability an empty coin cell grows a coin per step")
    reward_self_match: float = param(REWARD_SELF_MATCH, doc="taker's reward for a coin of its own colour")
    reward_self_mismatch: float = param(REWARD_SELF_MISMATCH, doc="taker's reward for the other's colour")
    reward_other_match: float = param(REWARD_OTHER_MATCH, doc="other player's reward when the taker takes its own")
    reward_other_mismatch: float = param(REWARD_OTHER_MISMATCH,
                                         doc="coin owner's reward when the other player takes its coin")
    min_steps: int = param(MIN_STEPS, 1, None, doc="stochastic ending: no end before this step")
    end_interval: int = param(END_INTERVAL, 1, None, doc="stochastic ending: steps between end draws")
    end_prob: float = param(END_PROB, 0.0, 1.0, doc="stochastic ending: probability per draw")


@struct.dataclass
class CoinsState(GridState):
    coin_cells: jax.Array  # (H, W) bool: cells where coins grow (this episode's interior minus spawns)
    collected: jax.Array  # (N, 2) int32: coins of colour c taken by player i in the last step


# ------------------------------------------------------------------------------ map
def ascii_map(width: int, height: int, max_width: int, max_height: int) -> str:
    """The Melting Pot layout (``get_ascii_map`` of coins.py) for a given interior size,
    padded with spaces to ``max_width x max_height``: walls ``W``, coins ``C``, spawn
    points ``_`` (written here, not copied)."""
    rows = ["W" * (width + 2)]
    for r in range(height):
        row = ["C"] * width
        if r == 1:
            row[width - 2] = "_"
        elif r == height - 2:
            row[1] = "_"
        rows.append("W" + "".join(row) + "W")
    rows.append("W" * (width + 2))
    rows = [r.ljust(max_width + 2) for r in rows]
    rows += [" " * (max_width + 2)] * (max_height - height)
    return "\n".join(rows)


LEGEND = {
    "W": tile(C.WALL),
    "C": tile(C.FLOOR, "coin_cell"),
    "_": tile(C.FLOOR, "spawn"),
    " ": tile(C.OUTSIDE),
}


def coins_layout(height: jax.Array, width: jax.Array, shape: tuple[int, int]):
    """``(cells (H, W) uint8, coin_cells (H, W) bool, spawns (2, 2) int32)`` of the
    Melting Pot map with a ``height x width`` interior (traced ints) inside the static
    ``shape``: the same layout as :func:`ascii_map`, built with array ops so the size can
    be drawn per episode."""
    r = jnp.arange(shape[0])[:, None]
    c = jnp.arange(shape[1])[None, :]
    interior = (r >= 1) & (r <= height) & (c >= 1) & (c <= width)
    ring = (r <= height + 1) & (c <= width + 1) & ~interior
    spawns = jnp.stack([jnp.stack([2, width - 1]), jnp.stack([height - 1, 2])]).astype(jnp.int32)
    spawn = ((r == spawns[0, 0]) & (c == spawns[0, 1])) | ((r == spawns[1, 0]) & (c == spawns[1, 1]))
    cells = jnp.where(interior, C.FLOOR, jnp.where(ring, C.WALL, C.OUTSIDE)).astype(jnp.uint8)
    return cells, interior & ~spawn, spawns


# ---------------------------------------------------------------------------- rules
def take_coins(cells: jax.Array, pos: jax.Array, moved: jax.Array):
    """Players that moved onto a coin take it; its cell returns to the wait state
    (``FLOOR``). ``cells (H, W) uint8``, ``pos (N, 2)``, ``moved (N,) bool``. Returns
    ``(cells, collected (N, 2) int32)``: ``collected[i, c]`` is 1 if player ``i`` took a
    coin of player ``c``'s colour."""
    here = cells[pos[:, 0], pos[:, 1]]
    collected = jnp.stack([moved & (here == code) for code in COIN_CODES], axis=1).astype(jnp.int32)
    took = collected.sum(1) > 0
    rows = jnp.where(took, pos[:, 0], cells.shape[0])
    return cells.at[rows, pos[:, 1]].set(C.FLOOR, mode="drop"), collected


def coin_rewards(collected: jax.Array, params) -> jax.Array:
    """``(N,) float32`` rewards of ``collected (N, 2)`` (Melting Pot ``Coin:onEnter``): the
    taker gets ``reward_self_match`` / ``_mismatch`` per coin of its own / the other's
    colour; every other player gets ``reward_other_match`` / ``_mismatch`` per coin the
    taker took of the taker's own / another's colour."""
    n = collected.shape[0]
    own = jnp.eye(n, 2, dtype=bool)  # colour c is player c's
    match = jnp.sum(jnp.where(own, collected, 0), axis=1).astype(jnp.float32)
    mismatch = jnp.sum(jnp.where(own, 0, collected), axis=1).astype(jnp.float32)
    self_reward = params.reward_self_match * match + params.reward_self_mismatch * mismatch
    given = params.reward_other_match * match + params.reward_other_mismatch * mismatch
    return self_reward + (given.sum() - given)


def coin_events(collected: jax.Array) -> dict[str, jax.Array]:
    """Per-player ``(N,) int32`` counts of ``collected (N, 2)``: all coins taken, own
    colour, the other's colour, and own-colour coins that another player took."""
    n = collected.shape[0]
    own = jnp.eye(n, 2, dtype=bool)
    mine = jnp.sum(jnp.where(own, collected, 0), axis=1)
    by_colour = collected.sum(0)  # (2,)
    lost = jnp.pad(by_colour, (0, max(n - 2, 0)))[:n] - mine
    return {
        "coins_collected": collected.sum(1),
        "own_coins_collected": mine,
        "other_coins_collected": collected.sum(1) - mine,
        "coins_lost": lost,
    }


def regrow_coins(key: jax.Array, cells: jax.Array, coin_cells: jax.Array, rate) -> jax.Array:
    """Every empty coin cell grows a coin with probability ``rate``, of either colour
    with probability 1/2 (Melting Pot ``ChoiceCoinRegrow``). ``cells (H, W) uint8``."""
    k_grow, k_colour = jax.random.split(key)
    grow = coin_cells & (cells == C.FLOOR) & (jax.random.uniform(k_grow, cells.shape) < rate)
    colour = jnp.where(jax.random.bernoulli(k_colour, 0.5, cells.shape), COIN_1, COIN_0).astype(cells.dtype)
    return jnp.where(grow, colour, cells)


# --------------------------------------------------------------------- Melting Pot env
class Coins(GridEnv):
    """Coins (Melting Pot 2.0 ``coins``; ``variant="lola"``: the LOLA / Pax coin game,
    :class:`CoinGameLOLA`). Static options: ``variant``, ``width`` and ``height`` (interior
    size, 15; at least 4, and at least 10 with ``random_size``), ``random_size`` (draw the
    interior per episode in ``[10, width] x [10, height]``), ``episode``
    ("meltingpot" | "fixed"), ``episode_length`` (fixed episodes: 1000; LOLA: 16),
    ``obs_mode``, ``view``; LOLA only: ``egocentric``. Params: :class:`CoinsParams`."""

    params_cls = CoinsParams
    action_table = C.MELTINGPOT_ACTIONS[:NUM_ACTIONS]
    action_names = C.MELTINGPOT_ACTION_NAMES[:NUM_ACTIONS]
    event_keys = COIN_EVENTS  # no zap, no clean beam; the engine's apples_eaten counts coins_collected
    variant = "meltingpot"

    def __new__(cls, variant: str = "meltingpot", **options):
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
        if variant == "lola":
            allowed = {"episode_length", "egocentric", "num_agents"}
            extra = sorted(k for k in options if k not in allowed)
            if extra:
                raise ValueError(f"coins variant='lola' takes only {sorted(allowed)}, got {extra}")
            return CoinGameLOLA(**options)
        return super().__new__(cls)

    def __init__(self, variant: str = "meltingpot", width: int = MAX_SIZE, height: int = MAX_SIZE,
                 random_size: bool = False, episode: str = "meltingpot", episode_length: int | None = None,
                 obs_mode: str = "codes", view: tuple = VIEW, egocentric: bool = True,
                 num_agents: int = NUM_PLAYERS):
        if num_agents != NUM_PLAYERS:
            raise ValueError(f"coins has exactly {NUM_PLAYERS} players (Melting Pot MANDATED_NUM_PLAYERS), "
                             f"got num_agents={num_agents!r}")
        if egocentric is not True:
            raise ValueError("egocentric is an option of variant='lola' only")
        low = MIN_SIZE if random_size else 4
        for name, value in (("width", width), ("height", height)):
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= MAX_SIDE:
                raise ValueError(f"{name} must be an int in [{low}, {MAX_SIDE}]"
                                 f"{' with random_size (Melting Pot min 10)' if random_size else ''}, got {value!r}")
        self.width, self.height, self.random_size = width, height, bool(random_size)
        grid_map = parse_map(f"coins_{height}x{width}", ascii_map(width, height, width, height), LEGEND)
        super().__init__(
            grid_map, NUM_PLAYERS, NUM_ACTIONS, tuple(view), E.straight_beam(1),
            episode=episode, episode_length=1000 if episode_length is None else episode_length,
            max_steps=MAX_STEPS, obs_mode=obs_mode,
        )

    def inert_params(self):
        why = "coins has no zap action"
        return {**super().inert_params(), "zap_cooldown": why, "respawn_delay": why, "zap_cost": why,
                "zap_penalty": why}

    def walkable(self, cells):
        return (cells != C.WALL) & (cells != C.OUTSIDE)

    def initial_state(self, key, params):
        k_base, k_size, k_order = jax.random.split(key, 3)
        state = super().initial_state(k_base, params)
        if self.random_size:
            kh, kw = jax.random.split(k_size)
            height = jax.random.randint(kh, (), MIN_SIZE, self.height + 1)
            width = jax.random.randint(kw, (), MIN_SIZE, self.width + 1)
        else:
            height, width = jnp.int32(self.height), jnp.int32(self.width)
        cells, coin_cells, spawns = coins_layout(height, width, self.map.shape)
        pos = spawns[E.random_order(k_order, 2)]  # each player on a random one of the two spawn points
        return CoinsState(**{**vars(state), "cells": cells, "pos": pos}, coin_cells=coin_cells,
                          collected=jnp.zeros((NUM_PLAYERS, 2), jnp.int32))

    def eat(self, state, moved, params):
        cells, collected = take_coins(state.cells, state.pos, moved)
        return state.replace(cells=cells, collected=collected), collected.sum(1)

    def update_world(self, key, state, params):
        return state.replace(cells=regrow_coins(key, state.cells, state.coin_cells, params.regrow_rate))

    def transition(self, key, state, actions, params):
        new, reward, done, info = super().transition(key, state, actions, params)
        # the base step pays +1 per object taken; coins pay by colour instead
        reward = reward - new.collected.sum(1) + coin_rewards(new.collected, params)
        return new, reward, done, {**info, **coin_events(new.collected)}

    @property
    def scripted_bots(self) -> tuple[str, ...]:
        """Names of this game's scripted bots (built by :mod:`socialjax.agents.bots.coins`):
        they read the code observation."""
        return COIN_BOTS if self.obs_mode == "codes" else ()

    def get_obs(self, state, params):
        obs = super().get_obs(state, params)
        return {**obs, "ready_to_zap": jnp.zeros_like(obs["ready_to_zap"])}  # no zap action


# --------------------------------------------------------------------------- LOLA env
@struct.dataclass
class CoinGameParams(EnvParams):
    reward_self_match: float = param(1.0, doc="taker's reward for a coin of its own colour (Pax payoff[i][i])")
    reward_self_mismatch: float = param(1.0, doc="taker's reward for the other's colour (Pax payoff[i][1-i])")
    reward_other_match: float = param(0.0, doc="other player's reward when the taker takes its own (Pax: none)")
    reward_other_mismatch: float = param(-2.0, doc="coin owner's reward when the other takes it (Pax payoff[i][2])")


@struct.dataclass
class CoinGameState:
    pos: jax.Array  # (2, 2) int32 players' cells
    coin_pos: jax.Array  # (2, 2) int32 cell of the coin of each player's colour
    collected: jax.Array  # (2, 2) int32 coins of colour c taken by player i in the last step
    t: jax.Array  # () int32


def lola_collect(pos: jax.Array, coin_pos: jax.Array) -> jax.Array:
    """``(2, 2) int32``: player ``i`` takes coin ``c`` when it stands on it after the move
    (both players may take the same coin). ``pos``, ``coin_pos``: ``(2, 2)``."""
    return jnp.all(pos[:, None, :] == coin_pos[None, :, :], axis=-1).astype(jnp.int32)


def lola_obs(pos: jax.Array, coin_pos: jax.Array, egocentric: bool) -> jax.Array:
    """``(2, 3, 3, 4) uint8`` channels [self, other, own coin, other's coin] per player,
    centred on the player (wrapping) when ``egocentric`` (Pax ``_state_to_obs``)."""
    out = []
    for i in range(2):
        shift = (1 - pos[i]) if egocentric else jnp.zeros(2, jnp.int32)
        things = jnp.stack([pos[i], pos[1 - i], coin_pos[i], coin_pos[1 - i]])  # (4, 2)
        cells = (things + shift) % LOLA_SIZE
        grid = jnp.zeros((LOLA_SIZE, LOLA_SIZE, 4), jnp.uint8)
        out.append(grid.at[cells[:, 0], cells[:, 1], jnp.arange(4)].set(1))
    return jnp.stack(out)


class CoinGameLOLA(Environment):
    """The LOLA coin game as in Pax (see the module docstring); built by
    ``make("coins", variant="lola")``. Static options: ``episode_length`` (16),
    ``egocentric`` (True). Params: :class:`CoinGameParams`."""

    params_cls = CoinGameParams
    action_names = LOLA_ACTION_NAMES
    event_keys = COIN_EVENTS
    variant = "lola"

    def __init__(self, episode_length: int | None = None, egocentric: bool = True, num_agents: int = NUM_PLAYERS):
        if num_agents != NUM_PLAYERS:
            raise ValueError(f"the coin game has exactly 2 players, got num_agents={num_agents!r}")
        super().__init__(NUM_PLAYERS)
        episode_length = LOLA_EPISODE if episode_length is None else episode_length
        if not isinstance(episode_length, int) or isinstance(episode_length, bool) or episode_length < 1:
            raise ValueError(f"episode_length must be a positive int, got {episode_length!r}")
        self.episode_length = episode_length
        self.egocentric = bool(egocentric)
        self.noop_action = LOLA_NOOP
        self.num_actions = len(LOLA_MOVES)

    def initial_state(self, key, params):
        where = jax.random.randint(key, (4, 2), 0, LOLA_SIZE, jnp.int32)
        return CoinGameState(pos=where[:2], coin_pos=where[2:], collected=jnp.zeros((2, 2), jnp.int32),
                             t=jnp.zeros((), jnp.int32))

    def transition(self, key, state, actions, params):
        pos = (state.pos + jnp.asarray(LOLA_MOVES)[actions]) % LOLA_SIZE
        collected = lola_collect(pos, state.coin_pos)
        taken = collected.sum(0) > 0  # (2,) per coin
        fresh = jax.random.randint(key, (2, 2), 0, LOLA_SIZE, jnp.int32)
        coin_pos = jnp.where(taken[:, None], fresh, state.coin_pos)
        t = state.t + 1
        truncated = t >= self.episode_length
        info = {"terminated": jnp.zeros((), bool), "truncated": truncated, **coin_events(collected)}
        new = CoinGameState(pos=pos, coin_pos=coin_pos, collected=collected, t=t)
        return new, coin_rewards(collected, params), truncated, info

    scripted_bots = COIN_BOTS  # names; built by socialjax.agents.bots.coins

    def get_obs(self, state, params):
        return lola_obs(state.pos, state.coin_pos, self.egocentric).reshape(NUM_PLAYERS, -1)

    def action_space(self, params=None):
        return Discrete(self.num_actions)

    def observation_space(self, params=None):
        return Box(0, 1, (LOLA_SIZE * LOLA_SIZE * 4,), jnp.uint8)

    def render(self, state: CoinGameState) -> jax.Array:
        """``(24, 24, 3) uint8``: floor; coin ``c`` a 4x4 square in its colour (player 0's
        in the upper-left quarter, player 1's in the lower-right, so two coins on one cell
        both show); player ``j`` a 1-pixel frame in its colour (player 0 the outer frame,
        player 1 the next one in)."""
        s = R.SPRITE
        img = jnp.broadcast_to(jnp.asarray(R.COLOURS[C.FLOOR], jnp.uint8), (LOLA_SIZE * s, LOLA_SIZE * s, 3))
        yy, xx = np.mgrid[: LOLA_SIZE * s, : LOLA_SIZE * s]
        cy, cx = jnp.asarray(yy // s), jnp.asarray(xx // s)
        py, px = yy % s, xx % s
        coin_mask = [(py < 4) & (px < 4) & (py >= 1) & (px >= 1), (py >= 4) & (px >= 4) & (py < 7) & (px < 7)]
        frame = [np.minimum(np.minimum(py, px), np.minimum(s - 1 - py, s - 1 - px)) == k for k in (0, 1)]
        for c in range(2):
            on = (cy == state.coin_pos[c, 0]) & (cx == state.coin_pos[c, 1]) & jnp.asarray(coin_mask[c])
            img = jnp.where(on[..., None], jnp.asarray(COIN_COLOURS[c], jnp.uint8), img)
        for j in range(2):
            on = (cy == state.pos[j, 0]) & (cx == state.pos[j, 1]) & jnp.asarray(frame[j])
            img = jnp.where(on[..., None], jnp.asarray(R.AGENT_COLOURS[j], jnp.uint8), img)
        return img
