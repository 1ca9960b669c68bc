"""JaxMARL-style IPPO on ``sj.JaxMARLAdapter`` through JaxMARL's own wrappers (the slow tier).

The loops below are this repository's, written the way JaxMARL's IPPO baselines
(``baselines/IPPO/ippo_ff_mpe.py``, ``ippo_rnn.py``, ``ippo_cnn_overcooked.py``) treat an
environment, so that what they rely on is checked here:

- ``jaxmarl.wrappers.baselines.LogWrapper`` around the adapter (its jitted ``reset`` and
  ``step``, its ``info["returned_episode*"]``), and nested in itself (``ippo_rnn.py``'s
  ``test_env = LogWrapper(env)``);
- networks built from ``jnp.zeros(env.observation_space(agent).shape)`` (feed-forward),
  ``(1, num_envs, shape[0])`` (RNN) or ``(1, *shape)`` (CNN);
- actions unbatchified to ``(num_agents, num_envs, -1)``: ``(1,)`` per agent and game,
  squeezed to ``()`` where the baseline squeezes (``ippo_rnn.py``'s rollout), not where it
  does not (its greedy test);
- every info leaf reshaped to ``(num_envs * num_agents,)``, ``dones["__all__"]`` tiled;
- several seeds under ``vmap``: ``jax.vmap(jax.jit(train))`` (feed-forward) and
  ``jax.jit(jax.vmap(train))`` (RNN).

Games: a matrix game (``ipd``, where independent learners learn to defect) and two grid
games (``coins`` flat and as an image, ``prisoners_dilemma_in_the_matrix`` flat: its
observation has an inventory too), with short fixed episodes so that episodes end.

The networks start from socialjax's Gram-Schmidt ``orthogonal``, not Flax's: Flax's calls
LAPACK's QR, which, batched over seeds, deadlocks jaxlib 0.10's CPU runtime on a 2-core
machine (scripts/jaxmarl_lapack_deadlock.py); the same hang stops JaxMARL's own
``ippo_rnn.py`` with two seeds (docs/environments.md).

Needs the ``jaxmarl`` extra (``.ci/run`` installs it); skipped with a message without it.
"""

import functools
from typing import NamedTuple

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax.linen.initializers import constant
from flax.training.train_state import TrainState

import socialjax as sj
from socialjax.agents.networks import orthogonal

baselines = pytest.importorskip(
    "jaxmarl.wrappers.baselines",
    reason="needs JaxMARL: pip install 'socialjax[jaxmarl]' (see pyproject.toml's jaxmarl extra)")
LogWrapper = baselines.LogWrapper

pytestmark = pytest.mark.slow

CONFIG = {"NUM_ENVS": 4, "NUM_STEPS": 16, "NUM_UPDATES": 12, "UPDATE_EPOCHS": 2, "NUM_MINIBATCHES": 2,
          "LR": 2.5e-3, "GAMMA": 0.99, "GAE_LAMBDA": 0.95, "CLIP_EPS": 0.2, "ENT_COEF": 0.01, "VF_COEF": 0.5,
          "MAX_GRAD_NORM": 0.5, "HIDDEN": 32, "NUM_SEEDS": 2}
EPISODE = 8  # steps per episode of every game here: four episodes per rollout
GAMES = {
    "ipd": lambda: sj.make("ipd", num_rounds=EPISODE),
    "coins": lambda: sj.make("coins", episode="fixed", episode_length=EPISODE),
    "prisoners_dilemma_in_the_matrix": lambda: sj.make("prisoners_dilemma_in_the_matrix", episode="fixed",
                                                       episode_length=EPISODE),
}


