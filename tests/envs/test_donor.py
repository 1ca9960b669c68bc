"""Donor game rules: accounting, pairing schedules, traces, punishment, bad input. The
hand-checked steps run with and without jit (``chex.variants``)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import socialjax as sj
from socialjax import testing
from socialjax.envs.donor.env import OBS_IS_DONOR, OBS_OWN, OBS_PARTNER, OBS_TRACE


def rollout(env, key, num_steps, actions=None):
    """Per-step (state before the step, obs before, actions, reward, done, info) of
    random play (or the given ``actions (T, N)``)."""
    traj = testing.rollout(env, key, num_steps, actions=actions)
    before = lambda tree: jax.tree_util.tree_map(lambda x: x[:-1], tree)  # noqa: E731
    return before(traj.state), before(traj.obs), traj.actions, traj.reward, traj.done, traj.info


ENV = sj.make("donor_game")


@pytest.fixture(scope="module")
def punish_env():
    return sj.make("donor_game", punishment=True)


@pytest.fixture(scope="module")
def random_batch(punish_env):
    """256 envs x 2 generations of random play with punishment allowed."""
    keys = jax.random.split(jax.random.key(3), 256)
    run = jax.jit(jax.vmap(lambda k: rollout(punish_env, k, 2 * punish_env.episode_length)))
    return jax.device_get(run(keys))


def test_resource_accounting_balances_every_round(random_batch, punish_env):
    state, _, actions, reward, done, info = random_batch
    g = float(punish_env.default_params.multiplier)
    # the total changes by (g - 1) * donated - punishment costs - fines actually applied
    expected = (g - 1) * info["donated"].sum(-1) - info["punish_cost"].sum(-1) - info["fine"].sum(-1)
    np.testing.assert_allclose(reward.sum(-1), expected, rtol=1e-5, atol=1e-3)
    assert (info["final_resources"] >= 0).all()
    # each recipient's fine is at most twice what its donor paid to punish it
    fine_on_partner = np.take_along_axis(info["fine"], info["partner"], axis=-1)
    assert (fine_on_partner[info["is_donor"]] <= 2 * info["punish_cost"][info["is_donor"]] + 1e-4).all()
    # some rounds really donate and really punish, so the check above is not vacuous
    assert info["donated"].sum() > 0 and info["punish_cost"].sum() > 0 and info["fine"].sum() > 0
    # recipients never act: what each agent gives is zero unless it is the donor
    assert (info["donated"][~info["is_donor"]] == 0).all()
    assert (info["punish_cost"][~info["is_donor"]] == 0).all()


def test_game_rewards_sum_to_final_minus_initial(random_batch, punish_env):
    _, _, _, reward, _, info = random_batch
    rounds = punish_env.rounds_per_game
    per_game = reward.reshape(reward.shape[0], -1, rounds, reward.shape[-1]).sum(2)
    finals = info["final_resources"][:, rounds - 1 :: rounds]
    np.testing.assert_allclose(per_game, finals - punish_env.default_params.initial_resources, rtol=1e-5, atol=1e-3)
    assert info["game_over"][:, rounds - 1 :: rounds].all()
    assert info["game_over"].sum() == reward.shape[0] * 4


def test_generation_final_resources_complete_at_done(random_batch, punish_env):
    _, _, _, _, done, info = random_batch
    L, R = punish_env.episode_length, punish_env.rounds_per_game
    assert done[:, L - 1].all() and done.sum() == 2 * done.shape[0]
    at_done = info["generation_final_resources"][:, L - 1]  # (B, G, N)
    np.testing.assert_array_equal(at_done[:, 0], info["final_resources"][:, R - 1])
    np.testing.assert_array_equal(at_done[:, 1], info["final_resources"][:, 2 * R - 1])


def donor_halves(env, state_seq, info):
    """Per step: the half (0 = A, 1 = B) of each step's donors, and the met pairs."""
    order = np.asarray(state_seq.order[0])
    half = np.zeros(env.num_agents, int)
    half[order[env.half :]] = 1
    seq, meetings = [], []
    for t in range(env.episode_length):
        donors = np.flatnonzero(info["is_donor"][t])
        assert len(donors) == env.half
        halves = set(half[donors])
        assert len(halves) == 1, "all donors of a round come from one half"
        seq.append("AB"[halves.pop()])
        meetings.append([(d, int(info["partner"][t][d])) for d in donors])
    return "".join(seq), meetings, half


