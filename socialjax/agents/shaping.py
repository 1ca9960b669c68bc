"""Reward-shaping wrappers (shaping lives in wrappers, never inside environments).

Every wrapper here keeps the environment contract (``reset``/``step`` with the same
signatures, ``reward`` ``(N,) float32``, ``done`` ``() bool``) so it composes with
:class:`~socialjax.core.wrappers.EpisodeStats`, ``SocialMetrics``, ``jit``, ``vmap`` and
``lax.scan``. The *shaped* reward is returned as ``reward``; the environment's true
reward is kept in ``info["raw_reward"]`` ``(N,) float32`` so that metrics can use the
true returns. When shaping wrappers are stacked, the innermost one sets
``info["raw_reward"]`` and outer ones leave it alone, so it is always the environment's
reward.

- :class:`CommonReward`: every agent gets the sum (default) or mean of all rewards.
- :class:`RewardExchange`: ``r'_i = s r_i + (1 - s)/(N - 1) sum_{j != i} r_j``.
- :class:`InequityAversion` (Hughes et al. 2018), with temporally smoothed rewards kept
  in the wrapper state and reset at every episode start.
- :class:`SocialValueOrientation` (McKee et al. 2020).

Numeric parameters are stored as attributes and may be JAX arrays (tracers included):
to sweep one under ``vmap``, construct the wrapper inside the vmapped function (the
wrappers are pure, so that costs nothing). Concrete values are validated at
construction and raise ``ValueError`` naming the argument and its value.

The stateless wrappers (:class:`CommonReward`, :class:`RewardExchange`,
:class:`SocialValueOrientation`) pass the wrapped environment's state through
unchanged; :class:`InequityAversion` wraps it in :class:`InequityAversionState`.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from socialjax.core.environment import Environment
from socialjax.core.params import EnvParams, check_number
from socialjax.core.wrappers import Wrapper

__all__ = [
    "CommonReward",
    "InequityAversion",
    "InequityAversionState",
    "RewardExchange",
    "SocialValueOrientation",
]


# --------------------------------------------------------------------------- helpers
def _check_agents(cls: str, env: Any) -> int:
    n = int(env.num_agents)
    if n < 2:
        raise ValueError(f"{cls} needs num_agents >= 2 (it averages over the other agents), got num_agents={n}")
    return n


def _with_raw(info: dict[str, Any], reward: jax.Array) -> dict[str, Any]:
    info = dict(info)
    if "raw_reward" not in info:  # the innermost shaping wrapper keeps the true reward
        info["raw_reward"] = reward
    return info


def _others_mean(reward: jax.Array) -> jax.Array:
    """``(N,)``: mean of the other agents' rewards, for each agent (``N >= 2``)."""
    n = reward.shape[-1]
    return (jnp.sum(reward, axis=-1, keepdims=True) - reward) / (n - 1)


# --------------------------------------------------------------------------- pure forms
# The formulas, on rewards with the agents on the last axis. The wrappers below and the
# training loop's per-learner shaping (TrainConfig.reward) both use them.
IA_GAMMA, IA_LAMBDA = 0.99, 0.975  # Hughes et al. 2018, the temporal smoothing of rewards


def common_reward(reward: jax.Array, mode: str = "sum") -> jax.Array:
    """Every agent gets ``sum_j r_j`` (``mode="sum"``) or ``(1/N) sum_j r_j``."""
    total = jnp.sum(reward, axis=-1, keepdims=True)
    if mode == "mean":
        total = total / reward.shape[-1]
    return jnp.broadcast_to(total, reward.shape)


def exchange_reward(reward: jax.Array, self_interest) -> jax.Array:
    """``s r_i + (1 - s) * mean_{j != i} r_j`` (``N >= 2``)."""
    s = jnp.asarray(self_interest, jnp.float32)
    return s * reward + (1.0 - s) * _others_mean(reward)


def inequity_traces(traces: jax.Array, reward: jax.Array, gamma=IA_GAMMA, lam=IA_LAMBDA) -> jax.Array:
    """The smoothed rewards after this step: ``e_i = gamma * lam * e_i + r_i``."""
    return jnp.asarray(gamma, jnp.float32) * jnp.asarray(lam, jnp.float32) * traces + reward


def inequity_aversion_reward(reward: jax.Array, traces: jax.Array, alpha, beta) -> jax.Array:
    """``r_i - alpha/(N-1) sum_j max(e_j - e_i, 0) - beta/(N-1) sum_j max(e_i - e_j, 0)``
    with ``traces`` ``e`` already updated by this step (:func:`inequity_traces`)."""
    n = reward.shape[-1]
    diff = traces[..., None, :] - traces[..., :, None]  # diff[i, j] = e_j - e_i
    behind = jnp.sum(jnp.maximum(diff, 0.0), axis=-1)  # sum_j max(e_j - e_i, 0)
    ahead = jnp.sum(jnp.maximum(-diff, 0.0), axis=-1)  # sum_j max(e_i - e_j, 0)
    alpha = jnp.asarray(alpha, jnp.float32)
    beta = jnp.asarray(beta, jnp.float32)
    return (reward - alpha / (n - 1) * behind - beta / (n - 1) * ahead).astype(jnp.float32)