# --------------------------------------------------------------------------- networks
class ActorCritic(nn.Module):
    """An MLP (``ippo_ff_mpe.py``'s) or, for image observations, a small CNN first
    (``ippo_cnn_overcooked.py``'s shape, fewer filters)."""

    action_dim: int
    hidden: int

    @nn.compact
    def __call__(self, x):
        if x.ndim == 4:
            for kernel in ((3, 3), (3, 3)):
                x = nn.tanh(nn.Conv(8, kernel, kernel_init=orthogonal(np.sqrt(2)), bias_init=constant(0.0))(x))
            x = x.reshape((x.shape[0], -1))
        dense = functools.partial(nn.Dense, bias_init=constant(0.0))
        actor = nn.tanh(dense(self.hidden, kernel_init=orthogonal(np.sqrt(2)))(x))
        logits = dense(self.action_dim, kernel_init=orthogonal(0.01))(actor)
        critic = nn.tanh(dense(self.hidden, kernel_init=orthogonal(np.sqrt(2)))(x))
        return distrax.Categorical(logits=logits), jnp.squeeze(dense(1, kernel_init=orthogonal(1.0))(critic), -1)


class ScannedGRU(nn.Module):
    """``ippo_rnn.py``'s ScannedRNN: a GRU scanned over time, reset where ``resets``."""

    @functools.partial(nn.scan, variable_broadcast="params", in_axes=0, out_axes=0, split_rngs={"params": False})
    @nn.compact
    def __call__(self, carry, x):
        ins, resets = x
        carry = jnp.where(resets[:, None], jnp.zeros_like(carry), carry)
        return nn.GRUCell(ins.shape[1], recurrent_kernel_init=orthogonal())(carry, ins)


class ActorCriticRNN(nn.Module):
    action_dim: int
    hidden: int

    @nn.compact
    def __call__(self, hidden, x):
        obs, dones = x
        embedding = nn.relu(nn.Dense(self.hidden, kernel_init=orthogonal(np.sqrt(2)))(obs))
        hidden, embedding = ScannedGRU()(hidden, (embedding, dones))
        pi, value = ActorCritic(self.action_dim, self.hidden)(embedding)
        return hidden, pi, value


# --------------------------------------------------------------------------- PPO
class Transition(NamedTuple):
    done: jax.Array
    action: jax.Array
    value: jax.Array
    reward: jax.Array
    log_prob: jax.Array
    obs: jax.Array
    info: dict


def batchify(x: dict, agents, num_actors):
    """JaxMARL's: ``{agent: (num_envs, ...)}`` -> ``(num_actors, -1)``."""
    return jnp.stack([x[a] for a in agents]).reshape((num_actors, -1))


def unbatchify(x, agents, num_envs, num_agents):
    """JaxMARL's: ``(num_actors,)`` -> ``{agent: (num_envs, 1)}``."""
    x = x.reshape((num_agents, num_envs, -1))
    return {a: x[i] for i, a in enumerate(agents)}


def gae(traj: Transition, last_value):
    def step(carry, t):
        advantage, next_value = carry
        delta = t.reward + CONFIG["GAMMA"] * next_value * (1 - t.done) - t.value
        advantage = delta + CONFIG["GAMMA"] * CONFIG["GAE_LAMBDA"] * (1 - t.done) * advantage
        return (advantage, t.value), advantage

    _, advantages = jax.lax.scan(step, (jnp.zeros_like(last_value), last_value), traj, reverse=True)
    return advantages, advantages + traj.value


def ppo_loss(params, apply, traj: Transition, advantages, targets, hidden):
    """The baselines' clipped PPO loss; ``apply(params, traj, hidden) -> (pi, value)``."""
    pi, value = apply(params, traj, hidden)
    ratio = jnp.exp(pi.log_prob(traj.action) - traj.log_prob)
    advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    clipped = jnp.clip(ratio, 1 - CONFIG["CLIP_EPS"], 1 + CONFIG["CLIP_EPS"])
    actor = -jnp.minimum(ratio * advantages, clipped * advantages).mean()
    value_clipped = traj.value + (value - traj.value).clip(-CONFIG["CLIP_EPS"], CONFIG["CLIP_EPS"])
    critic = 0.5 * jnp.maximum(jnp.square(value - targets), jnp.square(value_clipped - targets)).mean()
    return actor + CONFIG["VF_COEF"] * critic - CONFIG["ENT_COEF"] * pi.entropy().mean()


