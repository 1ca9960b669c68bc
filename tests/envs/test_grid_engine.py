"""Shared gridworld rules (socialjax/envs/grid): beams, cooldowns, removal, movement,
spawning, regrowth, and bad input. Uses Harvest as the concrete game."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import socialjax as sj
from socialjax.envs.grid import constants as C
from socialjax.envs.grid import engine as E
from socialjax.envs.grid.maps import parse_map, tile
from socialjax.envs.harvest import regrow_apples

N, E_, S, W = C.NORTH, C.EAST, C.SOUTH, C.WEST
NOOP, FORWARD, ZAP = 0, 1, 7


def footprint(length, radius, pos, heading, walls=(), agents=(), size=12):
    """Cells reached by one agent's Melting Pot beam on an open ``size`` x ``size`` map."""
    blocks = np.zeros((size, size), bool)
    for r, c in walls:
        blocks[r, c] = True
    grid = np.full((size, size), -1, np.int32)
    grid[pos] = 0
    for k, (r, c) in enumerate(agents):
        grid[r, c] = k + 1
    cells, reached = E.trace_beams(
        E.meltingpot_beam(length, radius), jnp.array([pos]), jnp.array([heading]), jnp.array([True]),
        jnp.asarray(blocks), jnp.asarray(grid),
    )
    return {tuple(int(v) for v in c) for c in np.asarray(cells)[np.asarray(reached)]}


def test_beam_footprint_length_3_radius_1():
    # facing north from (6, 6): centre ray 1..3 ahead; side rays 0..2 ahead at columns 5 and 7
    assert footprint(3, 1, (6, 6), N) == {(5, 6), (4, 6), (3, 6), (6, 5), (5, 5), (4, 5), (6, 7), (5, 7), (4, 7)}
    # facing east: rotated
    assert footprint(3, 1, (6, 6), E_) == {(6, 7), (6, 8), (6, 9), (5, 6), (5, 7), (5, 8), (7, 6), (7, 7), (7, 8)}


def test_beam_footprint_length_4_radius_1():
    assert footprint(4, 1, (6, 6), S) == {
        (7, 6), (8, 6), (9, 6), (10, 6),  # centre 1..4 ahead (south)
        (6, 5), (7, 5), (8, 5), (9, 5),  # side rays 0..3 ahead
        (6, 7), (7, 7), (8, 7), (9, 7),
    }


def test_beam_stops_at_walls_ahead_and_skips_a_walled_side():
    # a wall two cells ahead cuts the centre ray after one cell
    assert footprint(3, 1, (6, 6), N, walls=[(4, 6)]) == {(5, 6), (6, 5), (5, 5), (4, 5), (6, 7), (5, 7), (4, 7)}
    # a wall on the left side cell: that side ray is gone entirely
    assert footprint(3, 1, (6, 6), N, walls=[(6, 5)]) == {(5, 6), (4, 6), (3, 6), (6, 7), (5, 7), (4, 7)}
    # with radius 2 the wall beside the agent also removes the ray further out on that side
    wide = footprint(3, 2, (6, 6), N, walls=[(6, 5)])
    assert not any(c == 4 for _, c in wide) and not any(c == 5 for _, c in wide)
    assert {(6, 8), (5, 8)} <= wide  # the right side still has its r = 2 ray (0..1 ahead)


def test_beam_stops_at_the_first_player():
    # two players in a line ahead: only the first is reached
    reached = footprint(4, 1, (6, 6), N, agents=[(4, 6), (3, 6)])
    assert (4, 6) in reached and (3, 6) not in reached and (2, 6) not in reached


def test_ssd_beam_footprint():
    # centre 1..5 ahead, side rays beside the agent 0..4 ahead (the original SSD geometry)
    rays = E.ssd_beam(5, 3)
    cells, reached = E.trace_beams(rays, jnp.array([[8, 6]]), jnp.array([N]), jnp.array([True]),
                                   jnp.zeros((12, 12), bool), None)
    got = {tuple(int(v) for v in c) for c in np.asarray(cells)[np.asarray(reached)]}
    assert got == {(7, 6), (6, 6), (5, 6), (4, 6), (3, 6)} | {(8 - f, c) for f in range(5) for c in (5, 7)}


