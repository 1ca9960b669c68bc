"""Learners that see their co-players (``TrainConfig.coplayer_id``) and the reward split
by co-player kind (``reward_rate_vs_learners`` / ``reward_rate_vs_scripted``)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import socialjax as sj
from socialjax.agents import memory_one
from socialjax.agents.scripted import make_scripted
from socialjax.train import TrainConfig
from socialjax.train.population import make_train
from socialjax.train.seated import coplayer_view, descriptor_size

IPD = sj.make("ipd", num_rounds=1, payoffs=[[[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]]])  # coordination
DONATION = sj.make("ipd", num_rounds=4, payoffs=[[[1.0, -1.0], [2.0, 0.0]], [[1.0, 2.0], [-1.0, 0.0]]])


def test_a_memory_one_strategy_is_described_by_its_log_probabilities():
    tft = memory_one.log_policy(memory_one.TFT)  # [p_first, p_CC, p_CD, p_DC, p_DD] = [1, 1, 0, 1, 0]
    floor = memory_one.LOG_FLOOR
    np.testing.assert_allclose(tft, [0, floor, 0, floor, floor, 0, 0, floor, floor, 0], atol=1e-6)
    p = jnp.array([[0.5, 0.25, 0.75, 0.1, 0.9]])
    got = memory_one.log_policy(p)
    assert got.shape == (1, 10)
    np.testing.assert_allclose(np.exp(got[0, 0::2]), p[0], rtol=1e-6)
    np.testing.assert_allclose(np.exp(got[0, 1::2]), 1 - p[0], rtol=1e-6)


def test_each_seat_sees_the_others_in_seat_order_and_learners_as_zeros():
    members = (make_scripted("random_memory_one", IPD), make_scripted("alld", IPD))
    D = descriptor_size(members)
    assert D == 10
    # members: learners 0, 1; scripted 2 (random memory-one), 3 (alld); two games of 3 seats
    seat_member = jnp.array([0, 2, 3, 1, 0, 2], jnp.int32)
    slots = (memory_one.random_memory_one(jax.random.key(0), (6,)),
             jnp.broadcast_to(jnp.asarray(memory_one.ALLD, jnp.float32), (6, 5)))
    view = np.asarray(coplayer_view(members, 2, seat_member, slots, 3)).reshape(2, 3, 2, D)
    desc = [np.zeros(D), np.asarray(memory_one.log_policy(slots[0][1])), np.asarray(memory_one.log_policy(slots[1][2]))]
    # game 0: seats hold 0 (learner), 2 (tabular), 3 (alld); seat n sees n + 1 then n + 2
    np.testing.assert_allclose(view[0, 0], [desc[1], desc[2]])
    np.testing.assert_allclose(view[0, 1], [desc[2], desc[0]])
    np.testing.assert_allclose(view[0, 2], [desc[0], desc[1]])
    # game 1: learner, learner, tabular (its own draw, slot 5)
    tab = np.asarray(memory_one.log_policy(slots[0][5]))
    np.testing.assert_allclose(view[1, 0], [np.zeros(D), tab])
    np.testing.assert_allclose(view[1, 2], [np.zeros(D), np.zeros(D)])


def test_a_member_that_cannot_be_described_is_an_error():
    config = TrainConfig(num_envs=2, rollout_len=2, num_updates=1, seating="random", num_learners=1,
                         scripted=("random",), learner_fraction=0.5, coplayer_id=True)
    with pytest.raises(ValueError, match="'random' cannot be described"):
        make_train(IPD, config)
    with pytest.raises(ValueError, match="'noop' cannot be described"):  # held-out bots are seen too
        make_train(IPD, config.replace(scripted=("alld",), background=("noop",)))
    with pytest.raises(ValueError, match="coplayer_id"):
        TrainConfig(coplayer_id="maybe")


@pytest.fixture(scope="module")
def coordination():
    """One learner, half the seats allc or alld, one-shot coordination: only the view says
    which action matches."""
    config = TrainConfig(algo="ppo", hidden=16, num_envs=32, rollout_len=4, num_updates=40, seating="random",
                         num_learners=1, scripted=("allc", "alld"), learner_fraction=0.5, coplayer_id=True, lr=1e-2,
                         update_epochs=2, num_minibatches=2, anneal_lr=False, evaluate=False)
    _, metrics = jax.jit(make_train(IPD, config))(jax.random.key(0))
    return jax.tree_util.tree_map(np.asarray, metrics)


def test_a_learner_that_sees_its_co_player_coordinates_with_every_one(coordination):
    """Without the view no policy does better than 0.75 here: it meets itself in about
    half its games (where always matching is possible) and a scripted member it cannot
    tell apart in the other half (0.5). With it the learner matches everyone."""
    final = lambda k: np.nanmean(coordination[k][-8:, 0])
    assert final("reward_rate") > 0.9, coordination["reward_rate"][:, 0]
    assert final("reward_rate_vs_scripted") > 0.9
    assert final("reward_rate_vs_learners") > 0.9


def test_the_reward_split_by_co_player_balances_in_the_donation_game():
    """One learner among alld members, donation-game payoffs: against alld the learner
    gets minus its cooperation rate and alld twice it, so alld's reward against learners
    is exactly -2 times the learner's against scripted members; alld against alld gets 0,
    and the learner against itself its cooperation rate, in [0, 1]."""
    config = TrainConfig(algo="ppo", hidden=8, num_envs=8, rollout_len=4, num_updates=3, seating="random",
                         num_learners=1, scripted=("alld",), learner_fraction=0.5, update_epochs=1,
                         num_minibatches=1, evaluate=False)
    _, m = jax.jit(make_train(DONATION, config))(jax.random.key(1))
    vs_l, vs_s = np.asarray(m["reward_rate_vs_learners"]), np.asarray(m["reward_rate_vs_scripted"])
    assert vs_l.shape == vs_s.shape == (3, 2)
    np.testing.assert_allclose(vs_l[:, 1], -2 * vs_s[:, 0], atol=1e-6)
    np.testing.assert_allclose(vs_s[:, 1], 0.0, atol=1e-6)
    assert ((vs_l[:, 0] >= 0) & (vs_l[:, 0] <= 1)).all() and (vs_s[:, 0] <= 0).all()
    # two seats: every co-player is a learner or scripted, so the whole is a mix of the parts
    rate = np.asarray(m["reward_rate"])
    assert (np.minimum(vs_l, vs_s) - 1e-6 <= rate).all() and (rate <= np.maximum(vs_l, vs_s) + 1e-6).all()