def optimiser():
    return optax.chain(optax.clip_by_global_norm(CONFIG["MAX_GRAD_NORM"]), optax.adam(CONFIG["LR"], eps=1e-5))


def update(train_state, batch, axis, rng):
    """``UPDATE_EPOCHS`` passes of ``NUM_MINIBATCHES`` minibatches, split along ``axis``
    (0: samples, feed-forward; 1: actors, RNN), as the baselines do."""

    def epoch(carry, _):
        train_state, rng = carry
        rng, key = jax.random.split(rng)
        size = jax.tree_util.tree_leaves(batch)[0].shape[axis]
        order = jax.random.permutation(key, size)
        shuffled = jax.tree_util.tree_map(lambda x: jnp.take(x, order, axis=axis), batch)
        minibatches = jax.tree_util.tree_map(
            lambda x: jnp.moveaxis(x.reshape(x.shape[:axis] + (CONFIG["NUM_MINIBATCHES"], -1) + x.shape[axis + 1:]),
                                   axis, 0), shuffled)

        def minibatch(train_state, mb):
            loss, grads = jax.value_and_grad(ppo_loss)(train_state.params, train_state.apply_fn, *mb)
            return train_state.apply_gradients(grads=grads), loss

        train_state, losses = jax.lax.scan(minibatch, train_state, minibatches)
        return (train_state, rng), losses

    (train_state, _), losses = jax.lax.scan(epoch, (train_state, rng), None, CONFIG["UPDATE_EPOCHS"])
    return train_state, losses.mean()


def episode_metrics(info):
    """Per update: the mean return of the episodes completed (NaN where none) and the loss."""
    done = info["returned_episode"]
    returns = jnp.where(done, info["returned_episode_returns"], jnp.nan)
    return {"returns": jnp.nanmean(returns), "episodes": done.sum(),
            "cooperated": info["cooperated"].mean() if "cooperated" in info else jnp.nan}


# --------------------------------------------------------------------------- train
def make_train_ff(env, image: bool = False):
    """``ippo_ff_mpe.py``'s loop (``image``: ``ippo_cnn_overcooked.py``'s batching)."""
    env = LogWrapper(env)
    num_envs, num_agents = CONFIG["NUM_ENVS"], env.num_agents
    num_actors = num_envs * num_agents
    shape = env.observation_space(env.agents[0]).shape
    network = ActorCritic(env.action_space(env.agents[0]).n, CONFIG["HIDDEN"])
    to_batch = (lambda obs: jnp.stack([obs[a] for a in env.agents]).reshape(-1, *shape)) if image else (
        lambda obs: batchify(obs, env.agents, num_actors))

    def train(rng):
        rng, key = jax.random.split(rng)
        init_x = jnp.zeros((1, *shape)) if image else jnp.zeros(shape)
        apply = lambda params, traj, hidden: network.apply(params, traj.obs)
        train_state = TrainState.create(apply_fn=apply, params=network.init(key, init_x), tx=optimiser())
        rng, key = jax.random.split(rng)
        obs, env_state = jax.vmap(env.reset)(jax.random.split(key, num_envs))

        def env_step(carry, _):
            train_state, env_state, last_obs, rng = carry
            rng, key_act, key_step = jax.random.split(rng, 3)
            obs_batch = to_batch(last_obs)
            pi, value = network.apply(train_state.params, obs_batch)
            action = pi.sample(seed=key_act)
            env_act = unbatchify(action, env.agents, num_envs, num_agents)  # (num_envs, 1) per agent
            if image:
                env_act = {k: v.flatten() for k, v in env_act.items()}
            obs, env_state, reward, done, info = jax.vmap(env.step)(
                jax.random.split(key_step, num_envs), env_state, env_act)
            info = jax.tree_util.tree_map(lambda x: x.reshape((num_actors,)), info)
            transition = Transition(batchify(done, env.agents, num_actors).squeeze(), action, value,
                                    batchify(reward, env.agents, num_actors).squeeze(), pi.log_prob(action),
                                    obs_batch, info)
            return (train_state, env_state, obs, rng), transition

        def update_step(carry, _):
            carry, traj = jax.lax.scan(env_step, carry, None, CONFIG["NUM_STEPS"])
            train_state, env_state, last_obs, rng = carry
            _, last_value = network.apply(train_state.params, to_batch(last_obs))
            advantages, targets = gae(traj, last_value)
            batch = jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[2:]), (traj, advantages, targets))
            rng, key = jax.random.split(rng)
            train_state, loss = update(train_state, batch + (jnp.zeros(batch[1].shape),), 0, key)
            return (train_state, env_state, last_obs, rng), dict(episode_metrics(traj.info), loss=loss)

        _, metrics = jax.lax.scan(update_step, (train_state, env_state, obs, rng), None, CONFIG["NUM_UPDATES"])
        return metrics

    return train


