"""Partner selection, reputation and punishment (Dasgupta & Musolesi; rules and sources
in docs/environments.md, "Partner selection, reputation and punishment").

Statistical checks allow 5 standard errors (two-sided false-alarm rate about 6e-7 per
check); every seed is fixed, so the tests are deterministic.
"""

import functools
import itertools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from socialjax import make, testing
from socialjax.envs.institutions.partner_punishment import (
    NUM_AGENTS,
    OBS_ACTIVE,
    OBS_PLAY,
    OBS_PLAYER,
    OBS_PUNISH,
    OBS_REP,
    OBS_SELECT,
    OBS_TARGET_C,
    OBS_TARGET_D,
    OBS_THIRD,
    PartnerPunishment,
)

Z = 5.0
C, D = 0, 1
N = 5
# The documented numbers (docs/environments.md), written out independently of the module's constants.
PD = {(C, C): (3.0, 3.0), (C, D): (0.0, 4.0), (D, C): (4.0, 0.0), (D, D): (1.0, 1.0)}
LOSS, JUST, UNJUST, COST = 3.0, 2.0, -10.0, 3.0
REP_PLAY = {C: 1.0, D: -1.0}
REP_JUST, REP_UNJUST = 2.0, -3.0


@functools.cache
def env_and_round(**options):
    """``(env, run)``: ``run(key, acts (B, 2), decisions (B, 4))`` plays one round of
    the game 0 (agent 0) vs 1 from a hand-made state and then its punish step, vmapped
    over the batch. Returns rewards of both steps ``(B, 2, N)``, final reputations
    ``(B, N)``, bystanders ``(B, 2)`` and the punish-step info."""
    env, one = hand_made_round(**options)
    return env, jax.jit(jax.vmap(one, in_axes=(None, 0, 0)))


def hand_made_round(**options):
    """``(env, one)``: the unbatched, unjitted ``one(key, acts (2,), decisions (4,))`` of
    :func:`env_and_round`."""
    env = PartnerPunishment(num_agents=N, num_rounds=3, partner_selection=False, **options)
    params = env.default_params

    def one(key, acts, decisions):
        _, state = env.reset(key, params)
        state = state.replace(partner=jnp.array([1, 0, 3, 4, 2]), order=jnp.arange(N, dtype=jnp.int32))
        play = jnp.zeros((N, 3), jnp.int32).at[0, 1].set(acts[0]).at[1, 1].set(acts[1])
        _, state, r1, _, _ = env.step(jax.random.fold_in(key, 1), state, play, params)
        bystander = state.bystander
        # punishers in order: direct on 0 (agent 1), direct on 1 (agent 0), third party on 0, on 1
        punishers = jnp.array([1, 0]) if not env.third_party_punishment else jnp.concatenate(
            [jnp.array([1, 0]), bystander])
        decide = decisions[: punishers.shape[0]]
        pun = jnp.zeros((N, 3), jnp.int32).at[punishers, 2].set(decide)
        _, state, r2, _, info = env.step(jax.random.fold_in(key, 2), state, pun, params)
        return jnp.stack([r1, r2]), state.reputation, bystander, info

    return env, one


def expected_round(acts, decisions, bystander, direct, third, costly):
    """Independent computation of the rewards (play, punish) and reputations."""
    play = np.zeros(N)
    play[0], play[1] = PD[tuple(acts)]
    rep = np.zeros(N)
    rep[0] += REP_PLAY[acts[0]]
    rep[1] += REP_PLAY[acts[1]]
    pun = np.zeros(N)
    chances = []
    if direct:
        chances += [(1, 0, decisions[0]), (0, 1, decisions[1])]
    if third:
        chances += [(bystander[0], 0, decisions[2]), (bystander[1], 1, decisions[3])]
    for punisher, target, decided in chances:
        if not decided:
            continue
        pun[target] -= LOSS
        if acts[target] == D:
            pun[punisher] += JUST - (COST if costly else 0.0)
            rep[punisher] += REP_JUST
        else:
            pun[punisher] += UNJUST
            rep[punisher] += REP_UNJUST
    return play, pun, rep