def test_beam_hits_matrix():
    blocks = jnp.zeros((8, 8), bool)
    pos = jnp.array([[6, 3], [4, 3], [2, 3]])
    agents = E.agent_grid((8, 8), pos, jnp.array([True, True, True]))
    cells, reached = E.trace_beams(E.meltingpot_beam(4, 1), pos, jnp.array([N, S, N]),
                                   jnp.array([True, False, False]), blocks, agents)
    hits = np.asarray(E.beam_hits(cells, reached, agents))
    np.testing.assert_array_equal(hits, [[0, 1, 0], [0, 0, 0], [0, 0, 0]])


# --------------------------------------------------------------------- a small harvest
@pytest.fixture(scope="module")
def env():
    return sj.make("harvest_open", num_agents=2, episode="fixed", episode_length=1000)


@pytest.fixture(scope="module")
def step(env):
    return jax.jit(env.step)


def place(env, key, pos, heading):
    _, state = env.reset(key)
    return state.replace(pos=jnp.asarray(pos, jnp.int32), heading=jnp.asarray(heading, jnp.int32))


@pytest.mark.parametrize(
    "cooldown,expected",
    [(0, [1, 1, 1, 1, 1, 1]), (1, [1, 0, 1, 0, 1, 0]), (2, [1, 0, 0, 1, 0, 0]), (3, [1, 0, 0, 0, 1, 0])],
)
def test_zap_cooldown_timing(env, step, cooldown, expected):
    params = env.default_params.replace(zap_cooldown=cooldown)
    state = place(env, jax.random.key(0), [[12, 3], [12, 20]], [N, N])  # far apart: nobody hit
    fired, ready = [], []
    for t in range(6):
        obs, state, _, _, info = step(jax.random.key(t), state, jnp.array([ZAP, NOOP]), params)
        fired.append(int(info["zaps_fired"][0]))
        ready.append(int(obs["ready_to_zap"][0]))
    assert fired == expected
    # ready_to_zap announces whether the next step's zap fires
    assert ready[:-1] == expected[1:]


def test_removed_agent_is_absent_for_exactly_the_delay_and_respawns_on_a_free_spawn(env, step):
    delay = 4
    params = env.default_params.replace(respawn_delay=delay)
    state = place(env, jax.random.key(1), [[12, 10], [10, 10]], [N, S])  # agent 1 two cells ahead of 0
    _, state, _, _, info = step(jax.random.key(0), state, jnp.array([ZAP, FORWARD]), params)
    assert bool(info["removed"][1]) and int(info["times_zapped"][1]) == 1
    removed_steps = 1
    for t in range(1, 10):
        # the removed agent "tries" to act: its actions are ignored while removed
        obs, state, reward, _, info = step(jax.random.key(t), state, jnp.array([NOOP, FORWARD]), params)
        if not bool(info["removed"][1]):
            break
        assert float(reward[1]) == 0.0
        assert np.all(np.asarray(obs["grid"][1]) == C.OUTSIDE)
        removed_steps += 1
    assert removed_steps == delay
    spawn = {tuple(p) for p in env.spawn_points.tolist()}
    back = tuple(int(v) for v in state.pos[1])
    assert back in spawn and back != tuple(int(v) for v in state.pos[0])


# ------------------------------------------------------------------ movement invariants
@pytest.fixture(scope="module")
def random_play():
    """7 agents, 100 envs x 100 steps = 10,000 vmapped env-steps of random play."""
    env = sj.make("harvest_open", episode="fixed", episode_length=1000)

    def run(key):
        _, state = env.reset(key)

        def body(state, k):
            ka, ks = jax.random.split(k)
            _, new, _, _, info = env.step(ks, state, env.sample_actions(ka), env.default_params)
            return new, (state.pos, new.pos, new.removed, info["removed"])

        return jax.lax.scan(body, state, jax.random.split(key, 100))[1]

    before, after, removed, _ = jax.jit(jax.vmap(run))(jax.random.split(jax.random.key(7), 100))
    return env, np.asarray(before), np.asarray(after), np.asarray(removed)


