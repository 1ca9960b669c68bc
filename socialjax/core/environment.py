"""The environment contract every socialjax environment keeps.

Subclasses implement three pure functions plus the spaces:

- ``initial_state(key, params) -> state``: the state at the start of an episode;
- ``transition(key, state, actions, params) -> (state, reward, done, info)``: one step,
  never resetting; ``info`` has at least ``"terminated"`` and ``"truncated"``;
- ``get_obs(state, params) -> obs``: the observation, a function of the state alone.

The public ``reset``/``step`` here add what every environment needs exactly once:
default params, input checks at the boundary, the handling of out-of-range actions,
and the auto-reset when an episode ends. ``step`` observes once, after choosing between
the stepped and the fresh state, so an expensive observation is not computed for both.

Shapes (``N = num_agents``)::

    obs, state = env.reset(key, params)            # obs: (N, *obs_shape)
    obs, state, reward, done, info = env.step(key, state, actions, params)
    # actions: (N, *action_shape); reward: (N,) float32; done: () bool
    # info: dict of arrays, always with "terminated" and "truncated" (() bool),
    # "invalid_action" ((N,) bool: the action was out of range and replaced by the
    # environment's no-op action) and "final_obs" (the observation before any
    # auto-reset: the true next observation, to bootstrap from when truncated).
    world = env.global_observation(state, params)  # one game, no agent axis: what a
    # centralised critic sees (default: all players' observations stacked; the grid
    # games: the whole map), in env.global_observation_space(params)
"""

from __future__ import annotations

import copy
from typing import Any, Generic, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from socialjax.core.lazy import lazy_where
from socialjax.core.params import EnvParams, brief, is_concrete
from socialjax.core.spaces import Box, Dict, Discrete, Space

TState = TypeVar("TState")
TParams = TypeVar("TParams", bound=EnvParams)


