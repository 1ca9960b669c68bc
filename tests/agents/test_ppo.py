"""Actor-critic building blocks on hand-computed examples: GAE and Advantage Alignment.

(PPO, A2C and recurrent PPO learning in the population loop are checked in
tests/train/test_learning.py, which shares their compiled programs with other tests.)
"""

import jax.numpy as jnp
import numpy as np

from socialjax.agents.ppo import advantage_alignment, gae


def test_gae_matches_a_hand_computed_example_with_a_done_in_the_middle():
    """GAE over 3 steps, two seats. Seat 0 ends an episode after step 1, which cuts both
    the bootstrap and the advantage trace there; seat 1 runs through and bootstraps from
    ``last_value``. gamma 0.9, lambda 0.8.

    Seat 0: delta_2 = 3 + 0.9 * 2.0 - 1.5 = 3.3 (A_2 = 3.3); delta_1 = 2 - 1.0 = 1.0 (done:
    A_1 = 1.0); delta_0 = 1 + 0.9 * 1.0 - 0.5 = 1.4, A_0 = 1.4 + 0.72 * 1.0 = 2.12.
    Seat 1: delta = (0, 0, 1 + 0.9 * 1.0 - 0) = (0, 0, 1.9): A = (0.72^2 * 1.9, 0.72 * 1.9, 1.9).
    Targets are A + V."""
    reward = jnp.array([[1.0, 0.0], [2.0, 0.0], [3.0, 1.0]])
    value = jnp.array([[0.5, 0.0], [1.0, 0.0], [1.5, 0.0]])
    done = jnp.array([[False, False], [True, False], [False, False]])
    last_value = jnp.array([2.0, 1.0])
    adv, target = gae(reward, value, done, last_value, jnp.float32(0.9), jnp.float32(0.8))
    expected = np.array([[2.12, 0.72**2 * 1.9], [1.0, 0.72 * 1.9], [3.3, 1.9]])
    np.testing.assert_allclose(adv, expected, rtol=1e-6)
    np.testing.assert_allclose(target, expected + np.asarray(value), rtol=1e-6)


def test_gae_with_lambda_one_and_no_done_is_the_discounted_return_minus_value():
    """With lambda = 1 and no episode end, A_t + V_t is the discounted return
    bootstrapped from ``last_value`` (the Monte Carlo target)."""
    rng = np.random.default_rng(0)
    reward = rng.normal(size=(5, 3)).astype(np.float32)
    value = rng.normal(size=(5, 3)).astype(np.float32)
    last = rng.normal(size=(3,)).astype(np.float32)
    g = 0.9
    ret = np.zeros((5, 3))
    acc = last.astype(np.float64)
    for t in reversed(range(5)):
        acc = reward[t] + g * acc
        ret[t] = acc
    _, target = gae(jnp.asarray(reward), jnp.asarray(value), jnp.zeros((5, 3), bool), jnp.asarray(last),
                    jnp.float32(g), jnp.float32(1.0))
    np.testing.assert_allclose(target, ret, rtol=1e-5, atol=1e-5)


def test_advantage_alignment_matches_a_hand_computed_example():
    """Two players, gamma 0.5, beta 2: A*_i(t) = A_i(t) + beta * gamma * p_i(t) * A_j(t),
    with p_i(t) = sum_{k<t} gamma^(t-k) A_i(k) restarted after a done.

    Game 0 (no done): p(1) = (0.5, 1), p(2) = 0.5 * ((0.5, 1) + (3, -1)) = (1.75, 0);
    A*(1) = (3 + 1 * 0.5 * -1, -1 + 1 * 1 * 3) = (2.5, 2); A*(2) = (2 + 1.75 * 4, 4) = (9, 4).
    Game 1 (same advantages, done after step 0): p(1) = 0, p(2) = (1.5, -0.5);
    A*(1) = (3, -1); A*(2) = (2 + 1.5 * 4, 4 - 0.5 * 2) = (8, 3)."""
    a = np.array([[1.0, 2.0], [3.0, -1.0], [2.0, 4.0]], np.float32)  # (T, N)
    adv = jnp.asarray(np.stack([a, a], axis=1))  # (T, E=2, N)
    done = jnp.array([[False, True], [False, False], [False, False]])
    out = advantage_alignment(adv, done, jnp.float32(0.5), jnp.float32(2.0))
    np.testing.assert_allclose(out[:, 0], [[1, 2], [2.5, 2], [9, 4]], rtol=1e-6)
    np.testing.assert_allclose(out[:, 1], [[1, 2], [3, -1], [8, 3]], rtol=1e-6)


