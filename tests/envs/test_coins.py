"""Coins (Melting Pot 2.0 ``coins``; ``variant="lola"``: the LOLA / Pax coin game): the map
and its random size, coin pickup rewards and the cross-colour penalty, regrowth
probability and colour, the episode ending, the LOLA variant's movement, payoffs, coin
respawn and observation, invariants and statistics of random play, the scripted bots,
determinism and bad input. Hand-made states go through the public, jitted ``env.step``."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import socialjax as sj
from socialjax.agents.scripted import make_scripted, scripted_names
from socialjax.envs import coins as CN
from socialjax.envs.grid import constants as C
from socialjax.envs.grid.maps import parse_map
from socialjax.testing import check_env

NOOP, FORWARD, BACKWARD, LEFT, RIGHT, TURN_L, TURN_R = range(7)
RIGHT_L, LEFT_L, UP_L, DOWN_L, STAY_L = range(5)  # LOLA (Pax MOVES)
KEY = jax.random.key(0)


def z(x):
    """Standard error distance: |measured - expected| / se."""
    return abs(x[0] - x[1]) / x[2]


@pytest.fixture(scope="module")
def env():
    """Rule tests: a 10 x 10 interior, Melting Pot's ending, no regrowth unless asked."""
    return sj.make("coins", width=10, height=10, regrow_rate=0.0)


@pytest.fixture(scope="module")
def step(env):
    return jax.jit(env.step)


@pytest.fixture(scope="module")
def lola():
    return sj.make("coins", variant="lola")


@pytest.fixture(scope="module")
def lstep(lola):
    return jax.jit(lola.step)


_RESETS = {}  # one compiled reset per env


def place(env, pos, heading, coins=()):
    """A fresh state with the players at ``pos`` facing ``heading`` and coins
    ``(row, col, code)`` on the map."""
    if env not in _RESETS:
        _RESETS[env] = jax.jit(env.reset)
    _, state = _RESETS[env](KEY)
    cells = state.cells
    for r, c, code in coins:
        cells = cells.at[r, c].set(code)
    return state.replace(pos=jnp.asarray(pos, jnp.int32), heading=jnp.asarray(heading, jnp.int32), cells=cells)


def with_params(env, **changes):
    """``env``'s default params with ``changes``, as the arrays the defaults hold (so a
    jitted step compiled for params is reused)."""
    return env.with_params(**changes).default_params


def act(*actions):
    return jnp.asarray(actions, jnp.int32)


# ------------------------------------------------------------------------------ the map
def test_map_is_melting_pots_layout():
    """coins.py get_ascii_map: walls around a width x height interior of coins, spawn
    points at interior row 1 second column from the right and row height - 2 second
    from the left, padded with empty space to the maximum size."""
    text = CN.ascii_map(12, 10, 15, 15).split("\n")
    assert len(text) == 17 and all(len(r) == 17 for r in text)
    assert text[0] == "W" * 14 + "   " and text[11] == "W" * 14 + "   " and text[12] == " " * 17
    assert text[2][11] == "_" and text[9][2] == "_"  # (2, width - 1), (height - 1, 2)
    assert sum(r.count("C") for r in text) == 12 * 10 - 2
    for h, w in ((10, 10), (15, 15), (10, 15), (13, 11)):
        m = parse_map("m", CN.ascii_map(w, h, 15, 15), CN.LEGEND)
        cells, coin_cells, spawns = jax.jit(CN.coins_layout, static_argnums=2)(h, w, m.shape)
        np.testing.assert_array_equal(cells, m.cells)
        np.testing.assert_array_equal(coin_cells, m.role("coin_cell"))
        assert {tuple(p) for p in np.asarray(spawns).tolist()} == {tuple(p) for p in m.points("spawn").tolist()}


def test_start_state(env):
    """No coins at the start (initialState coinWait); the players stand on the two spawn
    points, each on either; 7 actions; an 11x11 window; ready_to_zap always 0."""
    reset = jax.jit(jax.vmap(env.reset))
    obs, states = reset(jax.random.split(KEY, 64))
    assert env.map.shape == (12, 12) and env.action_space().n == 7
    assert not np.isin(np.asarray(states.cells), CN.COIN_CODES).any()
    assert int(states.coin_cells[0].sum()) == 98
    pos = np.asarray(states.pos)
    firsts = {tuple(p) for p in pos[:, 0].tolist()}
    assert firsts == {(2, 9), (9, 2)}  # both assignments occur
    assert {tuple(p) for p in pos[:, 1].tolist()} == firsts
    chex.assert_shape(obs["grid"], (64, 2, 11, 11))
    assert not np.asarray(obs["ready_to_zap"]).any()