class Environment(Generic[TState, TParams]):
    """Base class. Static choices (shapes, number of agents) are constructor arguments;
    every other number is a field of :attr:`params_cls`."""

    #: registry name, set by :func:`socialjax.core.registry.register`
    name: str = "environment"
    #: action substituted for an out-of-range one (documented per environment)
    noop_action: int | float = 0
    #: info keys holding per-agent ``(N,)`` per-step event counts that socialjax.metrics sums
    event_keys: tuple[str, ...] = ()
    #: names of the game's own scripted bots, built by socialjax.agents.bots.make_bot
    scripted_bots: tuple[str, ...] = ()

    def __init__(self, num_agents: int):
        if not isinstance(num_agents, (int,)) or isinstance(num_agents, bool) or not 1 <= num_agents <= 2**31 - 1:
            raise ValueError(f"num_agents must be a positive int that fits int32, got {brief(num_agents)}")
        self.num_agents = int(num_agents)
        self._default_params: TParams | None = None

    # ----------------------------------------------------------------- to implement
    #: the params dataclass of this environment
    params_cls: type[EnvParams] = EnvParams

    def make_default_params(self) -> TParams:
        """Default params; override when defaults depend on static options."""
        return self.params_cls()

    def initial_state(self, key: jax.Array, params: TParams) -> TState:
        """The state at the start of an episode."""
        raise NotImplementedError

    def transition(
        self, key: jax.Array, state: TState, actions: jax.Array, params: TParams
    ) -> tuple[TState, jax.Array, jax.Array, dict[str, jax.Array]]:
        """One step, without resetting: ``(state, reward (N,), done (), info)``, with
        ``info["terminated"]`` and ``info["truncated"]``."""
        raise NotImplementedError

    def get_obs(self, state: TState, params: TParams) -> Any:
        """The observation ``(N, *obs_shape)`` of ``state``."""
        raise NotImplementedError

    def action_space(self, params: TParams | None = None) -> Space:
        raise NotImplementedError

    def check_params(self, params: TParams) -> None:
        """Checks of concrete params that need the static options (e.g. an array's
        shape against ``num_agents``); raise ``ValueError``. Default: none."""

    def observation_space(self, params: TParams | None = None) -> Space:
        raise NotImplementedError

    # ----------------------------------------------------------------- public API
    @property
    def default_params(self) -> TParams:
        if self._default_params is None:
            # built eagerly even when first asked for inside a trace: a cached tracer
            # would leak into every later call
            with jax.ensure_compile_time_eval():
                params = self.make_default_params().validate()
                self.check_params(params)
                self._default_params = _as_jax(params)
        return self._default_params

    def with_params(self, **changes: Any) -> Environment:
        """A copy of this environment whose default params have ``changes`` applied
        (validated). The original is untouched, so functions already jitted on it keep
        their meaning. A nested list or tuple (e.g. a payoff table read from a JSON
        config) becomes one array of the default's dtype, not a tree of scalars. Each
        value must have its default's shape (one set of params: a list where the
        default is a number is an error, not a per-agent value; sweep by vmapping over
        params) and fit the dtype it is stored in (``1e39`` overflows float32, ``2.5``
        is not an int32); a value of another kind of number than its default (a whole
        float where the default is an int, an int where it is a float) is stored in the
        default's dtype."""
        fields = self.params_cls.field_names()
        unknown = sorted(set(changes) - set(fields))
        if unknown:
            raise ValueError(
                f"{self.name}: unknown parameter(s) {unknown}; valid parameters: {fields}"
            )
        lists = [k for k, v in changes.items() if isinstance(v, (list, tuple))]
        values = {k: _as_array(f"{self.name}: {self.params_cls.__name__}.{k}", v) if k in lists else v
                  for k, v in changes.items()}
        params = self.default_params.replace(**values).validate()  # ranges, checked in float64
        self.check_params(params)
        for name in changes:  # then the default's shape and dtype
            default = getattr(self.default_params, name)
            _check_storable(f"{self.name}: {self.params_cls.__name__}.{name}", getattr(params, name), default)
        params = params.replace(**{k: np.asarray(getattr(params, k), np.asarray(getattr(self.default_params, k)).dtype)
                                   for k in lists})
        params = self._in_default_dtypes(params)
        env = copy.copy(self)
        env._default_params = _as_jax(params)
        return env

    @property
    def agents(self) -> list[str]:
        """Agent names, in the order of the agent axis."""
        return [f"agent_{i}" for i in range(self.num_agents)]

    def reset(self, key: jax.Array, params: TParams | None = None) -> tuple[jax.Array, TState]:
        params = self._resolve_params(params)
        _check_key(key)
        state = self.initial_state(key, params)
        return self.get_obs(state, params), state

    def step(
        self,
        key: jax.Array,
        state: TState,
        actions: jax.Array,
        params: TParams | None = None,
        *,
        auto_reset: bool = True,
    ) -> tuple[jax.Array, TState, jax.Array, jax.Array, dict[str, jax.Array]]:
        """One step. ``auto_reset=False`` (static) keeps the finished episode's state on a
        ``done`` step instead of starting the next one; with no reset key to split off,
        the transition then gets ``key`` itself (what a scripted run that plays one
        episode, or a run past the episode's end, steps with)."""
        params = self._resolve_params(params)
        _check_key(key)
        actions, invalid = self.prepare_actions(actions, params)
        if not auto_reset:
            state, reward, done, info = self.transition(key, state, actions, params)
            obs = self.get_obs(state, params)
            return obs, state, reward, done, dict(info, invalid_action=invalid, invalid_params=params.invalid(),
                                                  final_obs=obs)
        key_step, key_reset = jax.random.split(key)
        state_st, reward, done, info = self.transition(key_step, state, actions, params)
        # the fresh state is computed only on steps where some game ended (socialjax.core.lazy)
        state = lazy_where(done, lambda key, state, params: self.initial_state(key, params),
                           lambda key, state, params: state, key_reset, state_st, params,
                           sides=f"{self.name}: initial_state's state and transition's")
        obs = self.get_obs(state, params)
        info = dict(info)
        info["invalid_action"] = invalid
        # params traced in a jit or vmap of the caller's were not checked on the host: flagged here
        info["invalid_params"] = params.invalid()
        # the last observation of the finished episode, for bootstrapping at truncation
        # (XLA drops it when nothing reads it)
        info["final_obs"] = self.get_obs(state_st, params)
        return obs, state, reward, done, info

    def sample_actions(self, key: jax.Array, params: TParams | None = None) -> jax.Array:
        """Uniformly random actions for all agents: ``(N, *action_shape)``."""
        return self.action_space(params).sample(key, (self.num_agents,))

    def global_observation(self, state: TState, params: TParams | None = None) -> Any:
        """What a centralised critic (MAPPO's) sees of one game: a function of ``state``
        (one game, no leading agent axis), the same for every player; each actor still
        sees only its own observation.

        Default: all players' observations stacked (:func:`stacked_observations` of
        ``get_obs(state, params)``): each leaf ``(N, *shape)`` of the observation becomes
        one array: an image (``shape`` of rank 3 or more, ``(h, w, *c)``) becomes
        ``(h, w, N * prod(c))``, the players' images along the channel axis with player
        0's channels first (SocialJax's MAPPO ``world_state``); any other leaf becomes
        the flat ``(N * prod(shape),)``, player 0's entries first. An environment whose
        players' observations together miss part of what decides the game (the grid
        games: the whole map) overrides this and :meth:`global_observation_space`.

        It must be jittable and vmappable over a batch of games (a leading axis on every
        leaf of ``state``, ``params`` shared or batched alike), deterministic (no key: the
        same state gives the same bits), and lie in :meth:`global_observation_space`
        (its shapes and dtypes, every value within the bounds), which
        :func:`socialjax.testing.check_env` checks."""
        params = self._resolve_params(params)
        return stacked_observations(self.get_obs(state, params))

    def global_observation_space(self, params: TParams | None = None) -> Space:
        """The space of :meth:`global_observation` (one game, no agent axis). Default:
        :func:`stacked_space` of :meth:`observation_space`: each entry shaped by the rule
        of :meth:`global_observation`, with the same dtype and each player's bounds in
        its player's places."""
        return stacked_space(self.observation_space(params), self.num_agents)

    # ----------------------------------------------------------------- helpers
    def _resolve_params(self, params: TParams | None) -> TParams:
        if params is None:
            return self.default_params
        expected = self.params_cls
        if not isinstance(params, expected):
            raise TypeError(
                f"{self.name}: params must be a {expected.__name__} (see env.default_params), "
                f"got {type(params).__name__}"
            )
        if is_concrete(params):
            params = self._in_default_dtypes(params.validate())
            self.check_params(params)
        return _as_jax(params)

    def _in_default_dtypes(self, params: TParams) -> TParams:
        """``params`` (validated) with each concrete field in its default's dtype, so that
        the environment computes in the dtypes it was written for (a float32 where an
        int32 counter is carried through a scan is a trace-time error, and so is an int8):
        a Python number of another kind becomes the default's kind (staying a Python
        number: JAX's weak types), an array of another dtype is cast. A fractional value
        for an integer field, or one beyond its dtype, is a ``ValueError`` naming it."""
        changes = {}
        for name in params.field_names():
            value, default = getattr(params, name), getattr(self.default_params, name)
            if isinstance(value, jax.core.Tracer):
                continue
            want, have = np.asarray(default).dtype, _number_kind(value)
            if have is None:
                continue
            if have in "iuf" and want.kind in "iuf":
                _check_fits(f"{self.name}: {type(params).__name__}.{name}", value, want)
            if isinstance(value, (bool, int, float)):
                if have != want.kind:
                    changes[name] = {"b": bool, "i": int, "u": int, "f": float}[want.kind](value)
            elif np.asarray(value).dtype != want:
                changes[name] = np.asarray(value).astype(want)
        return params.replace(**changes) if changes else params

    def resolve_single_params(self, params: TParams | None) -> TParams:
        """``params`` (``None``: the defaults) checked on the host for an entry point that
        plays every game with the same params (training, playback, rendering): validated,
        and with the shapes of :meth:`make_default_params`, so that a batch of params
        (a leading sweep axis) is a ``ValueError`` naming the field instead of being
        broadcast against the agents."""
        params = self._resolve_params(params)
        expected = self.make_default_params()
        for name in params.field_names():
            got, want = jnp.shape(getattr(params, name)), jnp.shape(getattr(expected, name))
            if got != want:
                raise ValueError(
                    f"{self.name}: {type(params).__name__}.{name} has shape {got}, expected {want}: one set of "
                    "params is played here; for a sweep over params, run once per value or vmap env.step yourself"
                )
        return params

    def prepare_actions(self, actions: Any, params: TParams) -> tuple[jax.Array, jax.Array]:
        """Check shape and dtype (raises at trace time), cast to the space's dtype and
        replace out-of-range actions by :attr:`noop_action`.

        Returns ``(actions, invalid)`` with ``invalid`` of shape ``(N,)``.
        """
        space = self.action_space(params)
        outside = _outside_before_cast(actions, space)
        if outside is not None:  # a value JAX's 32-bit cast would have wrapped into the range
            actions = np.where(outside.reshape(outside.shape + (1,) * (np.ndim(actions) - 1)),
                               self.noop_action, np.asarray(actions)).astype(np.int64)
        actions = jnp.asarray(actions)
        expected = (self.num_agents,) + tuple(space.shape)
        if actions.shape != expected:
            raise ValueError(
                f"{self.name}: actions must have shape {expected} (num_agents={self.num_agents}), "
                f"got {actions.shape}"
            )
        if isinstance(space, Discrete) or (
            isinstance(space, Box) and jnp.issubdtype(space.dtype, jnp.integer)
        ):
            if not jnp.issubdtype(actions.dtype, jnp.integer):
                raise TypeError(
                    f"{self.name}: actions must be integers for {space}, got dtype {actions.dtype}"
                )
        elif not (jnp.issubdtype(actions.dtype, jnp.floating) or jnp.issubdtype(actions.dtype, jnp.integer)):
            raise TypeError(f"{self.name}: actions must be numeric for {space}, got dtype {actions.dtype}")
        valid = space.valid(actions)
        if outside is not None:
            valid = valid & ~jnp.asarray(outside.reshape(valid.shape))
        noop = jnp.asarray(self.noop_action, dtype=space.dtype)
        actions = jnp.where(valid.reshape(valid.shape + (1,) * len(space.shape)), actions.astype(space.dtype), noop)
        return actions, ~valid

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, num_agents={self.num_agents})"


