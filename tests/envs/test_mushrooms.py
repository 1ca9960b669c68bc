"""Externality Mushrooms (Melting Pot 2.0 ``externality_mushrooms__dense``): each kind's
payoff to the eater and to the others, the digestion freeze, spores (each kind's
regrowth against the config's probabilities over many draws, orange destroying red, no
growth under players), perishing, the zap (destroying mushrooms, graduated sanctions:
freeze, removal, recovery), the scripted bots, invariants of random play, a statistical
check of spores under random play, determinism, and bad input. Hand-made states go
through the public, jitted ``env.step``; one compiled rollout serves the random-play
tests."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from support import play

import socialjax as sj
from socialjax.agents.bots import make_bot
from socialjax.agents.scripted import make_scripted, scripted_names
from socialjax.envs.grid import constants as C
from socialjax.envs.mushrooms import (
    BLUE,
    EMPTY,
    GREEN,
    KINDS,
    ORANGE,
    RED,
    SPORES,
    Mushrooms,
    MushroomsParams,
    kind_index,
    release_spores,
)

N_, E_, S_, W_ = C.NORTH, C.EAST, C.SOUTH, C.WEST
NOOP, FORWARD, TURN_LEFT, ZAP = 0, 1, 5, 7
KEY = jax.random.key(0)
# row 2 of the map is empty from column 1 to 21; player 0 at (2, 5) faces east
P0, P1, P2 = (2, 5), (5, 10), (8, 15)
AHEAD = (2, 6)


@pytest.fixture(scope="module")
def env():
    return sj.make("mushrooms", num_agents=3, episode="fixed", episode_length=200)


@pytest.fixture(scope="module")
def step(env):
    return jax.jit(env.step)


@pytest.fixture(scope="module")
def still(env):
    """No spores, so nothing appears by chance."""
    return env.default_params.replace(regrow_red=0.0, regrow_green=0.0, regrow_blue=0.0, regrow_orange=0.0)


def place(env, pos=(P0, P1, P2), heading=(E_, N_, N_), mushrooms=()):
    """A fresh state without mushrooms but ``mushrooms`` ((r, c), code), players at ``pos``."""
    _, state = jax.jit(env.reset)(KEY)
    cells = jnp.where(kind_index(state.cells) >= 0, jnp.uint8(EMPTY), state.cells)
    for (r, c), code in mushrooms:
        cells = cells.at[r, c].set(code)
    return state.replace(pos=jnp.asarray(pos, jnp.int32), heading=jnp.asarray(heading, jnp.int32), cells=cells)


# ------------------------------------------------------------------------- the config
def test_map_players_and_defaults():
    env = sj.make("mushrooms")
    assert env.map.shape == (14, 23) and env.num_agents == 5 and env.view == (9, 1, 5)
    assert len(env.spawn_points) == 221 and int(env.potential_cells.sum()) == 231
    assert env.num_actions == 8 and env.action_names[ZAP] == "zap"
    _, state = env.reset(KEY)
    counts = [int((state.cells == k).sum()) for k in KINDS]
    assert counts == [3, 3, 3, 1]  # R, G, B, O of the config's ASCII_MAP
    p = env.default_params
    assert [float(p.reward_red), float(p.reward_green), float(p.reward_blue), float(p.reward_orange)] == [1, 2, 3, -1]
    assert [int(p.digest_red), int(p.digest_green), int(p.digest_blue), int(p.digest_orange)] == [0, 10, 15, 15]
    assert [int(p.perish_red), int(p.perish_green), int(p.perish_blue)] == [200, 100, 75]
    np.testing.assert_allclose([p.regrow_red, p.regrow_green, p.regrow_blue, p.regrow_orange], [0.25, 0.4, 0.6, 1.0])
    assert SPORES == (3, 3, 3, 1) and float(p.orange_destroy) == 0.25
    assert (int(p.zap_cooldown), int(p.zap_freeze), int(p.recovery), int(p.respawn_delay)) == (3, 25, 50, 51)
    assert float(p.end_prob) == pytest.approx(0.2)
    obs, _ = env.reset(KEY)
    assert set(obs) == {"grid", "ready_to_zap"}
    chex.assert_shape(obs["grid"], (5, 11, 11))


# ---------------------------------------------------------------------------- payoffs
@pytest.mark.parametrize(
    "code, expected",
    [(RED, [1.0, 0.0, 0.0]), (GREEN, [2 / 3] * 3), (BLUE, [0.0, 1.5, 1.5]), (ORANGE, [-1 / 3] * 3)],
)
def test_each_kind_pays_the_eater_and_the_others(env, step, still, code, expected):
    state = place(env, mushrooms=[(AHEAD, code)])
    states, rewards, infos = play(step, state, [(FORWARD, NOOP, NOOP)], still)
    np.testing.assert_allclose(rewards[0], expected, rtol=1e-6)
    assert states[0].pos[0].tolist() == list(AHEAD) and int(states[0].cells[AHEAD]) == EMPTY
    name = {RED: "red", GREEN: "green", BLUE: "blue", ORANGE: "orange"}[code]
    assert infos[0][f"{name}_eaten"].tolist() == [1, 0, 0] and infos[0]["apples_eaten"].tolist() == [1, 0, 0]


def test_shares_scale_with_the_player_count():
    env5 = sj.make("mushrooms", episode="fixed", episode_length=20)
    params = env5.default_params
    pos = [P0, P1, P2, (11, 2), (11, 20)]
    state = place(env5, pos, (E_, N_, N_, N_, N_), [(AHEAD, BLUE)])
    _, _, reward, _, _ = jax.jit(env5.step)(KEY, state, jnp.asarray([FORWARD, 0, 0, 0, 0]), params)
    np.testing.assert_allclose(reward, [0.0, 0.75, 0.75, 0.75, 0.75])


def test_removed_players_get_no_share(env, step, still):
    """Melting Pot's Avatar skips rewards in the wait state (skipWaitStateRewards); the
    shares still divide by all N players."""
    state = place(env, mushrooms=[(AHEAD, GREEN)]).replace(removed=jnp.asarray([0, 10, 0], jnp.int32))
    _, rewards, _ = play(step, state, [(FORWARD, NOOP, NOOP)], still)
    np.testing.assert_allclose(rewards[0], [2 / 3, 0, 2 / 3], rtol=1e-6)


# -------------------------------------------------------------------------- digestion
@pytest.mark.parametrize("code, digest", [(RED, 0), (GREEN, 10), (BLUE, 15), (ORANGE, 15)])
def test_digestion_ignores_moves_for_digest_minus_one_steps(env, step, still, code, digest):
    """Eaten in step 0 with digestion time T: moves and turns ignored in steps 1 .. T-1
    (Melting Pot's freeze counter counts down before the move), moving in step T."""
    state = place(env, mushrooms=[(AHEAD, code)])
    steps = 16  # column 21 is the last before the east wall
    states, _, infos = play(step, state, [(FORWARD, NOOP, NOOP)] * steps, still)
    cols = [int(s.pos[0, 1]) for s in states]
    frozen_steps = max(digest - 1, 0)
    expected = [6] * (1 + frozen_steps) + list(range(7, 7 + steps - 1 - frozen_steps))
    assert cols == expected
    assert [bool(i["frozen"][0]) for i in infos[: frozen_steps + 1]] == [True] * frozen_steps + [False]


def test_a_digesting_player_cannot_turn_but_can_zap(env, step, still):
    state = place(env, mushrooms=[(AHEAD, GREEN)])
    states, _, infos = play(step, state, [(FORWARD, NOOP, NOOP), (TURN_LEFT, NOOP, NOOP), (ZAP, NOOP, NOOP)], still)
    assert int(states[1].heading[0]) == E_  # the turn was ignored
    assert infos[2]["zaps_fired"].tolist() == [1, 0, 0]


# ----------------------------------------------------------------------------- spores
@pytest.fixture(scope="module")
def releases(env):
    """One compiled ``(keys, cells, eaten code, params) -> cells (draws, H, W)``: spore
    releases after player 0 ate ``eaten``, players at P0, P1, P2."""
    pos = jnp.asarray([P0, P1, P2], jnp.int32)

    def one(k, base, eaten, params):
        potential = jnp.asarray(env.potential_cells) & (kind_index(base) < 0)
        kind = jnp.asarray([0, -1, -1], jnp.int32).at[0].set(kind_index(eaten))
        age = jnp.zeros(base.shape, jnp.int32)
        return release_spores(k, base, age, potential, pos, kind, jnp.arange(3), params)[0]

    return jax.jit(jax.vmap(one, in_axes=(0, None, None, None)))


def empty_cells(env):
    _, state = env.reset(KEY)
    return jnp.where(kind_index(state.cells) >= 0, jnp.uint8(EMPTY), state.cells)


def spore_draws(env, releases, eaten_code, draws, cells=None, params=None):
    """``draws`` independent spore releases after player 0 ate ``eaten_code`` on an empty
    map (``cells``: another map); returns the cells (draws, H, W) and the potential cells."""
    base = empty_cells(env) if cells is None else cells
    params = env.default_params if params is None else params
    out = releases(jax.random.split(KEY, draws), base, jnp.uint8(eaten_code), params)
    return jax.device_get(out), np.asarray(env.potential_cells) & (np.asarray(kind_index(base)) < 0)


@pytest.mark.parametrize("eaten", [RED, GREEN, BLUE, ORANGE])
def test_spores_match_the_config_over_many_draws(env, releases, eaten):
    """Mushrooms grown per release, by kind, against spores x p x (1 - 3 / 231): a spore
    landing under one of the 3 players grows nothing; the 231 cells are all potential."""
    draws = 4000
    cells, potential = spore_draws(env, releases, eaten, draws)
    free = 1 - 3 / potential.sum()
    table = {RED: {RED: 0.25}, GREEN: {RED: 0.25, GREEN: 0.4}, BLUE: {RED: 0.25, GREEN: 0.4, BLUE: 0.6},
             ORANGE: {ORANGE: 1.0}}[eaten]
    spores = SPORES[KINDS.index(eaten)]
    for code in KINDS:
        grown = (cells == code).sum((1, 2))
        p = table.get(code, 0.0) * free
        if p == 0:
            assert grown.sum() == 0
            continue
        sd = np.sqrt(draws * spores * p * (1 - p))
        z = (grown.sum() - draws * spores * p) / max(sd, 1e-9)
        assert abs(z) < 4 or (p > 0.98 and grown.mean() > 0.98), (eaten, code, grown.mean(), spores * p)
        assert grown.max() <= spores
    # never on a wall, never under a player
    grown_any = kind_index(cells) >= 0
    assert not grown_any[:, ~potential].any()
    for r, c in (P0, P1, P2):
        assert not grown_any[:, r, c].any()


def test_orange_destroys_each_red_with_the_config_probability(env, releases):
    base = empty_cells(env)
    base = base.at[10:13, 1:22].set(jnp.where(base[10:13, 1:22] == EMPTY, jnp.uint8(RED), base[10:13, 1:22]))
    reds = int((base == RED).sum())
    draws = 400
    cells, _ = spore_draws(env, releases, ORANGE, draws, cells=base)
    kept = (cells == RED).sum((1, 2))
    frac = 1 - kept.mean() / reds
    sd = np.sqrt(0.25 * 0.75 / (reds * draws))
    assert abs(frac - 0.25) < 4 * sd, frac
    # red after eating anything else survives
    cells, _ = spore_draws(env, releases, BLUE, 50, cells=base)
    assert ((cells == RED).sum((1, 2)) >= reds).all()


def test_no_spores_below_min_potential(env, releases):
    params = env.default_params.replace(min_potential=10_000)
    cells, _ = spore_draws(env, releases, BLUE, 50, params=params)
    assert (kind_index(cells) < 0).all()


def test_spores_in_a_step_do_not_grow_on_the_eaten_cell(env, step):
    state = place(env, mushrooms=[(AHEAD, BLUE)])
    states, _, _ = play(step, state, [(FORWARD, NOOP, NOOP)], env.default_params)
    assert int(states[0].cells[AHEAD]) == EMPTY
    grown = int((kind_index(states[0].cells) >= 0).sum())
    assert 0 <= grown <= 9 and (np.asarray(states[0].age)[np.asarray(kind_index(states[0].cells)) >= 0] == 0).all()


# -------------------------------------------------------------------------- perishing
@pytest.mark.parametrize("code, name", [(RED, "perish_red"), (GREEN, "perish_green"), (BLUE, "perish_blue")])
def test_a_mushroom_perishes_after_its_delay(env, step, still, code, name):
    params = still.replace(**{name: 4})
    state = place(env, mushrooms=[((6, 6), code), ((6, 8), ORANGE)])
    states, _, _ = play(step, state, [(NOOP, NOOP, NOOP)] * 5, params)
    assert [int(s.cells[6, 6]) for s in states] == [code] * 3 + [EMPTY] * 2  # gone after step 4
    assert all(int(s.cells[6, 8]) == ORANGE for s in states)  # orange lasts (1e7 steps)


# -------------------------------------------------------------------------------- zap
def test_the_beam_destroys_mushrooms_and_stops_at_a_player(env, step, still):
    shrooms = [((2, 6), RED), ((2, 7), GREEN), ((2, 8), BLUE), ((3, 5), RED), ((3, 7), ORANGE), ((2, 9), RED)]
    state = place(env, mushrooms=shrooms)
    states, rewards, infos = play(step, state, [(ZAP, NOOP, NOOP)], still)
    cells = np.asarray(states[0].cells)
    assert [int(cells[rc]) for rc, _ in shrooms] == [EMPTY] * 5 + [RED]  # (2, 9) is out of reach
    assert infos[0]["mushrooms_destroyed"].tolist() == [5, 0, 0] and rewards[0].tolist() == [0, 0, 0]
    # a player on the centre ray stops it: the mushroom behind survives
    state = place(env, (P0, (2, 7), P2), (E_, N_, N_), [((2, 6), RED), ((2, 8), RED)])
    states, _, infos = play(step, state, [(ZAP, NOOP, NOOP)], still)
    assert int(states[0].cells[2, 6]) == EMPTY and int(states[0].cells[2, 8]) == RED
    assert infos[0]["times_zapped"].tolist() == [0, 1, 0]


def test_first_hit_freezes_second_removes(env, step, still):
    state = place(env, (P0, (2, 7), P2), (E_, E_, N_))
    # player 1 tries to walk and zap every step after the hit at step 0
    schedule = [(ZAP, NOOP, NOOP)] + [(NOOP, FORWARD, NOOP)] * 30
    states, _, infos = play(step, state, schedule, still)
    assert int(states[0].level[1]) == 2 and not infos[0]["removed"][1]
    cols = [int(s.pos[1, 1]) for s in states]
    assert cols[:25] == [7] * 25 and cols[25] == 8  # moves again in step 25
    schedule = [(ZAP, NOOP, NOOP)] + [(NOOP, ZAP, NOOP)] * 30
    _, _, infos = play(step, state, schedule, still)
    fired = [int(i["zaps_fired"][1]) for i in infos]
    assert fired.index(1) == 29  # zap frozen 25 frames, then the 3-step cooldown
    # a second hit (player 0's next zap, step 4) removes player 1 for 51 steps
    schedule = [(ZAP, NOOP, NOOP), (NOOP,) * 3, (NOOP,) * 3, (NOOP,) * 3, (ZAP, NOOP, NOOP)] + [(NOOP,) * 3] * 52
    states, _, infos = play(step, state, schedule, still)
    removed = [bool(i["removed"][1]) for i in infos]
    assert removed[:4] == [False] * 4 and removed[4:55] == [True] * 51 and not removed[55]
    assert int(states[4].level[1]) == 1 and int(states[4].frozen[1]) == 0


def test_two_hits_in_one_step_remove(env, step, still):
    state = place(env, ((2, 5), (2, 7), (2, 9)), (E_, N_, W_))
    _, _, infos = play(step, state, [(ZAP, NOOP, ZAP)], still)
    assert infos[0]["times_zapped"].tolist() == [0, 2, 0] and infos[0]["removed"].tolist() == [False, True, False]


def test_the_mark_wears_off_after_recovery_steps(env, step, still):
    state = place(env, (P0, (2, 7), P2), (E_, E_, N_))
    states, _, _ = play(step, state, [(ZAP, NOOP, NOOP)] + [(NOOP,) * 3] * 51, still)
    levels = [int(s.level[1]) for s in states]
    # hit in step 0: the hit frame counts (resetToInitialLevel runs after the zap in the
    # same frame), so the mark is gone after step 49 and a zap in step 50 finds level 1
    assert levels[:49] == [2] * 49 and levels[49:] == [1, 1, 1]


# ------------------------------------------------------------------------ random play
ENVS, STEPS, PLAYERS = 16, 200, 5
RANDOM, RED_BOT, GREEN_BOT = 0, 1, 2


@pytest.fixture(scope="module")
def env5():
    return sj.make("mushrooms", episode="fixed", episode_length=STEPS)


@pytest.fixture(scope="module")
def rollout(env5):
    """One compiled ``(keys, params, policy (N,), n_actions) -> per-step summaries (B, T,
    ...)``: ENVS episodes of STEPS steps; random actions in ``[0, n_actions)`` or a
    scripted bot per seat. The invariants are evaluated inside the scan."""
    env = env5
    red_bot = make_scripted("collect_red", env).act
    green_bot = make_scripted("collect_green", env).act
    potential_cells = jnp.asarray(env.potential_cells)
    p_table = jnp.asarray([[0.25, 0, 0, 0], [0.25, 0.4, 0, 0], [0.25, 0.4, 0.6, 0], [0, 0, 0, 1.0]])
    spores = jnp.asarray(SPORES, jnp.float32)

    def one(key, params, policy, n_actions):
        obs, state = env.reset(key, params)

        def body(carry, k):
            obs, state = carry
            k_rand, k_red, k_green, k_step = jax.random.split(k, 4)
            rand = jax.random.randint(k_rand, (env.num_agents,), 0, n_actions)
            slot = jnp.zeros(env.num_agents)
            actions = jnp.where(policy == RED_BOT, red_bot(k_red, slot, obs),
                                jnp.where(policy == GREEN_BOT, green_bot(k_green, slot, obs), rand))
            obs2, new, reward, done, info = env.step(k_step, state, actions, params)
            kinds = kind_index(new.cells)
            pos = new.pos
            here = new.removed == 0  # removed players keep their last position, off the map
            same = jnp.all(pos[:, None] == pos[None, :], -1) & here[:, None] & here[None, :]
            distinct = jnp.all(same.sum(1) <= 1)
            frozen_before = (state.frozen > 0) & (state.removed == 0) & (new.removed == 0)
            still_ok = jnp.all(~frozen_before | (jnp.all(new.pos == state.pos, -1) & (new.heading == state.heading)))
            still_ok = still_ok | done  # the step that ends the episode returns the next reset state
            # spores: the potential cells at the start of the step, free of players after it
            potential = potential_cells & (kind_index(state.cells) < 0)
            rows = jnp.where(state.removed == 0, pos[:, 0], potential.shape[0])  # players on the map
            occupied = jnp.zeros(potential.shape, bool).at[rows, pos[:, 1]].set(True, mode="drop")
            free = (potential & ~occupied).sum() / jnp.maximum(potential.sum(), 1)
            eaten = jnp.stack([info[f"{k}_eaten"] for k in ("red", "green", "blue", "orange")], -1)  # (N, 4)
            expected_births = (eaten.sum(0) * spores) @ p_table * free  # (4,)
            births = jnp.stack([((kinds == j) & (new.age == 0)).sum() for j in range(4)]) * ~done
            out = dict(
                reward=reward, eaten=eaten, on_map=state.removed == 0, destroyed=info["mushrooms_destroyed"],
                fired=info["zaps_fired"],
                distinct=distinct, still_ok=still_ok, births=births, expected_births=expected_births,
                nonneg=(new.age.min() >= 0) & (new.frozen.min() >= 0) & (new.removed.min() >= 0)
                & (new.zap_cooldown.min() >= 0) & (new.since_hit.min() >= 0),
                on_potential=jnp.all((kinds < 0) | potential_cells),
                levels_ok=jnp.all((new.level == 1) | (new.level == 2)),
                counts=jnp.stack([(kinds == j).sum() for j in range(4)]), done=done,
            )
            return (obs2, new), out

        return jax.lax.scan(body, (obs, state), jax.random.split(jax.random.fold_in(key, 1), STEPS))[1]

    return jax.jit(jax.vmap(one, in_axes=(0, None, None, None)))


@pytest.fixture(scope="module")
def random_play(env5, rollout):
    return jax.device_get(rollout(jax.random.split(KEY, ENVS), env5.default_params, jnp.zeros(5, jnp.int32), 8))


def check_invariants(out, params):
    assert out["distinct"].all()  # no two players on one cell
    assert out["still_ok"].all()  # frozen players neither move nor turn
    assert out["nonneg"].all() and out["levels_ok"].all() and out["on_potential"].all()
    assert out["counts"].min() >= 0 and out["eaten"].min() >= 0 and out["destroyed"].min() >= 0
    # rewards balance against the eating events, player by player
    e = out["eaten"].astype(np.float64)  # (B, T, N, 4)
    tot = e.sum(2, keepdims=True)
    n = e.shape[2]
    expected = (float(params.reward_red) * e[..., 0] + float(params.reward_green) * tot[..., 1] / n
                + float(params.reward_orange) * tot[..., 3] / n
                + float(params.reward_blue) * (tot[..., 2] - e[..., 2]) / (n - 1))
    np.testing.assert_allclose(out["reward"], expected * out["on_map"], rtol=1e-5, atol=1e-5)
    assert out["done"][:, -1].all() and not out["done"][:, :-1].any()


def test_random_play_invariants(random_play, env5):
    check_invariants(random_play, env5.default_params)
    # measured: 40 mushrooms eaten (13 red, 13 green, 11 blue, 3 orange), 1194 zaps, 111 mushrooms
    # destroyed by beams in 16 x 200 steps; test_scripted_bots checks the invariants with more eating
    assert random_play["eaten"].sum() > 20 and random_play["fired"].sum() > 1000  # the test saw many events
    assert random_play["destroyed"].sum() > 0


def test_play_spores_match_the_config(env5, rollout):
    """Mushrooms born in play against the rule: per step, spores x p for every mushroom
    eaten, times the share of potential cells free of players. Two red and two green
    collectors and one random player without the zap action (a beam may destroy a
    newborn), so that many mushrooms are eaten."""
    policy = jnp.array([RED_BOT, RED_BOT, GREEN_BOT, GREEN_BOT, RANDOM])
    out = jax.device_get(rollout(jax.random.split(jax.random.key(3), ENVS), env5.default_params, policy, 7))
    births, expected = out["births"].sum((0, 1)), out["expected_births"][:, :-1].sum((0, 1))
    # measured: 718 red, 398 green, 16 blue, 7 orange born against 729.7, 402.2, 12.4, 6.9
    # expected (654 red, 334 green, 7 blue, 7 orange eaten in 16 x 200 steps)
    for j in range(4):
        if expected[j] > 0:
            assert abs(births[j] - expected[j]) < 4 * np.sqrt(expected[j]) + 0.02 * expected[j], (j, births, expected)
        else:
            assert births[j] == 0
    assert births.sum() > 200


def test_determinism(env5, rollout, random_play):
    again = jax.device_get(rollout(jax.random.split(KEY, ENVS), env5.default_params, jnp.zeros(5, jnp.int32), 8))
    for key in random_play:
        np.testing.assert_array_equal(again[key], random_play[key])


# ---------------------------------------------------------------------- scripted bots
def test_scripted_bots(env5, rollout, random_play):
    assert {"collect_red", "collect_green"} <= set(scripted_names(env5))
    assert "collect_red" not in scripted_names(sj.make("gathering"))
    policy = jnp.array([RED_BOT, RED_BOT, GREEN_BOT, GREEN_BOT, RANDOM])
    out = jax.device_get(rollout(jax.random.split(jax.random.key(2), ENVS), env5.default_params, policy, 8))
    eaten = out["eaten"].sum((0, 1))  # (N, 4)
    rand = random_play["eaten"].sum((0, 1))
    # measured (16 x 200 steps): red collectors 254, 255 red and nothing else; green collectors
    # 134, 122 green and nothing else; random players 1-7 of each kind
    assert eaten[:2, 0].min() > 2 * rand[:, 0].max()  # red collectors eat more red than random players
    assert eaten[2:4, 1].min() > 2 * rand[:, 1].max()  # green collectors more green
    assert eaten[:2, 1:].sum() < eaten[:2, 0].sum() and eaten[2:4, [0, 2, 3]].sum() < eaten[2:4, 1].sum()
    check_invariants(out, env5.default_params)


def test_scripted_bot_decisions(env):
    bot = jax.jit(make_scripted("collect_red", env).act)
    STEP_LEFT, STEP_RIGHT = 3, 4

    def window(*cells):
        grid = np.zeros((11, 11), np.uint8)
        grid[9, 5] = C.AGENT_BASE  # the player itself
        for (r, c), code in cells:
            grid[r, c] = code
        return {"grid": jnp.asarray(grid)[None], "ready_to_zap": jnp.ones(1, jnp.uint8)}

    def decide(obs):
        return int(bot(KEY, jnp.zeros(1), obs)[0])

    assert decide(window(((6, 5), RED))) == FORWARD
    assert decide(window(((9, 8), RED))) == STEP_RIGHT
    assert decide(window(((9, 1), RED))) == STEP_LEFT
    # a green mushroom straight ahead is avoided: it steps sideways towards the red one
    assert decide(window(((6, 6), RED), ((8, 5), GREEN))) == STEP_RIGHT
    assert decide({**window(), "grid": jnp.zeros((1, 11, 11), jnp.uint8)}) == NOOP  # removed: no-op


# --------------------------------------------------------------------------- bad input
def test_bad_input():
    with pytest.raises(ValueError, match="map"):
        sj.make("mushrooms", map="default")
    with pytest.raises(ValueError, match="num_agents"):
        sj.make("mushrooms", num_agents=1)
    with pytest.raises(ValueError, match="episode"):
        sj.make("mushrooms", episode="short")
    env = sj.make("mushrooms")
    with pytest.raises(ValueError, match="regrow_blue"):
        env.with_params(regrow_blue=1.5)
    with pytest.raises(ValueError, match="digest_green"):
        env.with_params(digest_green=-1)
    with pytest.raises(ValueError, match="has no effect"):
        env.with_params(zap_penalty=-1.0)
    with pytest.raises(ValueError, match="unknown mushrooms bot"):
        make_bot(env, "collect_blue")
    assert isinstance(env, Mushrooms) and isinstance(env.default_params, MushroomsParams)
