"""Wrappers that keep the environment contract.

- :class:`EpisodeStats` logs per-agent episode returns and lengths (gymnax's
  ``LogWrapper``, with agents as an array axis). Its ``reset``/``step`` have the same
  signatures as :class:`~socialjax.core.environment.Environment`'s, so it can stand in
  for the environment anywhere (``jit``, ``vmap``, ``lax.scan``).
- :class:`JaxMARLAdapter` exposes JaxMARL's ``MultiAgentEnv`` dict API so that JaxMARL
  training code runs unchanged.

Every wrapper forwards the attributes it does not define (``num_agents``, ``name``,
``agents``, ``default_params``, ``action_space`` ...) to the environment it wraps.
"""

from __future__ import annotations

import copy
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from socialjax.core.environment import Environment
from socialjax.core.params import EnvParams
from socialjax.core.spaces import Box, Dict, Discrete, Space


class Wrapper:
    """Base class: holds an environment (or another wrapper) and forwards attributes."""

    def __init__(self, env: Environment | Wrapper):
        self._env = env

    def __getattr__(self, name: str) -> Any:
        if name == "_env":  # not set yet (copy / unpickle): do not recurse
            raise AttributeError(name)
        return getattr(self._env, name)

    @property
    def unwrapped(self) -> Environment:
        """The innermost environment."""
        env = self._env
        return env.unwrapped if isinstance(env, Wrapper) else env

    def with_params(self, **changes: Any) -> Wrapper:
        """A copy of this wrapper around ``env.with_params(**changes)``; the original is
        untouched."""
        new = copy.copy(self)
        new._env = self._env.with_params(**changes)
        return new

    def render(self, state: Any) -> jax.Array:
        """Render through to the wrapped environment with its own part of the state."""
        return self._env.render(getattr(state, "env_state", state))

    def global_observation(self, state: Any, params: EnvParams | None = None) -> Any:
        """The wrapped environment's global observation of its own part of the state
        (``global_observation_space`` is forwarded as it is)."""
        return self._env.global_observation(getattr(state, "env_state", state), params)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._env!r})"


# --------------------------------------------------------------------------- stats
@struct.dataclass
class EpisodeStatsState:
    """State of :class:`EpisodeStats` (``N = num_agents``)."""

    env_state: Any
    episode_returns: jax.Array  # (N,) float32: return of the running episode so far
    episode_length: jax.Array  # () int32: steps taken in the running episode
    returned_episode_returns: jax.Array  # (N,) float32: return of the last completed episode
    returned_episode_lengths: jax.Array  # () int32: length of the last completed episode
    episode_count: jax.Array  # () int32: episodes completed since reset


class EpisodeStats(Wrapper):
    """Accumulate per-agent episode returns and lengths across auto-resets.

    Rules, per environment (so they hold under ``vmap``):

    - each step adds its reward ``(N,)`` to the running return and 1 to the length;
    - on a step with ``done``, the running return *including that step's reward* and
      the length including that step become ``returned_episode_returns`` /
      ``returned_episode_lengths``, the episode counter increases by one, and the
      running return and length restart from zero (the environment has auto-reset);
    - ``returned_*`` keep the last completed episode's values until the next one ends.

    ``info`` gains, every step: ``returned_episode_returns`` ``(N,) float32``,
    ``returned_episode_lengths`` ``() int32``, ``returned_episode`` ``() bool`` (an
    episode ended on this step, i.e. ``done``) and ``episode_count`` ``() int32``.
    """

    def reset(
        self, key: jax.Array, params: EnvParams | None = None
    ) -> tuple[jax.Array, EpisodeStatsState]:
        obs, env_state = self._env.reset(key, params)
        n = self._env.num_agents
        state = EpisodeStatsState(
            env_state=env_state,
            episode_returns=jnp.zeros((n,), jnp.float32),
            episode_length=jnp.zeros((), jnp.int32),
            returned_episode_returns=jnp.zeros((n,), jnp.float32),
            returned_episode_lengths=jnp.zeros((), jnp.int32),
            episode_count=jnp.zeros((), jnp.int32),
        )
        return obs, state

    def step(
        self,
        key: jax.Array,
        state: EpisodeStatsState,
        actions: jax.Array,
        params: EnvParams | None = None,
    ) -> tuple[jax.Array, EpisodeStatsState, jax.Array, jax.Array, dict[str, jax.Array]]:
        obs, env_state, reward, done, info = self._env.step(key, state.env_state, actions, params)
        episode_returns = state.episode_returns + reward.astype(jnp.float32)
        episode_length = state.episode_length + 1
        state = EpisodeStatsState(
            env_state=env_state,
            episode_returns=jnp.where(done, jnp.zeros_like(episode_returns), episode_returns),
            episode_length=jnp.where(done, jnp.zeros_like(episode_length), episode_length),
            returned_episode_returns=jnp.where(done, episode_returns, state.returned_episode_returns),
            returned_episode_lengths=jnp.where(done, episode_length, state.returned_episode_lengths),
            episode_count=state.episode_count + done.astype(jnp.int32),
        )
        info = dict(info)
        info["returned_episode_returns"] = state.returned_episode_returns
        info["returned_episode_lengths"] = state.returned_episode_lengths
        info["returned_episode"] = done
        info["episode_count"] = state.episode_count
        return obs, state, reward, done, info