CONFIGS = [
    dict(direct_punishment=True, third_party_punishment=False, costly=False),
    dict(direct_punishment=True, third_party_punishment=False, costly=True),
    dict(direct_punishment=False, third_party_punishment=True, costly=False),
    dict(direct_punishment=False, third_party_punishment=True, costly=True),
    dict(direct_punishment=True, third_party_punishment=True, costly=False),
    dict(direct_punishment=False, third_party_punishment=False, costly=False),
]


CONFIG_IDS = ["-".join(k for k, v in o.items() if v) or "none" for o in CONFIGS]
# every combination of the two players' actions and the four punishment decisions
COMBOS = list(itertools.product([C, D], [C, D], *[[0, 1]] * 4))


@pytest.fixture(scope="module")
def hand_made_rounds():
    """``{config id: (rewards, reputations, bystanders, info)}`` for every entry of
    COMBOS, under every configuration of CONFIGS, from one jitted call (the options are
    static, so these are six environments; compiled together they cost a fraction of
    six separate compilations)."""
    acts = jnp.array([c[:2] for c in COMBOS], jnp.int32)
    decisions = jnp.array([c[2:] for c in COMBOS], jnp.int32)
    rounds = {name: hand_made_round(**options)[1] for name, options in zip(CONFIG_IDS, CONFIGS)}
    run = jax.jit(lambda key: {name: jax.vmap(one, in_axes=(None, 0, 0))(key, acts, decisions)
                               for name, one in rounds.items()})
    return jax.device_get(run(jax.random.key(3)))


@pytest.mark.parametrize("options", CONFIGS, ids=CONFIG_IDS)
def test_every_reward_and_reputation_change_of_hand_made_rounds(options, hand_made_rounds):
    combos = COMBOS
    rewards, rep, bystander, info = hand_made_rounds[CONFIG_IDS[CONFIGS.index(options)]]
    if not (options["direct_punishment"] or options["third_party_punishment"]):
        # no punish step: the second step is game 0's next round (all play C: 3, 3)
        for k, combo in enumerate(combos):
            play, _, rep_play = expected_round(combo[:2], combo[2:], None, False, False, False)
            np.testing.assert_array_equal(rewards[k, 0], play)
            np.testing.assert_array_equal(rewards[k, 1], [3, 3, 0, 0, 0])
            np.testing.assert_array_equal(rep[k], rep_play + np.array([1, 1, 0, 0, 0]))
        return
    for k, combo in enumerate(combos):
        play, pun, rep_exp = expected_round(
            combo[:2], combo[2:], bystander[k], options["direct_punishment"],
            options["third_party_punishment"], options["costly"],
        )
        np.testing.assert_array_equal(rewards[k, 0], play, err_msg=str(combo))
        np.testing.assert_array_equal(rewards[k, 1], pun, err_msg=str(combo))
        np.testing.assert_array_equal(rep[k], rep_exp, err_msg=str(combo))
        if options["third_party_punishment"]:
            assert bystander[k][0] != bystander[k][1] and set(bystander[k]) <= {2, 3, 4}
    # event counts add up: every punishment inflicted was received, and is just or unjust
    np.testing.assert_array_equal(info["punished"].sum(1), info["was_punished"].sum(1))
    np.testing.assert_array_equal(
        info["punished"].sum(1), info["just_punishments"].sum(1) + info["unjust_punishments"].sum(1)
    )
    if options["third_party_punishment"] and not options["direct_punishment"]:
        np.testing.assert_array_equal(info["punished"], info["third_party_punished"])


