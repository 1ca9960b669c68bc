"""REINFORCE (Williams 1992) with a linear softmax policy: the learner that
docs/architecture.md ("Adding a learner") walks through, registered and trained by
tests/agents/test_adding_a_learner.py.

The policy is ``pi(a | s) = softmax(x(s) W + b)`` on the observation's features ``x(s)``:
one-hot codes when the observation is a Box of small integers (the matrix games'
histories, the encoder ``"onehot"`` that ``network="auto"`` picks for them), the raw
numbers otherwise (``"mlp"``). One update on a rollout of ``T`` steps of ``M`` seats::

    G_t = r_t + gamma * G_{t+1} * (1 - done_t),  G_T = 0   (returns-to-go, restarted at done)
    A_t = (G_t - mean G) / (std G + 1e-8)                   (normalised over the T x M steps)
    loss = -mean_t log pi(a_t | s_t) A_t - ent_coef * mean_t entropy(pi(. | s_t))

then one Adam step of size ``lr`` (linearly annealed with ``anneal_lr``) on the gradient
clipped to global norm ``max_grad_norm``. There is no critic and no bootstrap: an episode
cut by the end of the rollout is credited only with the rewards inside the rollout.

Run as a script, it registers the learner and trains it against tit-for-tat in the
100-round iterated prisoner's dilemma (the ``ipd-tft`` preset), where it learns to
cooperate: ``python docs/examples/reinforce_learner.py``.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from socialjax.agents.learner import (
    LearnerState,
    Rollout,
    adam,
    annealed,
    apply_updates,
    as_hparams,
    clip_by_global_norm,
)
from socialjax.agents.registry import register_learner
from socialjax.core.spaces import Box
from socialjax.train import make_train
from socialjax.train.presets import get_preset

NORM_EPS = 1e-8  # returns normalised to mean 0 and std 1 (our choice, as PPO's advantages)


class Reinforce:
    """REINFORCE with a linear softmax policy on flat ``Box`` observations."""

    # the Learner protocol's class attributes
    hparams = ("lr", "gamma", "ent_coef", "max_grad_norm")  # read from state.hparams (socialjax.agents.hparams)
    RECURRENT = False  # no recurrent core (TrainConfig rejects recurrent=True)
    ALIGNS = False  # prepare gives returns, not advantages for Advantage Alignment (aa_beta must be 0)
    CENTRAL_CRITIC = False  # it sees its own observation (no global observation of the game)
    VALUE_NORM = False  # no value head (TrainConfig rejects value_norm=True)
    # and its instance attributes: the loop carries an (M, 1) recurrent state that act passes through
    recurrent = False
    hidden_size = 1

    def __init__(self, obs_space, num_actions: int, *, onehot: bool = True, anneal_lr: bool = True):
        if not isinstance(obs_space, Box):
            raise ValueError(f"Reinforce reads flat Box observations (the matrix games), got {obs_space}")
        high = obs_space.high.reshape(-1)
        self.classes = tuple(int(h) + 1 for h in high) if onehot else ()  # one-hot: classes per feature
        self.num_features = sum(self.classes) if onehot else math.prod(obs_space.shape)
        self.num_actions = int(num_actions)
        self.anneal_lr = bool(anneal_lr)

    @classmethod
    def from_config(cls, obs_space, spec, num_actions: int, config, seats: int) -> Reinforce:
        """Built from the config's ``network`` (through ``spec``) and ``anneal_lr``."""
        if spec.kind not in ("onehot", "mlp"):
            raise ValueError(f"Reinforce reads flat Box observations (the matrix games), got {obs_space}")
        return cls(obs_space, num_actions, onehot=spec.kind == "onehot", anneal_lr=config.anneal_lr)

    def check_batch(self, config, seats: int) -> None:
        """One full-batch step per update: the batch only needs two steps to normalise."""
        if config.rollout_len * seats < 2:
            raise ValueError(f"Reinforce normalises the returns over rollout_len x {seats} seats: needs 2 or more")

    # -- the policy -----------------------------------------------------------------
    def features(self, obs: jax.Array) -> jax.Array:
        """``(B, ...)`` observations -> ``(B, F)`` float32 features."""
        flat = obs.reshape(obs.shape[0], -1)
        if not self.classes:
            return flat.astype(jnp.float32)
        codes = flat.astype(jnp.int32)
        return jnp.concatenate([jax.nn.one_hot(codes[:, i], n) for i, n in enumerate(self.classes)], axis=-1)

    def log_policy(self, params, obs: jax.Array) -> jax.Array:
        """``(B, A)`` log-probabilities of the actions."""
        return jax.nn.log_softmax(self.features(obs) @ params["w"] + params["b"])

    # -- the protocol ---------------------------------------------------------------
    def init(self, key: jax.Array, hparams) -> LearnerState:
        """Zero weights: every member starts from the uniform policy (``key`` unused)."""
        params = {"w": jnp.zeros((self.num_features, self.num_actions)), "b": jnp.zeros((self.num_actions,))}
        return LearnerState(params=params, opt_state=adam().init(params), hparams=as_hparams(hparams))

    def act(self, state: LearnerState, hidden, obs, reset, key, progress):
        """Sampled actions ``(M,)``; no ``aux``: the update needs nothing but the rollout."""
        action = jax.random.categorical(key, self.log_policy(state.params, obs))
        return hidden, action.astype(jnp.int32), {}

    def play(self, state: LearnerState, hidden, obs, reset, key):
        """What a trained member plays outside training: the same sampled policy."""
        hidden, action, _ = self.act(state, hidden, obs, reset, key, 1.0)
        return hidden, action

    def greedy(self, state: LearnerState, hidden, obs, reset):
        return hidden, jnp.argmax(self.log_policy(state.params, obs), axis=-1).astype(jnp.int32)

    def prepare(self, state: LearnerState, ro: Rollout, hparams=None) -> dict[str, jax.Array]:
        """``{"return": (T, M)}``: the discounted returns-to-go, restarted at ``done``."""
        gamma = (state.hparams if hparams is None else hparams)["gamma"]

        def back(next_return, step):
            reward, done = step
            g = reward + gamma * next_return * (1.0 - done.astype(jnp.float32))
            return g, g

        _, returns = jax.lax.scan(back, jnp.zeros_like(ro.reward[0]), (ro.reward, ro.done), reverse=True)
        return {"return": returns}

    def update(self, state: LearnerState, ro: Rollout, prepared: dict, key, progress):
        """One Adam step on the whole rollout (``key`` unused: no minibatches)."""
        h = state.hparams
        T, M = ro.action.shape
        obs = ro.obs.reshape(T * M, *ro.obs.shape[2:])
        action = ro.action.reshape(T * M)
        g = prepared["return"].reshape(T * M)
        weight = (g - g.mean()) / (g.std() + NORM_EPS)

        def loss_fn(params):
            logp_all = self.log_policy(params, obs)
            logp = jnp.take_along_axis(logp_all, action[:, None], axis=-1)[:, 0]
            entropy = -(jnp.exp(logp_all) * logp_all).sum(axis=-1).mean()
            policy_loss = -(logp * weight).mean()
            loss = policy_loss - h["ent_coef"] * entropy
            return loss, {"loss": loss, "policy_loss": policy_loss, "entropy": entropy}

        grads, metrics = jax.grad(loss_fn, has_aux=True)(state.params)
        grads = clip_by_global_norm(grads, h["max_grad_norm"])
        lr = annealed(h["lr"], progress, self.anneal_lr)
        params, opt_state = apply_updates(state.params, state.opt_state, grads, lr)
        return state.replace(params=params, opt_state=opt_state), metrics


def train_against_tft(seeds=(0,), num_updates: int = 60, lr: float = 0.05) -> np.ndarray:
    """``(S, U)``: the learner's reward per step in each update, against tit-for-tat in the
    100-round IPD (preset ``ipd-tft``: 16 games, rollouts of one whole episode), one row
    per seed (vmapped: one compiled call). ``algo="reinforce"`` must be registered."""
    preset = get_preset("ipd-tft")
    config = preset.make_config(algo="reinforce", lr=lr, num_updates=num_updates, evaluate=False, log_every=0)
    train = make_train(preset.make_env(), config)
    keys = jax.vmap(jax.random.key)(jnp.asarray(seeds))
    _, metrics = jax.jit(jax.vmap(train))(keys)
    return np.asarray(metrics["reward_rate"][:, :, 0])  # member 0 is the learner, 1 the scripted TFT


if __name__ == "__main__":
    register_learner("reinforce", Reinforce)
    rate = train_against_tft(seeds=(0, 1, 2, 3))
    print("reward per step against tit-for-tat, first 5 -> last 5 updates (mutual cooperation pays 3):")
    for seed, r in enumerate(rate):
        print(f"  seed {seed}: {r[:5].mean():.2f} -> {r[-5:].mean():.2f}")