@pytest.mark.parametrize("schedule", ["released", "alternating"])
def test_pairing_schedules(schedule):
    env = sj.make("donor_game", schedule=schedule)
    state, _, _, _, _, info = jax.device_get(jax.jit(lambda k: rollout(env, k, env.episode_length))(jax.random.key(5)))
    seq, meetings, half = donor_halves(env, state, info)
    if schedule == "released":
        assert seq == "ABABABBABABA" + "BABABAABABAB"  # released code; game 2 swaps roles
    else:
        assert seq == "ABABABABABAB" + "BABABABABABA"
    for game in range(2):
        rounds = meetings[12 * game : 12 * game + 12]
        as_donor = {}
        for pairs in rounds:
            partners = {d: r for d, r in pairs}
            assert len(set(partners.values())) == env.half  # everyone in exactly one pair
            for d, r in pairs:
                assert half[d] != half[r], "pairs are always across the two halves"
                as_donor.setdefault(frozenset((d, r)), []).append(d)
        assert len(as_donor) == env.half * env.half  # every A-B pair meets ...
        for pair, donors in as_donor.items():
            assert len(donors) == 2  # ... exactly twice per game
            if schedule == "released":
                assert set(donors) == set(pair)  # once in each role
            else:
                assert len(set(donors)) == 1  # strict alternation: the same donor twice


def test_full_donation_matches_schedule_derivation():
    """Everyone gives everything: derive the final resources from the schedule alone."""
    env = ENV
    state, _, _, _, _, info = jax.device_get(
        jax.jit(lambda k: rollout(env, k, env.episode_length, jnp.ones((env.episode_length, env.num_agents))))(
            jax.random.key(0)
        )
    )
    seq, _, half = donor_halves(env, state, info)
    g, w0 = float(env.default_params.multiplier), float(env.default_params.initial_resources)
    for game in range(2):
        # by symmetry all members of a half hold the same amount; the donor half gives it all
        amount = {"A": w0, "B": w0}
        for donor_half in seq[12 * game : 12 * game + 12]:
            other = "B" if donor_half == "A" else "A"
            amount[other] += g * amount[donor_half]
            amount[donor_half] = 0.0
        expected = np.where(half == 0, amount["A"], amount["B"])
        np.testing.assert_allclose(info["final_resources"][12 * game + 11], expected, rtol=1e-6)
    assert sorted(np.unique(info["final_resources"][11])) == [0.0, 30720.0]  # 2 * (10 * 3 * 2^9)


def test_discrete_action_levels():
    env = sj.make("donor_game", num_agents=2, action_levels=5, punishment=True)
    assert env.action_space().n == 9
    np.testing.assert_allclose(env.action_fractions(jnp.arange(9)), np.linspace(-1, 1, 9))
    assert env.noop_action == 4 and float(env.action_fractions(jnp.asarray(4))) == 0.0
    plain = sj.make("donor_game", num_agents=2, action_levels=5)
    np.testing.assert_allclose(plain.action_fractions(jnp.arange(5)), np.linspace(0, 1, 5))