def test_bystanders_are_uniform_over_non_players():
    env, run = env_and_round(direct_punishment=False, third_party_punishment=True, costly=False)
    B = 3000
    # many draws: vary the key through the batch by giving each row its own round
    keys = jax.random.split(jax.random.key(11), B)
    one = jax.jit(jax.vmap(lambda k: run(k, jnp.zeros((1, 2), jnp.int32), jnp.zeros((1, 4), jnp.int32))[2][0]))
    byst = np.asarray(one(keys))
    assert np.all(byst[:, 0] != byst[:, 1])
    for slot in range(2):
        counts = np.bincount(byst[:, slot], minlength=N)
        assert counts[0] == counts[1] == 0
        p = 1 / 3
        assert np.all(np.abs(counts[2:] - B * p) <= Z * np.sqrt(B * p * (1 - p))), counts


# ----------------------------------------------------------------------------- pairing
@pytest.fixture(scope="module")
def random_pairing_env():
    return PartnerPunishment(num_agents=N, num_rounds=2, partner_selection=False)


def test_random_partners_are_uniform_and_games_in_fair_order(random_pairing_env):
    env = random_pairing_env
    B = 4000
    states = jax.jit(jax.vmap(lambda k: env.reset(k)[1]))(jax.random.split(jax.random.key(5), B))
    partner, order = np.asarray(states.partner), np.asarray(states.order)
    assert np.all(partner != np.arange(N))
    np.testing.assert_array_equal(np.sort(order, axis=1), np.tile(np.arange(N), (B, 1)))
    p = 1 / (N - 1)
    for i in range(N):
        counts = np.bincount(partner[:, i], minlength=N)
        others = np.delete(counts, i)
        assert np.all(np.abs(others - B * p) <= Z * np.sqrt(B * p * (1 - p))), (i, counts)
    q = 1 / N
    first = np.bincount(order[:, 0], minlength=N)
    assert np.all(np.abs(first - B * q) <= Z * np.sqrt(B * q * (1 - q))), first


def test_every_agent_plays_its_own_game_each_episode(random_pairing_env):
    env = random_pairing_env
    traj = jax.device_get(jax.jit(lambda key: testing.rollout(env, key, env.episode_length))(jax.random.key(2)))
    obs, done, info = traj.obs[:-1], traj.done, traj.info  # obs: what each step acted on
    played = info["played"]
    chex.assert_shape(played, (env.episode_length, N))
    # each play step seats exactly two players; each agent heads one game of num_rounds rounds
    play_steps = info["phase"] == 1
    np.testing.assert_array_equal(played[play_steps].sum(1), 2)
    assert np.all(played.sum(0) >= env.num_rounds)
    assert played.sum() == 2 * N * env.num_rounds
    assert done[-1] and not done[:-1].any()
    assert env.episode_length == N * 2 * 2  # no select step; play + punish per round
    space = env.observation_space()
    assert bool(space.contains(obs))
    # in each step exactly the acting agents are flagged active
    np.testing.assert_array_equal(obs[play_steps, :, OBS_ACTIVE], obs[play_steps, :, OBS_PLAYER])
    np.testing.assert_array_equal(obs[play_steps, :, OBS_ACTIVE].sum(1), 2)


SELECTION = PartnerPunishment(num_agents=N, num_rounds=1, third_party_punishment=True)
# build the default params outside any trace first: if jit(env.reset) is the first
# to build them, the cached params are trace constants and a later jit(env.step)
# fails on its second call (a base-class issue, reported)
SELECTION.default_params
RESET, STEP = SELECTION.reset, SELECTION.step  # one object each: the jitted variants compile once