def test_no_two_agents_share_a_cell_and_none_swap(random_play):
    env, before, after, removed = random_play
    present = removed == 0
    flat = after[..., 0] * 100 + after[..., 1]
    for b in range(flat.shape[0]):
        for t in range(flat.shape[1]):
            cells = flat[b, t][present[b, t]]
            assert len(np.unique(cells)) == len(cells), (b, t)
    walls = env.map.cells == C.WALL
    assert not walls[after[..., 0], after[..., 1]][present].any()
    # no swap: i takes j's old cell while j takes i's old cell
    n = after.shape[2]
    for i in range(n):
        for j in range(i + 1, n):
            swap = (np.all(after[:, :, i] == before[:, :, j], -1) & np.all(after[:, :, j] == before[:, :, i], -1)
                    & np.any(after[:, :, i] != before[:, :, i], -1))
            assert not (swap & present[:, :, i] & present[:, :, j]).any()
    assert (np.abs(after - before).sum(-1) == 1).mean() > 0.2  # agents did move


def test_contested_cell_is_won_equally_often(env):
    # agents 0 and 1 face the same empty cell from opposite sides and both step in
    state = place(env, jax.random.key(0), [[12, 10], [12, 12]], [E_, W])
    keys = jax.random.split(jax.random.key(3), 4000)
    pos = jax.jit(jax.vmap(lambda k: env.step(k, state, jnp.array([FORWARD, FORWARD]))[1].pos))(keys)
    winner0 = np.all(np.asarray(pos[:, 0]) == [12, 11], -1)
    winner1 = np.all(np.asarray(pos[:, 1]) == [12, 11], -1)
    assert np.all(winner0 ^ winner1)  # exactly one wins every time
    assert abs(winner0.mean() - 0.5) < 4 * 0.5 / np.sqrt(4000)  # 4 standard errors


def test_a_chain_moves_when_the_front_agent_goes_first(env):
    # agent 1 directly ahead of agent 0, both move north: 1 always moves; 0 follows when 1 went first
    state = place(env, jax.random.key(0), [[12, 10], [11, 10]], [N, N])
    keys = jax.random.split(jax.random.key(4), 4000)
    pos = np.asarray(jax.jit(jax.vmap(lambda k: env.step(k, state, jnp.array([FORWARD, FORWARD]))[1].pos))(keys))
    assert np.all(pos[:, 1] == [10, 10])
    followed = np.all(pos[:, 0] == [11, 10], -1)
    assert abs(followed.mean() - 0.5) < 4 * 0.5 / np.sqrt(4000)


def test_all_four_headings_at_spawn_equally():
    env = sj.make("harvest_open")
    keys = jax.random.split(jax.random.key(0), 4000)
    headings = np.asarray(jax.jit(jax.vmap(lambda k: env.reset(k)[1].heading))(keys))
    counts = np.bincount(headings.ravel(), minlength=4)
    expected = headings.size / 4  # 7000 each; binomial sd ~ 72
    assert np.all(np.abs(counts - expected) < 5 * np.sqrt(headings.size * 0.25 * 0.75)), counts


def test_agents_0_and_1_start_inside_the_others_on_spawn_points():
    env = sj.make("harvest_open")
    pos = np.asarray(jax.jit(jax.vmap(lambda k: env.reset(k)[1].pos))(jax.random.split(jax.random.key(1), 64)))
    inside = {tuple(p) for p in env.map.points("inside_spawn").tolist()}
    spawn = {tuple(p) for p in env.spawn_points.tolist()}
    for p in pos:
        assert {tuple(p[0]), tuple(p[1])} == inside
        assert all(tuple(q) in spawn for q in p[2:]) and len({tuple(q) for q in p}) == 7


