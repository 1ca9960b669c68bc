"""Social outcome metrics of Perolat et al. (2017), per completed episode.

For an episode of ``T`` steps with ``N`` agents, ``r_t^i`` agent i's reward at step
``t`` and ``R^i = sum_t r_t^i`` its return:

- **collective return** ``sum_i R^i``;
- **efficiency** (utilitarian) ``U = sum_i R^i / T``;
- **equality** ``E = 1 - sum_i sum_j |R^i - R^j| / (2 N sum_i R^i)`` (one minus the Gini
  coefficient). With nonnegative returns it lies in ``[1/N, 1]`` (1: all equal; 1/N:
  one agent has everything); a negative return can push it outside. It is undefined
  when ``sum_i R^i <= 0`` and is then **NaN**, never a made-up number;
- **sustainability** ``S = (1/N) sum_i mean{t : r_t^i > 0}``: the mean time step at
  which rewards arrive. Steps are counted **from 1** (the first step of an episode is
  ``t = 1``, the last ``t = T``), so ``S`` lies in ``[1, T]``. An agent that never gets a
  positive reward has no such mean: it is **left out**, and ``S`` is the mean over the
  agents that did; ``S`` is **NaN** when no agent got a positive reward;
- **peace** ``P = (N T - sum_i sum_t removed_t^i) / T``: the mean number of agents not
  removed from the game (tagged out, timed out) per step, in ``[0, N]``. ``removed_t^i``
  is ``info["removed"]`` (``(N,) bool``) when the environment provides it; otherwise no
  agent is ever removed and ``P = N`` (matrix games, donor game);
- **events**: per-agent totals over the episode of the environment's per-step event
  counts, the ``info`` keys named by ``env.event_keys`` (``cooperated`` in the matrix
  games; ``donated``, ``received`` ... in the donor game; apples eaten, zaps fired ...
  in the gridworlds).

Three ways to get them, which agree: the accumulator finalises its running sums with
the same formula functions. Sums and counts match bit for bit when the rewards' float32
sums are exact (integer-valued rewards); a ratio may differ in the last bit, because
XLA compiles some divisions ``x / T`` as ``x * (1 / T)`` (e.g. by a constant or a
broadcast scalar) and others not; with fractional rewards the two sum in different
orders.

- :class:`SocialMetrics`, a wrapper in the style of
  :class:`~socialjax.core.wrappers.EpisodeStats`: ``info["episode_metrics"]`` holds the
  last completed episode's metrics and ``info["returned_episode"]`` says an episode
  ended on this step; :func:`summarize` turns a rollout's stacked ``info`` into one row
  per completed episode (host side, numpy)::

      env = sj.SocialMetrics(sj.make("ipd"))
      ...  # jit(vmap(lax.scan(env.step ...)))  ->  info with leaves (T, B, ...)
      summary = sj.metrics.summarize(info["episode_metrics"], info["returned_episode"])
      summary.episodes["equality"]   # (E,) one value per completed episode
      summary.mean["equality"]       # NaN-aware mean over episodes

- the functional accumulator :func:`init` / :func:`update`, for use inside your own
  ``jit``/``vmap``/``scan`` loop (one environment per call: ``vmap`` it for a batch);
- the pure formulas on complete arrays: :func:`collective_return`, :func:`efficiency`,
  :func:`equality`, :func:`sustainability`, :func:`peace`, and :func:`episode_metrics`
  for a whole episode.

Reference: J. Perolat, J. Z. Leibo, V. Zambaldi, C. Beattie, K. Tuyls, T. Graepel, "A
multi-agent reinforcement learning model of common-pool resource appropriation",
NeurIPS 2017.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from socialjax.core.environment import Environment
from socialjax.core.params import EnvParams
from socialjax.core.wrappers import Wrapper

#: ``info`` key of the per-step ``(N,) bool`` flags of removed agents (peace)
REMOVED_KEY = "removed"
#: prefix of the per-agent event totals in the metrics dict
EVENT_PREFIX = "events/"
#: the scalar social outcome metrics (one number per episode)
SCALAR_METRICS = ("collective_return", "efficiency", "equality", "sustainability", "peace")

__all__ = [
    "MetricsState",
    "MetricsSummary",
    "SocialMetrics",
    "SocialMetricsState",
    "collective_return",
    "efficiency",
    "episode_metrics",
    "equality",
    "init",
    "peace",
    "summarize",
    "sustainability",
    "update",
]


# --------------------------------------------------------------------------- formulas
def collective_return(returns: jax.Array) -> jax.Array:
    """``sum_i R^i``. ``returns``: ``(..., N)``; result ``(...)`` float32."""
    return jnp.sum(jnp.asarray(returns, jnp.float32), axis=-1)


def efficiency(returns: jax.Array, episode_length: jax.Array | int) -> jax.Array:
    """Utilitarian efficiency ``U = sum_i R^i / T``. ``returns``: ``(..., N)``;
    ``episode_length`` ``T``: ``(...)`` or a scalar; result ``(...)`` float32.
    ``T`` must be at least 1: a concrete ``T <= 0`` raises ``ValueError``; a traced one
    (under ``jit``) gives **NaN** there (undefined, as :func:`equality` for a sum <= 0)."""
    length = jnp.asarray(episode_length, jnp.float32)
    if not isinstance(length, jax.core.Tracer) and bool(jnp.any(length <= 0)):
        raise ValueError(f"efficiency needs an episode length of at least 1 step, got {np.asarray(episode_length)}")
    return jnp.where(length > 0, collective_return(returns) / jnp.where(length > 0, length, 1.0), jnp.nan)


def equality(returns: jax.Array) -> jax.Array:
    """``E = 1 - sum_i sum_j |R^i - R^j| / (2 N sum_i R^i)`` (one minus Gini).

    ``returns``: ``(..., N)``; result ``(...)`` float32. **NaN** where
    ``sum_i R^i <= 0`` (undefined; a subnormal sum may count as 0, as XLA flushes
    subnormals on some backends). With nonnegative returns ``E`` is in ``[1/N, 1]``.
    """
    returns = jnp.asarray(returns, jnp.float32)
    n = returns.shape[-1]
    total = jnp.sum(returns, axis=-1)
    pairwise = jnp.sum(jnp.abs(returns[..., :, None] - returns[..., None, :]), axis=(-2, -1))
    safe_total = jnp.where(total > 0, total, 1.0)
    return jnp.where(total > 0, 1.0 - pairwise / (2 * n * safe_total), jnp.nan)


def sustainability(rewards: jax.Array) -> jax.Array:
    """``S = (1/N) sum_i mean{t : r_t^i > 0}``, steps counted from 1.

    ``rewards``: ``(..., T, N)`` of one episode; result ``(...)`` float32. Agents with
    no positive reward are left out of the mean over agents; **NaN** if no agent got a
    positive reward.
    """
    rewards = jnp.asarray(rewards)
    num_steps = rewards.shape[-2]
    step = jnp.arange(1, num_steps + 1, dtype=jnp.int32)[:, None]  # (T, 1): t = 1 .. T
    positive = rewards > 0
    time_sum = jnp.sum(jnp.where(positive, step, 0), axis=-2, dtype=jnp.int32)
    count = jnp.sum(positive, axis=-2, dtype=jnp.int32)
    return _sustainability_from_sums(time_sum, count)


def peace(removed: jax.Array) -> jax.Array:
    """``P = (N T - sum_i sum_t removed_t^i) / T``: mean number of agents not removed.

    ``removed``: ``(..., T, N)`` bool flags of one episode; result ``(...)`` float32.
    """
    removed = jnp.asarray(removed)
    num_steps, n = removed.shape[-2:]
    return _peace_from_sums(jnp.sum(removed, axis=(-2, -1), dtype=jnp.int32), n, num_steps)


def episode_metrics(
    rewards: jax.Array,
    removed: jax.Array | None = None,
    events: Mapping[str, jax.Array] | None = None,
) -> dict[str, jax.Array]:
    """Every metric of one complete episode, from its full arrays.

    ``rewards``: ``(T, N)``; ``removed``: ``(T, N)`` bool or ``None`` (nobody removed);
    ``events``: ``{key: (T, N)}`` per-step event counts. Returns the same dict as
    ``info["episode_metrics"]`` of :class:`SocialMetrics` at the episode's last step.
    """
    rewards = jnp.asarray(rewards, jnp.float32)
    if rewards.ndim != 2:
        raise ValueError(f"rewards must have shape (T, N), got {rewards.shape}")
    num_steps, n = rewards.shape
    if num_steps < 1:
        raise ValueError(f"rewards must hold at least one step, got shape {rewards.shape}")
    if removed is None:
        removed = jnp.zeros((num_steps, n), bool)
    removed = jnp.asarray(removed)
    if removed.shape != rewards.shape:
        raise ValueError(f"removed must have the shape of rewards {rewards.shape}, got {removed.shape}")
    returns = jnp.sum(rewards, axis=0)
    out = {
        "collective_return": collective_return(returns),
        "efficiency": efficiency(returns, num_steps),
        "equality": equality(returns),
        "sustainability": sustainability(rewards),
        "peace": peace(removed),
        "episode_length": jnp.asarray(num_steps, jnp.int32),
        "returns": returns,
        "removed_steps": jnp.sum(removed, axis=0, dtype=jnp.int32),
    }
    for key, value in (events or {}).items():
        value = jnp.asarray(value)
        if value.shape != rewards.shape:
            raise ValueError(f"event {key!r} must have the shape of rewards {rewards.shape}, got {value.shape}")
        out[EVENT_PREFIX + key] = jnp.sum(value.astype(jnp.float32), axis=0)
    return out


def _sustainability_from_sums(time_sum: jax.Array, count: jax.Array) -> jax.Array:
    """``time_sum``, ``count``: ``(..., N)`` int32, the sum of the (1-based) steps with
    a positive reward and their number. Mean over agents with ``count > 0``."""
    has = count > 0
    mean_step = time_sum.astype(jnp.float32) / jnp.maximum(count, 1).astype(jnp.float32)
    num = jnp.sum(has, axis=-1)
    total = jnp.sum(jnp.where(has, mean_step, 0.0), axis=-1)
    return jnp.where(num > 0, total / jnp.maximum(num, 1).astype(jnp.float32), jnp.nan)


def _peace_from_sums(removed_total: jax.Array, num_agents: int, num_steps: jax.Array | int) -> jax.Array:
    """``removed_total``: agent-steps removed (int32); ``num_steps``: ``T``."""
    num_steps = jnp.asarray(num_steps, jnp.int32)
    return (num_agents * num_steps - removed_total).astype(jnp.float32) / num_steps.astype(jnp.float32)


# --------------------------------------------------------------------------- accumulator
@struct.dataclass
class MetricsState:
    """Running sums of the current episode and the metrics of the last completed one
    (``N = num_agents``); per environment: ``vmap`` it for a batch."""

    returns: jax.Array  # (N,) float32: sum of rewards so far
    length: jax.Array  # () int32: steps taken so far
    reward_time_sum: jax.Array  # (N,) int32: sum of the steps t (from 1) with r_t^i > 0
    reward_steps: jax.Array  # (N,) int32: number of steps with r_t^i > 0
    removed_steps: jax.Array  # (N,) int32: steps each agent spent removed
    events: dict[str, jax.Array]  # {event key: (N,) float32 total so far}
    episode_metrics: dict[str, jax.Array]  # metrics of the last completed episode
    episode_count: jax.Array  # () int32: episodes completed since init


def init(num_agents: int, event_keys: Sequence[str] = ()) -> MetricsState:
    """A fresh accumulator. ``event_keys``: the ``info`` keys with ``(N,)`` per-step
    event counts to total (usually ``env.event_keys``).

    Until the first episode completes, ``episode_metrics`` holds NaN (and an
    ``episode_length`` of 0): no episode, no numbers.
    """
    if not isinstance(num_agents, int) or isinstance(num_agents, bool) or num_agents < 1:
        raise ValueError(f"num_agents must be a positive int, got {num_agents!r}")
    event_keys = _check_event_keys(event_keys)
    n = num_agents
    zeros_f, zeros_i = jnp.zeros((n,), jnp.float32), jnp.zeros((n,), jnp.int32)
    nan_scalar, nan_agents = jnp.full((), jnp.nan, jnp.float32), jnp.full((n,), jnp.nan, jnp.float32)
    empty = {name: nan_scalar for name in SCALAR_METRICS}
    empty.update(episode_length=jnp.zeros((), jnp.int32), returns=nan_agents, removed_steps=zeros_i)
    empty.update({EVENT_PREFIX + key: nan_agents for key in event_keys})
    return MetricsState(
        returns=zeros_f,
        length=jnp.zeros((), jnp.int32),
        reward_time_sum=zeros_i,
        reward_steps=zeros_i,
        removed_steps=zeros_i,
        events={key: zeros_f for key in event_keys},
        episode_metrics=empty,
        episode_count=jnp.zeros((), jnp.int32),
    )


def update(
    state: MetricsState, reward: jax.Array, done: jax.Array, info: Mapping[str, Any]
) -> tuple[MetricsState, dict[str, jax.Array], jax.Array]:
    """Add one step of one environment; returns ``(state, episode_metrics, episode_done)``.

    ``reward``: ``(N,)``; ``done``: ``()`` bool; ``info``: the step's info, read for
    ``"removed"`` (``(N,) bool``, optional) and the event keys given to :func:`init`.
    On ``done`` the step's reward is part of the ending episode, whose metrics become
    ``episode_metrics`` (kept until the next episode ends), and the running sums
    restart (the environment has auto-reset). ``episode_done`` is ``done``: read
    ``episode_metrics`` where it is True.
    """
    n = state.returns.shape[-1]
    reward = jnp.asarray(reward)
    done = jnp.asarray(done)
    if reward.shape != (n,):
        raise ValueError(f"reward must have shape (num_agents,)=({n},), got {reward.shape}; vmap update over envs")
    if done.shape != ():
        raise ValueError(f"done must be a scalar, got shape {done.shape}; vmap update over envs")
    done = done.astype(bool)

    length = state.length + 1
    returns = state.returns + reward.astype(jnp.float32)
    positive = reward > 0
    reward_time_sum = state.reward_time_sum + jnp.where(positive, length, 0)
    reward_steps = state.reward_steps + positive.astype(jnp.int32)
    removed_steps = state.removed_steps + _removed(info, n).astype(jnp.int32)
    events = {key: total + _event(info, key, n) for key, total in state.events.items()}

    finished = _finalize(returns, length, reward_time_sum, reward_steps, removed_steps, events)
    last = jax.tree_util.tree_map(lambda new, old: jnp.where(done, new, old), finished, state.episode_metrics)

    def restart(x):
        return jnp.where(done, jnp.zeros_like(x), x)

    state = MetricsState(
        returns=restart(returns),
        length=restart(length),
        reward_time_sum=restart(reward_time_sum),
        reward_steps=restart(reward_steps),
        removed_steps=restart(removed_steps),
        events={key: restart(total) for key, total in events.items()},
        episode_metrics=last,
        episode_count=state.episode_count + done.astype(jnp.int32),
    )
    return state, last, done


def _finalize(returns, length, reward_time_sum, reward_steps, removed_steps, events) -> dict[str, jax.Array]:
    """The metrics dict of an episode from its running sums."""
    n = returns.shape[-1]
    out = {
        "collective_return": collective_return(returns),
        "efficiency": efficiency(returns, length),
        "equality": equality(returns),
        "sustainability": _sustainability_from_sums(reward_time_sum, reward_steps),
        "peace": _peace_from_sums(jnp.sum(removed_steps, axis=-1), n, length),
        "episode_length": length,
        "returns": returns,
        "removed_steps": removed_steps,
    }
    out.update({EVENT_PREFIX + key: total for key, total in events.items()})
    return out


def _removed(info: Mapping[str, Any], n: int) -> jax.Array:
    """``info["removed"]`` as ``(N,) bool``, or all False when the env has no such key."""
    if REMOVED_KEY not in info:
        return jnp.zeros((n,), bool)
    removed = jnp.asarray(info[REMOVED_KEY])
    if removed.shape != (n,):
        raise ValueError(f'info["{REMOVED_KEY}"] must have shape (num_agents,)=({n},), got {removed.shape}')
    return removed.astype(bool)


def _event(info: Mapping[str, Any], key: str, n: int) -> jax.Array:
    if key not in info:
        raise ValueError(f"event key {key!r} is not in info; info keys: {sorted(info)}")
    value = jnp.asarray(info[key])
    if value.shape != (n,):
        raise ValueError(f'info["{key}"] must have shape (num_agents,)=({n},) to be summed per agent, '
                         f'got {value.shape}')
    return value.astype(jnp.float32)


def _check_event_keys(event_keys: Sequence[str]) -> tuple[str, ...]:
    if isinstance(event_keys, str):
        raise TypeError(f"event_keys must be a sequence of strings, not the string {event_keys!r}")
    keys = tuple(event_keys)
    bad = [k for k in keys if not isinstance(k, str)]
    if bad:
        raise TypeError(f"event_keys must be strings, got {bad}")
    if len(set(keys)) != len(keys):
        raise ValueError(f"event_keys has duplicates: {keys}")
    return keys


# --------------------------------------------------------------------------- wrapper
@struct.dataclass
class SocialMetricsState:
    """State of :class:`SocialMetrics`."""

    env_state: Any
    metrics: MetricsState


class SocialMetrics(Wrapper):
    """Social outcome metrics of every completed episode, across auto-resets.

    Runs the accumulator (:func:`update`) on each step, per environment (so it holds
    under ``vmap``). ``info`` gains, every step:

    - ``episode_metrics``: dict of the last completed episode's ``collective_return``,
      ``efficiency``, ``equality``, ``sustainability``, ``peace`` (``() float32``),
      ``episode_length`` (``() int32``), ``returns`` (``(N,) float32``),
      ``removed_steps`` (``(N,) int32``) and ``events/<key>`` (``(N,) float32``) for each
      of ``event_keys``; NaN until the first episode ends;
    - ``returned_episode``: ``() bool``, an episode ended on this step (``done``).

    ``event_keys`` defaults to ``env.event_keys``. Use :func:`summarize` on the stacked
    ``info`` of a rollout to get one row per completed episode.
    """

    def __init__(self, env: Environment | Wrapper, event_keys: Sequence[str] | None = None):
        super().__init__(env)
        self.event_keys: tuple[str, ...] = _check_event_keys(
            getattr(env, "event_keys", ()) if event_keys is None else event_keys
        )

    def reset(self, key: jax.Array, params: EnvParams | None = None) -> tuple[jax.Array, SocialMetricsState]:
        obs, env_state = self._env.reset(key, params)
        return obs, SocialMetricsState(env_state=env_state, metrics=init(self._env.num_agents, self.event_keys))

    def step(
        self,
        key: jax.Array,
        state: SocialMetricsState,
        actions: jax.Array,
        params: EnvParams | None = None,
    ) -> tuple[jax.Array, SocialMetricsState, jax.Array, jax.Array, dict[str, Any]]:
        obs, env_state, reward, done, info = self._env.step(key, state.env_state, actions, params)
        metrics, last, episode_done = update(state.metrics, reward, done, info)
        info = dict(info)
        info["episode_metrics"] = last
        info["returned_episode"] = episode_done
        return obs, SocialMetricsState(env_state=env_state, metrics=metrics), reward, done, info


# --------------------------------------------------------------------------- host side
@dataclasses.dataclass(frozen=True)
class MetricsSummary:
    """Completed episodes of a rollout, as numpy arrays (see :func:`summarize`).

    - ``episodes[name]``: ``(E, ...)``, one row per completed episode;
    - ``index``: a tuple of ``(E,)`` int arrays, the position of each episode's last
      step along the leading axes of the input (e.g. ``(step, env)``); rows are in
      C order of those axes;
    - ``mean[name]``: the NaN-aware mean over episodes (NaN where no episode has a
      defined value, e.g. equality when every total return was <= 0);
    - ``defined[name]``: how many episodes have a defined (non-NaN) value.
    """

    episodes: dict[str, np.ndarray]
    index: tuple[np.ndarray, ...]
    mean: dict[str, np.ndarray]
    defined: dict[str, np.ndarray]

    @property
    def num_episodes(self) -> int:
        return int(self.index[0].shape[0]) if self.index else 0

    def __str__(self) -> str:
        lines = [f"{self.num_episodes} completed episodes"]
        for name in SCALAR_METRICS + ("episode_length",):
            if name in self.mean:
                lines.append(f"  {name:<18} {float(self.mean[name]):10.4g}  ({int(self.defined[name])} defined)")
        return "\n".join(lines)


def summarize(episode_metrics: Mapping[str, Any], returned_episode: Any) -> MetricsSummary:
    """One row per completed episode from ``info["episode_metrics"]`` and
    ``info["returned_episode"]`` stacked over any leading axes (steps, envs, seeds ...).

    ``returned_episode``: ``(*lead,)`` bool; each metric: ``(*lead, ...)``. Host side
    (numpy); call it on the output of the jitted rollout.
    """
    mask = np.asarray(jax.device_get(returned_episode))
    if mask.dtype != np.bool_:
        raise TypeError(f"returned_episode must be a bool array, got dtype {mask.dtype}")
    values = {name: np.asarray(v) for name, v in jax.device_get(dict(episode_metrics)).items()}
    for name, value in values.items():
        if value.shape[: mask.ndim] != mask.shape:
            raise ValueError(
                f"episode_metrics[{name!r}] has shape {value.shape}, whose leading axes do not match "
                f"returned_episode's shape {mask.shape}"
            )
    index = tuple(np.nonzero(mask))
    episodes = {name: value[mask] for name, value in values.items()}
    mean, defined = {}, {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)  # mean of no / all-NaN values is NaN
        for name, rows in episodes.items():
            rows = rows.astype(np.float64)
            defined[name] = np.sum(~np.isnan(rows), axis=0)
            mean[name] = np.nanmean(rows, axis=0) if rows.shape[0] else np.full(rows.shape[1:], np.nan)
    return MetricsSummary(episodes=episodes, index=index, mean=mean, defined=defined)
