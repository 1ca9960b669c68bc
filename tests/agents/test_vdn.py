"""VDN learner: the team's n-step targets and Q_tot on hand-built buffers with known
answers, the seating it needs (refused otherwise, before compiling), a tiny compiled run
(shapes, finite metrics, the same bits in and out of a batch) and, in the slow tier,
learning a team task that independent DQN fails, and a run on a grid game.

The unit tests use a network whose Q-values are constant (every weight zero but the
output bias), so that every target and loss can be written down by hand.
"""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from support import assert_tree_same

import socialjax as sj
from socialjax.agents.dqn import DQNLearner
from socialjax.agents.hparams import DQN
from socialjax.agents.learner import Rollout, as_hparams
from socialjax.agents.networks import encoder_spec
from socialjax.agents.registry import algos, learner_class
from socialjax.agents.vdn import VDNLearner
from socialjax.core.spaces import Box
from socialjax.envs.matrix.env import COOPERATE, DEFECT, symmetric_payoffs
from socialjax.train import TrainConfig, make_train

T, E, N = 4, 2, 2  # rollout length, games, players per game
M = E * N  # seats, game-major: seat e * N + n
SPACE = Box(0, M * T - 1, (1,), jnp.int32)  # the hand-built observations name their step and seat


def make(**kw):
    opts = dict(rollout_len=T, seats=M, num_envs=E, hidden=8, batch_size=64, updates_per_rollout=2, n_step=2,
                buffer_rollouts=2)
    opts.update(kw)
    return VDNLearner(SPACE, encoder_spec(SPACE), 2, **opts)


def hand_rollout(reward, done, action):
    """``obs[t, m] = t * M + m``: a sampled observation tells its step and seat."""
    obs = (np.arange(T)[:, None] * M + np.arange(M)[None, :])[..., None].astype(np.int32)
    return Rollout(
        obs=obs, reset=np.zeros((T, M), bool), action=np.asarray(action, np.int32),
        reward=np.asarray(reward, np.float32), done=np.asarray(done, bool), aux={},
        hidden0=np.zeros((M, 1), np.float32), last_obs=np.zeros((M, 1), np.int32),
        last_reset=np.zeros(M, bool), last_hidden=np.zeros((M, 1), np.float32),
    )


def constant_q(learner, params, q):
    """Parameters whose Q-values are ``q`` ``(A,)`` for every observation: every weight
    zero but the output layer's bias (checked)."""
    params = jax.tree_util.tree_map(jnp.zeros_like, params)
    params["params"]["Dense_0"]["bias"] = jnp.asarray(q, jnp.float32)
    np.testing.assert_array_equal(learner.q_values(params, jnp.arange(3)[:, None]), np.tile(q, (3, 1)))
    return params


@pytest.fixture(scope="module")
def small():
    learner = make()
    return learner, jax.jit(learner.init)(jax.random.key(0), {})


# --------------------------------------------------------------------- targets and Q_tot
def test_team_targets_sum_rewards_and_double_q_over_the_games_seats(small):
    """Game 0's seats get rewards 1 and 2 times (t + 1) and end after step 1; game 1's get
    10 and 20 times (t + 1) and never end. Online Q = [1, 0] (greedy: action 0), target
    Q = [5, 7]: each seat bootstraps from 5 (double DQN; the plain max would be 7), the
    team from N * 5 = 10. gamma 0.5, 2-step windows, truncated at T = 4."""
    learner, state = small
    reward = np.outer(np.arange(1, T + 1), [1, 2, 10, 20])
    done = np.zeros((T, M), bool)
    done[1, :N] = True
    action = np.random.default_rng(0).integers(0, 2, (T, M))
    g, boot = 0.5, N * 5.0
    want = np.array([  # want[e, t], by hand: team rewards 3 (t + 1) and 30 (t + 1)
        [3 + g * 6, 6, 9 + g * 12 + g**2 * boot, 12 + g * boot],  # t = 0, 1 stop at the end after step 1
        [30 + g * 60 + g**2 * boot, 60 + g * 90 + g**2 * boot, 90 + g * 120 + g**2 * boot, 120 + g * boot],
    ])
    online, target = constant_q(learner, state.params, [1.0, 0.0]), constant_q(learner, state.params, [5.0, 7.0])
    buffer = learner.store(state.extra.buffer, hand_rollout(reward, done, action))
    batch = jax.jit(learner.sample)(online, target, buffer, jax.random.key(1), g)
    obs = np.asarray(batch.obs)[..., 0]  # (B, N)
    t, seat = obs // M, obs % M
    e = seat[:, 0] // N
    chex.assert_shape([batch.action, batch.target], [(64, N), (64,)])
    np.testing.assert_array_equal(seat, e[:, None] * N + np.arange(N))  # one game's seats, in order
    np.testing.assert_array_equal(t, np.repeat(t[:, :1], N, axis=1))  # at one step
    assert len(set(zip(e.tolist(), t[:, 0].tolist()))) == E * T  # every game step drawn
    np.testing.assert_array_equal(batch.action, action[t, seat])
    np.testing.assert_allclose(batch.target, want[e, t[:, 0]], rtol=1e-6)