@pytest.mark.parametrize("n,k", [(1, None), (7, None), (7, 3), (16, None), (17, 5), (60, 7)])
def test_a_random_order_is_the_top_k_of_the_draws_however_it_is_ranked(n, k):
    """Up to PAIRWISE_MAX items the order comes from pairwise ranks, above from top_k: the
    same indices either way (and the ranks are its inverse)."""
    keys = jax.random.split(jax.random.key(2), 2000)
    order = jax.vmap(lambda key: E.random_order(key, n, k))(keys)
    top = jax.vmap(lambda key: jax.lax.top_k(jax.random.uniform(key, (n,)), n if k is None else k)[1])(keys)
    np.testing.assert_array_equal(order, top)
    if n <= E.PAIRWISE_MAX:
        full = jax.vmap(lambda key: E.random_order(key, n))(keys)
        ranks = jax.vmap(lambda key: E.random_ranks(key, n))(keys)
        np.testing.assert_array_equal(np.take_along_axis(np.asarray(ranks), np.asarray(full), 1),
                                      np.tile(np.arange(n), (len(keys), 1)))


def test_equal_draws_rank_by_index_as_top_k_orders_them():
    values = jnp.array([0.5, 0.5, 0.1, 0.5, 0.9, 0.1])
    ranks = E.descending_ranks(values)
    np.testing.assert_array_equal(ranks, [1, 2, 4, 3, 0, 5])
    np.testing.assert_array_equal(jax.lax.top_k(values, 6)[1][ranks], np.arange(6))


def sequential_moves(order, pos, target, target_ok, present):
    """The published rule, literally: agents in ``order`` each try their move; it
    succeeds if the target is allowed and no present agent stands there at that moment."""
    pos, moved = pos.copy(), np.zeros(len(pos), bool)
    for i in order:
        taken = any(present[j] and tuple(pos[j]) == tuple(target[i]) for j in range(len(pos)))
        if target_ok[i] and not taken:
            pos[i], moved[i] = target[i], True
    return pos, moved


@pytest.mark.parametrize("stop_when_settled", [True, False])
def test_the_vectorised_resolution_moves_as_the_sequence_does_move_for_move(stop_when_settled):
    """Crowded random states (up to 7 agents in a 4x4 box with walls, so chains, cycles
    and contested cells are common), the same random order for both; the loop that stops
    when settled (the CPU's default) and the fixed number of passes (other backends')
    alike."""
    walkable = np.ones((6, 6), bool)
    walkable[0, :] = walkable[:, 0] = False
    walkable[2, 3] = False

    def draw(key):
        k_pos, k_move, k_present, k_order = jax.random.split(key, 4)
        box = jnp.asarray([(r, c) for r in range(1, 5) for c in range(1, 5)], jnp.int32)
        pos = box[E.random_order(k_pos, 16, 7)]
        step = jnp.asarray(np.vstack([C.DIRECTIONS, [[0, 0]]]))[jax.random.randint(k_move, (7,), 0, 5)]
        present = jax.random.bernoulli(k_present, 0.85, (7,))
        wants = jnp.any(step != 0, axis=1)
        target = pos + step
        new_pos, moved = E.resolve_moves(k_order, pos, target, wants, jnp.asarray(walkable), present,
                                         stop_when_settled)
        ok = E.gather(jnp.asarray(walkable), target, False) & wants & present
        return pos, target, ok, present, E.random_order(k_order, 7), new_pos, moved

    out = [np.asarray(x) for x in jax.jit(jax.vmap(draw))(jax.random.split(jax.random.key(11), 3000))]
    chains = 0
    for pos, target, ok, present, order, new_pos, moved in zip(*out):
        want_pos, want_moved = sequential_moves(order, pos, target, ok, present)
        np.testing.assert_array_equal(new_pos, want_pos)
        np.testing.assert_array_equal(moved, want_moved)
        stands = (target[:, None] == pos[None]).all(-1) & present[None]
        chains += bool((ok & stands.any(1)).any())
    assert chains > 1000  # the states were crowded: most had an agent moving towards another


