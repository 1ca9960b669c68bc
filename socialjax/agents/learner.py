"""What a learner is, to the population loop in :mod:`socialjax.train`: the
:class:`Learner` protocol.

A learner is an object with static settings (network, epochs, ...) and pure methods;
everything that changes lives in a :class:`LearnerState`, one per population member,
stacked on a leading member axis by the loop (which ``vmap``s every method over it).
``progress`` is the fraction of training done, in ``[0, 1]`` (learning-rate annealing,
exploration schedules). Numeric hyperparameters are not attributes: they live in
``state.hparams`` (a dict of ``()`` float32 arrays), so that they can be vmapped over
in a sweep and perturbed per member by PBT; a learner class names the ones it reads in
``hparams`` (declared in :mod:`socialjax.agents.hparams`). The classes are found by name
in :mod:`socialjax.agents.registry`.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import jax
import jax.numpy as jnp
import optax
from flax import struct


@runtime_checkable
class Learner(Protocol):
    """The contract the population loop relies on (:class:`~socialjax.agents.ppo.ActorCriticLearner`
    and :class:`~socialjax.agents.dqn.DQNLearner` keep it). ``M`` seats per call:
    ``obs`` ``(M, ...)``, ``reset`` ``(M,) bool`` (first step of an episode), ``hidden``
    ``(M, H)`` with ``H = hidden_size``."""

    hparams: tuple[str, ...]  # the hyperparameters read from state.hparams (a class attribute)
    # the TrainConfig fields it reads that not every learner does (update_epochs, n_step ...): a config
    # that sets another learner's is refused (TrainConfig.validate); optional, () when absent
    settings: tuple[str, ...]
    RECURRENT: bool  # the class supports a recurrent core
    ALIGNS: bool  # prepare gives advantages "adv" that Advantage Alignment may mix
    # the seated loop gives it, on every seat, {"actor": own observation, "global": the game's
    # global observation, "seat": (N,) one-hot} (socialjax.agents.mappo.central_space)
    CENTRAL_CRITIC: bool
    VALUE_NORM: bool  # reads TrainConfig.value_norm
    recurrent: bool
    hidden_size: int

    @classmethod
    def from_config(cls, obs_space, spec, num_actions: int, config, seats: int) -> Learner:
        """The learner a :class:`~socialjax.train.TrainConfig` describes, with ``seats``
        seats per member (found by ``config.algo`` in :mod:`socialjax.agents.registry`)."""

    def check_batch(self, config, seats: int) -> None:
        """``ValueError``, before compiling, when rollouts of ``config.rollout_len`` steps
        on ``seats`` seats cannot be batched as the config asks."""

    def init(self, key: jax.Array, hparams: dict[str, Any]) -> LearnerState:
        """A fresh member with these hyperparameters."""

    def act(self, state: LearnerState, hidden, obs, reset, key: jax.Array, progress) -> tuple[Any, jax.Array, dict]:
        """``(hidden, action (M,) int32, aux)``: sampled actions; ``aux`` is a dict of
        ``(M,)`` arrays the learner wants back in its :class:`Rollout` (PPO: value and
        log-probability)."""

    def play(self, state: LearnerState, hidden, obs, reset, key: jax.Array) -> tuple[Any, jax.Array]:
        """``(hidden, action (M,) int32)``: the policy a trained member plays outside
        training (evaluation, cross-play, playback), sampled: ``act`` at the end of
        training for most learners; IRAT's team policy."""

    def greedy(self, state: LearnerState, hidden, obs, reset) -> tuple[Any, jax.Array]:
        """``(hidden, action)``: the learner's best action, without exploration."""

    def prepare(self, state: LearnerState, rollout: Rollout, hparams=None) -> dict[str, jax.Array]:
        """Per-step quantities computed before the update (PPO: advantages and value
        targets), which the loop may mix across seats (Advantage Alignment)."""

    def update(self, state: LearnerState, rollout: Rollout, prepared: dict, key: jax.Array,
               progress) -> tuple[LearnerState, dict[str, jax.Array]]:
        """One learning step on a rollout; the metrics always include ``"loss"``."""


@struct.dataclass
class LearnerState:
    """Everything a member learns or tunes: network parameters, optimiser state,
    hyperparameters (``{name: () float32}``) and learner-specific extras (DQN: target
    network and replay buffer; PPO: nothing)."""

    params: Any
    opt_state: Any
    hparams: dict[str, jax.Array]
    extra: Any = ()


@struct.dataclass
class Rollout:
    """``T`` steps of ``M`` seats held by one member.

    ``obs[t]`` is what the member saw before choosing ``action[t]``; ``reset[t]`` is True
    when ``obs[t]`` starts an episode; ``done[t]`` is True when the episode ended after
    ``action[t]`` (the environment then auto-reset, so ``obs[t + 1]`` is a first
    observation). ``hidden0`` is the recurrent state before step 0 and ``last_*`` the
    observation, reset flag and recurrent state after the last step (for bootstrapping).
    ``reward`` is the seat's own reward in the config's form (shaped); ``team_reward`` is
    the team's: the sum of the environment's rewards of the seat's game (what
    ``TrainConfig(reward="common")`` gives every seat), which IRAT's team policy learns
    from. ``None`` where a rollout is built without it (by hand, in tests).
    """

    obs: Any  # (T, M, ...)
    reset: jax.Array  # (T, M) bool
    action: jax.Array  # (T, M) int32
    reward: jax.Array  # (T, M) float32
    done: jax.Array  # (T, M) bool
    aux: dict[str, jax.Array]  # {name: (T, M)}
    hidden0: jax.Array  # (M, H)
    last_obs: Any  # (M, ...)
    last_reset: jax.Array  # (M,) bool
    last_hidden: jax.Array  # (M, H)
    team_reward: jax.Array | None = None  # (T, M) float32


def clip_by_global_norm(grads: Any, max_norm: jax.Array) -> Any:
    """Scale ``grads`` so their global norm is at most ``max_norm`` (a traced value
    allowed, so it can be swept)."""
    norm = optax.global_norm(grads)
    scale = jnp.minimum(1.0, max_norm / jnp.maximum(norm, 1e-12))
    return jax.tree_util.tree_map(lambda g: g * scale, grads)


ADAM_EPS = 1e-5  # as in the PPO baselines (PureJaxRL, CleanRL)


def adam() -> optax.GradientTransformation:
    """Adam without the learning rate; :func:`apply_updates` multiplies by it, so the
    rate can be a per-member, annealed, traced number."""
    return optax.scale_by_adam(eps=ADAM_EPS)


def apply_updates(params: Any, opt_state: Any, grads: Any, lr: jax.Array) -> tuple[Any, Any]:
    updates, opt_state = adam().update(grads, opt_state, params)
    params = jax.tree_util.tree_map(lambda p, u: p - lr * u, params, updates)
    return params, opt_state


def annealed(lr: jax.Array, progress: jax.Array, anneal: bool) -> jax.Array:
    """Linear decay from ``lr`` at the start to 0 at the end of training."""
    return lr * (1.0 - progress) if anneal else lr


def as_hparams(values: dict[str, Any]) -> dict[str, jax.Array]:
    return {k: jnp.asarray(v, jnp.float32) for k, v in values.items()}