def test_q_tot_and_the_loss_are_on_the_sum_of_the_seats_q_values(small):
    """Q = [1.5, -0.5]: Q_tot of joint actions (0, 0), (0, 1), (1, 1) is 3, 1, -1. Every
    step of a stored rollout ends (no bootstrap), every game plays (0, 1) for rewards
    (1, 2): the team target is 3 and Q_tot is 1, so the Huber loss is 2 - 0.5 = 1.5
    (lr 0 keeps the parameters, so both gradient steps see it)."""
    learner, state = small
    params = constant_q(learner, state.params, [1.5, -0.5])
    action = jnp.array([[0, 0], [0, 1], [1, 1]], jnp.int32)
    np.testing.assert_allclose(learner.q_taken(params, jnp.zeros((3, N, 1), jnp.int32), action), [3.0, 1.0, -1.0])
    ro = hand_rollout(np.tile([1.0, 2.0], (T, E)), np.ones((T, M), bool), np.tile([0, 1], (T, E)))
    state = state.replace(params=params, extra=state.extra.replace(target_params=params),
                          hparams={**state.hparams, **as_hparams({"lr": 0.0})})
    _, metrics = jax.jit(learner.update)(state, ro, {}, jax.random.key(2), 0.0)
    np.testing.assert_allclose([metrics["loss"], metrics["q_mean"], metrics["target_mean"]], [1.5, 1.0, 3.0])


# --------------------------------------------------------------------- seating and options
def test_registered_with_dqns_hyperparameters():
    assert "vdn" in algos() and learner_class("vdn") is VDNLearner
    assert issubclass(VDNLearner, DQNLearner) and VDNLearner.hparams == DQN
    assert not VDNLearner.RECURRENT and not VDNLearner.ALIGNS
    config = TrainConfig(algo="vdn", seating="shared")
    config.validate()
    assert config.hparam_names()[: len(DQN)] == DQN
    with pytest.raises(ValueError, match="recurrent=True is only supported by"):
        TrainConfig(algo="vdn", seating="shared", recurrent=True).validate()


@pytest.mark.parametrize("seating", [dict(seating="independent"), dict(seating="random"),
                                     dict(seating="fixed", seats=(0, 1)), dict(seating="grouped", groups=(0, 1)),
                                     dict(seating="fixed", seats=(0, 1), scripted=("tft",))])
def test_make_train_refuses_a_seating_that_splits_the_games(seating):
    config = TrainConfig(algo="vdn", num_envs=2, rollout_len=4, num_updates=1, **seating)
    with pytest.raises(ValueError, match=r"set seating='shared' and no scripted members \(got seating="):
        make_train(sj.make("ipd", num_rounds=4), config)  # before anything is compiled


def test_check_batch_refuses_scripted_members_and_partial_games(small):
    learner, _ = small
    shared = TrainConfig(algo="vdn", seating="shared", num_envs=E)
    learner.check_batch(shared, M)
    with pytest.raises(ValueError, match=r"no scripted members \(got seating='shared', scripted=\('tft',\)\)"):
        learner.check_batch(shared.replace(scripted=("tft",)), M)
    with pytest.raises(ValueError, match="5 seats are not num_envs=2 games"):
        learner.check_batch(shared, 5)
    with pytest.raises(ValueError, match="num_envs"):
        make(num_envs=0)


# --------------------------------------------------------------------- compiled run
def test_tiny_run_on_a_three_player_game_same_bits_for_the_same_key():
    """Two runs in one compiled batch, then the same two swapped: each key gives the same
    bits wherever it sits in the batch."""
    env = sj.make("nplayer_matrix", num_agents=3, num_rounds=3)
    config = TrainConfig(algo="vdn", seating="shared", num_envs=2, rollout_len=3, num_updates=3, hidden=8,
                         dqn_batch=4, dqn_updates=2, buffer_rollouts=2, target_update_every=2, evaluate=False)
    train = make_train(env, config)
    assert train.learner.num_seats == 3
    keys = jax.vmap(jax.random.key)(jnp.array([5, 6]))
    run = jax.jit(jax.vmap(train))
    state, metrics = run(keys)
    chex.assert_shape([metrics["loss"], metrics["q_mean"], metrics["reward_rate"]], (2, 3, 1))
    chex.assert_shape(state.learners.extra.buffer.action, (2, 1, 2, 3, 6))  # runs, learners, slots, T, M
    chex.assert_tree_all_finite({name: metrics[name] for name in ("loss", "q_mean", "target_mean", "reward_rate",
                                                                  "epsilon")})
    assert not np.any(metrics["halted"])
    assert not np.array_equal(metrics["loss"][0], metrics["loss"][1])
    swapped = jax.tree_util.tree_map(lambda x: x[::-1], run(keys[::-1]))
    assert_tree_same(swapped, (state, metrics))


