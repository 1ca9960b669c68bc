"""PettingZoo Parallel API over a socialjax environment, for CPU users of PettingZoo tooling.

:class:`PettingZooAdapter` steps one environment at a time from Python: a jitted
``reset`` and ``step`` (compiled once per environment object: adapters over the same
``sj.make(...)`` share them), outputs converted to numpy and Python scalars, agents as
dict keys::

    env = PettingZooAdapter(sj.make("ipd", num_rounds=10), seed=0)
    observations, infos = env.reset(seed=0)         # {agent: np.ndarray (*obs_shape)}
    while env.agents:
        actions = {agent: env.action_space(agent).sample() for agent in env.agents}
        observations, rewards, terminations, truncations, infos = env.step(actions)

Needs ``pip install "socialjax[pettingzoo]"`` (pettingzoo and gymnasium); importing
``socialjax`` does not import this module.
"""

from __future__ import annotations

import functools
import io
import sys
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

try:
    import gymnasium
    from pettingzoo import ParallelEnv
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        'socialjax.core.PettingZooAdapter needs pettingzoo and gymnasium: pip install "socialjax[pettingzoo]"'
    ) from err

from socialjax.core import spaces as sj_spaces
from socialjax.core.environment import Environment
from socialjax.core.params import EnvParams
from socialjax.core.wrappers import Wrapper

RENDER_MODES = ("human", "rgb_array", "ansi")
_NO_WINDOW = ("agg", "pdf", "ps", "svg", "pgf", "cairo", "template")  # matplotlib backends that draw to files