# --------------------------------------------------------------------------- JaxMARL
OBS_FORMATS = ("flat", "image", "dict")
IMAGE_KEYS = ("grid", "rgb")  # a grid game's view: cell codes (one-hot in an image) or RGB pixels


def _leaf_bounds(space: Space, name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)`` float32 arrays of ``space.shape`` for a ``Box`` or ``Discrete`` leaf."""
    if isinstance(space, Box):
        return np.asarray(space.low, np.float32), np.asarray(space.high, np.float32)
    if isinstance(space, Discrete):
        return np.zeros((), np.float32), np.full((), space.n - 1, np.float32)
    raise TypeError(f"observation entry {name!r}: a flat or image observation needs Box or Discrete entries, "
                    f"got {space}")


class ObservationFormat:
    """How :class:`JaxMARLAdapter` hands each agent its observation, and that observation's
    space (``space``, per agent). Called on the agent-stacked observation ``(N, ...)``.

    - ``"flat"``: one vector ``(D,)``, what JaxMARL's MLP and RNN baselines build their
      networks from (``observation_space(agent).shape[0]``). A ``Box`` observation of rank
      0 or 1 is already flat and passes unchanged; a ``Box`` of higher rank is reshaped
      (same dtype); a ``Dict`` (a grid game's ``{"grid", "ready_to_zap", ...}``) becomes
      float32, its entries flattened and concatenated in name order (``grid`` codes as
      numbers, then e.g. ``inventory``, then ``ready_to_zap``), with the entries' bounds.
    - ``"image"``: ``(H, W, C)`` float32 for a CNN baseline (JaxMARL's Overcooked CNN): a
      grid game's ``grid`` codes one-hot over the ``high + 1`` codes of its space (a code
      names a thing, it is not a brightness), or its ``rgb`` pixels (``obs_mode="rgb"``)
      as 0..255, then each other entry (name order) as constant channels, one per number.
    - ``"dict"``: the environment's own observation and space (the structured ``Dict``).
    """

    def __init__(self, kind: str, space: Space, num_agents: int, env_name: str):
        if kind not in OBS_FORMATS:
            raise ValueError(f"{env_name}: obs_format must be one of {OBS_FORMATS}, got {kind!r}")
        self.kind, self.env_space, self.num_agents = kind, space, num_agents
        entries = space.spaces if isinstance(space, Dict) else {}
        self.view_key = next((k for k in IMAGE_KEYS if k in entries), None)
        if kind == "image" and self.view_key is None:
            raise ValueError(f"{env_name}: obs_format='image' needs a grid game's observation (a Dict with one of "
                             f"{IMAGE_KEYS}), got {space}; use 'flat'")
        self.others = sorted(k for k in entries if k != self.view_key)
        self.num_codes = 0  # the one-hot width of a grid's codes ("image"), set by _image_space
        self.space = {"flat": self._flat_space, "image": self._image_space, "dict": lambda: space}[kind]()

    def _flat_space(self) -> Space:
        space = self.env_space
        if isinstance(space, Box):
            if len(space.shape) <= 1:
                return space
            return Box(space.low.reshape(-1), space.high.reshape(-1), (int(np.prod(space.shape)),), space.dtype)
        if not isinstance(space, Dict):
            raise TypeError(f"obs_format='flat' needs a Box or Dict observation space, got {space}")
        bounds = [_leaf_bounds(space.spaces[k], k) for k in sorted(space.spaces)]
        low = np.concatenate([lo.reshape(-1) for lo, _ in bounds])
        high = np.concatenate([hi.reshape(-1) for _, hi in bounds])
        return Box(low, high, low.shape, jnp.float32)

    def _image_space(self) -> Box:
        view = self.env_space.spaces[self.view_key]
        height, width = view.shape[:2]
        if self.view_key == "grid":
            self.num_codes = int(np.max(view.high)) + 1
            low, high = np.zeros(self.num_codes, np.float32), np.ones(self.num_codes, np.float32)
        else:
            low, high = (np.asarray(b, np.float32)[0, 0] for b in (view.low, view.high))
        bounds = [_leaf_bounds(self.env_space.spaces[k], k) for k in self.others]
        low = np.concatenate([low] + [lo.reshape(-1) for lo, _ in bounds])
        high = np.concatenate([high] + [hi.reshape(-1) for _, hi in bounds])
        shape = (height, width, low.size)
        return Box(np.broadcast_to(low, shape), np.broadcast_to(high, shape), shape, jnp.float32)

    def __call__(self, obs: Any) -> Any:
        """``(N, ...)`` observation of every agent -> ``(N, *space.shape)`` (or as it is)."""
        n = self.num_agents
        if self.kind == "dict" or self.space is self.env_space:
            return obs
        if self.kind == "flat" and not isinstance(obs, dict):
            return jnp.reshape(obs, (n, -1))
        if self.kind == "flat":
            return jnp.concatenate([jnp.reshape(obs[k], (n, -1)).astype(jnp.float32) for k in sorted(obs)], axis=-1)
        view = obs[self.view_key]
        if self.view_key == "grid":
            view = jax.nn.one_hot(view, self.num_codes, dtype=jnp.float32)
        view = view.astype(jnp.float32)
        cells = view.shape[:3]
        extras = [jnp.broadcast_to(jnp.reshape(obs[k], (n, 1, 1, -1)), cells + (int(np.prod(jnp.shape(obs[k])[1:])),))
                  for k in self.others]
        return jnp.concatenate([view] + [e.astype(jnp.float32) for e in extras], axis=-1)


class JaxMARLAdapter(Wrapper):
    """JaxMARL's ``MultiAgentEnv`` API over a socialjax environment, so that JaxMARL's
    baselines (``baselines/IPPO/ippo_ff_mpe.py``, ``ippo_rnn.py`` ...) and its wrappers
    (``jaxmarl.wrappers.baselines.LogWrapper`` ...) run on it unchanged.

    Agents are named ``"agent_0" ... "agent_{N-1}"`` in the order of the agent axis.
    The params are those given at construction (``env.default_params`` when ``None``;
    a copy with other params comes from :meth:`with_params`)::

        obs, state = env.reset(key)                        # obs: {agent: (*obs_shape)}
        obs, state, rewards, dones, infos = env.step(key, state, actions)
        # actions: {agent: (*action_shape)} or {agent: (*action_shape, 1)}
        # rewards: {agent: () float32}; dones: {agent: () bool, "__all__": () bool}

    Actions: each agent's action has the action space's shape, or that shape with a
    trailing axis of 1 (JaxMARL's baselines hand each agent an action of shape ``(1,)``:
    their ``unbatchify`` reshapes to ``(num_agents, num_envs, -1)``), which is dropped.

    Observations (``obs_format``, :class:`ObservationFormat`): ``"flat"`` (the default)
    gives every agent one vector ``(D,)`` and a ``Box`` space with a ``.shape``, so that
    ``jnp.zeros(env.observation_space(agent).shape)`` and ``.shape[0]`` work as in
    JaxMARL's MLP and RNN baselines (the matrix and institution games' ``Box``
    observations pass unchanged; a grid game's ``Dict`` is flattened); ``"image"`` gives a
    grid game's view as ``(H, W, C)`` float32 for CNN baselines; ``"dict"`` keeps the
    environment's structured observation. ``global_observation`` is the game's own.

    ``step`` auto-resets like JaxMARL's. ``infos`` holds the per-agent scalars of the
    environment's ``info``, each of shape ``(N,)`` as JaxMARL's baselines expect (they
    reshape every info leaf to ``(num_envs * N,)``): a per-environment scalar
    (``terminated``, ``truncated``, ...) is broadcast to ``(N,)`` and an ``(N,)`` leaf
    is kept. No value is a dict: a dict-valued entry is split into ``"name/key"``
    entries (``final_obs`` is first put in ``obs_format``). Leaves of any other shape
    (``final_obs`` ``(N, *obs_shape)``, a donor game's ``(G, N)`` table ...) would break
    that reshape and are left out, unless ``full_info=True``, which passes them through.

    Differences from JaxMARL: ``step`` takes no ``reset_state`` (socialjax environments
    reset from a key; passing one raises), and nothing is jitted here: jit the caller,
    as every training loop does (JaxMARL's ``LogWrapper`` jits its own methods).
    """

    def __init__(self, env: Environment | Wrapper, params: EnvParams | None = None, full_info: bool = False,
                 obs_format: str = "flat"):
        super().__init__(env)
        self.full_info = bool(full_info)
        self.obs_format = obs_format
        self.num_agents: int = env.num_agents
        self.agents: list[str] = list(env.agents)
        self._set_params(params)

    def _set_params(self, params: EnvParams | None) -> None:
        """Validate ``params`` (``None``: the env's defaults) and derive the spaces."""
        self.params = self._env._resolve_params(params)
        self.format = ObservationFormat(self.obs_format, self._env.observation_space(self.params),
                                        self.num_agents, self._env.name)
        self.observation_spaces: dict[str, Space] = {agent: self.format.space for agent in self.agents}
        self.action_spaces: dict[str, Space] = {
            agent: self._env.action_space(self.params) for agent in self.agents
        }

    def with_params(self, **changes: Any) -> JaxMARLAdapter:
        """A copy of this adapter with some params replaced (validated); the original
        is untouched."""
        fields = type(self.params).field_names()
        unknown = sorted(set(changes) - set(fields))
        if unknown:
            raise ValueError(f"{self.name}: unknown parameter(s) {unknown}; valid parameters: {fields}")
        new = copy.copy(self)
        new._set_params(self.params.replace(**changes))
        return new

    @property
    def name(self) -> str:
        return self._env.name

    def reset(self, key: jax.Array) -> tuple[dict[str, Any], Any]:
        obs, state = self._env.reset(key, self.params)
        return self.unstack(self.format(obs)), state

    def step(
        self, key: jax.Array, state: Any, actions: dict[str, Any], reset_state: Any = None
    ) -> tuple[dict[str, Any], Any, dict[str, jax.Array], dict[str, jax.Array], dict[str, jax.Array]]:
        if reset_state is not None:
            raise ValueError(f"{self.name}: reset_state is not supported: socialjax environments reset from a key")
        obs, state, reward, done, info = self._env.step(key, state, self.stack(actions), self.params)
        dones = {agent: done for agent in self.agents}
        dones["__all__"] = done
        return self.unstack(self.format(obs)), state, self.unstack(reward), dones, self.per_agent_info(info)

    def observation_space(self, agent: str | None = None) -> Space:
        """The space of one agent's observation in ``obs_format`` (all agents share it)."""
        return self.observation_spaces[self._agent(agent)]

    def action_space(self, agent: str | None = None) -> Space:
        """The space of one agent's action (all agents share it)."""
        return self.action_spaces[self._agent(agent)]

    def global_observation(self, state: Any) -> Any:
        """The game's global observation (``Environment.global_observation``: what a
        centralised critic sees, no agent axis) with this adapter's params."""
        return self._env.global_observation(state, self.params)

    def global_observation_space(self) -> Space:
        """The space of :meth:`global_observation` with this adapter's params."""
        return self._env.global_observation_space(self.params)

    def get_avail_actions(self, state: Any) -> dict[str, jax.Array]:
        """Every action is always available: ``{agent: (n,) bool}`` of ones."""
        space = self.action_spaces[self.agents[0]]
        if not isinstance(space, Discrete):
            raise TypeError(f"{self.name}: available actions are defined for Discrete action spaces, not {space}")
        return {agent: jnp.ones((space.n,), bool) for agent in self.agents}

    # -------------------------------------------------------------- conversions
    def stack(self, actions: dict[str, Any]) -> jax.Array:
        """``{agent: (*action_shape)}`` (or ``(*action_shape, 1)``, whose last axis is
        dropped) -> ``(N, *action_shape)`` in agent order (numpy where every value is a
        host value, else a JAX array). Other shapes are left for the environment to
        reject with its own message."""
        if not isinstance(actions, dict):
            raise TypeError(f"{self.name}: actions must be a dict keyed by {self.agents}, got {type(actions).__name__}")
        missing = [a for a in self.agents if a not in actions]
        extra = sorted(set(actions) - set(self.agents))
        if missing or extra:
            raise ValueError(
                f"{self.name}: actions must have exactly the keys {self.agents}; "
                f"missing {missing}, unknown {extra}"
            )
        shape = tuple(self.action_spaces[self.agents[0]].shape)
        values = [actions[agent] for agent in self.agents]
        if any(isinstance(v, jax.Array) for v in values):
            values = [jnp.asarray(v) for v in values]
            return jnp.stack([v.reshape(shape) if v.shape == shape + (1,) else v for v in values])
        # host values stay numpy, so that the environment sees a 64-bit action before
        # JAX's cast would wrap it into range (Environment.prepare_actions flags it)
        values = [np.asarray(v) for v in values]
        return np.stack([v.reshape(shape) if v.shape == shape + (1,) else v for v in values])

    def unstack(self, tree: Any) -> dict[str, Any]:
        """A pytree whose leaves are ``(N, ...)`` -> ``{agent: tree of (...)}``."""
        return {agent: jax.tree_util.tree_map(lambda x, i=i: x[i], tree) for i, agent in enumerate(self.agents)}

    def per_agent_info(self, info: dict[str, Any]) -> dict[str, Any]:
        """Per-agent ``(N,)`` view of ``info``: ``final_obs`` in ``obs_format``, every
        dict-valued entry split into ``"name/key"`` entries, then scalars broadcast to
        ``(N,)``, ``(N,)`` leaves kept, other shapes left out (kept when ``full_info``)."""
        n = self.num_agents
        info = dict(info)
        if "final_obs" in info:
            info["final_obs"] = self.format(info["final_obs"])
        out = {}
        for name, value in _split_dicts(info).items():
            shape = jnp.shape(value)
            if shape == ():
                out[name] = jnp.broadcast_to(value, (n,))
            elif shape == (n,) or self.full_info:
                out[name] = value
        return out

    def _agent(self, agent: str | None) -> str:
        if agent is None:
            return self.agents[0]
        if agent not in self.observation_spaces:
            raise ValueError(f"{self.name}: unknown agent {agent!r}; agents are {self.agents}")
        return agent


def _split_dicts(info: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": x}, "c": y}`` -> ``{"a/b": x, "c": y}``: array values only, any depth."""
    out = {}
    for name, value in info.items():
        if isinstance(value, dict):
            out.update(_split_dicts(value, f"{prefix}{name}/"))
        else:
            out[prefix + name] = value
    return out
