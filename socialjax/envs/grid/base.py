"""``GridEnv``: the step every spatial game shares; games override a few hooks.

Order of one step (all agents act simultaneously; conflicts resolved fairly):

1. Removed agents ignore their action. Present agents turn (turn actions), then try
   their moves in a uniformly random order (:func:`engine.resolve_moves`).
2. An agent that entered a cell with a live apple eats it (+1), :meth:`GridEnv.eat`.
3. Beams fire from the new positions: zap (if the zap cooldown allows it), then clean.
   Hits are resolved by :meth:`GridEnv.on_zap_hits` (Melting Pot: removal; SSD: fines;
   Gathering: tagging).
4. The world updates (:meth:`GridEnv.update_world`: regrowth, dirt); with
   ``spawn_under_agents = False`` (SSD) no cell under an agent changes in this phase.
5. Removal timers count down; an agent whose timer reaches 0 respawns at a random free
   spawn point with a random heading.
6. The episode may end (stochastic Melting Pot ending or a fixed length).

Beam cooldown (Melting Pot's Zapper and Cleaner): in a step where the timer is above 0
it only counts down by one; when it is 0 the agent may fire, which sets it to
``zap_cooldown`` (``clean_cooldown``). So with cooldown ``c`` an agent firing at every
opportunity fires every ``c + 1`` steps (every step with ``c = 0``). ``ready_to_zap``
in the observation is 1 when the timer is 0: a zap on the next step would fire.

Removal: an agent hit at step ``t`` is off the map in the observations after steps
``t .. t + d - 1`` (``d = respawn_delay``), ignores its actions in steps
``t + 1 .. t + d``, receives no reward meanwhile, and is back (respawned) in the
observation after step ``t + d``. A removed agent sees ``OUTSIDE`` in every cell.

Observation (``obs_mode="codes"``, the default): ``{"grid": (N, Vh, Vw) uint8,
"ready_to_zap": (N,) uint8}``; ``obs_mode="rgb"`` replaces ``grid`` by
``"rgb": (N, 8 Vh, 8 Vw, 3) uint8`` sprites. The global observation (for centralised
critics, :meth:`GridEnv.global_observation`) is the whole map instead of the views:
``{"grid": (H, W) uint8, "ready_to_zap": (N,) uint8}`` (``"rgb": (8 H, 8 W, 3)`` with
``obs_mode="rgb"``), plus a game's own per-player entries stacked over the players.

``info`` (per step, ``(N,)``): ``apples_eaten``, ``zaps_fired``, ``times_zapped``,
``cells_cleaned``, ``removed`` (bool: off the map after this step), plus
``terminated`` and ``truncated``. A stochastic Melting Pot ending is ``terminated``;
the hard cap and a fixed episode length are ``truncated``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from socialjax.core.environment import Environment, stacked_observations, stacked_space
from socialjax.core.lazy import lazy_where
from socialjax.core.params import EnvParams, param
from socialjax.core.spaces import Box, Dict, Discrete
from socialjax.envs.grid import constants as C
from socialjax.envs.grid import engine as E
from socialjax.envs.grid import render as R
from socialjax.envs.grid.maps import GridMap

# Melting Pot stochastic episode ending (commons_harvest__open config,
# StochasticIntervalEpisodeEnding): at least 1000 steps, then at each 100-step boundary
# the episode ends with probability 0.15; hard cap 5000 steps (static).
MIN_STEPS, END_INTERVAL, END_PROB, MAX_STEPS = 1000, 100, 0.15, 5000
EPISODE_MODES = ("meltingpot", "fixed")
MAX_AGENTS = (256 - C.AGENT_BASE) // 4  # agent codes must fit in a uint8
OBS_MODES = ("codes", "rgb")
#: the observation entries that are each player's egocentric view, one per obs mode
VIEW_KEYS = ("grid", "rgb")


@struct.dataclass
class GridParams(EnvParams):
    """Numbers shared by the grid games (each game adds its own)."""

    zap_cooldown: int = param(2, 0, None, doc="steps between zaps")
    respawn_delay: int = param(4, 1, None, doc="steps a zapped agent stays removed")
    zap_cost: float = param(0.0, doc="reward change of the shooter per zap fired")
    zap_penalty: float = param(0.0, doc="reward change of an agent per hit")
    clean_cooldown: int = param(0, 0, None, doc="steps between clean beams")
    min_steps: int = param(MIN_STEPS, 1, None, doc="stochastic ending: no end before this step")
    end_interval: int = param(END_INTERVAL, 1, None, doc="stochastic ending: steps between end draws")
    end_prob: float = param(END_PROB, 0.0, 1.0, doc="stochastic ending: probability per draw")


@struct.dataclass
class GridState:
    cells: jax.Array  # (H, W) uint8 cell codes (terrain and objects; agents are not in it)
    pos: jax.Array  # (N, 2) int32
    heading: jax.Array  # (N,) int32
    removed: jax.Array  # (N,) int32 steps left off the map (0: present)
    zap_cooldown: jax.Array  # (N,) int32
    clean_cooldown: jax.Array  # (N,) int32
    t: jax.Array  # () int32 steps taken


class GridEnv(Environment):
    """Base of the spatial games. Subclasses set the map, action table, beams and the
    hooks :meth:`eat`, :meth:`on_zap_hits`, :meth:`update_world`, :meth:`walkable`.
    The hooks take and return the game's state; a game with state of its own extends
    :class:`GridState` and :meth:`initial_state` (as Gathering does)."""

    params_cls = GridParams
    action_table: np.ndarray = C.MELTINGPOT_ACTIONS
    action_names: tuple[str, ...] = C.MELTINGPOT_ACTION_NAMES
    #: the engine's events every game on it can produce; a game with a clean beam adds
    #: ``cells_cleaned``, one whose eating is not of apples declares its own
    event_keys = ("apples_eaten", "zaps_fired", "times_zapped")
    #: Melting Pot grows apples (and dirt) under standing agents; the original SSD code
    #: does not spawn anything on a cell an agent occupies
    spawn_under_agents: bool = True
    #: Melting Pot's clean beam passes through players; every SSD beam stops at the first
    clean_stops_at_agents: bool = False

    def __init__(
        self,
        grid_map: GridMap,
        num_agents: int,
        num_actions: int,
        view: tuple[int, int, int],
        zap_rays: E.Rays,
        clean_rays: E.Rays | None = None,
        episode: str = "meltingpot",
        episode_length: int = 1000,
        max_steps: int = MAX_STEPS,
        obs_mode: str = "codes",
        first_spawn: tuple[str, ...] = (),
        spawn_role: str = "spawn",
        torus: bool = False,
    ):
        super().__init__(num_agents)
        if num_agents > MAX_AGENTS:
            raise ValueError(
                f"num_agents={num_agents}: grid games encode agents in uint8 cell codes, at most {MAX_AGENTS} agents"
            )
        if episode not in EPISODE_MODES:
            raise ValueError(f"episode must be one of {EPISODE_MODES}, got {episode!r}")
        if obs_mode not in OBS_MODES:
            raise ValueError(f"obs_mode must be one of {OBS_MODES}, got {obs_mode!r}")
        if len(view) != 3 or not all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                                     for v in view):
            raise ValueError(f"view must be three ints (ahead, behind, side), got {tuple(view)!r}")
        view = tuple(int(v) for v in view)
        ahead, behind, side = view
        h, w = grid_map.shape
        if min(ahead, behind, side) < 0 or ahead + behind + 1 > 2 * h + 1 or 2 * side + 1 > 2 * w + 1:
            raise ValueError(
                f"view (ahead, behind, side)={view} must be non-negative and no larger than twice the "
                f"map ({h}x{w})"
            )
        for name, value in (("episode_length", episode_length), ("max_steps", max_steps)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        self.map = grid_map
        self.num_actions = num_actions
        self.view = view
        self.offsets = E.window_offsets(*view)
        self.zap_rays = zap_rays
        self.clean_rays = clean_rays
        self.episode = episode
        self.episode_length = episode_length
        self.max_steps = max_steps if episode == "meltingpot" else episode_length
        self.obs_mode = obs_mode
        #: Melting Pot's ``topology = "TORUS"``: moves, beams and views wrap around the edges
        self.torus = bool(torus)
        self.noop_action = 0
        # spawn points: respawns use `spawn_role`; the first spawn of agent i uses
        # first_spawn[i] when given (e.g. Harvest's inside spawn points for agents 0, 1)
        self.spawn_points = grid_map.points(spawn_role)
        groups = [first_spawn[i] if i < len(first_spawn) else spawn_role for i in range(num_agents)]
        self.first_spawn_groups = groups
        for role in set(groups):
            need, have = groups.count(role), len(grid_map.points(role))
            if have < need:
                raise ValueError(
                    f"map {grid_map.name!r} has {have} {role!r} spawn points but {need} agents spawn there "
                    f"(num_agents={num_agents})"
                )
        if len(self.spawn_points) < num_agents:
            raise ValueError(
                f"map {grid_map.name!r} has {len(self.spawn_points)} spawn points for num_agents={num_agents}"
            )
        self.walls = grid_map.cells == C.WALL
        self.atlas = R.sprite_atlas(num_agents)
        self.alpha = R.sprite_alpha(num_agents)

    # ------------------------------------------------------------------ params
    def inert_params(self) -> dict[str, str]:
        """Params this configuration never reads, each with the reason. Changing one
        from its default is an error (a sweep over it would silently do nothing)."""
        inert = {}
        if self.episode != "meltingpot":
            for name in ("min_steps", "end_interval", "end_prob"):
                inert[name] = "episodes have a fixed length (episode='fixed')"
        if self.clean_rays is None:
            inert["clean_cooldown"] = "this game has no clean beam"
        return inert

    def check_params(self, params) -> None:
        if not hasattr(self, "_inert_defaults"):
            defaults = self.make_default_params()
            self._inert_defaults = {k: np.asarray(getattr(defaults, k), np.float64) for k in self.inert_params()}
        for name, why in self.inert_params().items():
            value = getattr(params, name)
            if isinstance(value, jax.core.Tracer):
                continue
            # float32 defaults vs Python floats: equal up to float32 precision
            if not np.allclose(np.asarray(value, np.float64), self._inert_defaults[name], rtol=1e-6, atol=0):
                raise ValueError(f"{self.name}: {name}={np.asarray(value).tolist()!r} has no effect: {why}")

    # ------------------------------------------------------------------ hooks
    def walkable(self, cells: jax.Array) -> jax.Array:
        """``(H, W) bool``: cells an agent may enter (default: anything but walls)."""
        return cells != C.WALL

    def eat(self, state, moved, params):
        """Agents that moved (``moved (N,) bool``) onto a live apple eat it; ``state``
        has this step's positions. Returns ``(state, eaten (N,) int32)``."""
        cells, pos = state.cells, state.pos
        here = cells[pos[:, 0], pos[:, 1]]
        eaten = moved & (here == C.APPLE)
        rows = jnp.where(eaten, pos[:, 0], cells.shape[0])
        cells = cells.at[rows, pos[:, 1]].set(C.APPLE_CELL, mode="drop")
        return state.replace(cells=cells), eaten.astype(jnp.int32)

    def on_zap_hits(self, hits, state, params):
        """Melting Pot: any hit removes the agent for ``respawn_delay`` steps. ``hits
        (N_shooter, N_target)``; ``state.removed`` is still that before the step.
        Returns the state with the new ``removed``."""
        hit = hits.sum(0) > 0
        return state.replace(removed=jnp.where(hit & (state.removed == 0), params.respawn_delay, state.removed))

    def update_world(self, key, state, params):
        """Regrowth, dirt: returns the state with the new ``cells`` (``state.t`` is still
        the step count before this step)."""
        return state

    def initial_cells(self, key, params) -> jax.Array:
        return jnp.asarray(self.map.cells)

    # ------------------------------------------------------------------ contract
    def initial_state(self, key, params):
        key_pos, key_head, key_cells = jax.random.split(key, 3)
        pos = jnp.zeros((self.num_agents, 2), jnp.int32)
        for i, role in enumerate(sorted(set(self.first_spawn_groups))):
            members = np.array([a for a, g in enumerate(self.first_spawn_groups) if g == role])
            points = jnp.asarray(self.map.points(role))
            chosen = E.random_order(jax.random.fold_in(key_pos, i), points.shape[0], len(members))
            pos = pos.at[members].set(points[chosen])
        n = self.num_agents
        return GridState(
            cells=self.initial_cells(key_cells, params),
            pos=pos,
            heading=jax.random.randint(key_head, (n,), 0, 4, jnp.int32),
            removed=jnp.zeros(n, jnp.int32),
            zap_cooldown=jnp.zeros(n, jnp.int32),
            clean_cooldown=jnp.zeros(n, jnp.int32),
            t=jnp.zeros((), jnp.int32),
        )

    def transition(self, key, state, actions, params):
        k_move, k_spawn, k_head, k_world, k_end = jax.random.split(key, 5)
        n = self.num_agents
        present = state.removed == 0
        table = jnp.asarray(self.action_table)[actions]
        rel_move = jnp.where(present, table[:, 0], C.NO_MOVE)
        turn = jnp.where(present, table[:, 1], 0)
        beam = jnp.where(present, table[:, 2], C.NO_BEAM)

        # 1. turns and moves
        heading = E.apply_turns(state.heading, turn, present)
        target, wants = E.move_targets(state.pos, heading, rel_move)
        if self.torus:
            target = E.wrap(target, self.map.shape)
        pos, moved = E.resolve_moves(k_move, state.pos, target, wants, self.walkable(state.cells), present)
        # 2. eating
        new, eaten = self.eat(state.replace(pos=pos, heading=heading), moved, params)
        reward = eaten.astype(jnp.float32)
        # 3. beams
        agents = E.agent_grid(self.map.shape, pos, present)
        zapping = (beam == C.ZAP) & (state.zap_cooldown == 0)
        zap_cd = jnp.maximum(state.zap_cooldown - 1, 0)
        zap_cells, zap_reached = E.trace_beams(self.zap_rays, pos, heading, zapping, jnp.asarray(self.walls), agents,
                                               self.torus)
        hits = E.beam_hits(zap_cells, zap_reached, agents)
        zap_cd = jnp.where(zapping, params.zap_cooldown, zap_cd)
        new = self.on_zap_hits(hits, new, params)
        times_zapped = hits.sum(0)
        reward = reward + params.zap_cost * zapping + params.zap_penalty * times_zapped
        cells = new.cells
        clean_cd = jnp.maximum(state.clean_cooldown - 1, 0)
        cleaned = jnp.zeros(n, jnp.int32)
        if self.clean_rays is not None:
            cleaning = (beam == C.CLEAN) & (state.clean_cooldown == 0)
            clean_cells, clean_reached = E.trace_beams(
                self.clean_rays, pos, heading, cleaning, jnp.asarray(self.walls),
                agents if self.clean_stops_at_agents else None, self.torus,
            )
            first_dirt = E.first_matching(clean_cells, clean_reached, cells, C.DIRT)
            cleaned = first_dirt.sum((1, 2)).astype(jnp.int32)
            rows = jnp.where(first_dirt, clean_cells[..., 0], cells.shape[0])
            cells = cells.at[rows, clean_cells[..., 1]].set(C.RIVER, mode="drop")
            clean_cd = jnp.where(cleaning, params.clean_cooldown, clean_cd)
        # 4. the world
        new = self.update_world(k_world, new.replace(cells=cells), params)
        if not self.spawn_under_agents:
            new = new.replace(cells=jnp.where(agents >= 0, cells, new.cells))
        # 5. removal timers and respawn (agents removed before this step count down)
        was_removed = ~present
        removed = jnp.where(was_removed, jnp.maximum(new.removed - 1, 0), new.removed)
        due = was_removed & (removed == 0)
        # drawn only on steps where some game has a player coming back (socialjax.core.lazy)
        pos, heading = lazy_where(jnp.any(due), self._respawn, _stay, k_spawn, k_head, due, removed, pos, heading)
        # removed agents get no reward
        reward = jnp.where(present, reward, 0.0)
        # 6. episode end
        t = state.t + 1
        if self.episode == "meltingpot":
            draw = (t >= params.min_steps) & (t % params.end_interval == 0)
            terminated = draw & (jax.random.uniform(k_end) < params.end_prob)
            truncated = (t >= self.max_steps) & ~terminated
        else:
            terminated = jnp.zeros((), bool)
            truncated = t >= self.episode_length
        new = new.replace(
            pos=pos, heading=heading, removed=removed, zap_cooldown=zap_cd, clean_cooldown=clean_cd, t=t
        )
        info = {
            "terminated": terminated,
            "truncated": truncated,
            "apples_eaten": eaten,
            "zaps_fired": zapping.astype(jnp.int32),
            "times_zapped": times_zapped,
            "cells_cleaned": cleaned,
            "removed": removed > 0,
        }
        return new, reward, terminated | truncated, info

    def _respawn(self, k_spawn, k_head, due, removed, pos, heading):
        """Players ``due`` back on the map at distinct random free spawn points, each
        with a random heading."""
        agents_now = E.agent_grid(self.map.shape, pos, (removed == 0) & ~due)
        spawn = E.random_free_points(k_spawn, jnp.asarray(self.spawn_points), agents_now, due)
        pos = jnp.where(due[:, None], spawn, pos)
        heading = jnp.where(due, jax.random.randint(k_head, (self.num_agents,), 0, 4, jnp.int32), heading)
        return pos, heading

    # ------------------------------------------------------------------ observation
    def get_obs(self, state: GridState, params) -> dict:
        present = state.removed == 0
        view = E.egocentric_views(state.cells, state.pos, state.heading, present, self.view, self.torus)
        ready = (state.zap_cooldown == 0) & present
        out = {"ready_to_zap": ready.astype(jnp.uint8)}
        if self.obs_mode == "rgb":
            under = E.egocentric_views(state.cells, state.pos, state.heading, present, self.view, self.torus,
                                       draw_agents=False)
            out["rgb"] = R.codes_to_rgb(view, self.atlas, under, self.alpha)
        else:
            out["grid"] = view
        return out

    def global_observation(self, state: GridState, params=None) -> dict:
        """The whole map, with who is where, and every player's own numbers (one game, no
        agent axis):

        - ``"grid": (H, W) uint8``: the map's codes with each present agent ``j`` drawn
          as ``AGENT_BASE + 4 j + heading_j`` (absolute heading, 0 = N), i.e.
          :func:`engine.world_codes`: the map :meth:`get_obs` cuts the egocentric views
          from and :meth:`render` draws; a removed agent is not on it. With
          ``obs_mode="rgb"`` it is ``"rgb": (8 H, 8 W, 3) uint8``, what :meth:`render`
          draws (Melting Pot's ``WORLD.RGB``).
        - every other entry of the observation (``"ready_to_zap"`` and a game's own, such
          as an inventory) with its players stacked by
          :func:`~socialjax.core.environment.stack_players`: ``"ready_to_zap": (N,)
          uint8``, an inventory ``(N, K)`` becomes ``(N * K,)``, player 0's first.

        The stacked entries are taken from :meth:`get_obs`, so a game that changes or adds
        a per-player entry there (Coins' zero ``ready_to_zap``, an inventory) needs no
        override here; under ``jit`` XLA drops the egocentric views computed there,
        which nothing reads."""
        params = self._resolve_params(params)
        obs = self.get_obs(state, params)
        out = stacked_observations({name: x for name, x in obs.items() if name not in VIEW_KEYS})
        if self.obs_mode == "rgb":
            out["rgb"] = self.render(state)
        else:
            out["grid"] = E.world_codes(state.cells, state.pos, state.heading, state.removed == 0)
        return out

    def global_observation_space(self, params=None) -> Dict:
        """``Dict`` of ``"grid": Box(0, top, (H, W), uint8)`` (``top`` =
        :func:`engine.top_code`, the largest code of the observation's ``grid`` too) or
        ``"rgb": Box(0, 255, (8 H, 8 W, 3), uint8)``, and the other entries of
        :meth:`observation_space` stacked by
        :func:`~socialjax.core.environment.stacked_space` (``"ready_to_zap": Box(0, 1,
        (N,), uint8)``, an inventory's bounds repeated for every player)."""
        h, w = self.map.shape
        own = {name: space for name, space in self.observation_space(params).spaces.items() if name not in VIEW_KEYS}
        spaces = stacked_space(Dict(own), self.num_agents).spaces
        if self.obs_mode == "rgb":
            spaces["rgb"] = Box(0, 255, (R.SPRITE * h, R.SPRITE * w, 3), jnp.uint8)
        else:
            spaces["grid"] = Box(0, E.top_code(self.num_agents), (h, w), jnp.uint8)
        return Dict(spaces)

    def render(self, state: GridState) -> jax.Array:
        """``(8 H, 8 W, 3) uint8`` image of the whole map (jittable, vmappable)."""
        world = E.world_codes(state.cells, state.pos, state.heading, state.removed == 0)
        return R.codes_to_rgb(world, self.atlas, state.cells, self.alpha)

    def action_space(self, params=None):
        return Discrete(self.num_actions)

    def observation_space(self, params=None):
        ahead, behind, side = self.view
        vh, vw = ahead + behind + 1, 2 * side + 1
        top = E.top_code(self.num_agents)
        spaces = {"ready_to_zap": Box(0, 1, (), jnp.uint8)}
        if self.obs_mode == "rgb":
            spaces["rgb"] = Box(0, 255, (8 * vh, 8 * vw, 3), jnp.uint8)
        else:
            spaces["grid"] = Box(0, top, (vh, vw), jnp.uint8)
        return Dict(spaces)


def _stay(k_spawn, k_head, due, removed, pos, heading):
    """:meth:`GridEnv._respawn` on a step where nobody is due: positions and headings kept."""
    return pos, heading


class SSDFines:
    """Mixin of the original SSD games (Hughes et al. 2018; Jaques et al. 2019; put it
    before the game's base class): the fire beam fines the target ``zap_penalty``
    (applied by the base step) and removes nobody, so ``respawn_delay`` is inert."""

    def inert_params(self):
        return {**super().inert_params(), "respawn_delay": "the SSD fire beam removes nobody (it fines)"}

    def on_zap_hits(self, hits, state, params):
        return state