def _in_notebook() -> bool:
    """Whether this is a Jupyter kernel (IPython imported, with a kernel)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    return getattr(shell, "kernel", None) is not None


def _window_backend() -> bool:
    """Whether matplotlib (if imported or importable) opens windows here."""
    try:
        import matplotlib  # heavy: only asked when a map is to be shown
    except ImportError:
        return False
    backend = matplotlib.get_backend().lower()
    return not (backend in _NO_WINDOW or backend.startswith("module://"))


def _png(frame: np.ndarray) -> bytes:
    import matplotlib.image  # heavy: only when a notebook shows a map

    buffer = io.BytesIO()
    matplotlib.image.imsave(buffer, frame, format="png")
    return buffer.getvalue()


def to_gymnasium(space: sj_spaces.Space) -> gymnasium.spaces.Space:
    """The gymnasium space of a socialjax (per-agent) space: Discrete, Box or Dict."""
    if isinstance(space, sj_spaces.Discrete):
        return gymnasium.spaces.Discrete(space.n)  # int64 actions (gymnasium 0.29 has no dtype)
    if isinstance(space, sj_spaces.Box):
        dtype = np.dtype(space.dtype)
        return gymnasium.spaces.Box(
            low=np.array(space.low, dtype), high=np.array(space.high, dtype), shape=space.shape, dtype=dtype
        )
    if isinstance(space, sj_spaces.Dict):
        return gymnasium.spaces.Dict({name: to_gymnasium(s) for name, s in space.spaces.items()})
    raise TypeError(f"no gymnasium equivalent of the socialjax space {space!r}")


# reset, step and render compiled once per environment object (a static argument: its
# identity): adapters over the same object (PettingZoo's seed tests make two) share them
def _programs(env: Environment) -> tuple[Callable, Callable, Callable | None]:
    return (functools.partial(_RESET, env), functools.partial(_STEP, env),
            functools.partial(_RENDER, env) if callable(getattr(env, "render", None)) else None)


def _reset(env: Environment, key: jax.Array, params: EnvParams) -> tuple[jax.Array, Any, Any]:
    key, key_reset = jax.random.split(key)
    state = env.initial_state(key_reset, params)
    return key, env.get_obs(state, params), state


def _step(env: Environment, key: jax.Array, state: Any, actions: jax.Array, params: EnvParams
          ) -> tuple[jax.Array, Any, Any, jax.Array, jax.Array, dict[str, jax.Array]]:
    key, key_now = jax.random.split(key)
    # the key an auto-resetting step gives its transition (it splits off a reset key), so
    # that this episode has the bits of the same episode under Environment.step
    key_step = jax.random.split(key_now)[0]
    obs, state, reward, done, info = env.step(key_step, state, actions, params, auto_reset=False)
    # the episode ends here (PettingZoo empties agents): no bootstrap observation; actions
    # were checked by _stack_actions, so no invalid ones are flagged
    info = {k: v for k, v in info.items() if k not in ("final_obs", "invalid_action", "invalid_params")}
    return key, obs, state, reward, done, info


_RESET = jax.jit(_reset, static_argnums=0)
_STEP = jax.jit(_step, static_argnums=0)
_RENDER = jax.jit(lambda env, state: env.render(state), static_argnums=0)


class PettingZooAdapter(ParallelEnv):
    """``pettingzoo.ParallelEnv`` over one socialjax environment (not a wrapper of it).

    Agents are ``env.agents`` (``"agent_0" ... "agent_{N-1}"``, the order of the agent
    axis). All agents act every step and the episode ends for all of them at once:
    after the step with ``done``, ``agents`` is empty, the returned observations are
    the true last ones (the adapter calls the non-resetting ``transition``), and another
    ``step`` raises until :meth:`reset`.

    Keys: ``reset(seed=s)`` starts from ``jax.random.key(s)``; ``reset()`` without a
    seed continues the adapter's key chain (first seeded by the ``seed`` argument of
    the constructor, or at random). With ``key`` the chain's key, reset does
    ``key, k = split(key)`` and resets from ``k``; every step does
    ``key, k = split(key)`` and steps as ``env.step(k, ...)`` would, i.e. ``transition``
    with ``split(k)[0]``. So the native ``env.step`` with the same keys and actions
    gives the same rewards (and observations, until its auto-reset).

    Outputs: observations ``{agent: np.ndarray}`` (a dict of arrays for a ``Dict``
    space) of the gymnasium space's dtype; rewards Python floats; terminations and
    truncations Python bools (from ``info["terminated"]`` / ``info["truncated"]``);
    infos ``{agent: {name: numpy scalar}}`` from the ``(N,)`` leaves of the env's
    ``info`` (other shapes are left out; reset's infos are empty dicts).

    Actions are checked in Python before anything runs: a missing or unknown agent, or
    an action outside ``action_space(agent)``, raises ``ValueError``.

    Rendering (``render_mode``): ``"rgb_array"`` (grid games only): :meth:`render`
    returns the whole map as ``(8 H, 8 W, 3) uint8``; ``"ansi"`` (every game): a line
    of text, the step and each agent's last action and reward; ``"human"`` (every
    game): shown as it comes and :meth:`render` returns ``None``: a grid game's map in
    place in a Jupyter notebook, or in a matplotlib window where matplotlib has an
    interactive backend; otherwise (a game without a map, a terminal with no display)
    the ``"ansi"`` line is printed.
    """

    metadata: dict[str, Any] = {"name": "socialjax", "render_modes": list(RENDER_MODES), "is_parallelizable": True}

    def __init__(
        self,
        env: Environment,
        params: EnvParams | None = None,
        seed: int | None = None,
        render_mode: str | None = None,
    ):
        if isinstance(env, Wrapper):
            # a wrapper's step auto-resets and has no transition: forwarding would skip it
            raise TypeError(
                f"PettingZooAdapter takes a bare socialjax environment, got the wrapper {env!r}; "
                "wrap the environment itself (sj.make(...))"
            )
        if not isinstance(env, Environment):
            raise TypeError(f"PettingZooAdapter takes a socialjax Environment, got {type(env).__name__}")
        self.env = env
        self.params = env._resolve_params(params)
        can_render = callable(getattr(env, "render", None))
        self.metadata = {
            "name": env.name,
            "render_modes": [m for m in RENDER_MODES if can_render or m != "rgb_array"],
            "is_parallelizable": True,
        }
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"{env.name}: render_mode={render_mode!r} is not supported; supported: "
                f"{self.metadata['render_modes']} (rgb_array: the grid games only)"
            )
        self.render_mode = render_mode
        self._last: tuple[int, np.ndarray, np.ndarray] | None = None  # (steps, actions, rewards) since reset
        self._shown: Any = None  # what "human" draws into: a notebook display or a matplotlib image

        self.possible_agents: list[str] = list(env.agents)
        self.agents: list[str] = []
        # per-agent spaces, built once: the same object is returned on every call
        self._sj_obs_space = env.observation_space(self.params)
        self._sj_action_space = env.action_space(self.params)
        self.observation_spaces = {a: to_gymnasium(self._sj_obs_space) for a in self.possible_agents}
        self.action_spaces = {a: to_gymnasium(self._sj_action_space) for a in self.possible_agents}

        self._seed = seed
        self._key: jax.Array | None = None
        self._state: Any = None  # the env state; None before reset and after close
        self._reset_fn, self._step_fn, self._render_fn = _programs(env)

    # -------------------------------------------------------------- Parallel API
    def reset(
        self, seed: int | None = None, options: dict | None = None
    ) -> tuple[dict[str, Any], dict[str, dict]]:
        """Start an episode: ``(observations, infos)``, every agent live. ``options`` is
        accepted for the API and ignored."""
        if seed is not None:
            self._key = jax.random.key(int(seed))
        elif self._key is None:
            start = self._seed if self._seed is not None else int(np.random.default_rng().integers(2**31))
            self._key = jax.random.key(start)
        self._key, obs, self._state = self._reset_fn(self._key, self.params)
        obs = jax.device_get(obs)
        self.agents = list(self.possible_agents)
        self._last = (0, None, None)
        return self._per_agent_obs(obs), {agent: {} for agent in self.agents}

    def step(self, actions: dict[str, Any]) -> tuple[
        dict[str, Any], dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict]
    ]:
        """One step of all agents; ``actions`` is ``{agent: action}`` for every live
        agent. Returns ``(observations, rewards, terminations, truncations, infos)``."""
        if self._state is None or not self.agents:
            raise RuntimeError(
                f"{self.env.name}: the episode has ended (or reset was never called); call reset() before step()"
            )
        stacked = self._stack_actions(actions)
        self._key, obs, self._state, *out = self._step_fn(self._key, self._state, stacked, self.params)
        obs, reward, done, info = jax.device_get((obs, *out))  # one transfer; the state stays put
        terminated = bool(info.get("terminated", done))
        truncated = bool(info.get("truncated", False))
        if bool(done) and not (terminated or truncated):
            terminated = True  # done without a reason: end the episode anyway
        agents = self.agents
        n = len(self.possible_agents)
        per_agent = {k: np.asarray(v) for k, v in info.items() if np.shape(v) == (n,)}
        observations = self._per_agent_obs(obs)
        rewards = {a: float(reward[i]) for i, a in enumerate(agents)}
        terminations = {a: terminated for a in agents}
        truncations = {a: truncated for a in agents}
        infos = {a: {k: v[i] for k, v in per_agent.items()} for i, a in enumerate(agents)}
        if terminated or truncated:
            self.agents = []
        self._last = (self._last[0] + 1, np.asarray(stacked), np.asarray(reward))
        return observations, rewards, terminations, truncations, infos

    def render(self) -> np.ndarray | str | None:
        """The current state as the ``render_mode`` asks (see the class docstring): the
        map ``(8 H, 8 W, 3) uint8``, a line of text, or shown (``None``)."""
        if self.render_mode is None:
            raise RuntimeError(
                f"{self.env.name}: render() needs PettingZooAdapter(..., render_mode=...), one of "
                f"{self.metadata['render_modes']}"
            )
        if self._state is None:
            raise RuntimeError(f"{self.env.name}: call reset() before render()")
        if self.render_mode == "rgb_array":
            return np.asarray(self._render_fn(self._state), np.uint8)
        if self.render_mode == "ansi":
            return self._text()
        self._show()
        return None

    def _text(self) -> str:
        """The ``"ansi"`` line: the step, and each agent's last action and reward."""
        steps, actions, rewards = self._last
        if actions is None:
            return f"{self.env.name}: reset, no step yet ({len(self.possible_agents)} agents)"
        acted = "; ".join(f"{a} action {np.array2string(actions[i], separator=',')} reward {float(rewards[i]):.4g}"
                          for i, a in enumerate(self.possible_agents))
        return f"{self.env.name} step {steps}: {acted}"

    def _show(self) -> None:
        """``"human"``: a grid game's map in a notebook or a matplotlib window, else the text."""
        frame = np.asarray(self._render_fn(self._state), np.uint8) if self._render_fn is not None else None
        if frame is not None and _in_notebook():
            from IPython.display import Image, display  # a notebook's own package

            image = Image(data=_png(frame))
            if self._shown is None:
                self._shown = display(image, display_id=True)
            else:
                self._shown.update(image)
        elif frame is not None and _window_backend():
            import matplotlib.pyplot as plt  # heavy: only when a map is shown in a window

            if self._shown is None:
                self._shown = plt.figure(self.env.name).add_subplot().imshow(frame)
            self._shown.set_data(frame)
            plt.pause(0.001)
        else:
            print(self._text(), flush=True)

    def close(self) -> None:
        """Drop the episode's state (nothing else to release)."""
        self._state = None
        self.agents = []

    def observation_space(self, agent: str) -> gymnasium.spaces.Space:
        """One agent's observation space (the same object on every call)."""
        return self.observation_spaces[self._check_agent(agent)]

    def action_space(self, agent: str) -> gymnasium.spaces.Space:
        """One agent's action space (the same object on every call)."""
        return self.action_spaces[self._check_agent(agent)]

    # -------------------------------------------------------------- conversions
    def _per_agent_obs(self, obs: Any) -> dict[str, Any]:
        """``(N, *obs_shape)`` leaves -> ``{agent: numpy (*obs_shape)}`` in the gymnasium
        space's dtype (a dict of arrays for a Dict space)."""
        space = self.observation_spaces[self.possible_agents[0]]
        if isinstance(space, gymnasium.spaces.Dict):
            return {
                a: {k: np.asarray(obs[k][i], space[k].dtype) for k in space.spaces}
                for i, a in enumerate(self.possible_agents)
            }
        return {a: np.asarray(obs[i], space.dtype) for i, a in enumerate(self.possible_agents)}

    def _stack_actions(self, actions: dict[str, Any]) -> jnp.ndarray:
        """``{agent: action}`` -> ``(N, *action_shape)`` in agent order, checked first."""
        name = self.env.name
        if not isinstance(actions, dict):
            raise ValueError(f"{name}: actions must be a dict keyed by {self.agents}, got {type(actions).__name__}")
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise ValueError(f"{name}: no action for agent(s) {missing}; every live agent acts ({self.agents})")
        unknown = [a for a in actions if a not in self.agents]
        if unknown:
            raise ValueError(f"{name}: action(s) for unknown agent(s) {unknown}; agents are {self.agents}")
        values = [self._check_action(a, actions[a]) for a in self.agents]
        return jnp.asarray(np.stack(values))

    def _check_action(self, agent: str, value: Any) -> np.ndarray:
        """One agent's action as an array of the socialjax space's dtype, or ValueError."""
        space = self._sj_action_space
        arr = np.asarray(value)
        integer = isinstance(space, sj_spaces.Discrete) or np.issubdtype(np.dtype(space.dtype), np.integer)
        ok = arr.shape == tuple(space.shape) and (
            np.issubdtype(arr.dtype, np.integer) if integer else np.issubdtype(arr.dtype, np.number)
        )
        if ok:
            cast = arr.astype(np.dtype(space.dtype))
            if isinstance(space, sj_spaces.Discrete):
                inside = (cast >= 0) & (cast < space.n)
            else:
                inside = (cast >= space.low) & (cast <= space.high)
            ok = bool(np.all(cast == arr) and np.all(inside))
        if not ok:
            raise ValueError(
                f"{self.env.name}: action {value!r} of agent {agent!r} is not in its action space "
                f"{self.action_spaces[agent]}"
            )
        return cast

    def _check_agent(self, agent: str) -> str:
        if agent not in self.observation_spaces:
            raise ValueError(f"{self.env.name}: unknown agent {agent!r}; agents are {self.possible_agents}")
        return agent

    def __repr__(self) -> str:
        return f"PettingZooAdapter({self.env!r})"
