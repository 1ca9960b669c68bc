"""Public goods game: hand-computed payoffs (2002 and 2000 punishment designs, the
sequential MAC-SPGG variant), free riding as the stage-game best response, partner and
stranger matching, and bad input. The hand-played periods are checked with and without
jit (``chex.variants``)."""

import itertools
import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from support import assert_same

from socialjax.envs.institutions.public_goods import OBS_PERIOD, OBS_POSITION, OBS_STAGE, PublicGoods, obs_slices

KEY = jax.random.key(0)
SL = obs_slices(4)


def fixed_groups(env, state):
    """Identity grouping: agents 0..3 in group 0 at positions 0..3, and so on."""
    return state.replace(order=jnp.arange(env.num_agents, dtype=jnp.int32))


def play(variant, env, actions_seq, params=None):
    """Reset, fix the grouping, and step through ``actions_seq`` with ``variant(env.step)``
    (a chex variant: jitted or not); returns the list of (obs, reward, done, info) as
    numpy."""
    params = params or env.default_params
    step = variant(env.step)
    _, state = env.reset(KEY, params)
    state = fixed_groups(env, state)
    out = []
    for t, a in enumerate(actions_seq):
        obs, state, r, d, info = step(jax.random.fold_in(KEY, t), state, jnp.asarray(a, jnp.int32), params)
        out.append(jax.device_get((obs, r, d, info)))
    return out


PLAIN = PublicGoods(num_agents=4, num_periods=3)
P2002 = PublicGoods(num_agents=4, punishment=True, num_periods=2)
P2000 = PublicGoods(num_agents=4, punishment=True, design="2000", num_periods=2)
SEQ = PublicGoods(num_agents=4, sequential=True, num_periods=2)


# --------------------------------------------------------------------- hand-played periods
# Hand-made punishment profile (identity grouping; agent i's points go to i+1, i+2,
# i+3 mod 4 in action columns 1, 2, 3): agent 1 gives 2 points to agent 0 (column 3),
# agent 2 gives 3 points to agent 0 (column 2) and 1 to agent 3 (column 1).
CONTRIB = [0, 10, 20, 5]  # first-stage payoffs 34, 24, 14, 29
PUNISH = [[0, 0, 0, 0], [0, 0, 0, 2], [0, 1, 3, 0], [0, 0, 0, 0]]
CONTRIB_ACTIONS = [[c, 0, 0, 0] for c in CONTRIB]


def seq_actions(contribs, filler=7):
    """One sub-step per position: the mover plays its contribution, others ``filler``
    (must be ignored)."""
    out = []
    for k, c in enumerate(contribs):
        a = [filler] * 4
        a[k] = c
        out.append(a)
    return out


