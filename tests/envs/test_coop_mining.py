"""Cooperative Mining (Melting Pot 2.0 ``coop_mining``): gold paying two miners within
the window, a lone gold miner unpaid and the ore reverting, iron paying one miner, the
mining beam (reach, walls, players, cooldown), regrowth (rate against the config's
``liveRates``, not under players, only on ore cells), the scripted miners, invariants
of random play and determinism, and bad input. Hand-made states go through the public,
jitted ``env.step``; one compiled rollout serves the random-play tests."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from support import play

import socialjax as sj
from socialjax.agents.scripted import make_scripted, scripted_names
from socialjax.envs.coop_mining import (
    EMPTY_ORE,
    GOLD,
    GOLD_PARTIAL,
    IRON,
    CoopMining,
    CoopMiningParams,
    regrow_ore,
)
from socialjax.envs.grid import constants as C

N, E_, S, W = C.NORTH, C.EAST, C.SOUTH, C.WEST
NOOP, FORWARD, MINE = 0, 1, 7
KEY = jax.random.key(0)
# row 1 of the map is ore from column 1 to 25; player 0 at (1, 2) facing east and
# player 1 at (1, 6) facing west both reach (1, 4) (2 cells ahead)
P0, P1, ORE = (1, 2), (1, 6), (1, 4)


@pytest.fixture(scope="module")
def env():
    return sj.make("coop_mining", num_agents=2, episode="fixed", episode_length=100)


@pytest.fixture(scope="module")
def step(env):
    return jax.jit(env.step)


@pytest.fixture(scope="module")
def still(env):
    """Default params without regrowth: nothing appears by chance."""
    return env.default_params.replace(iron_regrowth=0.0, gold_regrowth=0.0)


def place(env, pos, heading, ores=()):
    """A fresh state with the players at ``pos`` facing ``heading`` and ``ores`` ((r, c), code)."""
    _, state = jax.jit(env.reset)(KEY)
    cells = state.cells
    for (r, c), code in ores:
        cells = cells.at[r, c].set(code)
    return state.replace(pos=jnp.asarray(pos, jnp.int32), heading=jnp.asarray(heading, jnp.int32), cells=cells)


# ------------------------------------------------------------------------- the config
def test_map_players_and_defaults():
    env = sj.make("coop_mining")
    assert env.map.shape == (27, 27) and env.num_agents == 6 and env.view == (9, 1, 5)
    assert len(env.spawn_points) == 18 and int(env.ore_cells.sum()) == 538
    assert env.num_actions == 8 and env.action_names[MINE] == "mine"
    # every ore cell starts empty (initialState oreWait); spawn points are not ore cells
    _, state = env.reset(KEY)
    assert np.all(np.asarray(state.cells)[env.ore_cells] == EMPTY_ORE)
    assert not env.ore_cells[tuple(env.spawn_points.T)].any()
    p = env.default_params
    assert (float(p.iron_reward), float(p.gold_reward), int(p.gold_window)) == (1.0, 8.0, 3)
    np.testing.assert_allclose([float(p.iron_regrowth), float(p.gold_regrowth)], [0.0002, 0.00008])
    assert int(p.zap_cooldown) == 2 and float(p.end_prob) == pytest.approx(0.2)
    assert env.zap_rays.num_rays == 1 and env.zap_rays.length == 3
    obs, _ = env.reset(KEY)
    assert set(obs) == {"grid", "ready_to_zap"}
    chex.assert_shape(obs["grid"], (6, 11, 11))


# ------------------------------------------------------------------------------- gold
@pytest.mark.parametrize("delay", [0, 1, 2])
def test_gold_pays_both_miners_within_the_window(env, step, still, delay):
    state = place(env, [P0, P1], [E_, W], [(ORE, GOLD)])
    schedule = [(MINE, MINE if delay == 0 else NOOP)] + [(NOOP, NOOP)] * (delay - 1) + ([(NOOP, MINE)] if delay else [])
    states, rewards, infos = play(step, state, schedule, still)
    for t in range(delay):  # partly mined until the second miner comes
        assert int(states[t].cells[ORE]) == GOLD_PARTIAL and int(states[t].miner[ORE]) == 0
        assert rewards[t].tolist() == [0.0, 0.0]
    assert rewards[-1].tolist() == [8.0, 8.0]
    assert infos[-1]["gold_extracted"].tolist() == [1, 1]
    assert int(infos[0]["gold_mined"][0]) == 1
    last = states[-1]
    assert int(last.cells[ORE]) == EMPTY_ORE and int(last.miner[ORE]) == -1 and int(last.window[ORE]) == 0


def test_gold_mined_alone_pays_nothing_and_reverts_after_the_window(env, step, still):
    state = place(env, [P0, P1], [E_, W], [(ORE, GOLD)])
    schedule = [(MINE, NOOP), (NOOP, NOOP), (NOOP, NOOP), (NOOP, MINE)]
    states, rewards, infos = play(step, state, schedule, still)
    assert [int(s.cells[ORE]) for s in states[:3]] == [GOLD_PARTIAL, GOLD_PARTIAL, GOLD]  # window of 3 steps
    assert [int(s.window[ORE]) for s in states[:3]] == [2, 1, 0]
    assert int(states[2].miner[ORE]) == -1  # back to its untouched state
    assert np.sum(rewards) == 0.0 and sum(int(i["gold_extracted"].sum()) for i in infos) == 0
    # the late second player starts a new round as the first miner
    assert int(states[3].cells[ORE]) == GOLD_PARTIAL and int(states[3].miner[ORE]) == 1


def test_a_miner_hitting_its_own_partial_gold_restarts_the_window(env, step, still):
    params = still.replace(zap_cooldown=0)
    state = place(env, [P0, P1], [E_, W], [(ORE, GOLD)])
    schedule = [(MINE, NOOP), (NOOP, NOOP), (MINE, NOOP), (NOOP, NOOP), (NOOP, MINE)]
    states, rewards, infos = play(step, state, schedule, params)
    assert rewards[2].tolist() == [0.0, 0.0]  # mining it again pays nothing
    assert int(states[3].cells[ORE]) == GOLD_PARTIAL  # still waiting: the window restarted at step 2
    assert rewards[4].tolist() == [8.0, 8.0]


def test_the_first_miner_is_paid_after_walking_away(env, step, still):
    state = place(env, [P0, P1], [E_, W], [(ORE, GOLD)])
    schedule = [(MINE, NOOP), (2, MINE)]  # player 0 steps back (west) while player 1 finishes
    states, rewards, _ = play(step, state, schedule, still)
    assert states[1].pos[0].tolist() == [1, 1] and rewards[1].tolist() == [8.0, 8.0]


# ------------------------------------------------------------------------------- iron
def test_iron_pays_its_single_miner(env, step, still):
    state = place(env, [P0, P1], [E_, W], [(ORE, IRON)])
    states, rewards, infos = play(step, state, [(MINE, NOOP)], still)
    assert rewards[0].tolist() == [1.0, 0.0] and infos[0]["iron_extracted"].tolist() == [1, 0]
    assert int(states[0].cells[ORE]) == EMPTY_ORE


def test_two_beams_on_one_iron_ore_pay_one_miner_each_half_the_time(env, step, still):
    """Beams go one at a time in a random order; the second beam passes through the
    emptied cell (and through the player in front) to the next ore."""
    # player 1 stands in front of player 0, both facing east
    pair = place(env, [(1, 2), (1, 3)], [E_, E_], [((1, 4), IRON), ((1, 5), IRON)])
    _, new, reward, _, _ = step(KEY, pair, jnp.array([MINE, MINE]), still)
    assert reward.tolist() == [1.0, 1.0] and int(new.cells[1, 4]) == int(new.cells[1, 5]) == EMPTY_ORE
    single = place(env, [(1, 2), (1, 3)], [E_, E_], [((1, 4), IRON)])
    rewards = np.array([step(k, single, jnp.array([MINE, MINE]), still)[2]
                        for k in jax.random.split(jax.random.key(7), 64)])
    assert np.all(rewards.sum(1) == 1.0)
    assert 18 <= rewards[:, 0].sum() <= 46  # Binomial(64, 1/2): mean 32, sd 4


# ------------------------------------------------------------------------------- beam
@pytest.mark.parametrize(
    "ore, pos, heading, hit",
    [
        ((1, 5), (1, 2), E_, True),  # 3 ahead, over two empty ore cells: in reach
        ((1, 6), (1, 2), E_, False),  # 4 ahead: out of reach
        ((1, 2), (1, 2), E_, False),  # under the player: the beam starts 1 ahead
        ((1, 1), (1, 2), E_, False),  # behind
        ((3, 10), (3, 8), E_, False),  # the wall at (3, 9) stops the beam
    ],
)
def test_mining_beam_reach(env, step, still, ore, pos, heading, hit):
    state = place(env, [pos, (25, 25)], [heading, N], [(ore, GOLD)])
    _, new, _, _, _ = step(KEY, state, jnp.array([MINE, NOOP]), still)
    assert (int(new.cells[ore]) == GOLD_PARTIAL) == hit


def test_mining_cooldown_one_beam_every_three_steps(env, step, still):
    state = place(env, [P0, P1], [E_, W])
    _, rewards, infos = play(step, state, [(MINE, NOOP)] * 9, still)
    assert [int(i["zaps_fired"][0]) for i in infos] == [1, 0, 0] * 3  # MineBeam cooldownTime 3
    obs_ready = []
    for t in range(3):
        obs, state, _, _, _ = step(jax.random.key(t), state, jnp.array([MINE, NOOP]), still)
        obs_ready.append(int(obs["ready_to_zap"][0]))
    assert obs_ready == [0, 0, 1]


# --------------------------------------------------------------------------- regrowth
def test_regrowth_rates_match_the_config_over_many_draws():
    """FixedRateRegrow liveRates: 0.0002 iron, 0.00008 gold per empty ore cell per step."""
    env = CoopMining()
    params = env.default_params
    cells = jnp.asarray(env.map.cells)
    ore = jnp.asarray(env.ore_cells)
    far = jnp.zeros((6, 2), jnp.int32)  # (0, 0) is a wall: nobody on an ore cell
    draws = 4000
    grown = jax.jit(jax.vmap(lambda k: regrow_ore(k, cells, ore, far, params)))(jax.random.split(KEY, draws))
    n = draws * int(env.ore_cells.sum())  # 2.15 million cell-steps
    for code, p in ((IRON, 0.0002), (GOLD, 0.00008)):
        count = int((grown == code).sum())
        z = (count - n * p) / np.sqrt(n * p * (1 - p))
        assert abs(z) < 4, (code, count, n * p)


def test_regrowth_only_on_empty_ore_cells_without_a_player(env, step):
    params = env.default_params.replace(iron_regrowth=1.0, gold_regrowth=0.0)
    state = place(env, [P0, P1], [E_, W], [(ORE, GOLD)])
    _, new, _, _, _ = step(KEY, state, jnp.array([NOOP, NOOP]), params)
    cells = np.asarray(new.cells)
    grew = env.ore_cells.copy()
    grew[P0] = grew[P1] = False
    grew[ORE] = False
    assert np.all(cells[grew] == IRON)
    assert cells[P0] == cells[P1] == EMPTY_ORE and cells[ORE] == GOLD
    assert np.all(cells[~env.ore_cells] == np.asarray(env.map.cells)[~env.ore_cells])  # walls, spawn points
    half = env.default_params.replace(iron_regrowth=0.5, gold_regrowth=0.5)
    _, new, _, _, _ = step(KEY, state, jnp.array([NOOP, NOOP]), half)
    kinds = np.asarray(new.cells)[grew]
    assert set(kinds.tolist()) == {IRON, GOLD} and 200 < (kinds == IRON).sum() < 335  # 535 cells, half each


# -------------------------------------------------------------------- random play, bots
STEPS, ENVS = 500, 16
RANDOM, GOLD_BOT, IRON_BOT = 0, 1, 2


@pytest.fixture(scope="module")
def env6():
    return sj.make("coop_mining", episode="fixed", episode_length=STEPS)


@pytest.fixture(scope="module")
def rollout(env6):
    """One compiled ``(key, params, policy (N,)) -> per-step summaries (T, B, ...)``:
    ENVS episodes of STEPS steps; ``policy`` picks random, gold_miner or iron_miner per
    seat. The invariants are evaluated inside the scan."""
    env = env6
    gold_bot = make_scripted("gold_miner", env).act
    iron_bot = make_scripted("iron_miner", env).act
    ore = jnp.asarray(env.ore_cells)
    ore_codes = (IRON, GOLD, GOLD_PARTIAL)

    def one(key, params, policy):
        obs, state = env.reset(key, params)

        def body(carry, k):
            obs, state = carry
            k_rand, k_gold, k_iron, k_step = jax.random.split(k, 4)
            rand = jax.random.randint(k_rand, (env.num_agents,), 0, 8)
            slot = jnp.zeros(env.num_agents)
            actions = jnp.where(policy == GOLD_BOT, gold_bot(k_gold, slot, obs),
                                jnp.where(policy == IRON_BOT, iron_bot(k_iron, slot, obs), rand))
            obs2, new, reward, done, info = env.step(k_step, state, actions, params)
            before, after = state.cells, new.cells
            occupied = jnp.zeros(after.shape, bool).at[new.pos[:, 0], new.pos[:, 1]].set(True)
            grown_iron = ((before == EMPTY_ORE) & ore & (after == IRON)).sum()
            grown_gold = ((before == EMPTY_ORE) & ore & (after == GOLD)).sum()
            # eligible cells this step: still empty and free at the end, or grown
            eligible = (ore & (after == EMPTY_ORE) & ~occupied).sum() + grown_iron + grown_gold
            partial = after == GOLD_PARTIAL
            is_ore = (after == IRON) | (after == GOLD) | partial
            cells_ok = (
                jnp.all(~is_ore | ore)
                & jnp.all(partial == (new.miner >= 0))
                & jnp.all(partial == (new.window > 0))
                & jnp.all(new.window < params.gold_window)
            )
            pos = new.pos
            distinct = jnp.all(jnp.sum(jnp.all(pos[:, None] == pos[None, :], -1), 1) == 1)
            out = dict(
                reward=reward, iron=info["iron_extracted"], gold=info["gold_extracted"],
                gold_mined=info["gold_mined"], fired=info["zaps_fired"], distinct=distinct, cells_ok=cells_ok,
                grown_iron=grown_iron, grown_gold=grown_gold, eligible=eligible,
                ore_now=jnp.stack([(after == c).sum() for c in ore_codes]), done=done,
            )
            return (obs2, new), out

        return jax.lax.scan(body, (obs, state), jax.random.split(jax.random.fold_in(key, 1), STEPS))[1]

    return jax.jit(jax.vmap(one, in_axes=(0, None, None)))


@pytest.fixture(scope="module")
def random_default(env6, rollout):
    return jax.device_get(rollout(jax.random.split(KEY, ENVS), env6.default_params, jnp.zeros(6, jnp.int32)))


@pytest.fixture(scope="module")
def rich(env6):
    """More ore (25x the config's iron rate, 62.5x its gold rate) so that play mines often."""
    return env6.default_params.replace(iron_regrowth=0.005, gold_regrowth=0.005)


@pytest.fixture(scope="module")
def random_rich(env6, rollout, rich):
    return jax.device_get(rollout(jax.random.split(jax.random.key(1), ENVS), rich, jnp.zeros(6, jnp.int32)))


def check_invariants(out, params):
    assert out["distinct"].all()  # no two players on one cell
    assert out["cells_ok"].all()  # ore only on ore cells; partial gold <=> a miner and a running window
    for key in ("iron", "gold", "gold_mined", "fired"):
        assert out[key].min() >= 0
    # rewards balance against the mining events, step by step
    expected = float(params.iron_reward) * out["iron"] + float(params.gold_reward) * out["gold"]
    np.testing.assert_allclose(out["reward"], expected)
    assert np.all(out["gold"].sum(-1) % 2 == 0)  # every gold ore pays two players
    # a player fires at most once in any three consecutive steps (cooldown)
    fired = out["fired"]
    assert np.all(fired[:, :-2] + fired[:, 1:-1] + fired[:, 2:] <= 1)
    assert out["done"][:, -1].all() and not out["done"][:, :-1].any()


def test_random_play_invariants(random_rich, rich):
    check_invariants(random_rich, rich)
    assert random_rich["iron"].sum() > 100  # the test saw many events


def test_random_play_regrowth_matches_the_config(random_default, env6):
    """Ore appearing under random play against p x (empty ore cells without a player):
    the appearances over ENVS x STEPS steps, with the config's rates."""
    out = random_default
    eligible = out["eligible"].sum()
    for key, p in (("grown_iron", 0.0002), ("grown_gold", 0.00008)):
        count = out[key].sum()
        z = (count - eligible * p) / np.sqrt(eligible * p)
        assert abs(z) < 4, (key, count, eligible * p)
    per_episode_iron = out["grown_iron"].sum(1)  # at most 538 x 0.0002 x 500 = 54 (fewer: occupied, full cells)
    # measured: 819 iron (expected 803.3 from the eligible cells), 324 gold (321.3); 51.2 iron per
    # episode (sd 6.2); random players extracted 16.0 iron and no gold per 500-step episode
    assert 40 < per_episode_iron.mean() < 54.5


def test_determinism(env6, rollout, rich, random_rich):
    again = jax.device_get(rollout(jax.random.split(jax.random.key(1), ENVS), rich, jnp.zeros(6, jnp.int32)))
    for key in random_rich:
        np.testing.assert_array_equal(again[key], random_rich[key])


def test_scripted_miners(env6, rollout, rich, random_rich):
    assert {"iron_miner", "gold_miner"} <= set(scripted_names(env6))
    assert "iron_miner" not in scripted_names(sj.make("gathering"))
    policy = jnp.array([GOLD_BOT, GOLD_BOT, GOLD_BOT, IRON_BOT, IRON_BOT, IRON_BOT])
    out = jax.device_get(rollout(jax.random.split(jax.random.key(2), ENVS), rich, policy))
    gold, iron = out["gold"].sum((0, 1)), out["iron"].sum((0, 1))
    random_iron = random_rich["iron"].sum((0, 1))
    # measured: gold miners 73, 79, 102 gold and 22-25 iron; iron miners 619-655 iron and 3-11 gold;
    # random players (random_rich) 200-252 iron and 0-1 gold each
    # iron miners extract more iron than random players, and almost no gold
    assert iron[3:].min() > 1.5 * random_iron.max() and gold[3:].sum() <= 0.2 * gold[:3].sum()
    assert gold[:3].min() > 20  # the gold miners extract gold together (random players: almost never)
    check_invariants(out, rich)  # the invariants again, now with many gold events


def test_scripted_miner_decisions(env):
    """The bots' moves on hand-made windows (the bot sits on row 9, column 5, facing up)."""
    iron_bot = jax.jit(make_scripted("iron_miner", env).act)
    gold_bot = jax.jit(make_scripted("gold_miner", env).act)
    STEP_LEFT, STEP_RIGHT, TURN_LEFT, TURN_RIGHT = 3, 4, 5, 6

    def window(*ores):
        grid = np.zeros((11, 11), np.uint8)
        for (r, c), code in ores:
            grid[r, c] = code
        return {"grid": jnp.asarray(grid)[None], "ready_to_zap": jnp.ones(1, jnp.uint8)}

    def decide(bot, obs):  # the most common choice over keys (10% of steps explore)
        acts = [int(bot(k, jnp.zeros(1), obs)[0]) for k in jax.random.split(KEY, 20)]
        return max(set(acts), key=acts.count)

    assert decide(iron_bot, window(((7, 5), IRON))) == MINE  # 2 ahead
    assert decide(iron_bot, window(((5, 5), IRON))) == FORWARD  # 4 ahead: out of reach
    assert decide(iron_bot, window(((6, 7), IRON))) == STEP_RIGHT
    assert decide(iron_bot, window(((6, 2), IRON))) == STEP_LEFT
    assert decide(iron_bot, window(((9, 8), IRON))) == TURN_RIGHT
    assert decide(iron_bot, window(((9, 1), IRON))) == TURN_LEFT
    assert decide(iron_bot, window(((7, 5), GOLD))) != MINE  # iron miners ignore gold
    # gold miners ignore iron, and prefer gold someone has started
    assert decide(gold_bot, window(((7, 5), IRON), ((6, 7), GOLD))) == STEP_RIGHT
    assert decide(gold_bot, window(((7, 5), GOLD), ((5, 2), GOLD_PARTIAL))) == STEP_LEFT


# --------------------------------------------------------------------------- bad input
def test_bad_input():
    with pytest.raises(ValueError, match="spawn points"):
        sj.make("coop_mining", num_agents=19)
    with pytest.raises(ValueError, match="episode"):
        sj.make("coop_mining", episode="short")
    env = sj.make("coop_mining")
    with pytest.raises(ValueError, match="iron_regrowth \\+ gold_regrowth"):
        env.with_params(iron_regrowth=0.7, gold_regrowth=0.5)
    with pytest.raises(ValueError, match="gold_regrowth"):
        env.with_params(gold_regrowth=1.5)
    with pytest.raises(ValueError, match="whole number"):
        env.with_params(gold_window=2.5)
    for name in ("respawn_delay", "zap_penalty"):
        with pytest.raises(ValueError, match="has no effect"):
            env.with_params(**{name: 7})
    with pytest.raises(TypeError):
        env.step(KEY, env.reset(KEY)[1], jnp.zeros(6, jnp.int32), sj.make("gathering").default_params)
    assert isinstance(env.default_params, CoopMiningParams)