# ------------------------------------------------------------------- global observation
#: a per-player observation leaf of this rank or more is an image ``(h, w, *channels)``
IMAGE_RANK = 3


def stack_players(x: Any) -> Any:
    """One array of all players' entries of an observation leaf ``x (N, *shape)`` (a
    JAX or a numpy array: the same rule shapes observations and their spaces' bounds):
    an image (``shape = (h, w, *c)``, rank :data:`IMAGE_RANK` or more) becomes ``(h, w,
    N * prod(c))``, the players' images along the channel axis, player 0's channels
    first (SocialJax's MAPPO ``world_state``, ``algorithms/MAPPO/mappo_cnn_cleanup.py``);
    any other leaf becomes ``(N * prod(shape),)``, player 0's entries first."""
    if x.ndim - 1 >= IMAGE_RANK:
        h, w = x.shape[1:3]
        return x.transpose(1, 2, 0, *range(3, x.ndim)).reshape(h, w, -1)
    return x.reshape(-1)


def stacked_observations(obs: Any) -> Any:
    """:func:`stack_players` on every leaf of the observation pytree ``obs``
    (``(N, ...)`` leaves): the default global observation."""
    return jax.tree_util.tree_map(lambda x: stack_players(jnp.asarray(x)), obs)


def stacked_space(space: Space, num_agents: int) -> Space:
    """The space of :func:`stacked_observations` of observations in the per-player
    ``space``: each ``Box`` reshaped by :func:`stack_players` with its dtype, and its
    bounds repeated for every player in that player's places; a ``Discrete`` (a scalar
    per player) becomes an integer ``Box(0, n - 1, (N,))``; a ``Dict`` entry by entry.
    Computed on the host (numpy), so it may be called while tracing. Any other space is
    a ``TypeError``: override ``global_observation_space`` (and ``global_observation``)."""
    if isinstance(space, Dict):
        return Dict({name: stacked_space(entry, num_agents) for name, entry in space.spaces.items()})
    if isinstance(space, Discrete):
        return Box(0, space.n - 1, (num_agents,), space.dtype)
    if isinstance(space, Box):
        every = (num_agents, *space.shape)
        low = stack_players(np.broadcast_to(space.low, every))
        high = stack_players(np.broadcast_to(space.high, every))
        return Box(low, high, low.shape, space.dtype)
    raise TypeError(
        f"no default global observation space for {space!r} ({type(space).__name__}): override "
        "global_observation_space and global_observation"
    )