class SelectionAndPunishSteps(chex.TestCase):
    """Partner selection, reputation and punishment steps played by hand, with and without
    jit."""

    @chex.variants(with_jit=True, without_jit=True)
    def test_selection_respects_picks_and_observes_reputations(self):
        step, reset = self.variant(STEP), self.variant(RESET)
        obs, state = reset(jax.random.key(0))
        assert np.all(obs[:, OBS_SELECT] == 1) and np.all(obs[:, OBS_ACTIVE] == 1)
        state = state.replace(reputation=jnp.arange(N, dtype=jnp.float32) * 10)
        picks = np.array([3, 0, 1, 2, 0])  # index among the others
        expected = np.array([4, 0, 1, 2, 0])  # agent 0 -> 4, 1 -> 0, 2 -> 1, 3 -> 2, 4 -> 0
        actions = jnp.zeros((N, 3), jnp.int32).at[:, 0].set(picks)
        obs, state, reward, done, info = step(jax.random.key(1), state, actions)
        np.testing.assert_array_equal(info["partner"], expected)
        np.testing.assert_array_equal(reward, 0)
        assert not info["invalid_action"].any()
        # play through: the game headed by each agent seats it with its pick
        seen = set()
        key = jax.random.key(2)
        for _ in range(2 * N):
            players = np.flatnonzero(obs[:, OBS_PLAYER])
            if obs[0, OBS_PLAY]:
                seen.add(tuple(sorted(players)))
            key, k = jax.random.split(key)
            obs, state, reward, done, info = step(k, state, jnp.zeros((N, 3), jnp.int32))
        assert done
        assert seen == {tuple(sorted((i, int(expected[i])))) for i in range(N)}

    @chex.variants(with_jit=True, without_jit=True)
    def test_reputation_block_layout(self):
        reset = self.variant(RESET)
        obs, state = reset(jax.random.key(0))
        state = state.replace(reputation=jnp.arange(N, dtype=jnp.float32) * 10)
        obs = SELECTION.get_obs(state, SELECTION.default_params)
        for i in range(N):
            others = [10.0 * j for j in range(N) if j != i]
            np.testing.assert_array_equal(obs[i, OBS_REP:], [10.0 * i, 0.0] + others)

    @chex.variants(with_jit=True, without_jit=True)
    def test_punish_step_observation_shows_targets(self):
        step, reset = self.variant(STEP), self.variant(RESET)
        obs, state = reset(jax.random.key(4))
        state = state.replace(order=jnp.arange(N, dtype=jnp.int32))
        picks = jnp.zeros((N, 3), jnp.int32).at[0, 0].set(0)  # agent 0 picks agent 1
        obs, state, *_ = step(jax.random.key(5), state, picks)
        play = jnp.zeros((N, 3), jnp.int32).at[1, 1].set(D)  # 0 plays C, 1 plays D
        obs, state, *_ = step(jax.random.key(6), state, play)
        assert np.all(obs[:, OBS_PUNISH] == 1)
        bys = np.asarray(state.bystander)
        np.testing.assert_array_equal(np.flatnonzero(obs[:, OBS_THIRD]), np.sort(bys))
        np.testing.assert_array_equal(np.flatnonzero(obs[:, OBS_ACTIVE]), np.sort(np.r_[0, 1, bys]))
        # 0's target (1) defected, 1's target (0) cooperated; bystanders see their own target
        assert obs[0, OBS_TARGET_D] == 1 and obs[1, OBS_TARGET_C] == 1
        assert obs[bys[0], OBS_TARGET_C] == 1 and obs[bys[1], OBS_TARGET_D] == 1

    @chex.variants(with_jit=True, without_jit=True)
    def test_out_of_range_heads_are_noop_and_flagged(self):
        step, reset = self.variant(STEP), self.variant(RESET)
        obs, state = reset(jax.random.key(0))
        state = state.replace(order=jnp.arange(N, dtype=jnp.int32))
        # agent 0's pick is out of range: flagged, replaced by a uniformly random other agent
        bad = jnp.zeros((N, 3), jnp.int32).at[0, 0].set(N - 1).at[1, 0].set(-1)
        obs, state, _, _, info = step(jax.random.key(1), state, bad)
        np.testing.assert_array_equal(info["invalid_action"], [True, True, False, False, False])
        assert info["partner"][0] != 0 and info["partner"][1] != 1
        b = int(info["partner"][0])
        # game 0 vs b: agent 0 sends play 2 (invalid -> D), b cooperates
        play = jnp.zeros((N, 3), jnp.int32).at[0, 1].set(2)
        obs, state, reward, _, info = step(jax.random.key(2), state, play)
        assert info["invalid_action"][0] and info["invalid_action"].sum() == 1
        assert reward[0] == 4.0 and reward[b] == 0.0
        # b punishes with an out-of-range value: no punishment, flagged
        pun = jnp.zeros((N, 3), jnp.int32).at[b, 2].set(7)
        obs, state, reward, _, info = step(jax.random.key(3), state, pun)
        assert info["invalid_action"][b]
        assert info["was_punished"][0] == 0 and info["punished"][b] == 0


