"""*In the Matrix* games (Melting Pot 2.0): payoffs from inventory mixtures, collection,
the interaction beam, freeze / payoff timing / removal / respawn, regrowth and refill,
invariants under random play, determinism, bad input and a regrowth statistic.
Hand-made states are driven through the public, jitted ``env.step``."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import socialjax as sj
from socialjax.envs import in_the_matrix as M
from socialjax.envs.grid import constants as C

N, E_, S, W = C.NORTH, C.EAST, C.SOUTH, C.WEST
NOOP, FORWARD, INTERACT = 0, 1, 7
KEY = jax.random.key(0)


@pytest.fixture(scope="module")
def env():
    return sj.make("prisoners_dilemma_in_the_matrix", variant="repeated")


@pytest.fixture(scope="module")
def step(env):
    return jax.jit(env.step)


@pytest.fixture(scope="module")
def reset(env):
    return jax.jit(env.reset)


def place(env, reset, pos, heading, inventory=None, ready=None):
    """A fresh state with the agents moved to ``pos`` facing ``heading``."""
    _, state = reset(KEY)
    state = state.replace(pos=jnp.asarray(pos, jnp.int32), heading=jnp.asarray(heading, jnp.int32))
    if inventory is not None:
        state = state.replace(inventory=jnp.asarray(inventory, jnp.float32))
    if ready is not None:
        state = state.replace(ready=jnp.asarray(ready, bool))
    return state


def act(*actions):
    return jnp.asarray(actions, jnp.int32)


# ----------------------------------------------------------------------- configuration
def test_games_and_variants_follow_the_configs():
    for name, game in (("prisoners_dilemma_in_the_matrix", "prisoners_dilemma"),
                       ("stag_hunt_in_the_matrix", "stag_hunt"), ("chicken_in_the_matrix", "chicken")):
        arena, rep = sj.make(name), sj.make(name, variant="repeated")
        assert arena.num_agents == 8 and arena.view == (9, 1, 5) and arena.map.shape == (24, 25)
        assert rep.num_agents == 2 and rep.view == (3, 1, 2) and rep.map.shape == (15, 23)
        assert len(arena.spawn_points) >= 8 and len(rep.spawn_points) == 13
        assert arena.num_actions == 8 and arena.action_names[INTERACT] == "interact"
        for e, rate, delay in ((arena, 0.04, 50), (rep, 0.02, 5)):
            p = e.default_params
            np.testing.assert_allclose(p.row_payoff, M.GAMES[game]["row"])
            np.testing.assert_allclose(p.col_payoff, M.GAMES[game]["col"])
            np.testing.assert_allclose(p.col_payoff, np.asarray(p.row_payoff).T)  # symmetric games
            assert float(p.regen_rate) == pytest.approx(rate) and int(p.respawn_delay) == delay
            assert int(p.freeze_steps) == 16 and int(p.zap_cooldown) == 2 and int(p.resource_health) == 3
        assert not arena.refill_when_all_removed and rep.refill_when_all_removed
    assert float(sj.make("chicken_in_the_matrix").default_params.end_prob) == pytest.approx(0.2)
    assert sj.make("stag_hunt_in_the_matrix", variant="repeated").max_steps == 2500


def test_choice_cells_draw_either_class(env, reset):
    _, states = jax.jit(jax.vmap(env.reset))(jax.random.split(KEY, 64))
    choice = env.map.role("choice")
    cells = np.asarray(states.cells)[:, choice]
    assert set(np.unique(cells).tolist()) == {M.RESOURCE_1, M.RESOURCE_2}
    frac = (cells == M.RESOURCE_1).mean()  # 64 x 12 draws, p = 0.5: sd 0.018
    assert abs(frac - 0.5) < 0.08
    fixed = env.map.role("resource") & ~choice
    np.testing.assert_array_equal(np.asarray(states.cells)[:, fixed], np.broadcast_to(env.map.cells[fixed],
                                                                                    cells.shape[:1] + (24,)))
    assert np.all(np.asarray(states.inventory) == 1.0) and not np.asarray(states.ready).any()


# ---------------------------------------------------------------------------- payoffs
def test_payoff_of_two_known_inventories_by_hand():
    # inventory (3, 1) vs (1, 2): p = (3/4, 1/4), q = (1/3, 2/3)
    row, col = M.GAMES["prisoners_dilemma"]["row"], M.GAMES["prisoners_dilemma"]["col"]
    # row: p @ R = (3/4*3 + 1/4*5, 1/4*1) = (3.5, 0.25); . q = 3.5/3 + 0.25*2/3 = 4/3
    # col: p @ C = (3/4*3, 3/4*5 + 1/4*1) = (2.25, 4.0); . q = 0.75 + 8/3 = 41/12
    r_row, r_col = M.interaction_payoffs(jnp.array([3.0, 1.0]), jnp.array([1.0, 2.0]), jnp.array(row),
                                         jnp.array(col))
    assert float(r_row) == pytest.approx(4 / 3) and float(r_col) == pytest.approx(41 / 12)
    # pure strategies give the matrix entries
    for i in range(2):
        for j in range(2):
            a, b = M.interaction_payoffs(jnp.eye(2)[i] * 5, jnp.eye(2)[j] * 2, jnp.array(row), jnp.array(col))
            assert float(a) == row[i][j] and float(b) == col[i][j]


def test_interaction_freeze_payoff_timing_removal_and_respawn(env, step, reset):
    params = env.default_params
    F, D = int(params.freeze_steps), int(params.respawn_delay)
    # agent 0 at (6, 5) faces east at agent 1 on (6, 7); both ready, inventories (3, 1) and (1, 2)
    state = place(env, reset, [[6, 5], [6, 7]], [E_, W], [[3, 1], [1, 2]], [True, True])
    obs, state, reward, done, info = step(KEY, state, act(INTERACT, NOOP), params)  # step t
    assert info["zaps_fired"].tolist() == [1, 0] and info["times_zapped"].tolist() == [0, 1]
    assert info["interactions"].tolist() == [1, 1]
    np.testing.assert_allclose(info["interaction_payoff"], [4 / 3, 41 / 12], rtol=1e-6)
    np.testing.assert_allclose(info["interaction_inventories"][0], [[3, 1], [1, 2]])
    np.testing.assert_allclose(info["interaction_inventories"][1], [[1, 2], [3, 1]])
    assert reward.tolist() == [0.0, 0.0] and state.freeze.tolist() == [F, F]
    # the column player did better (41/12 > 4/3): no inventory is reset before the effects
    np.testing.assert_allclose(state.inventory, [[3, 1], [1, 2]])
    # frozen: actions ignored, cannot be hit, pay nothing until step t + F
    for k in range(1, F):
        obs, state, reward, done, info = step(jax.random.key(k), state, act(FORWARD, INTERACT), params)
        assert state.pos.tolist() == [[6, 5], [6, 7]] and reward.tolist() == [0.0, 0.0], k
        assert info["zaps_fired"].tolist() == [0, 0] and not info["removed"].any()
    obs, state, reward, done, info = step(jax.random.key(F), state, act(FORWARD, INTERACT), params)  # t + F
    np.testing.assert_allclose(reward, [4 / 3, 41 / 12], rtol=1e-6)
    assert info["removed"].tolist() == [True, True] and state.removed.tolist() == [D, D]
    np.testing.assert_allclose(state.inventory, [[1, 1], [1, 1]])
    assert not state.ready.any() and state.freeze.tolist() == [-1, -1]
    assert np.all(np.asarray(obs["grid"]) == C.OUTSIDE)
    # off the map for D steps, then back on spawn points
    for k in range(1, D):
        obs, state, reward, done, info = step(jax.random.key(100 + k), state, act(FORWARD, FORWARD), params)
        assert info["removed"].all() and reward.tolist() == [0.0, 0.0]
    obs, state, reward, done, info = step(jax.random.key(200), state, act(NOOP, NOOP), params)
    assert not info["removed"].any()
    spawn = {tuple(p) for p in env.spawn_points.tolist()}
    assert {tuple(p) for p in state.pos.tolist()} <= spawn


def test_a_winning_row_player_is_reset_at_once(env, step, reset):
    # row (1, 5) = mostly D (resource 2) vs column (5, 1) = mostly C: the row player wins
    state = place(env, reset, [[6, 5], [6, 7]], [E_, W], [[1, 5], [5, 1]], [True, True])
    _, state, _, _, info = step(KEY, state, act(INTERACT, NOOP), env.default_params)
    assert info["interaction_payoff"][0] > info["interaction_payoff"][1]
    np.testing.assert_allclose(state.inventory, [[1, 1], [5, 1]])
    assert state.ready.tolist() == [False, True]


def test_unready_players_do_not_interact_and_block_the_beam(env, step, reset):
    for ready in ([False, True], [True, False], [False, False]):
        state = place(env, reset, [[6, 5], [6, 7]], [E_, W], [[3, 1], [1, 2]], ready)
        _, new, _, _, info = step(KEY, state, act(INTERACT, NOOP), env.default_params)
        assert info["interactions"].tolist() == [0, 0] and info["times_zapped"].tolist() == [0, 1]
        assert new.freeze.tolist() == [-1, -1]
    # with require_ready off, unready players interact
    params = env.default_params.replace(require_ready=False)
    _, new, _, _, info = step(KEY, state, act(INTERACT, NOOP), params)
    assert info["interactions"].tolist() == [1, 1]


def test_cooldown_between_beams(env, step, reset):
    state = place(env, reset, [[6, 5], [6, 15]], [E_, W])
    fired = []
    for k in range(7):
        _, state, _, _, info = step(jax.random.key(k), state, act(INTERACT, NOOP), env.default_params)
        fired.append(int(info["zaps_fired"][0]))
    assert fired == [1, 0, 0, 1, 0, 0, 1]  # cooldown 2: every third step


# ------------------------------------------------------------------------- collection
def test_collecting_a_resource_raises_the_inventory(env, step, reset):
    state = place(env, reset, [[6, 7], [6, 15]], [N, N])  # (5, 7) holds a class-1 resource
    assert int(state.cells[5, 7]) == M.RESOURCE_1 and int(state.cells[5, 15]) == M.RESOURCE_2
    _, state, reward, _, info = step(KEY, state, act(FORWARD, FORWARD), env.default_params)
    np.testing.assert_allclose(state.inventory, [[2, 1], [1, 2]])
    assert state.ready.tolist() == [True, True] and reward.tolist() == [0.0, 0.0]  # Taste: 0
    assert info["resources_collected"].tolist() == [1, 1]
    assert int(state.cells[5, 7]) == C.FLOOR and int(state.cells[5, 15]) == C.FLOOR
    _, state, _, _, info = step(KEY, state, act(NOOP, NOOP), env.default_params)  # standing: nothing
    assert info["resources_collected"].tolist() == [0, 0]
    np.testing.assert_allclose(state.inventory, [[2, 1], [1, 2]])
    obs = env.get_obs(state, env.default_params)
    np.testing.assert_allclose(obs["inventory"], [[2, 1], [1, 2]])


def test_regrowth_waits_regen_delay_steps_and_not_under_a_player(env, step, reset):
    params = env.default_params.replace(regen_rate=1.0, regen_delay=4)
    state = place(env, reset, [[6, 7], [6, 15]], [N, N])
    _, state, *_ = step(KEY, state, act(FORWARD, FORWARD), params)  # step t: both collect
    _, state, *_ = step(KEY, state, act(NOOP, 2), params)  # agent 1 steps back off (5, 15)
    for k in range(2, 5):  # steps t + 2 .. t + 4
        assert int(state.cells[5, 15]) == C.FLOOR, k
        _, state, *_ = step(jax.random.key(k), state, act(NOOP, NOOP), params)
    assert int(state.cells[5, 15]) == M.RESOURCE_2  # eligible at step t + 4
    assert int(state.cells[5, 7]) == C.FLOOR  # agent 0 still stands there


def test_three_beam_hits_destroy_a_resource_and_it_blocks_until_then(env, step, reset):
    # agent 0 at (4, 10) faces west: (4, 9) holds a resource ('a'), (4, 8) and (4, 7) too
    params = env.default_params.replace(zap_cooldown=0)
    state = place(env, reset, [[5, 11], [1, 1]], [W, N])
    state = state.replace(cells=state.cells.at[5, 9].set(M.RESOURCE_1), res_class=state.res_class.at[5, 9].set(1))
    health = []
    for k in range(3):
        _, state, _, _, info = step(jax.random.key(k), state, act(INTERACT, NOOP), params)
        health.append(int(state.res_health[5, 9]))
        if k < 2:
            assert int(state.res_health[5, 8]) == 3  # shielded by (5, 9)
    assert health == [2, 1, 3] and int(state.cells[5, 9]) == C.FLOOR
    assert info["resources_destroyed"].tolist() == [1, 0]
    assert int(state.res_health[5, 8]) == 2  # the destroying ray went on to the next one


def test_refill_when_nobody_is_on_the_map_repeated_only(env, step, reset):
    state = place(env, reset, [[6, 7], [6, 15]], [N, N])
    _, state, *_ = step(KEY, state, act(FORWARD, FORWARD), env.default_params)
    state = state.replace(removed=jnp.array([3, 3], jnp.int32))
    _, new, *_ = step(KEY, state, act(NOOP, NOOP), env.default_params.replace(regen_rate=0.0))
    assert int(new.cells[5, 7]) == M.RESOURCE_1 and int(new.cells[5, 15]) == M.RESOURCE_2
    # one player still on the map: no refill
    _, new, *_ = step(KEY, state.replace(removed=jnp.array([3, 0], jnp.int32)), act(NOOP, NOOP),
                      env.default_params.replace(regen_rate=0.0))
    assert int(new.cells[5, 7]) == C.FLOOR


# -------------------------------------------------------------------------------- beam
def test_interaction_beam_footprint(env):
    """Melting Pot footprint, length 3 radius 1: centre 1..3 ahead, sides 0..2 ahead
    (below: from (6, 5) facing east; (7, 7) is a wall, (5, 8) a resource out of reach)."""
    frame = env.zap_rays.frame
    cells = {tuple(c) for r in range(env.zap_rays.num_rays) for c, v in zip(frame[r], env.zap_rays.valid[r]) if v}
    assert cells == {(1, 0), (2, 0), (3, 0), (0, -1), (1, -1), (2, -1), (0, 1), (1, 1), (2, 1)}


@pytest.mark.parametrize("target, hit", [((6, 8), True), ((6, 9), False), ((5, 5), True), ((7, 6), True),
                                         ((7, 7), False), ((5, 8), False), ((6, 4), False)])
def test_which_cells_the_beam_reaches(env, step, reset, target, hit):
    params = env.default_params.replace(require_ready=False)
    state = place(env, reset, [[6, 5], list(target)], [E_, N])
    _, _, _, _, info = step(KEY, state, act(INTERACT, NOOP), params)
    assert bool(info["interactions"][1]) == hit


def test_the_beam_pairs_with_the_nearest_player_only():
    env = sj.make("prisoners_dilemma_in_the_matrix", variant="repeated", num_agents=3)
    _, state = env.reset(KEY)
    state = state.replace(pos=jnp.array([[6, 5], [6, 7], [6, 6]]), heading=jnp.array([E_, N, N]),
                          ready=jnp.ones(3, bool))
    _, _, _, _, info = jax.jit(env.step)(KEY, state, act(INTERACT, NOOP, NOOP), env.default_params)
    assert info["interactions"].tolist() == [1, 0, 1]


# --------------------------------------------------------------------- random play
@pytest.fixture(scope="module")
def rollout():
    """8-player arena, 32 envs x 400 steps of random play (fixed episodes of 400), plus
    recorded positions; interact is chosen more often so that interactions happen."""
    env = sj.make("prisoners_dilemma_in_the_matrix", episode="fixed", episode_length=400)
    params = env.default_params.replace(respawn_delay=10)
    probs = jnp.array([1, 2, 1, 1, 1, 1, 1, 4], jnp.float32)

    def episode(key):
        _, state = env.reset(key, params)

        def body(state, k):
            k1, k2 = jax.random.split(k)
            a = jax.random.categorical(k1, jnp.log(probs), shape=(env.num_agents,)).astype(jnp.int32)
            _, state, r, d, info = env.step(k2, state, a, params)
            return state, (r, d, state.pos, state.removed, state.inventory, info["interactions"],
                           info["interaction_payoff"], info["resources_collected"])

        return jax.lax.scan(body, state, jax.random.split(key, 400))[1]

    out = jax.jit(jax.vmap(episode))(jax.random.split(jax.random.key(3), 32))
    return env, params, jax.device_get(out)


def test_invariants_under_random_play(rollout):
    env, params, (r, d, pos, removed, inv, inter, payoff, collected) = rollout
    present = removed == 0
    b, t, n = removed.shape
    for i in range(b):
        for s in range(0, t, 7):
            p = [tuple(x) for x, ok in zip(pos[i, s].tolist(), present[i, s]) if ok]
            assert len(p) == len(set(p))
    assert np.all(inv >= 1.0) and np.all(collected >= 0)
    assert inter.sum() > 0 and inter.sum() % 2 == 0
    # every payoff is paid exactly freeze_steps later (episodes are 400 steps: no reset
    # before step 400), and nothing else is ever paid
    f = int(params.freeze_steps)
    np.testing.assert_allclose(r[:, f:], payoff[:, :-f], rtol=1e-6)
    assert np.all(r[:, :f] == 0)
    # payoffs lie within the matrix's range
    assert payoff.min() >= 0.0 and payoff.max() <= 5.0
    assert d[:, -1].all() and not d[:, :-1].any()


def test_determinism(env):
    def run(key):
        _, state = env.reset(key)

        def body(state, k):
            k1, k2 = jax.random.split(k)
            _, state, r, _, _ = env.step(k2, state, env.sample_actions(k1))
            return state, r

        return jax.lax.scan(body, state, jax.random.split(key, 50))

    f = jax.jit(run)
    a, b = f(jax.random.key(5)), f(jax.random.key(5))
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_regrowth_statistic(env):
    """All resources removed at step 0, players standing on spawn points: after T steps a
    cell is empty with probability (1 - rate)^(T - delay) (draws from step delay + 1 on)."""
    params = env.default_params
    T, rate, delay = 60, float(params.regen_rate), int(params.regen_delay)

    def run(key):
        _, state = env.reset(key, params)
        res = state.res_class > 0
        state = state.replace(cells=jnp.where(res, jnp.uint8(C.FLOOR), state.cells))

        def body(state, k):
            _, state, *_ = env.step(k, state, jnp.zeros(2, jnp.int32), params)
            return state, None

        state, _ = jax.lax.scan(body, state, jax.random.split(key, T))
        return jnp.sum(res & (state.cells != C.FLOOR)), jnp.sum(res)

    grown, total = jax.jit(jax.vmap(run))(jax.random.split(jax.random.key(9), 64))
    frac = float(grown.sum() / total.sum())
    expect = 1 - (1 - rate) ** (T - delay)  # 0.6358
    sd = np.sqrt(expect * (1 - expect) / float(total.sum()))
    assert abs(frac - expect) < 4 * sd, (frac, expect, sd)


# --------------------------------------------------------------------------- bad input
def test_bad_options_and_params():
    with pytest.raises(ValueError, match="game"):
        M.InTheMatrix(game="snowdrift")
    with pytest.raises(ValueError, match="variant"):
        sj.make("prisoners_dilemma_in_the_matrix", variant="duel")
    with pytest.raises(ValueError, match="num_agents"):
        sj.make("prisoners_dilemma_in_the_matrix", num_agents=1)
    with pytest.raises(ValueError, match="spawn points"):
        sj.make("prisoners_dilemma_in_the_matrix", variant="repeated", num_agents=14)
    env = sj.make("chicken_in_the_matrix", variant="repeated")
    with pytest.raises(ValueError, match="row_payoff"):
        env.with_params(row_payoff=np.zeros((3, 3), np.float32))
    with pytest.raises(ValueError, match="regen_rate"):
        env.with_params(regen_rate=1.5)
    with pytest.raises(ValueError, match="freeze_steps"):
        env.with_params(freeze_steps=2.5)
    with pytest.raises(ValueError, match="zap_cost"):
        env.with_params(zap_cost=-1.0)


# --------------------------------------------------------------------------------- bots
def test_scripted_bots_collect_their_resource_then_interact(env):
    from socialjax.agents.scripted import make_scripted, scripted_names

    assert {"collect_cooperate", "collect_defect"} <= set(scripted_names(env))
    assert "collect_stag" in scripted_names(sj.make("stag_hunt_in_the_matrix", variant="repeated"))
    coop, defect = (make_scripted(n, env).act for n in ("collect_cooperate", "collect_defect"))
    ahead, _, side = env.view  # 5x5 window, the bot on row 3, column 2, facing up
    grid = np.zeros((5, 5), np.uint8)
    grid[1, 2] = M.RESOURCE_1  # two ahead
    grid[3, 0] = M.RESOURCE_2  # two to the left
    grid[4, 2] = C.AGENT_BASE + 4  # a player right behind
    grid[ahead, side] = C.AGENT_BASE

    def decide(bot, inventory, g=grid):
        obs = {"grid": jnp.asarray(g)[None], "inventory": jnp.asarray([inventory], jnp.float32),
               "ready_to_zap": jnp.ones(1, jnp.uint8)}
        acts = jax.vmap(lambda k: bot(k, jnp.zeros(1), obs)[0])(jax.random.split(KEY, 200))
        return np.bincount(np.asarray(acts), minlength=8) / 200

    assert decide(coop, [1, 1])[FORWARD] > 0.85  # towards resource 1
    assert decide(defect, [1, 1])[3] > 0.85  # step left, towards resource 2
    assert decide(defect, [2, 2])[3] > 0.85  # not yet one more of its resource than the other
    assert decide(coop, [2, 1])[6] > 0.85  # enough: the player is behind, turn towards it
    g = grid.copy()
    g[2, 3] = C.AGENT_BASE + 8  # a player ahead-right, in the beam's footprint
    assert decide(coop, [2, 1], g)[INTERACT] == 1.0
    assert decide(defect, [1, 3], g)[INTERACT] == 1.0