def svo_angles(reward: jax.Array) -> jax.Array:
    """``theta_i = atan2(mean_{j != i} r_j, r_i)`` in radians."""
    return jnp.arctan2(_others_mean(reward), reward)


def svo_reward(reward: jax.Array, theta_target_degrees, weight) -> jax.Array:
    """``r_i - w |theta_target_i - theta_i|`` (targets in degrees)."""
    target = jnp.asarray(theta_target_degrees, jnp.float32) * (math.pi / 180.0)
    return reward - jnp.asarray(weight, jnp.float32) * jnp.abs(target - svo_angles(reward))


class _StatelessShaping(Wrapper):
    """Shaping that is a function of this step's reward only; state passes through."""

    def reset(self, key: jax.Array, params: EnvParams | None = None) -> tuple[jax.Array, Any]:
        return self._env.reset(key, params)

    def step(
        self, key: jax.Array, state: Any, actions: jax.Array, params: EnvParams | None = None
    ) -> tuple[jax.Array, Any, jax.Array, jax.Array, dict[str, jax.Array]]:
        obs, state, reward, done, info = self._env.step(key, state, actions, params)
        reward = reward.astype(jnp.float32)
        info = _with_raw(info, reward)
        return obs, state, self.shape_reward(reward).astype(jnp.float32), done, info

    def shape_reward(self, reward: jax.Array) -> jax.Array:  # pragma: no cover - abstract
        raise NotImplementedError


# --------------------------------------------------------------------------- common
class CommonReward(_StatelessShaping):
    """Every agent receives the same, collective reward.

    ``mode="sum"`` (the default): each agent gets ``sum_j r_j``; ``mode="mean"``: each
    gets ``(1/N) sum_j r_j``. The two differ only by the constant factor ``N``.
    """

    def __init__(self, env: Environment | Wrapper, mode: str = "sum"):
        super().__init__(env)
        if mode not in ("sum", "mean"):
            raise ValueError(f"mode must be 'sum' or 'mean', got {mode!r}")
        self.mode = mode

    def shape_reward(self, reward: jax.Array) -> jax.Array:
        return common_reward(reward, self.mode)

    def __repr__(self) -> str:
        return f"CommonReward({self._env!r}, mode={self.mode!r})"


# --------------------------------------------------------------------------- exchange
class RewardExchange(_StatelessShaping):
    """Self-interest ``s``: ``r'_i = s r_i + (1 - s)/(N - 1) sum_{j != i} r_j``.

    ``s = 1`` leaves the rewards unchanged, ``s = 1/N`` gives everyone the mean reward
    and ``s = 0`` gives each agent only the mean of the others' rewards. ``s`` must be
    in ``[0, 1]`` (a scalar; it may be a JAX array) and ``N >= 2``.
    """

    def __init__(self, env: Environment | Wrapper, self_interest: Any):
        super().__init__(env)
        _check_agents("RewardExchange", env)
        check_number("self_interest", self_interest, 0.0, 1.0)
        self.self_interest = self_interest

    def shape_reward(self, reward: jax.Array) -> jax.Array:
        return exchange_reward(reward, self.self_interest)

    def __repr__(self) -> str:
        return f"RewardExchange({self._env!r}, self_interest={self.self_interest!r})"


# --------------------------------------------------------------------------- inequity
@struct.dataclass
class InequityAversionState:
    """State of :class:`InequityAversion` (``N = num_agents``)."""

    env_state: Any
    traces: jax.Array  # (N,) float32: smoothed rewards e_i up to the last step of this episode