def test_random_size_covers_melting_pots_bounds():
    """random_size draws the interior in [10, 15] x [10, 15] per episode, uniformly; the
    map is padded to 17 x 17 (Melting Pot's 136 x 136 WORLD.RGB)."""
    env = sj.make("coins", random_size=True)
    _, states = jax.jit(jax.vmap(env.reset))(jax.random.split(KEY, 3000))
    cells = np.asarray(states.cells)
    assert cells.shape[1:] == (17, 17)
    interior = (cells != C.WALL) & (cells != C.OUTSIDE)
    heights, widths = interior.any(2).sum(1), interior.any(1).sum(1)
    for sizes in (heights, widths):
        counts = np.bincount(sizes, minlength=16)[10:]
        assert counts.sum() == 3000 and np.all(np.abs(counts - 500) < 4 * np.sqrt(3000 / 6 * 5 / 6))
    assert np.all(interior.sum((1, 2)) == heights * widths)
    chex.assert_shape(env.render(jax.tree.map(lambda x: x[0], states)), (136, 136, 3))


# -------------------------------------------------------------------------- the rewards
@pytest.mark.parametrize(
    "taker, coin, rewards, own, other, lost",
    [
        (0, CN.COIN_0, (1.0, 0.0), (1, 0), (0, 0), (0, 0)),  # own colour: +1, nothing to the other
        (0, CN.COIN_1, (1.0, -2.0), (0, 0), (1, 0), (0, 1)),  # the other's: +1, -2 to its owner
        (1, CN.COIN_1, (0.0, 1.0), (0, 1), (0, 0), (0, 0)),
        (1, CN.COIN_0, (-2.0, 1.0), (0, 0), (0, 1), (1, 0)),
    ],
)
def test_pickup_rewards_and_cross_colour_penalty(env, step, taker, coin, rewards, own, other, lost):
    """Melting Pot Coin:onEnter with the get_prefabs payoffs: the taker gets 1 for any
    coin; taking the other's colour costs the other player 2."""
    pos = [(5, 5), (8, 8)]
    r, c = pos[taker]
    state = place(env, pos, [C.NORTH, C.NORTH], [(r - 1, c, coin)])
    actions = [NOOP, NOOP]
    actions[taker] = FORWARD
    _, new, reward, _, info = step(KEY, state, act(*actions))
    np.testing.assert_array_equal(reward, rewards)
    np.testing.assert_array_equal(info["own_coins_collected"], own)
    np.testing.assert_array_equal(info["other_coins_collected"], other)
    np.testing.assert_array_equal(info["coins_lost"], lost)
    np.testing.assert_array_equal(info["coins_collected"], np.add(own, other))
    assert int(new.cells[r - 1, c]) == C.FLOOR and bool(new.coin_cells[r - 1, c])  # back to its wait state


def test_both_take_the_others_coin(env, step):
    state = place(env, [(5, 5), (5, 7)], [C.NORTH, C.NORTH], [(4, 7, CN.COIN_0), (4, 5, CN.COIN_1)])
    _, _, reward, _, info = step(KEY, state, act(FORWARD, FORWARD))  # 0 takes coin 1, 1 takes coin 0
    np.testing.assert_array_equal(reward, [-1.0, -1.0])
    np.testing.assert_array_equal(info["coins_lost"], [1, 1])


def test_payoffs_are_params(env, step):
    params = with_params(env, reward_self_mismatch=3.0, reward_other_mismatch=-5.0, reward_other_match=0.5)
    state = place(env, [(5, 5), (8, 8)], [C.NORTH, C.NORTH], [(4, 5, CN.COIN_1), (7, 8, CN.COIN_1)])
    _, _, reward, _, _ = step(KEY, state, act(FORWARD, NOOP), params)
    np.testing.assert_array_equal(reward, [3.0, -5.0])
    _, _, reward, _, _ = step(KEY, state, act(NOOP, FORWARD), params)
    np.testing.assert_array_equal(reward, [0.5, 1.0])