# --------------------------------------------------------------------- learning (slow)
# The donation game, once: cooperating costs the giver c = 1 and gives the other b = 3
# (a prisoner's dilemma with R = b - c, S = -c, T = b, P = 0). The team reward is
# (b - c) per cooperator, a sum over the players, so VDN's decomposition is exact: the
# only Q with Q(C) + Q(C) = 4, Q(C) + Q(D) = 2, Q(D) + Q(D) = 0 is Q(C) = 2, Q(D) = 0,
# each player's own contribution. On individual rewards, defection dominates: Q(C) =
# -1 + 3 p, Q(D) = 3 p for a co-player who cooperates with probability p.
DONATION_B, DONATION_C = 3.0, 1.0
LEARNING_SEEDS = (7, 8, 9)  # untuned
START = jnp.zeros((1, 1), jnp.int32)  # the observation before the one round: the start token


def _donation_run(config):
    env = sj.make("matrix_game", num_rounds=1)
    b, c = DONATION_B, DONATION_C
    params = env.default_params.replace(payoffs=jnp.asarray(symmetric_payoffs(b - c, -c, b, 0.0)))
    train = make_train(env, config, params)
    state, metrics = jax.jit(jax.vmap(train))(jax.vmap(jax.random.key)(jnp.array(LEARNING_SEEDS)))
    q_start = jax.vmap(jax.vmap(lambda p: train.learner.q_values(p, START)[0]))(state.learners.params)
    return np.asarray(q_start), np.asarray(metrics["reward_rate"])[:, -5:].mean(axis=1)  # (S, L, 2), (S, L)


@pytest.mark.slow
def test_vdn_credits_each_player_with_its_gift_where_independent_dqn_defects():
    """VDN (one network, team reward) learns Q(start) = [2, 0] and cooperates on every
    seed; independent DQN on individual rewards defects; DQN on the common reward also
    cooperates, but each seat's Q then holds its partner's gift too (Q(D) = 2 p, not 0)."""
    base = TrainConfig(algo="vdn", seating="shared", num_envs=16, rollout_len=8, num_updates=60, hidden=16,
                       dqn_batch=64, dqn_updates=4, buffer_rollouts=4, n_step=1, target_update_every=5, lr=3e-3,
                       eps_decay=0.5, evaluate=False)
    best = (DONATION_B - DONATION_C) * (1 - base.eps_end / 2)  # per seat, with 5% random actions: 1.95
    q, rate = _donation_run(base)
    assert np.all(np.argmax(q, -1) == COOPERATE), q
    np.testing.assert_allclose(q[..., COOPERATE], DONATION_B - DONATION_C, atol=0.3)
    np.testing.assert_allclose(q[..., DEFECT], 0.0, atol=0.3)
    assert np.all(rate > best - 0.2), rate
    q, rate = _donation_run(base.replace(algo="dqn", seating="independent"))
    assert np.all(np.argmax(q, -1) == DEFECT), q
    assert np.all(rate < 0.3), rate
    q, rate = _donation_run(base.replace(algo="dqn", reward="common"))
    assert np.all(np.argmax(q, -1) == COOPERATE), q
    assert np.all(q[..., DEFECT] > 1.5), q  # the partner's gift, credited to a defector


@pytest.mark.slow
def test_runs_on_a_grid_game_with_a_cnn():
    env = sj.make("cleanup_ssd", num_agents=3, episode_length=20)
    config = TrainConfig(algo="vdn", seating="shared", num_envs=2, rollout_len=8, num_updates=3, hidden=16,
                         channels=4, embed_dim=4, dqn_batch=8, dqn_updates=2, buffer_rollouts=2, evaluate=False)
    train = make_train(env, config)
    state, metrics = jax.jit(train)(jax.random.key(0))
    assert train.learner.num_seats == 3
    assert state.learners.extra.buffer.obs["grid"].shape[:4] == (1, 2, 8, 6)  # learners, slots, T, M
    chex.assert_tree_all_finite({"loss": metrics["loss"], "q_mean": metrics["q_mean"]})
    assert not np.any(metrics["halted"])