def rule_views(env, cells, pos, heading, present):
    """Each agent's window by the documented rule, cell by cell (numpy)."""
    h, w = cells.shape
    out = np.empty((len(pos),) + env.offsets.shape[1:3], np.uint8)
    for i in range(len(pos)):
        for r in range(out.shape[1]):
            for c in range(out.shape[2]):
                cell = pos[i] + env.offsets[heading[i], r, c]
                if env.torus:
                    cell = cell % (h, w)
                if not present[i] or not (0 <= cell[0] < h and 0 <= cell[1] < w):
                    out[i, r, c] = C.OUTSIDE
                    continue
                out[i, r, c] = cells[tuple(cell)]
                for j in range(len(pos)):
                    if present[j] and tuple(pos[j]) == tuple(cell):
                        out[i, r, c] = C.AGENT_BASE + 4 * j + (heading[j] - heading[i]) % 4
    return out


@pytest.mark.parametrize("name,options", [("harvest_open", dict(num_agents=4, view=(5, 2, 3))),
                                          ("territory_rooms", dict(num_agents=3, view=(4, 4, 4)))])
def test_views_show_the_map_and_the_players_as_the_rule_says(name, options):
    env = sj.make(name, **options)

    def states(key):
        _, state = env.reset(key)

        def body(state, k):
            ka, ks = jax.random.split(k)
            new = env.step(ks, state, env.sample_actions(ka))[1]
            return new, new

        return jax.lax.scan(body, state, jax.random.split(key, 12))[1]

    batch = jax.jit(jax.vmap(states))(jax.random.split(jax.random.key(5), 4))
    flat = jax.tree_util.tree_map(lambda x: np.asarray(x).reshape((-1,) + x.shape[2:]), batch)
    # some players removed, so that their views and their absence are both checked
    present = np.random.default_rng(0).random(flat.removed.shape) > 0.2
    views = np.asarray(jax.jit(jax.vmap(lambda s, p: E.egocentric_views(s.cells, s.pos, s.heading, p, env.view,
                                                                      env.torus)))(flat, jnp.asarray(present)))
    for b in range(len(views)):
        np.testing.assert_array_equal(views[b], rule_views(env, flat.cells[b], flat.pos[b], flat.heading[b],
                                                           present[b]))
    assert (views >= C.AGENT_BASE).any()  # players were in sight


# ------------------------------------------------------------------------------ regrowth
def test_neighbourhoods():
    assert len(E.neighbour_offsets(4)) == 12  # Euclidean distance <= 2
    assert len(E.neighbour_offsets(1, square=True)) == 8  # the 3x3 square


@pytest.mark.parametrize("radius_sq,square", [(4, False), (1, True)])
def test_regrowth_frequency_by_neighbour_count(radius_sq, square):
    """Empty apple cells with 0, 1, 2 and 3+ live neighbours regrow at p[min(n, 3)]."""
    text = "\n".join(["WWWWWWWWWWWWWWWWWWWWW"] + ["W" + " " * 19 + "W"] * 5 + ["WWWWWWWWWWWWWWWWWWWWW"])
    gm = parse_map("test", text, {"W": tile(C.WALL), " ": tile(C.FLOOR)})
    cells = np.array(gm.cells)
    # targets at column 3, 8, 13, 18 of row 3 with 0, 1, 2, 4 live apples right next to them
    targets = np.array([[3, 2], [3, 7], [3, 12], [3, 17]], np.int32)
    cells[targets[:, 0], targets[:, 1]] = C.APPLE_CELL
    for (r, c), k in zip(targets, [0, 1, 2, 4]):
        for dr, dc in [(-1, 0), (1, 0), (0, -1), (0, 1)][:k]:
            cells[r + dr, c + dc] = C.APPLE
    probs = jnp.array([0.05, 0.2, 0.4, 0.7])
    offsets = E.neighbour_offsets(radius_sq, square)
    draws = 4000
    grown = jax.jit(jax.vmap(lambda k: regrow_apples(k, jnp.asarray(cells), targets, offsets, probs)))(
        jax.random.split(jax.random.key(0), draws))
    freq = np.asarray(grown[:, targets[:, 0], targets[:, 1]] == C.APPLE).mean(0)
    sd = np.sqrt(np.asarray(probs) * (1 - np.asarray(probs)) / draws)
    np.testing.assert_array_less(np.abs(freq - np.asarray(probs)), 5 * sd)