def make_train_rnn(env):
    """``ippo_rnn.py``'s loop: squeezed actions in the rollout, a greedy test each update on
    ``LogWrapper(LogWrapper(env))`` with its unsqueezed ``(1,)`` actions."""
    env = LogWrapper(env)
    test_env = LogWrapper(env)
    num_envs, num_agents, hidden_size = CONFIG["NUM_ENVS"], env.num_agents, CONFIG["HIDDEN"]
    num_actors = num_envs * num_agents
    network = ActorCriticRNN(env.action_space(env.agents[0]).n, hidden_size)

    def rollout(params, env, env_state, obs, done, hstate, rng, greedy):
        rng, key_act, key_step = jax.random.split(rng, 3)
        obs_batch = batchify(obs, env.agents, num_actors)
        hstate, pi, value = network.apply(params, hstate, (obs_batch[None], done[None]))
        action = pi.mode() if greedy else pi.sample(seed=key_act)
        env_act = unbatchify(action, env.agents, num_envs, num_agents)
        if not greedy:
            env_act = {k: v.squeeze() for k, v in env_act.items()}
        obs, env_state, reward, dones, info = jax.vmap(env.step)(jax.random.split(key_step, num_envs), env_state,
                                                                 env_act)
        info = jax.tree_util.tree_map(lambda x: x.reshape((num_actors,)), info)
        transition = Transition(jnp.tile(dones["__all__"], num_agents), action.squeeze(), value.squeeze(),
                                batchify(reward, env.agents, num_actors).squeeze(),
                                pi.log_prob(action).squeeze(), (obs_batch, done), info)
        return env_state, obs, batchify(dones, env.agents, num_actors).squeeze(), hstate, rng, transition

    def greedy_returns(params, rng):
        rng, key = jax.random.split(rng)
        obs, env_state = jax.vmap(test_env.reset)(jax.random.split(key, num_envs))

        def step(carry, _):
            *carry, transition = rollout(params, test_env, *carry, greedy=True)
            return tuple(carry), transition.info

        carry = (env_state, obs, jnp.zeros((num_actors,), bool), jnp.zeros((num_actors, hidden_size)), rng)
        _, info = jax.lax.scan(step, carry, None, CONFIG["NUM_STEPS"])
        return episode_metrics(info)["returns"]

    def train(rng):
        rng, key = jax.random.split(rng)
        init_x = (jnp.zeros((1, num_envs, env.observation_space(env.agents[0]).shape[0])), jnp.zeros((1, num_envs)))
        params = network.init(key, jnp.zeros((num_envs, hidden_size)), init_x)
        apply = lambda params, traj, hidden: network.apply(params, hidden[0], traj.obs)[1:]
        train_state = TrainState.create(apply_fn=apply, params=params, tx=optimiser())
        rng, key = jax.random.split(rng)
        obs, env_state = jax.vmap(env.reset)(jax.random.split(key, num_envs))

        def update_step(carry, _):
            train_state, env_state, obs, done, hstate, rng = carry
            initial_hstate = hstate

            def step(carry, _):
                *carry, transition = rollout(train_state.params, env, *carry, greedy=False)
                return tuple(carry), transition

            (env_state, obs, done, hstate, rng), traj = jax.lax.scan(
                step, (env_state, obs, done, hstate, rng), None, CONFIG["NUM_STEPS"])
            _, _, last_value = network.apply(train_state.params, hstate,
                                             (batchify(obs, env.agents, num_actors)[None], done[None]))
            advantages, targets = gae(traj, last_value.squeeze(0))
            rng, key, key_test = jax.random.split(rng, 3)
            train_state, loss = update(train_state, (traj, advantages, targets, initial_hstate[None]), 1, key)
            metrics = dict(episode_metrics(traj.info), loss=loss,
                           greedy_returns=greedy_returns(train_state.params, key_test))
            return (train_state, env_state, obs, done, hstate, rng), metrics

        carry = (train_state, env_state, obs, jnp.zeros((num_actors,), bool), jnp.zeros((num_actors, hidden_size)), rng)
        _, metrics = jax.lax.scan(update_step, carry, None, CONFIG["NUM_UPDATES"])
        return metrics

    return train