def test_coin_under_a_standing_player_waits_for_reentry(env, step):
    """Coins grow under players (superOverlay layer) and are taken only on entering."""
    state = place(env, [(5, 5), (8, 8)], [C.NORTH, C.NORTH], [(5, 5, CN.COIN_1)])
    _, state, reward, _, _ = step(KEY, state, act(NOOP, NOOP))
    assert np.all(np.asarray(reward) == 0) and int(state.cells[5, 5]) == CN.COIN_1
    _, state, reward, _, _ = step(KEY, state, act(FORWARD, NOOP))
    _, state, reward, _, _ = step(KEY, state, act(BACKWARD, NOOP))
    np.testing.assert_array_equal(reward, [1.0, -2.0])
    # with regrow_rate 1 every empty coin cell, also under a player, holds a coin after a step
    full = with_params(env, regrow_rate=1.0)
    _, state, _, _, _ = step(KEY, state, act(NOOP, NOOP), full)
    cells = np.asarray(state.cells)
    assert np.isin(cells[np.asarray(state.coin_cells)], CN.COIN_CODES).all()
    assert not np.isin(cells[~np.asarray(state.coin_cells)], CN.COIN_CODES).any()


# -------------------------------------------------------------------------- regrowth
@pytest.mark.parametrize("rate", [CN.REGROW_RATE, 0.3])
def test_regrowth_probability_and_colour(rate):
    """ChoiceCoinRegrow: each empty coin cell grows with probability regrowRate (0.0005
    in coins.py) per step, either colour with probability 1/2; never off coin cells or
    on a coin."""
    cells = jnp.zeros((100, 100), jnp.uint8).at[0, :].set(CN.COIN_0)
    coin_cells = jnp.ones((100, 100), bool).at[:, 0].set(False)
    draws = 400 if rate < 0.01 else 4
    out = jax.jit(jax.vmap(CN.regrow_coins, (0, None, None, None)))(jax.random.split(KEY, draws), cells, coin_cells,
                                                                    rate)
    out = np.asarray(out)
    assert np.all(out[:, 0, :] == CN.COIN_0) and np.all(out[:, 1:, 0] == C.FLOOR)
    grown = np.isin(out[:, 1:, 1:], CN.COIN_CODES)
    n = grown.size
    assert z((grown.mean(), rate, np.sqrt(rate * (1 - rate) / n))) < 4
    colour0 = (out[:, 1:, 1:] == CN.COIN_0)[grown]
    assert z((colour0.mean(), 0.5, np.sqrt(0.25 / colour0.size))) < 4


# ---------------------------------------------------------------------- episode ending
def test_stochastic_ending_from_the_config(env, step):
    """StochasticIntervalEpisodeEnding 300 / 100 / 0.05, maxEpisodeLengthFrames 5000."""
    p = env.default_params
    assert (int(p.min_steps), int(p.end_interval), float(p.end_prob)) == (300, 100, pytest.approx(0.05))
    assert env.max_steps == 5000
    always = with_params(env, end_prob=1.0)
    for t, ends in ((199, False), (299, True), (349, False), (399, True)):
        state = place(env, [(2, 9), (9, 2)], [0, 0]).replace(t=jnp.int32(t))
        _, _, _, done, info = step(KEY, state, act(NOOP, NOOP), always)
        assert bool(done) == ends and bool(info["terminated"]) == ends
    state = place(env, [(2, 9), (9, 2)], [0, 0]).replace(t=jnp.int32(4999))
    _, _, _, done, info = step(KEY, state, act(NOOP, NOOP), with_params(env, end_prob=0.0))
    assert bool(done) and bool(info["truncated"]) and not bool(info["terminated"])


# ------------------------------------------------------------------ random play (one rollout)
B, T, EPISODE = 64, 299, 300


@pytest.fixture(scope="module")
def rand_env():
    return sj.make("coins", random_size=True, episode="fixed", episode_length=EPISODE)