def _check_storable(name: str, value: Any, default: Any) -> None:
    """``ValueError`` naming ``name`` unless a concrete ``value`` has the shape of the
    param's ``default`` and stays finite (floats) or in range (integers) in the
    default's dtype, the one the environment computes in."""
    if isinstance(value, (jax.core.Tracer, bool, np.bool_)):
        return
    want, got = np.shape(default), np.shape(value)
    if got != want:
        raise ValueError(f"{name} must have shape {want} (its default's), got {got}: one set of params per "
                         "environment; to sweep values, vmap over params.replace(...) (README, Quick start)")
    dtype = np.asarray(default).dtype
    try:
        host = np.asarray(value, np.float64)
    except (TypeError, ValueError):
        return  # not a number: validate() names it
    if np.issubdtype(dtype, np.floating):
        with np.errstate(over="ignore"):
            stored = host.astype(dtype)
        if np.any(np.isfinite(host) & ~np.isfinite(stored)):
            raise ValueError(f"{name}={host.tolist()} overflows {dtype} (largest {np.finfo(dtype).max:.3g})")
    elif np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        if np.any(np.isfinite(host) & ((host < info.min) | (host > info.max))):
            raise ValueError(f"{name}={host.tolist()} does not fit {dtype} ([{info.min}, {info.max}])")