def test_cycles_repeat_selection_and_keep_reputation():
    """Three cycles of one round per game: each cycle opens with a select step whose
    picks hold for that cycle; reputation is kept across cycles and reset only with the
    episode; without selection partners and game order are redrawn each cycle."""
    env = PartnerPunishment(num_agents=N, num_rounds=1, num_cycles=3)
    env.default_params
    step, reset = jax.jit(env.step), jax.jit(env.reset)
    assert env.cycle_length == 1 + 2 * N and env.episode_length == 3 * env.cycle_length
    obs, state = reset(jax.random.key(0))
    key = jax.random.key(1)
    cooperate = jnp.zeros((N, 3), jnp.int32)  # pick index 0, play C, no punishment
    for cycle in range(3):
        assert np.all(obs[:, OBS_SELECT] == 1) and np.all(obs[:, OBS_ACTIVE] == 1)
        # every round so far was C by both players: +1 each, N one-round games per cycle
        np.testing.assert_array_equal(obs[:, OBS_REP], np.asarray(state.reputation))
        assert float(state.reputation.sum()) == 2 * N * cycle
        picks = np.array([(cycle + i) % (N - 1) for i in range(N)])
        for t in range(env.cycle_length):
            key, k = jax.random.split(key)
            actions = cooperate.at[:, 0].set(jnp.asarray(picks)) if t == 0 else cooperate
            obs, state, reward, done, info = step(k, state, actions)
            expected = picks + (picks >= np.arange(N))
            np.testing.assert_array_equal(info["partner"], expected)
            assert bool(done) == (cycle == 2 and t == env.cycle_length - 1)
    assert float(state.reputation.sum()) == 0.0  # a new episode
    # without selection: partners and order redrawn per cycle (not all equal over 20 cycles)
    env = PartnerPunishment(num_agents=N, num_rounds=1, num_cycles=20, partner_selection=False)
    env.default_params
    obs, state = jax.jit(env.reset)(jax.random.key(3))
    step = jax.jit(env.step)
    partners, orders = set(), set()
    for t in range(env.episode_length - 1):
        if t % env.cycle_length == 0:
            partners.add(tuple(np.asarray(state.partner))), orders.add(tuple(np.asarray(state.order)))
        obs, state, _, done, _ = step(jax.random.fold_in(key, t), state, cooperate)
        assert not done
    assert len(partners) > 10 and len(orders) > 10