def test_advantage_alignment_uses_the_mean_of_the_other_players():
    """Three players, gamma 1, beta 1, A(0) = (1, 1, 1), A(1) = (0, 3, 6): p(1) = (1, 1, 1),
    the others' means at step 1 are (4.5, 3, 1.5), so A*(1) = (4.5, 6, 7.5)."""
    adv = jnp.array([[[1.0, 1.0, 1.0]], [[0.0, 3.0, 6.0]]])
    out = advantage_alignment(adv, jnp.zeros((2, 1), bool), jnp.float32(1.0), jnp.float32(1.0))
    np.testing.assert_allclose(out[1, 0], [4.5, 6.0, 7.5], rtol=1e-6)
    np.testing.assert_array_equal(out[0], adv[0])  # nothing in the past at step 0


def test_advantage_alignment_is_the_identity_at_beta_zero_and_for_one_player():
    """beta = 0 returns the advantages exactly (the loop always calls it, so this is how
    Advantage Alignment is off), and a single player has no co-player to align with."""
    rng = np.random.default_rng(1)
    adv = jnp.asarray(rng.normal(size=(6, 4, 3)).astype(np.float32))
    done = jnp.asarray(rng.random((6, 4)) < 0.3)
    np.testing.assert_array_equal(advantage_alignment(adv, done, jnp.float32(0.99), jnp.float32(0.0)), adv)
    assert not np.array_equal(advantage_alignment(adv, done, jnp.float32(0.99), jnp.float32(0.5)), adv)
    one = adv[..., :1]
    np.testing.assert_array_equal(advantage_alignment(one, done, jnp.float32(0.99), jnp.float32(3.0)), one)


def test_reward_scale_multiplies_the_rewards_before_the_advantages_and_targets():
    """``prepare`` computes GAE on ``reward_scale * reward`` with the rollout's values and
    the learner's bootstrap value: the result is ``gae`` of the scaled rewards, so scale 1
    leaves it alone."""
    import jax

    import socialjax as sj
    from socialjax.agents.learner import Rollout
    from socialjax.train import TrainConfig
    from socialjax.train.learners import make_learner

    env = sj.make("ipd", num_rounds=4)
    learner = make_learner(env, TrainConfig(algo="a2c", num_envs=1, rollout_len=4), seats_per_learner=2)
    hp = {name: np.float32(TrainConfig().__getattribute__(name)) for name in learner.hparams}
    state = learner.init(jax.random.key(0), hp)
    T, M = 4, 2
    obs = jnp.array([[0, 0], [1, 2], [3, 4], [4, 1]], jnp.int32)[..., None]
    reset = jnp.zeros((T, M), bool).at[0].set(True)
    reward = jnp.array([[3.0, 0.0], [5.0, 1.0], [0.0, 3.0], [1.0, 1.0]])
    value = jnp.array([[0.5, -0.2], [1.0, 0.3], [0.1, 0.0], [-0.4, 0.7]])  # what the rollout recorded
    ro = Rollout(obs=obs, reset=reset, action=jnp.zeros((T, M), jnp.int32), reward=reward,
                 done=jnp.zeros((T, M), bool), aux={"value": value, "logp": jnp.zeros((T, M))},
                 hidden0=jnp.zeros((M, 1)), last_obs=obs[-1], last_reset=jnp.zeros((M,), bool),
                 last_hidden=jnp.zeros((M, 1)))
    last = learner.values(state, ro.last_hidden, ro.last_obs, ro.last_reset)
    for scale in (1.0, 0.02):
        prep = learner.prepare(state, ro, {**state.hparams, "reward_scale": jnp.float32(scale)})
        adv, target = gae(reward * scale, value, ro.done, last, state.hparams["gamma"], state.hparams["gae_lambda"])
        np.testing.assert_allclose(prep["adv"], adv, rtol=1e-6)
        np.testing.assert_allclose(prep["target"], target, rtol=1e-6)
    unscaled = learner.prepare(state, ro)["target"] - value
    scaled = learner.prepare(state, ro, {**state.hparams, "reward_scale": jnp.float32(0.02)})["target"] - value
    assert not np.allclose(unscaled, scaled)