def _check_fits(label: str, value: Any, dtype: np.dtype) -> None:
    """``ValueError`` naming ``label`` unless the (finite) number(s) ``value`` can be
    stored in ``dtype``: whole and in range for an integer dtype, finite for a float."""
    host = np.asarray(value, np.float64)
    if np.issubdtype(dtype, np.integer):
        if np.any(host != np.round(host)):
            raise ValueError(f"{label} must be a whole number (it is stored as {dtype}), got {brief(value)}")
        info = np.iinfo(dtype)
        if np.any((host < info.min) | (host > info.max)):
            raise ValueError(f"{label}={brief(value)} does not fit {dtype} ([{info.min}, {info.max}])")
    elif np.any(np.abs(host) > np.finfo(dtype).max):
        raise ValueError(f"{label}={brief(value)} overflows {dtype} (largest {np.finfo(dtype).max:.3g})")


def _number_kind(value: Any) -> str | None:
    """The kind of number ``value`` holds (numpy's letters: ``b``, ``i``, ``u``, ``f``),
    a Python int of any size included; ``None`` for anything else."""
    if isinstance(value, (bool, np.bool_)):
        return "b"
    if isinstance(value, int):
        return "i"
    if isinstance(value, float):
        return "f"
    kind = np.asarray(value).dtype.kind
    return kind if kind in "biuf" else None


def _as_array(name: str, value: Any) -> np.ndarray:
    """A (nested) list or tuple as one array; a ragged one is a ``ValueError`` naming ``name``."""
    try:
        return np.asarray(value)
    except (ValueError, TypeError):
        raise ValueError(f"{name} must be a number or a regular (not ragged) list of numbers, "
                         f"got {brief(value)}") from None


def _outside_before_cast(actions: Any, space: Any) -> np.ndarray | None:
    """For host integer actions (numpy or Python ints, not JAX arrays): per agent, whether
    a value lies outside the space's integer range, computed on the host before
    ``jnp.asarray`` casts 64-bit integers to 32 bits (with x64 off ``2**63`` as uint64 or
    ``2**40`` as int64 would wrap to a valid-looking action). The caller puts the no-op
    in those agents' places before the cast. ``None`` where no host value is out of range,
    and for anything else (JAX arrays and tracers are already in a dtype JAX holds)."""
    if isinstance(actions, jax.Array) or not isinstance(space, (Discrete, Box)):
        return None
    try:
        host = np.asarray(actions)
    except (TypeError, ValueError):
        return None
    if host.dtype.kind not in "iu" or host.ndim < 1:
        return None
    if isinstance(space, Discrete):
        low, high = 0, space.n - 1
    elif np.issubdtype(space.dtype, np.integer):
        low, high = space.low.astype(object), space.high.astype(object)
    else:
        return None
    # compared as Python ints: exact for any 64-bit value
    values = host.astype(object)
    try:
        bad = (values < low) | (values > high)
    except ValueError:  # a shape the caller's check will refuse
        return None
    bad = np.asarray(bad, bool).reshape(host.shape[0], -1).any(axis=1)
    return bad if bad.any() else None


def _as_jax(tree: Any) -> Any:
    """Turn numpy / Python leaves into JAX arrays (tracers pass through)."""
    return jax.tree_util.tree_map(jnp.asarray, tree)


def _check_key(key: Any) -> None:
    if isinstance(key, jax.core.Tracer):
        return
    if not isinstance(key, jax.Array):
        raise TypeError(f"key must be a jax.random key array, got {type(key).__name__}")
    is_typed = jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
    if not is_typed and not (key.dtype == jnp.uint32 and key.shape[-1:] == (2,)):
        raise TypeError(
            f"key must come from jax.random.key or jax.random.PRNGKey, got dtype {key.dtype} "
            f"shape {key.shape}"
        )
