"""IRAT: the team policy learns the team's objective; the schedules of its ties; the
rollout's team reward; evaluation plays the team policy."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import socialjax as sj
from socialjax.agents.irat import scheduled
from socialjax.agents.learner import as_hparams
from socialjax.agents.registry import learner_class
from socialjax.envs.matrix.env import symmetric_payoffs
from socialjax.train import TrainConfig, make_train
from socialjax.train.rollout import rollout, table

SEEDS = (7, 8, 9)  # not tuned


def test_the_ties_move_linearly_from_start_to_end_then_hold():
    h = as_hparams({"irat_idv_clip_start": 10.0, "irat_idv_clip_end": 0.2, "irat_anneal": 0.5})
    at = lambda p: float(scheduled(h, "idv_clip", jnp.float32(p)))
    np.testing.assert_allclose([at(0.0), at(0.25), at(0.5), at(0.9)], [10.0, 5.1, 0.2, 0.2], rtol=1e-6)


def test_registered_with_its_hyperparameters_and_refuses_what_it_cannot_do():
    cls = learner_class("irat")
    assert cls.CENTRAL_CRITIC and not cls.RECURRENT and not cls.ALIGNS
    assert {"irat_idv_clip_start", "irat_team_clip_end", "irat_anneal", "clip_eps"} <= set(cls.hparams)
    with pytest.raises(ValueError, match="recurrent=True is only supported by"):
        TrainConfig(algo="irat", recurrent=True).validate()
    with pytest.raises(ValueError, match="value_norm"):
        TrainConfig(algo="irat", value_norm=True).validate()
    with pytest.raises(ValueError, match="irat_anneal"):
        TrainConfig(algo="irat", irat_anneal=1.5).validate()


# The donation game, once: cooperating costs the giver 1 and gives the other 3 (a
# prisoner's dilemma: R = 2, S = -1, T = 3, P = 0). On its own reward a player should
# defect whatever the other does; the team reward (the sum) pays 2 per cooperator.
DONATION = symmetric_payoffs(2.0, -1.0, 3.0, 0.0)
SMALL = TrainConfig(algo="irat", seating="shared", num_envs=16, rollout_len=8, num_updates=60, hidden=16,
                    update_epochs=2, num_minibatches=2, lr=3e-3, evaluate=True)


def donation_run(config):
    env = sj.make("matrix_game", num_rounds=1)
    params = env.default_params.replace(payoffs=jnp.asarray(DONATION))
    train = make_train(env, config, params)
    _, metrics = jax.jit(jax.vmap(train))(jax.vmap(jax.random.key)(jnp.asarray(SEEDS)))
    return jax.device_get(metrics)


@pytest.fixture(scope="module")
def donation():
    return {"irat": donation_run(SMALL.replace(reward="common")), "ppo": donation_run(SMALL.replace(algo="ppo"))}


@pytest.mark.slow
def test_the_team_policy_learns_the_team_objective(donation):
    """With every seat's own reward the team's (``reward="common"``), IRAT's two policies
    learn to cooperate: played in the evaluation (the team policy), the populations earn
    nearly the 2 per step of mutual cooperation on every seed, while IPPO on individual
    rewards defects (nearly the 0 of mutual defection). (With individual rewards, which
    say defect, the team policy follows the defecting individual policy: its clip of 0.2
    around the behaviour policy and the KL weight pull it there; docs/training.md has the
    measurement.)"""
    irat, ppo = donation["irat"], donation["ppo"]
    assert np.all(irat["eval/reward_rate"] > 1.8), irat["eval/reward_rate"]
    assert np.all(ppo["eval/reward_rate"] < 0.2), ppo["eval/reward_rate"]
    chex.assert_tree_all_finite({name: irat[name] for name in ("value_loss", "team_value_loss", "idv_kl", "team_kl")})
    # the schedules ran from their start to their end values (defaults: 3.0 -> 0.5, 0.2)
    np.testing.assert_allclose(irat["idv_clip"][:, 0], 3.0, rtol=1e-6)
    np.testing.assert_allclose(irat["idv_clip"][:, -1], 3.0 + (0.5 - 3.0) * 59 / 60, rtol=1e-5)
    np.testing.assert_allclose(irat["team_clip"], 0.2, rtol=1e-6)


def test_the_rollout_carries_the_games_team_reward():
    """``Rollout.team_reward`` is the sum of the game's rewards on every seat: the team
    critic's target, checked through a one-update run with lr 0 (the team value loss is
    then computed on the untrained critic against the sums)."""
    env = sj.make("matrix_game", num_rounds=1)
    params = env.default_params.replace(payoffs=jnp.asarray(DONATION))
    config = SMALL.replace(num_updates=1, evaluate=False, lr=0.0, num_envs=4, rollout_len=4)
    train = make_train(env, config, params)
    state = train.init(jax.random.key(0))
    seated = table(env, params, train.learner, train.plan, train.scripted, state.seating)
    _, ro, _ = rollout(seated, state.learners, state.games, jax.random.key(1), 0.0, config.rollout_len,
                       train.shaping, train.resolve(None))
    team = np.asarray(ro.team_reward[0])  # (T, M): M = 4 games x 2 seats, game by game
    reward = np.asarray(ro.reward[0])
    sums = reward.reshape(config.rollout_len, 4, 2).sum(axis=-1)
    np.testing.assert_allclose(team.reshape(config.rollout_len, 4, 2), np.repeat(sums[..., None], 2, axis=-1))
