"""Actor-critic learners: PPO (Schulman et al. 2017) and A2C, feed-forward or recurrent.

One class, :class:`ActorCriticLearner`, implements both (``algo="ppo"`` or ``"a2c"``):
GAE advantages (Schulman et al. 2016), a categorical policy through distrax, value and
entropy terms, gradient clipping by global norm, Adam with a linearly annealed learning
rate. PPO clips the probability ratio and the value change and makes several epochs
of minibatch passes; A2C makes one full-batch pass of the plain policy gradient with
a learned baseline.

The network's ``conv`` (``"patch"``, ``"xla"``, ``"looped"`` or ``"auto"``) and ``precision``
(``"float32"`` or ``"bfloat16"``: bfloat16 compute, float32 parameters, Adam state and
loss) are passed to :class:`~socialjax.agents.networks.ActorCritic`.

Recurrent networks (``recurrent=True``, a GRU) are trained on whole rollout sequences:
minibatches split the seats, never the time axis, and the GRU is replayed from the
rollout's starting state with resets at episode starts.

With ``value_norm`` (MAPPO's ValueNorm, Yu et al. 2022) the value head learns normalised
returns: :class:`ValueNorm` keeps debiased running averages of the value targets and of
their squares; the advantages and targets are computed on denormalised values, and the
value loss (clipped in the normalised scale, around the rollout's normalised values)
compares the head with the normalised targets. The statistics are updated once per
update, with the whole rollout's targets, before the epochs (MAPPO's code updates them
at every minibatch; with its decay of 0.99999 both are close to the mean and variance
of all targets seen so far).

Hyperparameters in ``state.hparams`` (all ``() float32``, sweepable):
``lr``, ``gamma``, ``gae_lambda``, ``clip_eps``, ``ent_coef``, ``vf_coef``,
``max_grad_norm``, ``reward_scale`` (rewards are multiplied by it before the advantages
and value targets, so the value head learns scaled returns; with advantages normalised
per minibatch it sets how the value loss weighs against the policy loss).
"""

from __future__ import annotations

from typing import Any

import distrax
import jax
import jax.numpy as jnp
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
from socialjax.agents.networks import ActorCritic, EncoderSpec, compute_dtype, init_hidden, resolve_conv, sample_obs
from socialjax.core.spaces import Space

ALGOS = ("ppo", "a2c")
HPARAMS = hparams.ACTOR_CRITIC  # read from LearnerState.hparams; declared in socialjax.agents.hparams


# ValueNorm of MAPPO's code (marlbenchmark/on-policy, utils/valuenorm.py): decay 0.99999,
# debiasing floor 1e-5, variance floor 1e-2
VALUE_NORM_DECAY = 0.99999
VALUE_NORM_EPS = 1e-5
VALUE_NORM_MIN_VAR = 1e-2


@struct.dataclass
class ValueNorm:
    """Running statistics of the value targets: exponential averages (decay
    :data:`VALUE_NORM_DECAY`) of the targets, of their squares, and of 1 (the debiasing
    weight, so that the first update gives the batch's own mean and variance)."""

    mean: jax.Array  # () float32
    mean_sq: jax.Array
    debias: jax.Array

    @classmethod
    def zeros(cls) -> ValueNorm:
        zero = jnp.zeros((), jnp.float32)
        return cls(mean=zero, mean_sq=zero, debias=zero)

    def update(self, x: jax.Array) -> ValueNorm:
        b = VALUE_NORM_DECAY
        return ValueNorm(mean=b * self.mean + (1 - b) * x.mean(), mean_sq=b * self.mean_sq + (1 - b) * (x**2).mean(),
                         debias=b * self.debias + (1 - b))

    def moments(self) -> tuple[jax.Array, jax.Array]:
        """``(mean, std)`` of the targets seen so far (``(0, 1)`` before any: no change)."""
        seen = self.debias > 0
        w = jnp.maximum(self.debias, VALUE_NORM_EPS)
        mean = self.mean / w
        var = jnp.maximum(self.mean_sq / w - mean**2, VALUE_NORM_MIN_VAR)
        return jnp.where(seen, mean, 0.0), jnp.where(seen, jnp.sqrt(var), 1.0)

    def normalize(self, x: jax.Array) -> jax.Array:
        mean, std = self.moments()
        return (x - mean) / std

    def denormalize(self, x: jax.Array) -> jax.Array:
        mean, std = self.moments()
        return x * std + mean