class HandCheckedSteps(chex.TestCase):
    """Steps checked by hand, with and without jit."""

    @chex.variants(with_jit=True, without_jit=True)
    def test_trace_update_hand_checked(self):
        """N=4, depth 2: a donor's trace becomes [its fraction, recipient's trace[0]]."""
        env = sj.make("donor_game", num_agents=4, trace_depth=2, games_per_generation=1)
        step = self.variant(env.step)
        obs, state = env.reset(jax.random.key(0))
        fractions = [0.3, 0.6, 0.9, 0.2]
        history = []
        for t in range(3):
            donors = np.flatnonzero(np.asarray(obs[:, OBS_IS_DONOR]) == 1)
            partner = np.asarray(env.pairing(state.order, state.step)[0])
            before = np.asarray(state.trace)
            obs, state, *_ = step(jax.random.key(t), state, jnp.asarray(fractions, jnp.float32))
            after = np.asarray(state.trace)
            for d in donors:
                np.testing.assert_allclose(after[d], [fractions[d], before[partner[d], 0]], rtol=1e-6)
            for r in set(range(4)) - set(donors):
                np.testing.assert_array_equal(after[r], before[r])
            history.append(donors)
        # by round 3 some donor's recipient had given before, so depth 2 carries information
        assert np.asarray(state.trace_known)[:, 1].any()

    @chex.variants(with_jit=True, without_jit=True)
    def test_observation_is_about_the_partner(self):
        env = ENV
        obs, state = env.reset(jax.random.key(2))
        obs, state, *_ = self.variant(env.step)(jax.random.key(3), state, jnp.full(env.num_agents, 0.5))
        partner, is_donor = env.pairing(state.order, state.step)
        np.testing.assert_array_equal(obs[:, OBS_IS_DONOR], is_donor.astype(jnp.float32))
        np.testing.assert_array_equal(obs[:, OBS_PARTNER], state.resources[partner])
        np.testing.assert_array_equal(obs[:, OBS_OWN], state.resources)
        d = env.trace_depth
        np.testing.assert_array_equal(obs[:, OBS_TRACE : OBS_TRACE + d], state.trace[partner])

    @chex.variants(with_jit=True, without_jit=True)
    def test_punishment_floor_and_cost(self):
        env = sj.make("donor_game", num_agents=2, punishment=True, games_per_generation=1)
        obs, state = env.reset(jax.random.key(0))
        state = state.replace(resources=jnp.array([10.0, 3.0]))
        donor = int(np.flatnonzero(np.asarray(env.pairing(state.order, state.step)[1]))[0])
        actions = jnp.zeros(2).at[donor].set(-0.5)  # pay 5 (or 1.5), fine twice that, floored
        _, new, reward, _, info = self.variant(env.step)(jax.random.key(1), state, actions)
        res = np.asarray(state.resources)
        cost = 0.5 * res[donor]
        fine = min(2 * cost, res[1 - donor])
        expected = [res[0] - (cost if donor == 0 else fine), res[1] - (cost if donor == 1 else fine)]
        np.testing.assert_allclose(np.asarray(info["final_resources"]), expected)
        assert float(info["punish_cost"][donor]) == pytest.approx(cost)
        assert float(info["fine"][1 - donor]) == pytest.approx(fine)

    @chex.variants(with_jit=True, without_jit=True)
    def test_invalid_actions_give_nothing(self):
        obs, state = ENV.reset(jax.random.key(0))
        bad = jnp.full(ENV.num_agents, jnp.nan).at[0].set(2.0).at[1].set(-0.5)
        _, _, reward, _, info = self.variant(ENV.step)(jax.random.key(1), state, bad)
        assert info["invalid_action"].all()
        assert float(info["donated"].sum()) == 0.0 and float(jnp.abs(reward).sum()) == 0.0


def test_bad_input():
    with pytest.raises(ValueError, match="even"):
        sj.make("donor_game", num_agents=7)
    with pytest.raises(ValueError, match="schedule"):
        sj.make("donor_game", schedule="random")
    with pytest.raises(ValueError, match="trace_depth"):
        sj.make("donor_game", trace_depth=0)
    with pytest.raises(ValueError, match="action_levels"):
        sj.make("donor_game", action_levels=1)
    with pytest.raises(ValueError, match="multiplier"):
        sj.make("donor_game", multiplier=-1.0)
    env = sj.make("donor_game", num_agents=4)
    _, state = env.reset(jax.random.key(0))
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        env.step(jax.random.key(0), state, jnp.zeros(5))
    with pytest.raises(TypeError, match="numeric"):
        env.step(jax.random.key(0), state, jnp.zeros(4, bool))