@pytest.fixture(scope="module")
def rollout(rand_env):
    """``run(key, params)``: B random-play episodes of T steps (random interior sizes),
    with per-step invariant flags and per-episode totals."""
    env = rand_env

    def one(key, params):
        k0, k1 = jax.random.split(key)
        _, state = env.reset(k0, params)
        n_cells = state.coin_cells.sum()

        def body(state, xs):
            k, i = xs
            ka, ks = jax.random.split(k)
            before = jnp.isin(state.cells, jnp.asarray(CN.COIN_CODES)).sum()
            _, new, reward, done, info = env.step(ks, state, env.sample_actions(ka), params)
            here = new.cells[new.pos[:, 0], new.pos[:, 1]]
            coins = jnp.isin(new.cells, jnp.asarray(CN.COIN_CODES))
            flags = jnp.stack([
                jnp.any(new.pos[0] != new.pos[1]),  # never two players on a cell
                jnp.all((here != C.WALL) & (here != C.OUTSIDE)),  # players inside the walls
                ~jnp.any(coins & ~new.coin_cells),  # coins only on coin cells
                coins.sum() + info["coins_collected"].sum() >= before,  # coins vanish only when taken
                jnp.all(info["coins_collected"] >= 0) & jnp.all(info["coins_lost"] >= 0),
                info["coins_lost"].sum() == info["other_coins_collected"].sum(),
            ])
            own, other, lost = info["own_coins_collected"], info["other_coins_collected"], info["coins_lost"]
            balance = params.reward_self_match * own + params.reward_self_mismatch * other \
                + params.reward_other_mismatch * lost + params.reward_other_match * own[::-1]
            # a cell emptied by a take in step i + 1 has T - i regrowth draws left
            regrow = info["coins_collected"].sum() * (1 - (1 - params.regrow_rate) ** (T - i))
            out = (flags, jnp.max(jnp.abs(reward - balance)), reward, own, other, done, regrow)
            return new, out

        last, (flags, err, reward, own, other, done, regrow) = jax.lax.scan(
            body, state, (jax.random.split(k1, T), jnp.arange(T)))
        on_map = jnp.isin(last.cells, jnp.asarray(CN.COIN_CODES)).sum()
        return dict(flags=flags.all(0), err=err.max(), reward=reward.sum(0), own=own.sum(0), other=other.sum(0),
                    done=done.any(), on_map=on_map, n_cells=n_cells, regrow=regrow.sum(), last=last)

    return jax.jit(jax.vmap(one, (0, None)))


@pytest.fixture(scope="module")
def dense(rand_env, rollout):
    """Random play with coins growing fast (regrow_rate 0.02), for the invariants."""
    return rollout(jax.random.split(jax.random.key(1), B), with_params(rand_env, regrow_rate=0.02))


def test_invariants_under_random_play(dense):
    """19,136 random steps: no shared cell, players on walkable cells, coins only on coin
    cells, coins vanish only when taken, counts >= 0, rewards = payoffs x events."""
    assert np.all(np.asarray(dense["flags"])), np.asarray(dense["flags"]).all(0)
    assert float(dense["err"].max()) == 0.0
    assert not np.asarray(dense["done"]).any()  # T < episode length
    own, other = np.asarray(dense["own"]).sum(), np.asarray(dense["other"]).sum()
    assert own + other > 500
    # random players are colour-blind and colours are equally likely: half the takes are the other's
    frac = other / (own + other)
    assert z((frac, 0.5, np.sqrt(0.25 / (own + other)))) < 4


def test_random_play_statistics(rand_env, rollout):
    """Default regrow rate 0.0005: coins grown in the first 299 steps (on the map + taken)
    vs n (1 - (1 - p)^299) for the episode's n coin cells, plus 1 - (1 - p)^k for each
    cell emptied by a take with k regrowth draws left (a coin re-grown and re-taken in
    one episode, order p^2, is left out)."""
    res = rollout(jax.random.split(jax.random.key(2), B), rand_env.default_params)
    n = np.asarray(res["n_cells"], np.float64)
    grown = np.asarray(res["on_map"]) + np.asarray(res["own"]).sum(1) + np.asarray(res["other"]).sum(1)
    q = 1 - (1 - CN.REGROW_RATE) ** T
    expected = n * q + np.asarray(res["regrow"])
    diff = grown - expected
    se = diff.std() / np.sqrt(len(n))
    assert abs(diff.mean()) < 4 * se, (grown.mean(), expected.mean(), se)
    taken = (np.asarray(res["own"]).sum(1) + np.asarray(res["other"]).sum(1)).mean()
    assert 0 < taken < grown.mean()


def test_determinism(rand_env, rollout, dense):
    again = rollout(jax.random.split(jax.random.key(1), B), with_params(rand_env, regrow_rate=0.02))
    for a, b in zip(jax.tree.leaves(dense), jax.tree.leaves(again)):
        np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------------- LOLA
def lola_state(pos, coin_pos, t=0):
    return CN.CoinGameState(pos=jnp.asarray(pos, jnp.int32), coin_pos=jnp.asarray(coin_pos, jnp.int32),
                            collected=jnp.zeros((2, 2), jnp.int32), t=jnp.int32(t))