def gae(
    reward: jax.Array, value: jax.Array, done: jax.Array, last_value: jax.Array, gamma: jax.Array, lam: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """Generalised advantage estimates over ``(T, M)`` arrays; returns ``(adv, target)``.

    ``done[t]`` cuts the bootstrap after step ``t`` (the next observation starts a new
    episode); ``last_value`` ``(M,)`` is the value of the observation after step ``T-1``.
    """

    def back(carry, x):
        next_adv, next_value = carry
        r, v, d = x
        keep = 1.0 - d.astype(jnp.float32)
        delta = r + gamma * next_value * keep - v
        adv = delta + gamma * lam * keep * next_adv
        return (adv, v), adv

    _, adv = jax.lax.scan(back, (jnp.zeros_like(last_value), last_value), (reward, value, done), reverse=True)
    return adv, adv + value


class ActorCriticLearner:
    """PPO or A2C on an :class:`~socialjax.agents.networks.ActorCritic`."""

    hparams = HPARAMS  # the Learner contract's names, read from state.hparams
    settings = ("update_epochs", "num_minibatches")  # the TrainConfig fields of this learner alone
    RECURRENT = True  # a GRU core is supported
    ALIGNS = True  # prepare gives advantages "adv" (Advantage Alignment mixes them)
    CENTRAL_CRITIC = False  # its observation is the seat's own (no global observation)
    VALUE_NORM = True  # reads TrainConfig.value_norm

    @classmethod
    def from_config(cls, obs_space: Space, spec: EncoderSpec, num_actions: int, config,
                    seats: int) -> ActorCriticLearner:
        """The learner a :class:`~socialjax.train.TrainConfig` describes (its ``algo``,
        network and schedule fields; ``seats`` per member is not needed)."""
        return cls(obs_space, spec, num_actions, **cls.options(config))

    @staticmethod
    def options(config) -> dict[str, Any]:
        """The constructor's settings read from a config (all but the spaces)."""
        return dict(
            algo=config.algo, update_epochs=config.update_epochs, num_minibatches=config.num_minibatches,
            anneal_lr=config.anneal_lr, hidden=config.hidden, recurrent=config.recurrent, embed_dim=config.embed_dim,
            channels=config.channels, conv=resolve_conv(config.conv), precision=config.precision,
            value_norm=config.value_norm,
        )

    def check_batch(self, config, seats: int) -> None:
        """``ValueError`` unless a rollout of ``config.rollout_len`` steps on ``seats``
        seats splits into ``config.num_minibatches`` minibatches (before compiling)."""
        T, M, K = config.rollout_len, seats, config.num_minibatches
        if not self.recurrent and (T * M) % K:
            raise ValueError(f"{T * M} samples per learner (rollout_len x {M} seats) do not split into "
                             f"num_minibatches={K} minibatches")
        if self.recurrent and M % K:
            raise ValueError(f"recurrent learners split their {M} seats into num_minibatches={K} minibatches: "
                             "not divisible")

    def __init__(
        self,
        obs_space: Space,
        spec: EncoderSpec,
        num_actions: int,
        *,
        algo: str = "ppo",
        hidden: int = 64,
        recurrent: bool = False,
        update_epochs: int = 4,
        num_minibatches: int = 4,
        anneal_lr: bool = True,
        embed_dim: int = 8,
        channels: int = 32,
        conv: str = "patch",
        precision: str = "float32",
        value_norm: bool = False,
    ):
        if algo not in ALGOS:
            raise ValueError(f"algo must be one of {ALGOS}, got {algo!r}")
        self.algo = algo
        self.obs_space = obs_space
        self.net = self.network(spec, num_actions, hidden=hidden, recurrent=recurrent, embed_dim=embed_dim,
                                channels=channels, conv=resolve_conv(conv), dtype=compute_dtype(precision))
        self.value_norm = bool(value_norm)
        self.recurrent = recurrent
        self.update_epochs = 1 if algo == "a2c" else int(update_epochs)
        self.num_minibatches = 1 if algo == "a2c" else int(num_minibatches)
        self.anneal_lr = bool(anneal_lr)
        self.hidden_size = hidden if recurrent else 1

    def network(self, spec: EncoderSpec, num_actions: int, **sizes) -> ActorCritic:
        """The network (a hook: MAPPO's critic sees more)."""
        return ActorCritic(spec, num_actions, **sizes)

    # -- contract ------------------------------------------------------------------
    def init(self, key: jax.Array, hparams: dict[str, Any]) -> LearnerState:
        obs = sample_obs(self.obs_space, 1)
        params = self.net.init(key, init_hidden(self.net, 1), obs, jnp.zeros((1,), bool))
        extra = ValueNorm.zeros() if self.value_norm else ()
        return LearnerState(params=params, opt_state=adam().init(params), hparams=as_hparams(hparams), extra=extra)

    def act(self, state: LearnerState, hidden, obs, reset, key, progress):
        hidden, (logits, value) = self.net.apply(state.params, hidden, obs, reset)
        pi = distrax.Categorical(logits=logits)
        action = pi.sample(seed=key)
        return hidden, action.astype(jnp.int32), {"value": value, "logp": pi.log_prob(action)}

    def play(self, state: LearnerState, hidden, obs, reset, key):
        """``(hidden, action)``: sampled from the policy (``act`` without its ``aux``)."""
        hidden, action, _ = self.act(state, hidden, obs, reset, key, 1.0)
        return hidden, action

    def greedy(self, state: LearnerState, hidden, obs, reset):
        """``(hidden, action)``: the most likely action of the policy."""
        hidden, (logits, _) = self.net.apply(state.params, hidden, obs, reset)
        return hidden, jnp.argmax(logits, axis=-1).astype(jnp.int32)

    def values(self, state: LearnerState, hidden, obs, reset) -> jax.Array:
        return self.net.apply(state.params, hidden, obs, reset)[1][1]

    def prepare(self, state: LearnerState, ro: Rollout, hparams=None) -> dict[str, jax.Array]:
        """GAE advantages and value targets, on the values in the returns' own scale
        (denormalised with ``value_norm``)."""
        h = state.hparams if hparams is None else hparams
        last_value = self.values(state, ro.last_hidden, ro.last_obs, ro.last_reset)
        value = ro.aux["value"]
        if self.value_norm:
            value, last_value = state.extra.denormalize(value), state.extra.denormalize(last_value)
        reward = ro.reward * h["reward_scale"]
        adv, target = gae(reward, value, ro.done, last_value, h["gamma"], h["gae_lambda"])
        return {"adv": adv, "target": target}

    def update(self, state: LearnerState, ro: Rollout, prep: dict[str, jax.Array], key, progress):
        h = state.hparams
        lr = annealed(h["lr"], progress, self.anneal_lr)
        T, M = ro.action.shape
        batch, extra = self._batch(state, ro, prep)
        if self.recurrent:
            if M % self.num_minibatches:
                raise ValueError(f"recurrent PPO splits {M} seats into {self.num_minibatches} minibatches: "
                                 "not divisible")
        elif (T * M) % self.num_minibatches:
            raise ValueError(f"PPO splits {T * M} samples into {self.num_minibatches} minibatches: not divisible")

        def epoch(carry, key):
            params, opt_state = carry
            if self.recurrent:  # minibatches of whole sequences: shuffle the seat axis
                perm = jax.random.permutation(key, M)
                mb = jax.tree_util.tree_map(
                    lambda x: jnp.swapaxes(
                        jnp.take(x, perm, axis=1).reshape(T, self.num_minibatches, M // self.num_minibatches,
                                                          *x.shape[2:]),
                        0,
                        1,
                    ),
                    batch,
                )
                mb["hidden0"] = ro.hidden0[perm].reshape(self.num_minibatches, M // self.num_minibatches, -1)
            else:  # minibatches of single steps
                perm = jax.random.permutation(key, T * M)
                mb = jax.tree_util.tree_map(
                    lambda x: x.reshape(T * M, *x.shape[2:])[perm].reshape(self.num_minibatches, -1, *x.shape[2:]),
                    batch,
                )
            (params, opt_state), stats = jax.lax.scan(self._minibatch(lr, h, progress), (params, opt_state), mb)
            return (params, opt_state), stats

        keys = jax.random.split(key, self.update_epochs)
        (params, opt_state), stats = jax.lax.scan(epoch, (state.params, state.opt_state), keys)
        metrics = jax.tree_util.tree_map(jnp.mean, stats)
        return state.replace(params=params, opt_state=opt_state, extra=extra), metrics

    # -- internals -----------------------------------------------------------------
    def _batch(self, state: LearnerState, ro: Rollout, prep: dict[str, jax.Array]) -> tuple[dict, Any]:
        """What the minibatches are cut from (``(T, M, ...)`` leaves) and the state's
        ``extra`` after the update (the value statistics, updated with the targets)."""
        norm, target = state.extra, prep["target"]
        if self.value_norm:  # the head learns normalised targets (its outputs in ro.aux are normalised)
            norm = norm.update(target)
            target = norm.normalize(target)
        batch = {
            "obs": ro.obs,
            "reset": ro.reset,
            "action": ro.action,
            "logp": ro.aux["logp"],
            "value": ro.aux["value"],
            "adv": prep["adv"],
            "target": target,
        }
        return batch, norm

    def _forward(self, params, mb):
        if self.recurrent:  # replay the GRU over (T, B)

            def step(hidden, x):
                obs, reset = x
                hidden, out = self.net.apply(params, hidden, obs, reset)
                return hidden, out

            _, (logits, value) = jax.lax.scan(step, mb["hidden0"], (mb["obs"], mb["reset"]))
            return logits, value
        B = mb["action"].shape[0]
        _, (logits, value) = self.net.apply(params, init_hidden(self.net, B), mb["obs"], mb["reset"])
        return logits, value

    def _loss(self, params, mb, h, progress):
        """``(loss, stats)`` of one minibatch: the clipped surrogate (PPO) or the plain
        policy gradient (A2C), the value loss and the entropy bonus."""
        logits, value = self._forward(params, mb)
        pi = distrax.Categorical(logits=logits)
        logp = pi.log_prob(mb["action"])
        adv = normalised(mb["adv"])
        entropy = pi.entropy().mean()
        if self.algo == "ppo":
            ratio = jnp.exp(logp - mb["logp"])
            policy_loss = clipped_surrogate(ratio, adv, h["clip_eps"])
            value_loss = clipped_value_loss(value, mb["value"], mb["target"], h["clip_eps"])
            approx_kl = ((ratio - 1.0) - (logp - mb["logp"])).mean()
        else:
            policy_loss = -(logp * jax.lax.stop_gradient(adv)).mean()
            value_loss = 0.5 * ((value - mb["target"]) ** 2).mean()
            approx_kl = jnp.zeros(())
        loss = policy_loss + h["vf_coef"] * value_loss - h["ent_coef"] * entropy
        return loss, {
            "loss": loss,
            "policy_loss": policy_loss,
            "value_loss": value_loss,
            "entropy": entropy,
            "approx_kl": approx_kl,
        }

    def _clip(self, grads, h):
        """The gradients clipped by global norm (``max_grad_norm``)."""
        return clip_by_global_norm(grads, h["max_grad_norm"])

    def _minibatch(self, lr, h, progress):
        def step(carry, mb):
            params, opt_state = carry
            grads, stats = jax.grad(self._loss, has_aux=True)(params, mb, h, progress)
            params, opt_state = apply_updates(params, opt_state, self._clip(grads, h), lr)
            return (params, opt_state), stats

        return step


def normalised(adv: jax.Array) -> jax.Array:
    """Advantages normalised over the minibatch (mean 0, standard deviation 1)."""
    return (adv - adv.mean()) / (adv.std() + 1e-8)


def clipped_surrogate(ratio: jax.Array, adv: jax.Array, clip_eps) -> jax.Array:
    """PPO's policy loss: ``-mean(min(ratio A, clip(ratio, 1 - eps, 1 + eps) A))``."""
    clipped = jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps)
    return -jnp.minimum(ratio * adv, clipped * adv).mean()


def clipped_value_loss(value: jax.Array, old: jax.Array, target: jax.Array, clip_eps) -> jax.Array:
    """PPO's value loss: half the larger squared error of the value and of the value
    moved at most ``clip_eps`` from the rollout's ``old`` one."""
    v_clipped = old + jnp.clip(value - old, -clip_eps, clip_eps)
    return 0.5 * jnp.maximum((value - target) ** 2, (v_clipped - target) ** 2).mean()


def advantage_alignment(adv: jax.Array, done: jax.Array, gamma: jax.Array, beta: jax.Array) -> jax.Array:
    """Advantage Alignment (Duque et al. 2025) for ``(T, E, N)`` advantages of the ``N``
    seats of ``E`` games: agent i's advantage becomes

        A*_i(t) = A_i(t) + beta * gamma * [sum_{k<t} gamma^(t-k) A_i(k)] * mean_{j != i} A_j(t)

    with the discounted sum of i's own past advantages restarted after each ``done``
    ``(T, E)`` and at the start of the rollout (the sum does not reach back into the
    previous rollout). The product aligns i's policy gradient with the co-players' advantages:
    actions good for the others are reinforced in proportion to how well i has been
    doing in this episode. ``N = 1`` returns ``adv`` unchanged. ``gamma``: ``()``, or
    ``(E, N)`` for each seat's own discount (the population loop passes each learner's,
    the one its GAE used).
    """
    T, E, N = adv.shape
    if N < 2:
        return adv
    others = (adv.sum(axis=-1, keepdims=True) - adv) / (N - 1)

    def fwd(past, x):
        a, d = x  # past: discounted sum of advantages before step t (already times gamma)
        out = past
        past = jnp.where(d[:, None], 0.0, gamma * (past + a))
        return past, out

    start = jnp.zeros((E, N), adv.dtype)
    _, past = jax.lax.scan(fwd, start, (adv, done))
    return adv + beta * gamma * past * others