class HandPlayedPeriods(chex.TestCase):
    """Periods played by hand, stepped with and without jit."""

    @chex.variants(with_jit=True, without_jit=True)
    def test_first_stage_payoff_by_hand(self):
        (obs, r, done, info), (obs2, *_) = play(self.variant, PLAIN, [[0, 10, 20, 5], [1, 1, 1, 1]])
        # sum = 35, 0.4 * 35 = 14: 20 - g + 14
        np.testing.assert_allclose(r, [34, 24, 14, 29], rtol=1e-6)
        np.testing.assert_allclose(info["period_payoff"], r)
        np.testing.assert_array_equal(info["contributed"], [0, 10, 20, 5])
        assert not done and info["period_over"]
        # next period's observation: last contributions, own first then cyclic group order
        np.testing.assert_array_equal(obs[:, SL["last"]],
                                      [[0, 10, 20, 5], [10, 20, 5, 0], [20, 5, 0, 10], [5, 0, 10, 20]])
        np.testing.assert_array_equal(obs[:, OBS_PERIOD], 1)
        np.testing.assert_array_equal(obs[:, OBS_POSITION], [0, 1, 2, 3])

    @chex.variants(with_jit=True, without_jit=True)
    def test_punishment_2002_by_hand(self):
        (obs1, r1, d1, info1), (obs2, r2, d2, info2) = play(self.variant, P2002, [CONTRIB_ACTIONS, PUNISH])
        first = np.array([34.0, 24, 14, 29])
        np.testing.assert_allclose(r1, first, rtol=1e-6)
        assert not info1["period_over"] and info2["period_over"]
        # the punishment step sees this period's contributions, own first
        np.testing.assert_array_equal(obs1[:, OBS_STAGE], 1)
        np.testing.assert_array_equal(obs1[:, SL["current"]][2], [20, 5, 0, 10])
        # agent 0 receives 5 points (-15); agent 1 pays 2; agent 2 pays 3 + 1; agent 3 receives 1 (-3)
        expected = np.array([34 - 15, 24 - 2, 14 - 4, 29 - 3], np.float32)
        np.testing.assert_allclose(r1 + r2, expected, rtol=1e-6)
        np.testing.assert_allclose(info2["period_payoff"], expected, rtol=1e-6)
        np.testing.assert_array_equal(info2["points_received"], [5, 0, 0, 1])
        np.testing.assert_array_equal(info2["points_assigned"], [0, 2, 4, 0])
        np.testing.assert_allclose(info2["punish_cost"], [0, 2, 4, 0])
        np.testing.assert_allclose(info2["punish_loss"], [15, 0, 0, 3])
        # contributions in the punishment step are ignored, points in the contribution step too
        np.testing.assert_array_equal(info2["contributed"], 0)
        np.testing.assert_array_equal(info1["points_assigned"], 0)
        # next period: agent 0 sees it got 0 from 1 (next), 3 from 2, 2 from 3 ... in its view order
        # agent 0's view is (1, 2, 3): 2 points from agent 1, 3 from agent 2, 0 from agent 3
        np.testing.assert_array_equal(obs2[0, SL["received"]], [2, 3, 0])
        # agent 3's view is (0, 1, 2): 1 point from agent 2
        np.testing.assert_array_equal(obs2[3, SL["received"]], [0, 0, 1])
        np.testing.assert_array_equal(obs2[:, OBS_STAGE], 0)

    @chex.variants(with_jit=True, without_jit=True)
    def test_punishment_2000_by_hand(self):
        (_, r1, _, _), (_, r2, _, info2) = play(self.variant, P2000, [CONTRIB_ACTIONS, PUNISH])
        # agent 0: 5 points cut 50% of 34; agent 1: c(2) = 2; agent 2: c(3) + c(1) = 4 + 1;
        # agent 3: 1 point cuts 10% of 29
        expected = np.array([34 - 17, 24 - 2, 14 - 5, 29 - 2.9], np.float32)
        np.testing.assert_allclose(r1 + r2, expected, rtol=1e-5)
        np.testing.assert_allclose(info2["punish_cost"], [0, 2, 5, 0], rtol=1e-6)

    @chex.variants(with_jit=True, without_jit=True)
    def test_punishment_2000_cut_is_capped_at_100_percent(self):
        # agent 0 receives 10 (from agent 1, column 3) + 2 (from agent 3, column 1) = 12 points
        punish = [[0, 0, 0, 0], [0, 0, 0, 10], [0, 0, 0, 0], [0, 2, 0, 0]]
        (_, r1, _, _), (_, r2, _, info2) = play(self.variant, P2000, [CONTRIB_ACTIONS, punish])
        # agent 0 loses all of 34 (not 120%); agent 1 pays c(10) = 30; agent 3 pays c(2) = 2
        np.testing.assert_allclose(r1 + r2, [0, 24 - 30, 14, 29 - 2], rtol=1e-6, atol=1e-5)
        np.testing.assert_allclose(info2["punish_loss"], [34, 0, 0, 0], rtol=1e-6)

    @chex.variants(with_jit=True, without_jit=True)
    def test_sequential_reward_by_hand(self):
        steps = play(self.variant, SEQ, seq_actions([4, 10, 0, 20]) + seq_actions([10, 10, 10, 10]))
        rewards = np.stack([s[1] for s in steps])
        # zero until the period's last sub-step
        np.testing.assert_array_equal(rewards[[0, 1, 2, 4, 5, 6]], 0)
        # s = (4, 10, 0, 20), sum 34 < B = 40: u = -0.025 s^2 + 0.5 * predecessors + 0.5 * 34 - 10
        np.testing.assert_allclose(rewards[3], [-0.4 + 0 + 7, -2.5 + 2 + 7, 0 + 7 + 7, -10 + 7 + 7], rtol=1e-5)
        # s = 10 each, sum 40 reaches B: u = -2.5 + 0.5 * 10k + 20
        np.testing.assert_allclose(rewards[7], [17.5, 22.5, 27.5, 32.5], rtol=1e-5)
        np.testing.assert_array_equal(steps[3][3]["contributed"], [0, 0, 0, 20])
        # agent 2 moves at sub-step 2 and sees its predecessors' contributions (own first: 2, 3, 0, 1)
        obs_before_2 = steps[1][0]
        assert obs_before_2[2, OBS_STAGE] == obs_before_2[2, OBS_POSITION] == 2
        np.testing.assert_array_equal(obs_before_2[2, SL["current"]], [0, 0, 4, 10])
        assert steps[-1][2]  # done after 2 periods x 4 sub-steps

    @chex.variants(with_jit=True, without_jit=True)
    def test_out_of_range_contribution_is_noop(self):
        (_, r, _, info), = play(self.variant, PLAIN, [[-1, 21, 20, 5]])
        np.testing.assert_array_equal(info["invalid_action"], [True, True, False, False])
        np.testing.assert_array_equal(info["contributed"], [0, 0, 20, 5])
        np.testing.assert_allclose(r, [30, 30, 10, 25], rtol=1e-6)  # 0.4 * 25 = 10

    @chex.variants(with_jit=True, without_jit=True)
    def test_out_of_range_points_is_noop(self):
        punish = [[0, 11, 0, 0], [0, -1, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0]]
        _, (_, _, _, info) = play(self.variant, P2002, [CONTRIB_ACTIONS, punish])
        np.testing.assert_array_equal(info["invalid_action"], [True, True, False, False])
        np.testing.assert_array_equal(info["points_assigned"], [0, 0, 1, 0])
        np.testing.assert_array_equal(info["points_received"], [0, 0, 0, 1])


