"""Reward shaping in training (TrainConfig.reward): each seat gets its member's form,
the forms agree with the shaping wrappers, metrics stay on the environment's reward,
and a common reward makes IPD learners cooperate where selfish ones defect."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import socialjax as sj
from socialjax.agents.shaping import InequityAversion, RewardExchange, SocialValueOrientation
from socialjax.testing import rollout
from socialjax.train import TrainConfig, make_train
from socialjax.train.rewards import REWARDS, make_shaping

H = {"ia_alpha": jnp.float32(5.0), "ia_beta": jnp.float32(0.05), "svo_angle": jnp.float32(45.0),
     "svo_weight": jnp.float32(0.5), "self_interest": jnp.float32(0.25)}


def config(**kw):
    return TrainConfig(**kw)


def test_each_seat_gets_its_members_form_and_scripted_seats_are_not_shaped():
    # 3 learners (common, exchange, individual) and one scripted member, 2 games x 2 seats
    shaping = make_shaping(config(reward=("common", "exchange", "individual")), 3, 4, 2)
    reward = jnp.array([[1.0, 3.0], [2.0, 6.0]])
    assign = jnp.array([0, 1, 2, 3])  # game 0: common, exchange; game 1: individual, scripted
    shaped, traces = shaping.shape(reward, None, assign, H)
    assert traces is None
    np.testing.assert_allclose(shaped, [[4.0, 0.25 * 3.0 + 0.75 * 1.0], [2.0, 6.0]])


def test_the_forms_equal_the_shaping_wrappers_over_episodes():
    env = sj.make("public_goods", num_periods=3)  # 4 players, episodes of 3 steps
    traj = rollout(env, jax.random.key(0), 7)
    reward = traj.reward  # (T, N)
    wrapped = {
        "inequity_aversion": InequityAversion(env, alpha=5.0, beta=0.05),
        "exchange": RewardExchange(env, 0.25),
        "svo": SocialValueOrientation(env, 45.0, 0.5),
    }
    for form, wrapper in wrapped.items():
        shaping = make_shaping(config(reward=form), 1, 1, env.num_agents)
        expected = rollout(wrapper, jax.random.key(0), 7).reward
        traces = jnp.zeros((1, env.num_agents))
        for t in range(reward.shape[0]):
            shaped, traces = shaping.shape(reward[t][None], traces, jnp.zeros(env.num_agents, jnp.int32), H)
            np.testing.assert_allclose(shaped[0], expected[t], rtol=1e-5, atol=1e-5, err_msg=f"{form} step {t}")
            if traces is not None:  # what the training loop does at an episode's end
                traces = jnp.where(traj.done[t], 0.0, traces)


@pytest.mark.parametrize("reward, match", [
    ("selfish", "reward must be one of"),
    (("common", "sum"), "reward must be one of"),
    ((), "reward must be one of"),
])
def test_bad_reward_names_are_refused_by_the_config(reward, match):
    with pytest.raises(ValueError, match=match):
        config(reward=reward).validate()


def test_one_form_per_learner_or_one_for_all():
    with pytest.raises(ValueError, match="names 3 forms but the population has 2 learners"):
        make_train(sj.make("ipd", num_rounds=10), config(reward=("common",) * 3, num_envs=2, rollout_len=10,
                                                          num_updates=1, num_minibatches=1))
    with pytest.raises(ValueError, match=r"ia_alpha=-1\.0 is below its minimum"):
        config(ia_alpha=-1.0).validate()
    assert set(REWARDS) == {"individual", "common", "inequity_aversion", "svo", "exchange"}


@pytest.fixture(scope="module")
def ipd_runs():
    """Two independent PPO learners in the 100-round IPD, selfish vs common reward,
    2 seeds each, one vmapped call per form."""
    env = sj.make("ipd", num_rounds=100)
    base = dict(seating="independent", num_envs=16, rollout_len=100, num_updates=40, hidden=32, update_epochs=4,
                num_minibatches=4, lr=3e-3, evaluate=False)
    out = {}
    for form in ("individual", "common"):
        cfg = config(reward=form, **base)
        out[form] = sj.train.run(env, cfg, seeds=2, progress=False).metrics
    return out


def test_metrics_are_on_the_environments_reward(ipd_runs):
    # the first rollout is played before any update, by the same initial policies: the
    # reported returns are the environment's own, whatever the learners are trained on
    np.testing.assert_array_equal(ipd_runs["individual"]["return"][:, :, 0],
                                  ipd_runs["common"]["return"][:, :, 0])
    assert not np.array_equal(ipd_runs["individual"]["loss"], ipd_runs["common"]["loss"])


def test_common_reward_learners_cooperate_where_selfish_ones_defect(ipd_runs):
    # per-step reward over the last 5 updates: mutual cooperation pays 3, mutual defection 1
    last = {form: float(np.mean(m["reward_rate"][:, :, -5:, :2])) for form, m in ipd_runs.items()}
    assert last["common"] > 2.7, last
    assert last["individual"] < last["common"] - 0.5, last
