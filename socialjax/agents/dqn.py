"""Deep Q-learning: double DQN (van Hasselt et al. 2016) with n-step returns, a hard-copied
target network, a replay buffer of recent rollouts, and epsilon-greedy or Boltzmann
exploration.

One class, :class:`DQNLearner`, written to the learner contract of
:mod:`socialjax.agents.learner`. Everything that changes lives in the member's
:class:`~socialjax.agents.learner.LearnerState`; its ``extra`` is a :class:`DQNExtra`
holding the target parameters and a circular buffer of the last ``buffer_rollouts``
rollouts, stored whole (``(T, M, ...)`` per rollout, plus the observation after the last
step), so that n-step windows can be read off any stored step.

Each :meth:`DQNLearner.update` writes the new rollout into the buffer, then makes
``updates_per_rollout`` gradient steps, each on ``batch_size`` transitions ``(slot, t,
m)`` drawn uniformly over the filled part of the buffer. The regression target of a
transition is the n-step double-DQN return (:func:`n_step_targets`)::

    G_t = sum_{k<L} gamma^k r_{t+k}  [+ gamma^L Q_target(s_{t+L}, argmax_a Q_online(s_{t+L}, a))]

with ``L = min(n, T - t)`` (the window is truncated at the end of the stored rollout,
where ``s_T`` is the rollout's ``last_obs``); the sum stops after the first ``done`` in
the window, and then there is no bootstrap term. The n-step return is taken on the
stored (off-policy) actions without correction, as in Rainbow. The loss is the Huber
loss (``delta = 1``) between ``Q_online(s_t, a_t)`` and ``G_t``; gradients are clipped by
global norm and applied with Adam. The target network is hard-copied from the online
one every ``target_update_every`` calls of ``update``.

The network's ``conv`` and ``precision`` (bfloat16 compute; parameters, Adam state,
targets and loss stay float32) are passed to :class:`~socialjax.agents.networks.QNetwork`.

Recurrent Q-learning (R2D2-style burn-in and stored states) is not implemented.

Hyperparameters in ``state.hparams`` (all ``() float32``, sweepable): ``lr``, ``gamma``,
``max_grad_norm``, ``eps_start``, ``eps_end``, ``eps_decay`` (fraction of training over
which epsilon decays linearly from ``eps_start`` to ``eps_end``), ``temperature``
(Boltzmann exploration).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct

from socialjax.agents import hparams
from socialjax.agents.learner import (
    LearnerState,
    Rollout,
    adam,
    annealed,
    apply_updates,
    as_hparams,
    clip_by_global_norm,
)
from socialjax.agents.networks import EncoderSpec, QNetwork, compute_dtype, init_hidden, resolve_conv, sample_obs
from socialjax.core.spaces import Space

EXPLORATIONS = ("epsilon", "boltzmann")
HPARAMS = hparams.DQN  # read from LearnerState.hparams; declared in socialjax.agents.hparams
DEFAULT_HPARAMS: dict[str, float] = hparams.defaults(HPARAMS)


def epsilon(hparams: dict[str, jax.Array], progress: jax.Array) -> jax.Array:
    """Exploration rate at ``progress``: linear from ``eps_start`` (progress 0) to
    ``eps_end`` (progress ``eps_decay`` and after)."""
    frac = jnp.clip(progress / jnp.maximum(hparams["eps_decay"], 1e-8), 0.0, 1.0)
    return hparams["eps_start"] + frac * (hparams["eps_end"] - hparams["eps_start"])


def _window_returns(
    reward: jax.Array, done: jax.Array, valid: jax.Array, bootstrap_q: jax.Array, gamma: jax.Array
) -> jax.Array:
    """n-step returns of windows laid out on a leading axis of length ``n``.

    ``reward``, ``done``, ``valid`` are ``(n, ...)``: step ``k`` of the window starting at
    ``t`` is step ``t + k`` of the rollout, ``valid`` where that step exists (a prefix of
    the window). ``bootstrap_q`` ``(...)`` is the value of the state after the window's
    last valid step. Rewards after the first ``done`` are dropped, and so is the
    bootstrap term if a ``done`` occurs anywhere in the window.
    """
    n = reward.shape[0]
    valid = valid.astype(jnp.float32)
    ended = done.astype(jnp.float32) * valid
    # alive[k]: no episode end at steps 0 .. k-1 of the window
    alive = jnp.cumprod(jnp.concatenate([jnp.ones_like(ended[:1]), 1.0 - ended[:-1]], axis=0), axis=0)
    disc = jnp.power(gamma, jnp.arange(n, dtype=jnp.float32)).reshape((n,) + (1,) * (reward.ndim - 1))
    ret = jnp.sum(disc * alive * valid * reward, axis=0)
    length = valid.sum(axis=0)
    no_end = jnp.prod(1.0 - ended, axis=0)
    return ret + no_end * jnp.power(gamma, length) * bootstrap_q


def n_step_targets(reward: jax.Array, done: jax.Array, bootstrap_q: jax.Array, gamma: jax.Array, n: int) -> jax.Array:
    """n-step targets over ``(T, M)`` arrays of one rollout.

    ``bootstrap_q[t]`` is the (double-Q) value of the state after step ``t``, i.e. of
    ``obs[t + 1]``, or of ``last_obs`` for ``t = T - 1``. The target of step ``t`` is
    ``sum_{k<L} gamma^k reward[t+k] + gamma^L bootstrap_q[t+L-1]`` with ``L = min(n, T-t)``;
    the sum stops after the first ``done`` in ``t .. t+L-1`` (that step's reward
    included), and then there is no bootstrap term. ``n = 1`` is the one-step TD target.
    """
    n = int(n)
    if n < 1:
        raise ValueError(f"n must be a positive integer, got {n}")
    T = reward.shape[0]
    idx = jnp.arange(n)[:, None] + jnp.arange(T)[None, :]  # (n, T): step t + k
    valid = idx < T
    idx = jnp.minimum(idx, T - 1)
    last = jnp.minimum(jnp.arange(T) + n, T) - 1  # last valid step of each window
    valid = valid.reshape(valid.shape + (1,) * (reward.ndim - 1))
    return _window_returns(reward[idx], done[idx], valid, bootstrap_q[last], gamma)


@struct.dataclass
class ReplayBuffer:
    """The last ``buffer_rollouts`` rollouts of one member, slot-major: ``obs`` ``(B, T, M,
    ...)`` (any pytree, stored in the observation's dtype), ``action``/``reward``/``done``
    ``(B, T, M)``, ``last_obs`` ``(B, M, ...)``. ``size`` slots are filled (``0 ..
    size-1``); the next rollout goes to slot ``ptr``."""

    obs: Any
    action: jax.Array
    reward: jax.Array
    done: jax.Array
    last_obs: Any
    size: jax.Array  # () int32
    ptr: jax.Array  # () int32


@struct.dataclass
class TDBatch:
    """What one gradient step regresses: :meth:`DQNLearner.q_taken` of ``obs`` and
    ``action`` towards ``target`` ``(B,)`` (DQN: ``B`` transitions, ``obs`` ``(B, ...)``,
    ``action`` ``(B,)``)."""

    obs: Any
    action: jax.Array
    target: jax.Array  # (B,) float32, no gradient


@struct.dataclass
class DQNExtra:
    """What DQN keeps besides the online parameters: the target network's parameters,
    the replay buffer, and the number of ``update`` calls made so far."""

    target_params: Any
    buffer: ReplayBuffer
    updates: jax.Array  # () int32


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or int(value) != value or int(value) < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


class DQNLearner:
    """Double DQN with n-step returns on a :class:`~socialjax.agents.networks.QNetwork`.

    ``rollout_len`` (``T``) and ``seats`` (``M``) are the shape of the rollouts the
    member will be given: the replay buffer is allocated at :meth:`init` with static
    shapes. A gradient step regresses :meth:`q_taken` on a :meth:`sample` of the buffer;
    VDN (:mod:`socialjax.agents.vdn`) is these two on whole games.
    """

    hparams = HPARAMS  # the Learner contract's names, read from state.hparams
    # the TrainConfig fields of this learner alone
    settings = ("exploration", "buffer_rollouts", "dqn_updates", "dqn_batch", "n_step", "target_update_every")
    RECURRENT = False  # recurrent Q-learning is not implemented
    ALIGNS = False  # no advantages for Advantage Alignment
    CENTRAL_CRITIC = False  # its observation is the seat's own
    VALUE_NORM = False  # no value head to normalise

    @classmethod
    def from_config(cls, obs_space: Space, spec: EncoderSpec, num_actions: int, config, seats: int) -> DQNLearner:
        """The learner a :class:`~socialjax.train.TrainConfig` describes, for rollouts of
        ``config.rollout_len`` steps on ``seats`` seats per member."""
        return cls(obs_space, spec, num_actions, **cls.options(config, seats))

    @classmethod
    def options(cls, config, seats: int) -> dict[str, Any]:
        """The constructor's keyword arguments that ``config`` sets."""
        return dict(
            buffer_rollouts=config.buffer_rollouts, updates_per_rollout=config.dqn_updates,
            batch_size=config.dqn_batch, n_step=config.n_step, exploration=config.exploration,
            target_update_every=config.target_update_every, anneal_lr=config.anneal_lr,
            rollout_len=config.rollout_len, seats=seats, hidden=config.hidden, embed_dim=config.embed_dim,
            channels=config.channels, conv=resolve_conv(config.conv), precision=config.precision,
        )

    def check_batch(self, config, seats: int) -> None:
        """Nothing to check: sampled batches need no split of the rollout."""

    def __init__(
        self,
        obs_space: Space,
        spec: EncoderSpec,
        num_actions: int,
        *,
        rollout_len: int,
        seats: int,
        hidden: int = 64,
        recurrent: bool = False,
        buffer_rollouts: int = 8,
        updates_per_rollout: int = 4,
        batch_size: int = 256,
        n_step: int = 3,
        exploration: str = "epsilon",
        target_update_every: int = 10,
        anneal_lr: bool = False,
        embed_dim: int = 8,
        channels: int = 32,
        conv: str = "patch",
        precision: str = "float32",
    ):
        if recurrent:
            raise ValueError(
                "DQNLearner does not support recurrent=True: recurrent Q-learning (stored "
                "hidden states, burn-in) is not implemented; use a feed-forward QNetwork or "
                "a recurrent ActorCriticLearner"
            )
        if exploration not in EXPLORATIONS:
            raise ValueError(f"exploration must be one of {EXPLORATIONS}, got {exploration!r}")
        self.obs_space = obs_space
        self.num_actions = _positive_int("num_actions", num_actions)
        self.rollout_len = _positive_int("rollout_len", rollout_len)
        self.seats = _positive_int("seats", seats)
        self.buffer_rollouts = _positive_int("buffer_rollouts", buffer_rollouts)
        self.updates_per_rollout = _positive_int("updates_per_rollout", updates_per_rollout)
        self.batch_size = _positive_int("batch_size", batch_size)
        self.n_step = _positive_int("n_step", n_step)
        self.target_update_every = _positive_int("target_update_every", target_update_every)
        self.exploration = exploration
        self.anneal_lr = bool(anneal_lr)
        self.net = QNetwork(
            spec,
            self.num_actions,
            _positive_int("hidden", hidden),
            False,
            _positive_int("embed_dim", embed_dim),
            _positive_int("channels", channels),
            resolve_conv(conv),
            compute_dtype(precision),
        )
        self.recurrent = False
        self.hidden_size = 1

    # -- contract ------------------------------------------------------------------
    def init(self, key: jax.Array, hparams: dict[str, Any]) -> LearnerState:
        """Online and target parameters (equal), Adam state, an empty buffer. Missing
        hyperparameters take their :data:`DEFAULT_HPARAMS` values."""
        obs = sample_obs(self.obs_space, 1)
        params = self.net.init(key, init_hidden(self.net, 1), obs, jnp.zeros((1,), bool))
        B, T, M = self.buffer_rollouts, self.rollout_len, self.seats
        one = sample_obs(self.obs_space, M)
        buffer = ReplayBuffer(
            obs=jax.tree_util.tree_map(lambda x: jnp.zeros((B, T, *x.shape), x.dtype), one),
            action=jnp.zeros((B, T, M), jnp.int32),
            reward=jnp.zeros((B, T, M), jnp.float32),
            done=jnp.zeros((B, T, M), bool),
            last_obs=jax.tree_util.tree_map(lambda x: jnp.zeros((B, *x.shape), x.dtype), one),
            size=jnp.zeros((), jnp.int32),
            ptr=jnp.zeros((), jnp.int32),
        )
        extra = DQNExtra(target_params=params, buffer=buffer, updates=jnp.zeros((), jnp.int32))
        return LearnerState(
            params=params,
            opt_state=adam().init(params),
            hparams=as_hparams({**DEFAULT_HPARAMS, **hparams}),
            extra=extra,
        )

    def q_values(self, params: Any, obs: Any) -> jax.Array:
        """``Q(obs, .)`` ``(B, A)`` for a batch of observations."""
        B = jax.tree_util.tree_leaves(obs)[0].shape[0]
        return self.net.apply(params, init_hidden(self.net, B), obs, jnp.zeros((B,), bool))[1]

    def greedy(self, state: LearnerState, hidden, obs, reset):
        """``(hidden, action)``: the action of highest Q-value."""
        hidden, q = self.net.apply(state.params, hidden, obs, reset)
        return hidden, jnp.argmax(q, axis=-1).astype(jnp.int32)

    def play(self, state: LearnerState, hidden, obs, reset, key):
        """``(hidden, action)``: ``act`` at the end of training (exploration at
        ``eps_end``, or Boltzmann at ``temperature``)."""
        hidden, action, _ = self.act(state, hidden, obs, reset, key, 1.0)
        return hidden, action

    def act(self, state: LearnerState, hidden, obs, reset, key, progress):
        hidden, q = self.net.apply(state.params, hidden, obs, reset)
        h = state.hparams
        if self.exploration == "epsilon":
            k_explore, k_action = jax.random.split(key)
            greedy = jnp.argmax(q, axis=-1)
            random = jax.random.randint(k_action, greedy.shape, 0, self.num_actions)
            explore = jax.random.uniform(k_explore, greedy.shape) < epsilon(h, progress)
            action = jnp.where(explore, random, greedy)
        else:
            action = jax.random.categorical(key, q / h["temperature"], axis=-1)
        return hidden, action.astype(jnp.int32), {"q_max": q.max(axis=-1)}

    def prepare(self, state: LearnerState, ro: Rollout, hparams=None) -> dict[str, jax.Array]:
        return {}

    def update(self, state: LearnerState, ro: Rollout, prep: dict[str, jax.Array], key, progress):
        h = state.hparams
        lr = annealed(h["lr"], progress, self.anneal_lr)
        if ro.action.shape != (self.rollout_len, self.seats):
            raise ValueError(
                f"DQNLearner was built for rollouts of (T, M) = {(self.rollout_len, self.seats)}, "
                f"got {ro.action.shape}"
            )
        extra: DQNExtra = state.extra
        buffer = self.store(extra.buffer, ro)

        def step(carry, key):
            params, opt_state = carry
            batch = self.sample(params, extra.target_params, buffer, key, h["gamma"])

            def loss_fn(params):
                q_taken = self.q_taken(params, batch.obs, batch.action)
                loss = optax.huber_loss(q_taken, batch.target, delta=1.0).mean()
                return loss, {"loss": loss, "q_mean": q_taken.mean(), "target_mean": batch.target.mean()}

            grads, stats = jax.grad(loss_fn, has_aux=True)(params)
            grads = clip_by_global_norm(grads, h["max_grad_norm"])
            params, opt_state = apply_updates(params, opt_state, grads, lr)
            return (params, opt_state), stats

        keys = jax.random.split(key, self.updates_per_rollout)
        (params, opt_state), stats = jax.lax.scan(step, (state.params, state.opt_state), keys)
        metrics = jax.tree_util.tree_map(jnp.mean, stats)
        metrics["epsilon"] = epsilon(h, progress) if self.exploration == "epsilon" else jnp.zeros(())

        updates = extra.updates + 1
        copy = updates % self.target_update_every == 0
        target_params = jax.tree_util.tree_map(lambda p, tp: jnp.where(copy, p, tp), params, extra.target_params)
        extra = extra.replace(target_params=target_params, buffer=buffer, updates=updates)
        return state.replace(params=params, opt_state=opt_state, extra=extra), metrics

    # -- internals -----------------------------------------------------------------
    def draw(self, buffer: ReplayBuffer, key: jax.Array, units: int) -> tuple[jax.Array, jax.Array, jax.Array]:
        """``batch_size`` uniform draws ``(slot, t, unit)`` (each ``(B,) int32``): a filled
        slot of the buffer, a step of its rollout and one of ``units`` (DQN: the seats)."""
        k_slot, k_t, k_unit = jax.random.split(key, 3)
        n = self.batch_size
        slot = jax.random.randint(k_slot, (n,), 0, buffer.size)
        t = jax.random.randint(k_t, (n,), 0, self.rollout_len)
        return slot, t, jax.random.randint(k_unit, (n,), 0, units)

    def sample(self, params, target_params, buffer: ReplayBuffer, key: jax.Array, gamma) -> TDBatch:
        """A gradient step's :class:`TDBatch`: ``batch_size`` stored transitions ``(slot, t,
        m)`` and their n-step double-DQN targets (:meth:`targets`)."""
        slot, t, m = self.draw(buffer, key, self.seats)
        target = self.targets(params, target_params, buffer, slot, t, m, gamma)
        obs = jax.tree_util.tree_map(lambda x: x[slot, t, m], buffer.obs)
        return TDBatch(obs=obs, action=buffer.action[slot, t, m], target=target)

    def q_taken(self, params, obs, action: jax.Array) -> jax.Array:
        """``Q(obs, action)`` ``(B,)``: the Q-value of each transition's action."""
        q = self.q_values(params, obs)
        return jnp.take_along_axis(q, action[:, None], axis=-1)[:, 0]

    def store(self, buffer: ReplayBuffer, ro: Rollout) -> ReplayBuffer:
        """Write ``ro`` into slot ``ptr`` (overwriting the oldest rollout once full)."""
        i = buffer.ptr

        def put(buf, x):
            return jax.lax.dynamic_update_index_in_dim(buf, x.astype(buf.dtype), i, axis=0)

        return buffer.replace(
            obs=jax.tree_util.tree_map(put, buffer.obs, ro.obs),
            action=put(buffer.action, ro.action),
            reward=put(buffer.reward, ro.reward),
            done=put(buffer.done, ro.done),
            last_obs=jax.tree_util.tree_map(put, buffer.last_obs, ro.last_obs),
            size=jnp.minimum(buffer.size + 1, self.buffer_rollouts),
            ptr=(i + 1) % self.buffer_rollouts,
        )

    def targets(self, params, target_params, buffer: ReplayBuffer, slot, t, m, gamma) -> jax.Array:
        """n-step double-DQN targets ``(B,)`` of the stored transitions ``(slot, t, m)``
        (each ``(B,)`` int): the windows of :func:`n_step_targets`, read only where needed
        (one bootstrap state per transition). No gradient flows through them."""
        T, n = self.rollout_len, self.n_step
        idx = t[None, :] + jnp.arange(n)[:, None]  # (n, B)
        valid = idx < T
        idx = jnp.minimum(idx, T - 1)
        reward = buffer.reward[slot[None], idx, m[None]]
        done = buffer.done[slot[None], idx, m[None]]
        nxt = jnp.minimum(t + n, T)  # index of the bootstrap state; T means last_obs
        inside = nxt < T
        nxt_c = jnp.minimum(nxt, T - 1)

        def pick(o, lo):
            cond = inside.reshape(inside.shape + (1,) * (o.ndim - 3))
            return jnp.where(cond, o[slot, nxt_c, m], lo[slot, m])

        next_obs = jax.tree_util.tree_map(pick, buffer.obs, buffer.last_obs)
        best = jnp.argmax(self.q_values(params, next_obs), axis=-1)
        q_next = jnp.take_along_axis(self.q_values(target_params, next_obs), best[:, None], axis=-1)[:, 0]
        return jax.lax.stop_gradient(_window_returns(reward, done, valid, q_next, gamma))