# --------------------------------------------------------------------- the stage game
def test_zero_contribution_is_the_stage_game_best_response():
    """For random profiles of the others, agent i's payoff over its own 0..20 is
    strictly decreasing (by 1 - 0.4 per token), so 0 is the unique best response."""
    params = PLAIN.default_params
    _, state = PLAIN.reset(KEY, params)
    profiles = np.asarray(jax.random.randint(jax.random.key(1), (8, 4), 0, 21))
    own = np.arange(21)

    @jax.jit
    def payoffs(actions):  # (P, 21, 4) -> (P, 21, 4)
        one = lambda a: PLAIN.step(KEY, state, a, params)[2]
        return jax.vmap(jax.vmap(one))(actions)

    for i in range(4):
        actions = np.repeat(profiles[:, None, :], 21, axis=1)
        actions[:, :, i] = own
        r = np.asarray(payoffs(jnp.asarray(actions, jnp.int32)))[:, :, i]
        assert (np.argmax(r, axis=1) == 0).all()
        np.testing.assert_allclose(np.diff(r, axis=1), -(1 - 0.4), rtol=1e-5)


# --------------------------------------------------------------------- matching
def partition_label(order):
    """The partition of 8 agents into two groups of 4, named by agent 0's group mates."""
    groups = np.asarray(order).reshape(2, 4)
    mine = groups[0] if 0 in groups[0] else groups[1]
    return tuple(sorted(int(a) for a in mine if a != 0))


def run_orders(env, num_envs, num_steps):
    """``(B, T, N)`` group ids and positions from random-action rollouts."""

    def one(key):
        k0, k1 = jax.random.split(key)
        obs, state = env.reset(k0)

        def body(state, k):
            ka, ks = jax.random.split(k)
            state_before = state
            _, state, _, done, info = env.step(ks, state, env.sample_actions(ka), env.default_params)
            return state, (state_before.order, done, info["group"], info["position"])

        return jax.lax.scan(body, state, jax.random.split(k1, num_steps))[1]

    return jax.device_get(jax.jit(jax.vmap(one))(jax.random.split(jax.random.key(7), num_envs)))


def test_partner_matching_keeps_groups():
    env = PublicGoods(num_agents=8, punishment=True, num_periods=3, matching="partner")
    order, done, group, position = run_orders(env, 32, env.episode_length)
    assert done[:, -1].all() and not done[:, :-1].any()
    assert (order == order[:, :1]).all() and (group == group[:, :1]).all() and (position == position[:, :1]).all()
    # groups are drawn at random at reset: different envs get different partitions
    assert len({partition_label(o[0]) for o in order}) > 5