@pytest.mark.parametrize(
    "pos, rewards",
    [
        ([(0, 0), (2, 2)], (1.0, 0.0)),  # player 0 on its own coin
        ([(1, 1), (2, 2)], (1.0, -2.0)),  # player 0 on player 1's coin
        ([(2, 2), (1, 1)], (0.0, 1.0)),
        ([(2, 2), (0, 0)], (-2.0, 1.0)),
        ([(0, 0), (0, 0)], (-1.0, 1.0)),  # both take coin 0: 0 gets 1 - 2, 1 gets 1
        ([(1, 1), (1, 1)], (1.0, -1.0)),
        ([(1, 1), (0, 0)], (-1.0, -1.0)),  # each takes the other's coin
        ([(2, 2), (2, 1)], (0.0, 0.0)),
    ],
)
def test_lola_payoffs(lstep, pos, rewards):
    """Pax CoinGame with payoff [[1, 1, -2], [1, 1, -2]]; a coin is taken by standing on
    it after the move (staying counts), by both players at once if both are there."""
    state = lola_state(pos, [(0, 0), (1, 1)])
    _, new, reward, _, info = lstep(KEY, state, act(STAY_L, STAY_L))
    np.testing.assert_array_equal(reward, rewards)
    taken = [any(tuple(p) == c for p in pos) for c in ((0, 0), (1, 1))]
    assert np.asarray(info["coins_collected"]).sum() == sum(tuple(p) in ((0, 0), (1, 1)) for p in pos)
    for c, was in enumerate(taken):
        if not was:
            assert tuple(np.asarray(new.coin_pos[c]).tolist()) == ((0, 0), (1, 1))[c]


def test_lola_moves_wrap_and_share(lstep):
    """Pax MOVES (right, left, up = row + 1, down, stay), positions mod 3; players may
    share a cell."""
    state = lola_state([(0, 0), (2, 2)], [(1, 2), (1, 2)])
    for a, b, want in ((LEFT_L, RIGHT_L, [(0, 2), (2, 0)]), (DOWN_L, UP_L, [(2, 0), (0, 2)]),
                       (UP_L, STAY_L, [(1, 0), (2, 2)])):
        _, new, _, _, _ = lstep(KEY, state, act(a, b))
        np.testing.assert_array_equal(new.pos, want)
    _, new, _, _, _ = lstep(KEY, lola_state([(0, 0), (0, 2)], [(1, 1), (1, 1)]), act(RIGHT_L, LEFT_L))
    np.testing.assert_array_equal(new.pos, [(0, 1), (0, 1)])


def test_lola_taken_coin_respawns_uniformly(lola):
    """A taken coin reappears at once on a uniformly random cell (any of the 9)."""
    state = lola_state([(0, 0), (2, 2)], [(0, 0), (1, 1)])
    keys = jax.random.split(KEY, 9000)
    new = jax.jit(jax.vmap(lola.transition, (0, None, None, None)))(keys, state, act(STAY_L, STAY_L),
                                                                    lola.default_params)[0]
    cell = np.asarray(new.coin_pos[:, 0, 0] * 3 + new.coin_pos[:, 0, 1])
    counts = np.bincount(cell, minlength=9)
    assert np.all(np.abs(counts - 1000) < 4 * np.sqrt(9000 / 9 * 8 / 9))
    assert np.all(np.asarray(new.coin_pos[:, 1]) == 1)  # the untaken coin stays


def test_lola_observation():
    """Pax _relative_position: channels [self, other, own coin, other's coin] centred on
    the player (its docstring example: red at (2, 2), red coin at (0, 0) -> (2, 2));
    absolute: player 1 sees itself as channel 0."""
    state = lola_state([(2, 2), (0, 1)], [(0, 0), (2, 0)])
    ego = np.asarray(CN.lola_obs(state.pos, state.coin_pos, True))
    chex.assert_shape(ego, (2, 3, 3, 4))
    assert np.all(ego.sum((1, 2)) == 1)
    assert ego[0, 1, 1, 0] and ego[0, 2, 2, 2] and ego[0, 2, 0, 1] and ego[0, 1, 2, 3]
    assert ego[1, 1, 1, 0] and ego[1, 0, 2, 1] and ego[1, 0, 0, 2] and ego[1, 1, 0, 3]
    absolute = np.asarray(CN.lola_obs(state.pos, state.coin_pos, False))
    assert absolute[0, 2, 2, 0] and absolute[1, 0, 1, 0] and absolute[1, 2, 0, 2] and absolute[1, 0, 0, 3]
    env = sj.make("coins", variant="lola", egocentric=False)
    np.testing.assert_array_equal(env.get_obs(state, env.default_params), absolute.reshape(2, 36))