# ----------------------------------------------------------------------------- bad input
def test_actions_of_wrong_shape_or_dtype_raise():
    env = SELECTION
    _, state = env.reset(jax.random.key(0))
    with pytest.raises(ValueError, match="shape"):
        env.step(jax.random.key(1), state, jnp.zeros((N,), jnp.int32))
    with pytest.raises(TypeError, match="integers"):
        env.step(jax.random.key(1), state, jnp.zeros((N, 3), jnp.float32))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(partner_selection="maybe"), "partner_selection"),
        (dict(direct_punishment=2), "direct_punishment"),
        (dict(third_party_punishment=None), "third_party_punishment"),
        (dict(costly=""), "costly"),
        (dict(observe_reputation=0.5), "observe_reputation"),
        (dict(num_agents=3, third_party_punishment=True), "num_agents"),
        (dict(num_agents=1), "num_agents"),
        (dict(num_rounds=0), "num_rounds"),
        (dict(num_cycles=0), "num_cycles"),
        (dict(num_cycles=2.0), "num_cycles"),
        (dict(num_cycles=True), "num_cycles"),
        (dict(costly=True, direct_punishment=False), "costly"),
    ],
)
def test_bad_options_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PartnerPunishment(**kwargs)


@pytest.mark.parametrize("name, value", [("punish_loss", -1.0), ("punish_cost", -3.0), ("R", float("nan"))])
def test_bad_params_raise(name, value):
    with pytest.raises(ValueError, match=name):
        PartnerPunishment().with_params(**{name: value})
    with pytest.raises(ValueError, match="unknown"):
        PartnerPunishment().with_params(punishment_loss=3.0)


def test_params_are_vmappable():
    env = PartnerPunishment(num_agents=N, num_rounds=1, partner_selection=False)
    losses = jnp.array([1.0, 3.0, 5.0])

    def run(loss):
        params = env.default_params.replace(punish_loss=loss)
        _, state = env.reset(jax.random.key(0), params)
        play = jnp.ones((N, 3), jnp.int32)  # everyone defects and punishes
        _, state, _, _, _ = env.step(jax.random.key(1), state, play, params)
        return env.step(jax.random.key(2), state, play, params)[2]

    rewards = jax.jit(jax.vmap(run))(losses)
    # each player is punished once by its partner (-loss) and punished justly (+2)
    np.testing.assert_allclose(np.asarray(rewards).sum(1), 2 * (2 - np.asarray(losses)))
    np.testing.assert_array_equal((np.asarray(rewards) != 0).sum(1), 2)


def test_one_action_is_read_per_phase_without_bias():
    for n, size in ((5, 4), (4, 6), (3, 2)):  # lcm(N - 1, 2)
        env = make("partner_punishment_one_action", num_agents=n, num_rounds=1)
        assert env.action_space().n == size
        heads = np.asarray(env.heads(jnp.arange(size)))
        for h, values in ((0, n - 1), (1, 2), (2, 2)):  # select, play, punish: each value equally often
            np.testing.assert_array_equal(np.bincount(heads[:, h], minlength=values), size // values)
    env = make("partner_punishment_one_action", num_rounds=1)
    assert env.sample_actions(jax.random.key(1)).shape == (NUM_AGENTS,)
    # the select step (partner a mod 4; 7 is out of range), a play step (even actions cooperate), the punish step
    actions = jnp.array([[0, 1, 2, 3, 7], [2, 2, 2, 2, 2], [1, 3, 1, 3, 1]], jnp.int32)

    @jax.jit
    def three_steps(key):  # one compiled program
        obs, state = env.reset(key)
        out = []
        for t in range(3):
            obs, state, reward, _, info = env.step(jax.random.fold_in(key, t), state, actions[t])
            out.append((obs, reward, info))
        return out

    (obs, _, info), (obs2, reward2, info2), (_, _, info3) = three_steps(jax.random.key(0))
    np.testing.assert_array_equal(info["invalid_action"], [False] * 4 + [True])  # the no-op
    np.testing.assert_array_equal(info["partner"][:4], [1, 2, 3, 4])  # index among the others, skipping oneself
    assert obs[0, OBS_PLAY] == 1
    assert int(info2["cooperated"].sum()) == 2 and float(reward2.sum()) == 6.0  # both players cooperated
    assert obs2[0, OBS_PUNISH] == 1
    assert int(info3["punished"].sum()) == 2 and int(info3["unjust_punishments"].sum()) == 2