def seeds(base: int):
    return jax.random.split(jax.random.PRNGKey(base), CONFIG["NUM_SEEDS"])


def check_metrics(metrics, env):
    """Every update finite; episodes ended (LogWrapper's returns through auto-resets). In
    the prisoner's dilemma the learners learn to defect: every seed cooperates about half
    the time at first and under 30% over the last three updates (seeds 2000 and 3000 went
    from 0.45-0.56 to 0.03-0.16, feed-forward and RNN alike)."""
    metrics = jax.device_get(metrics)
    assert np.isfinite(metrics["loss"]).all(), metrics["loss"]
    assert (metrics["episodes"] > 0).all(), metrics["episodes"]
    assert np.isfinite(metrics["returns"]).all(), metrics["returns"]
    if env.name == "ipd":
        cooperated = metrics["cooperated"].reshape(-1, CONFIG["NUM_UPDATES"])
        assert (cooperated[:, 0] > 0.35).all() and (cooperated[:, -3:].mean(axis=1) < 0.3).all(), cooperated
    return metrics


# --------------------------------------------------------------------------- tests
@pytest.mark.parametrize("name", sorted(GAMES))
def test_feed_forward_ippo_on_log_wrapper(name):
    """``jax.vmap(jax.jit(train))`` over two seeds, as ``ippo_ff_mpe.py``'s main."""
    env = sj.JaxMARLAdapter(GAMES[name]())
    check_metrics(jax.vmap(jax.jit(make_train_ff(env)))(seeds(2000)), env)


def test_cnn_ippo_on_a_grid_games_image():
    """One seed, compiled with XLA's optimisations on: the suite turns them mostly off
    (tests/conftest.py), and unoptimised convolutions took 250 s here instead of 45 s
    (two seeds make them grouped convolutions, slower again on the CPU)."""
    env = sj.JaxMARLAdapter(GAMES["coins"](), obs_format="image")
    before = jax.config.read("jax_disable_most_optimizations")
    jax.config.update("jax_disable_most_optimizations", False)
    try:
        metrics = jax.jit(make_train_ff(env, image=True))(seeds(2000)[0])
    finally:
        jax.config.update("jax_disable_most_optimizations", before)
    check_metrics(metrics, env)


@pytest.mark.parametrize("name", ["ipd", "coins"])
def test_rnn_ippo_with_nested_log_wrappers(name):
    """``jax.jit(jax.vmap(train))`` over two seeds, as ``ippo_rnn.py``'s main (which hangs
    with Flax's QR initialiser on 2 cores, not with this one)."""
    env = sj.JaxMARLAdapter(GAMES[name]())
    metrics = check_metrics(jax.jit(jax.vmap(make_train_rnn(env)))(seeds(2000)), env)
    assert np.isfinite(metrics["greedy_returns"]).all(), metrics["greedy_returns"]