def test_lola_episode_and_first_step_statistics(lola):
    """Fixed 16-step episodes (Pax cg configs). From the uniform reset, a random step takes
    each (player, coin) pair with probability 1/9, so 4/9 coins per step, and each
    player's expected reward is 1/9 + 1/9 - 2/9 = 0."""
    assert lola.episode_length == 16 and lola.action_space().n == 5 and lola.noop_action == STAY_L

    def first(key):
        k0, k1, k2 = jax.random.split(key, 3)
        _, state = lola.reset(k0)
        _, _, reward, done, info = lola.step(k2, state, lola.sample_actions(k1))
        return reward, info["coins_collected"].sum()

    reward, taken = jax.jit(jax.vmap(first))(jax.random.split(KEY, 40000))
    taken = np.asarray(taken)
    assert z((taken.mean(), 4 / 9, taken.std() / np.sqrt(taken.size))) < 4
    reward = np.asarray(reward)
    for i in range(2):
        assert z((reward[:, i].mean(), 0.0, reward[:, i].std() / np.sqrt(len(reward)))) < 4
    state = lola_state([(0, 0), (2, 2)], [(1, 1), (1, 1)], t=15)
    _, _, _, done, info = jax.jit(lola.step)(KEY, state, act(STAY_L, STAY_L))
    assert bool(done) and bool(info["truncated"]) and not bool(info["terminated"])


def test_lola_contract(lola):
    traj = check_env(lola, key=KEY, num_envs=4, num_steps=40)
    chex.assert_shape(traj.reward, (4, 40, 2))
    assert np.asarray(traj.done).sum() == 4 * 2


# ---------------------------------------------------------------------------- bots
def bot_returns(env, names, steps, episodes=8):
    """Per-player totals of (reward, own, other) over ``episodes`` runs of two bots."""
    bots = [make_scripted(n, env) for n in names]

    def run(key):
        obs, state = env.reset(key)

        def body(carry, k):
            obs, state = carry
            ks = jax.random.split(k, 3)
            acts = jnp.concatenate([bots[i].act(ks[i], jnp.zeros(1), jax.tree.map(lambda x: x[i:i + 1], obs))
                                    for i in range(2)])
            obs, state, r, _, info = env.step(ks[2], state, acts)
            return (obs, state), (r, info["own_coins_collected"], info["other_coins_collected"])

        return jax.tree.map(lambda x: x.sum(0), jax.lax.scan(body, (obs, state), jax.random.split(key, steps))[1])

    return [np.asarray(x).sum(0) for x in jax.jit(jax.vmap(run))(jax.random.split(KEY, episodes))]


@pytest.mark.parametrize("variant", ["meltingpot", "lola"])
def test_scripted_bots(variant):
    """coin_cooperator takes (almost) only its own colour, coin_defector any: against a
    defector the cooperator loses. (Melting Pot's bots are trained; these are scripted.)"""
    opts = dict(width=10, height=10, episode="fixed", episode_length=150, regrow_rate=0.02) \
        if variant == "meltingpot" else {}
    env = sj.make("coins", variant=variant, **opts)
    assert {"coin_cooperator", "coin_defector"} <= set(scripted_names(env))
    steps = 150 if variant == "meltingpot" else 64
    reward, own, other = bot_returns(env, ("coin_cooperator", "coin_defector"), steps)
    assert own[0] > 0 and other[0] <= 0.02 * own[0]  # the cooperator avoids the other's coins
    assert other[1] > 0.2 * (own[1] + other[1])  # the defector takes both colours
    assert reward[1] > reward[0]


# ------------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    "options, match",
    [
        (dict(variant="grid"), "variant must be one of"),
        (dict(num_agents=3), "exactly 2 players"),
        (dict(width=3), r"width must be an int in \[4, 255\]"),
        (dict(height=12, width=9, random_size=True), r"width must be an int in \[10, 255\]"),
        (dict(variant="lola", width=5), "takes only"),
        (dict(variant="lola", num_agents=4), "exactly 2 players"),
        (dict(variant="lola", episode_length=0), "episode_length must be a positive int"),
        (dict(egocentric=False), "variant='lola' only"),
        (dict(regrow_rate=1.5), "regrow_rate"),
        (dict(zap_cooldown=3), "no zap action"),
        (dict(variant="lola", regrow_rate=0.1), "regrow_rate"),
    ],
)
def test_bad_options(options, match):
    with pytest.raises(ValueError, match=match):
        sj.make("coins", **options)