class InequityAversion(Wrapper):
    """Inequity aversion (Hughes et al. 2018) on temporally smoothed rewards.

    Each step, with this step's rewards ``r`` ``(N,)``::

        e_i = gamma * lam * e_i(previous step) + r_i
        u_i = r_i - alpha/(N-1) sum_j max(e_j - e_i, 0)     # disadvantageous inequity
                  - beta/(N-1)  sum_j max(e_i - e_j, 0)     # advantageous inequity

    Both terms are *penalties*: an agent behind the others is penalised with weight
    ``alpha`` and an agent ahead with weight ``beta``. Note the minus sign on ``beta``:
    a widely used open-source implementation added this term instead, which *rewards*
    advantageous inequity; this wrapper follows the paper.

    The traces ``e`` live in :class:`InequityAversionState`. They are zero at ``reset``
    and restart from zero after every auto-reset: on the step that ends an episode the
    shaped reward uses the trace including that step, and the trace is then zeroed so
    the next episode starts fresh.

    Defaults: ``alpha=5``, ``beta=0.05``, ``gamma=0.99``, ``lam=0.975``. ``alpha, beta >= 0``;
    ``gamma, lam`` in ``[0, 1]``; ``N >= 2``.
    """

    def __init__(
        self,
        env: Environment | Wrapper,
        alpha: Any = 5.0,
        beta: Any = 0.05,
        gamma: Any = IA_GAMMA,
        lam: Any = IA_LAMBDA,
    ):
        super().__init__(env)
        _check_agents("InequityAversion", env)
        check_number("alpha", alpha, 0.0, None)
        check_number("beta", beta, 0.0, None)
        check_number("gamma", gamma, 0.0, 1.0)
        check_number("lam", lam, 0.0, 1.0)
        self.alpha, self.beta, self.gamma, self.lam = alpha, beta, gamma, lam

    def reset(
        self, key: jax.Array, params: EnvParams | None = None
    ) -> tuple[jax.Array, InequityAversionState]:
        obs, env_state = self._env.reset(key, params)
        traces = jnp.zeros((self._env.num_agents,), jnp.float32)
        return obs, InequityAversionState(env_state=env_state, traces=traces)

    def step(
        self,
        key: jax.Array,
        state: InequityAversionState,
        actions: jax.Array,
        params: EnvParams | None = None,
    ) -> tuple[jax.Array, InequityAversionState, jax.Array, jax.Array, dict[str, jax.Array]]:
        obs, env_state, reward, done, info = self._env.step(key, state.env_state, actions, params)
        reward = reward.astype(jnp.float32)
        traces = inequity_traces(state.traces, reward, self.gamma, self.lam)
        shaped = self.shape(reward, traces)
        info = _with_raw(info, reward)
        info["inequity_traces"] = traces  # (N,): the traces this step's reward used
        new_traces = jnp.where(done, jnp.zeros_like(traces), traces)
        return obs, InequityAversionState(env_state=env_state, traces=new_traces), shaped, done, info

    def shape(self, reward: jax.Array, traces: jax.Array) -> jax.Array:
        """``u`` ``(N,)`` from this step's rewards and the (already updated) traces."""
        return inequity_aversion_reward(reward, traces, self.alpha, self.beta)

    def __repr__(self) -> str:
        return (
            f"InequityAversion({self._env!r}, alpha={self.alpha!r}, beta={self.beta!r}, "
            f"gamma={self.gamma!r}, lam={self.lam!r})"
        )


# --------------------------------------------------------------------------- SVO
class SocialValueOrientation(_StatelessShaping):
    """Social value orientation (McKee et al. 2020).

    ``u_i = r_i - w |theta_target_i - theta_i|`` with
    ``theta_i = atan2(mean_{j != i} r_j, r_i)`` (radians).

    ``theta_target_degrees``: a scalar or an ``(N,)`` array of per-agent targets **in
    degrees** (e.g. ``0`` individualistic, ``45`` prosocial, ``90`` altruistic);
    converted to radians internally. ``weight`` ``w >= 0``.

    Convention when an agent's reward and the others' mean are both 0: ``theta_i =
    atan2(0, 0) = 0`` (JAX's / IEEE's value), so such a step is treated as
    individualistic and penalised by ``w |theta_target_i|``. Note also that
    ``atan2(+0, -x) = pi`` while ``atan2(-0, -x) = -pi``.
    """

    def __init__(self, env: Environment | Wrapper, theta_target_degrees: Any, weight: Any):
        super().__init__(env)
        n = _check_agents("SocialValueOrientation", env)
        shape = np.shape(theta_target_degrees)  # reads .shape of arrays and tracers
        if shape not in ((), (n,)):
            raise ValueError(
                f"theta_target_degrees must be a scalar or have shape ({n},) (num_agents={n}), "
                f"got shape {shape}: {theta_target_degrees!r}"
            )
        check_number("theta_target_degrees", theta_target_degrees, None, None)
        check_number("weight", weight, 0.0, None)
        self.theta_target_degrees = theta_target_degrees
        self.weight = weight

    def angles(self, reward: jax.Array) -> jax.Array:
        """``theta`` ``(N,)`` in radians."""
        return svo_angles(reward)

    def shape_reward(self, reward: jax.Array) -> jax.Array:
        return svo_reward(reward, self.theta_target_degrees, self.weight)

    def __repr__(self) -> str:
        return (
            f"SocialValueOrientation({self._env!r}, theta_target_degrees={self.theta_target_degrees!r}, "
            f"weight={self.weight!r})"
        )
