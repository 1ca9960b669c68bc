"""MAPPO: a centralised critic sees what a seat's own critic cannot, and the loop gives
it the game's global observation; value normalisation keeps PPO's behaviour in the
returns' scale."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

import socialjax as sj
from socialjax.agents.networks import ACTOR, GLOBAL, SEAT
from socialjax.agents.ppo import VALUE_NORM_DECAY, ValueNorm
from socialjax.core import Discrete, Environment, EnvParams
from socialjax.train import TrainConfig, make_train

SEEDS = (11, 12, 13)  # not tuned


@struct.dataclass
class SecretParams(EnvParams):
    pass


@struct.dataclass
class SecretState:
    secret: jax.Array  # (N,) float32: each player's private bit


class SecretSum(Environment):
    """One-step episodes: each player privately sees a fair coin ``b_i``; everyone gets
    the common reward ``sum_i b_i`` whatever the actions. A critic on a player's own
    observation can predict its value only up to the other coins (the best it can do is
    ``b_i + (N - 1) / 2``, a squared error of ``(N - 1) / 4``); a critic on the global
    observation (all coins, the default global observation: every player's observation
    concatenated) can predict it exactly."""

    params_cls = SecretParams

    def initial_state(self, key, params):
        return SecretState(secret=jax.random.bernoulli(key, 0.5, (self.num_agents,)).astype(jnp.float32))

    def transition(self, key, state, actions, params):
        reward = jnp.full((self.num_agents,), state.secret.sum())
        info = {"terminated": jnp.ones((), bool), "truncated": jnp.zeros((), bool)}
        return state, reward, jnp.ones((), bool), info

    def get_obs(self, state, params):
        return state.secret[:, None]

    def action_space(self, params=None):
        return Discrete(2)

    def observation_space(self, params=None):
        return sj.Box(0.0, 1.0, (1,), jnp.float32)


SMALL = TrainConfig(algo="mappo", seating="shared", num_envs=16, rollout_len=8, num_updates=40, update_epochs=2,
                    num_minibatches=2, lr=3e-3, hidden=32, evaluate=False)


def final_value_loss(config: TrainConfig) -> np.ndarray:
    """Each seed's mean value loss over the last 5 updates."""
    train = make_train(SecretSum(2), config)
    _, metrics = jax.jit(jax.vmap(train))(jax.vmap(jax.random.key)(jnp.asarray(SEEDS)))
    return np.asarray(metrics["value_loss"])[:, -5:].mean(axis=(1, 2))


@pytest.fixture(scope="module")
def value_losses():
    return {algo: final_value_loss(SMALL.replace(algo=algo)) for algo in ("mappo", "ppo")}


@pytest.mark.slow
def test_a_centralised_critic_predicts_what_the_seat_cannot_see(value_losses):
    """IPPO's critic is left with the other player's coin: 0.5 * (N - 1) / 4 = 0.125 of
    value loss; MAPPO's sees both coins and ends far below it, on every seed."""
    mappo, ppo = value_losses["mappo"], value_losses["ppo"]
    assert np.all(ppo > 0.08), ppo  # near the 0.125 floor of a critic without the other coin
    assert np.all(mappo < 0.3 * ppo), (mappo, ppo)


def test_the_learner_sees_its_observation_the_global_one_and_its_seat():
    env = SecretSum(3)
    train = make_train(env, SMALL)
    space = train.learner.obs_space
    assert set(space.spaces) == {ACTOR, GLOBAL, SEAT}
    assert space.spaces[GLOBAL].shape == env.global_observation_space().shape == (3,)
    assert space.spaces[SEAT].shape == (3,)


def test_value_norm_moments_are_the_targets_mean_and_std():
    """After one update the debiased moments are the batch's own; a second batch moves
    them by the decay's weight, debiased."""
    x = jnp.asarray([1.0, 3.0, 5.0, 7.0])
    norm = ValueNorm.zeros()
    np.testing.assert_allclose(norm.normalize(x), x)  # nothing seen yet: unchanged
    norm = norm.update(x)
    mean, std = norm.moments()
    np.testing.assert_allclose([mean, std], [4.0, np.sqrt(5.0)], rtol=1e-4)
    np.testing.assert_allclose(norm.denormalize(norm.normalize(x)), x, rtol=1e-5)
    y = jnp.full((4,), 100.0)
    b = VALUE_NORM_DECAY
    norm = norm.update(y)
    w = 1 - b**2
    expected = ((1 - b) * b * 4.0 + (1 - b) * 100.0) / w
    np.testing.assert_allclose(norm.moments()[0], expected, rtol=1e-3)


def test_value_norm_is_refused_where_no_learner_reads_it():
    with pytest.raises(ValueError, match="value_norm"):
        TrainConfig(algo="dqn", value_norm=True).validate()