def test_stranger_matching_regroups_uniformly():
    env = PublicGoods(num_agents=8, num_periods=10, matching="stranger")
    num_envs, periods = 64, 10
    order, *_ = run_orders(env, num_envs, periods)
    labels = [partition_label(o) for o in order.reshape(-1, 8)]
    draws = len(labels)  # 640 draws over C(7, 3) = 35 partitions
    counts = {p: 0 for p in itertools.combinations(range(1, 8), 3)}
    for lab in labels:
        counts[lab] += 1
    assert len(counts) == 35 and min(counts.values()) > 0  # every arrangement reached
    # uniform: each count ~ Binomial(640, 1/35), sd ~ 4.2; allow 5 sd
    mean, sd = draws / 35, math.sqrt(draws / 35 * (34 / 35))
    assert max(abs(c - mean) for c in counts.values()) < 5 * sd
    # regrouped between consecutive periods (same partition with probability 1/35)
    same = np.mean([partition_label(a) == partition_label(b) for o in order for a, b in zip(o[:-1], o[1:])])
    assert same < 1 / 35 + 5 * math.sqrt(1 / 35 / (num_envs * (periods - 1)))
    # positions within a group are uniform too (they set the sequential move order)
    pos = np.argsort(order, axis=-1) % 4  # (B, T, N)
    freq = np.bincount(pos[..., 0].ravel(), minlength=4) / pos[..., 0].size
    assert np.abs(freq - 0.25).max() < 5 * math.sqrt(0.25 * 0.75 / pos[..., 0].size)


# --------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "field, value",
    [("mpcr", -0.1), ("cut_per_point", 1.5), ("max_cut", -0.5), ("kappa", -1.0), ("fine_per_point", float("nan"))],
)
def test_params_out_of_bounds_raise(field, value):
    with pytest.raises(ValueError, match=field):
        P2002.with_params(**{field: value})
    with pytest.raises(ValueError, match=field):
        P2002.reset(KEY, P2002.default_params.replace(**{field: value}))


def test_bad_cost_schedule_raises():
    with pytest.raises(ValueError, match="cost_schedule"):
        P2002.with_params(cost_schedule=np.arange(5.0))
    with pytest.raises(ValueError, match="cost_schedule"):
        P2002.with_params(cost_schedule=-np.arange(11.0))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(num_agents=6), "num_agents=6 must be a multiple of group_size=4"),
        (dict(num_agents=9, group_size=3, punishment=True, sequential=True), "punishment"),
        (dict(matching="random"), "matching"),
        (dict(design="1999"), "design"),
        (dict(group_size=1, num_agents=4), "group_size"),
        (dict(num_periods=0), "num_periods"),
        (dict(design="2000", max_points=5), "max_points"),
    ],
)
def test_bad_options_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PublicGoods(**kwargs)


def test_wrong_action_shape_raises():
    _, state = P2002.reset(KEY)
    with pytest.raises(ValueError, match="shape"):
        P2002.step(KEY, state, jnp.zeros(4, jnp.int32))


def test_rewards_are_bit_identical_batched_or_alone():
    """Payoffs like 13 + 0.4 * 62 differ in the last bit if XLA fuses the product into a
    multiply-add in one compilation and not the other (see ``rounded``). Bit-identical
    on the CPU; two programs are compared, so on other backends ``assert_same`` asks
    for closeness only (tests/support.py)."""
    params = P2000.default_params
    keys = jax.random.split(jax.random.key(5), 16)

    def period(key):
        k0, k1, k2 = jax.random.split(key, 3)
        _, state = P2000.reset(k0, params)
        _, state, r1, _, _ = P2000.step(k1, state, P2000.sample_actions(k1, params), params)
        _, _, r2, _, _ = P2000.step(k2, state, P2000.sample_actions(k2, params), params)
        return r1, r2

    batched = jax.device_get(jax.jit(jax.vmap(period))(keys))
    alone = jax.jit(period)
    for b, key in enumerate(keys):
        for got, ref in zip(jax.device_get(alone(key)), batched):
            assert_same(got, ref[b])