def test_ssd_harvest_random_play_apples_per_episode():
    """Published behaviour of the original SSD Harvest: a uniformly random policy with 5
    agents collects about 286 apples per 1000-step episode (sd 62 across episodes)."""
    env = sj.make("harvest_ssd")
    episodes = 24

    def run(key):
        _, state = env.reset(key)

        def body(state, k):
            ka, ks = jax.random.split(k)
            _, state, reward, _, info = env.step(ks, state, env.sample_actions(ka), env.default_params)
            return state, info["apples_eaten"].sum()

        return jax.lax.scan(body, state, jax.random.split(key, 1000))[1].sum()

    apples = np.asarray(jax.jit(jax.vmap(run))(jax.random.split(jax.random.key(11), episodes)))
    # 4 standard errors of a 24-episode mean with the published sd of 62: +/- 51
    assert abs(apples.mean() - 286) < 4 * 62 / np.sqrt(episodes), apples.mean()


# ----------------------------------------------------------------------------- bad input
def test_bad_input():
    with pytest.raises(ValueError, match="spawn points"):
        sj.make("harvest_ssd", num_agents=len(sj.make("harvest_ssd").spawn_points) + 1)
    with pytest.raises(ValueError, match="at most 40 agents"):
        sj.make("harvest_open", num_agents=80)
    with pytest.raises(ValueError, match=r"unknown character 'X' at row 1, column 2"):
        parse_map("bad", "WWW\nW X\nWWW", {"W": tile(C.WALL), " ": tile(C.FLOOR)})
    with pytest.raises(ValueError, match="view"):
        sj.make("harvest_open", view=(60, 1, 5))
    with pytest.raises(ValueError, match="regrowth"):
        sj.make("harvest_open", regrowth=np.array([0.0, 0.1, 1.5, 0.2]))
    with pytest.raises(ValueError, match="preset"):
        sj.make("harvest_open", preset="tiny")
    with pytest.raises(ValueError, match="episode"):
        sj.make("harvest_open", episode="forever")
    with pytest.raises(ValueError, match="obs_mode"):
        sj.make("harvest_open", obs_mode="pixels")


def test_params_a_game_never_reads_are_rejected():
    """A sweep over a param the configuration ignores would silently do nothing."""
    with pytest.raises(ValueError, match="end_prob.*no effect.*fixed length"):
        sj.make("harvest_open", episode="fixed", end_prob=0.5)
    with pytest.raises(ValueError, match="clean_cooldown.*no effect.*no clean beam"):
        sj.make("harvest_open", clean_cooldown=3)
    with pytest.raises(ValueError, match="respawn_delay.*no effect.*removes nobody"):
        sj.make("harvest_ssd", respawn_delay=7)
    with pytest.raises(ValueError, match="respawn_delay.*n_tagged"):
        sj.make("gathering").with_params(respawn_delay=7)
    env = sj.make("harvest_ssd")
    _, state = env.reset(jax.random.key(0))
    with pytest.raises(ValueError, match="respawn_delay"):
        env.step(jax.random.key(0), state, jnp.zeros(5, jnp.int32), env.default_params.replace(respawn_delay=3))
    # the defaults themselves (float32 on the device) always pass, eagerly and as Python floats
    ssd = sj.make("harvest_ssd")
    ssd.step(jax.random.key(0), ssd.reset(jax.random.key(0))[1], jnp.zeros(5, jnp.int32), ssd.default_params)
    assert float(ssd.with_params(end_prob=0.15).default_params.end_prob) == pytest.approx(0.15)
    # read params are fine, and the Melting Pot ending params work with episode="meltingpot"
    assert float(sj.make("harvest_open", end_prob=0.5).default_params.end_prob) == 0.5
