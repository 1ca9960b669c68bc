"""Gathering (Leibo et al. 2017): apple regrowth after n_apple steps, tagging after two
hits, the straight beam, the map, the n_apple / n_tagged sweep in one compiled call, and
bad input. Hand-made states are driven through the public, jitted ``env.step``."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import socialjax as sj
from socialjax.envs.gathering import GatheringParams
from socialjax.envs.grid import constants as C
from socialjax.envs.grid import engine as E

N, E_, S, W = C.NORTH, C.EAST, C.SOUTH, C.WEST
FORWARD, BACKWARD, BEAM, STAY = 0, 1, 6, 7
KEY = jax.random.key(0)


@pytest.fixture(scope="module")
def env():
    return sj.make("gathering")


@pytest.fixture(scope="module")
def step(env):
    return jax.jit(env.step)


@pytest.fixture(scope="module")
def env6():
    """Six players: as many as spawn points."""
    return sj.make("gathering", num_agents=6)


@pytest.fixture(scope="module")
def step6(env6):
    return jax.jit(env6.step)


def place(env, pos, heading):
    """A fresh state with the agents moved to ``pos`` facing ``heading``."""
    _, state = jax.jit(env.reset)(KEY)
    return state.replace(pos=jnp.asarray(pos, jnp.int32), heading=jnp.asarray(heading, jnp.int32))


def act(*actions):
    return jnp.asarray(actions, jnp.int32)


# ------------------------------------------------------------------------------ the map
def test_map_layout(env):
    m = env.map
    assert m.shape == (11, 25)
    assert (m.cells != C.WALL).sum() == 207
    apples = {tuple(p) for p in m.points("apple_cell").tolist()}
    assert len(apples) == 25 and apples == {(5 + dr, 12 + dc) for dr in range(-3, 4) for dc in range(-3, 4)
                                            if abs(dr) + abs(dc) <= 3}
    assert np.all(m.cells[m.role("apple_cell")] == C.APPLE)  # every apple is live at the start
    assert {tuple(p) for p in env.spawn_points.tolist()} == {(r, c) for r in (4, 5, 6) for c in (3, 21)}
    np.testing.assert_array_equal(m.cells, m.cells[:, ::-1])  # mirror-symmetric: no side is favoured


def test_players_start_on_opposite_sides_with_any_heading(env):
    _, states = jax.jit(jax.vmap(env.reset))(jax.random.split(KEY, 32))
    pos, heading = np.asarray(states.pos), np.asarray(states.heading)
    assert np.all(pos[:, 0, 1] == 3) and np.all(pos[:, 1, 1] == 21)
    assert set(heading.ravel().tolist()) == {N, E_, S, W}
    assert set(pos[:, 0, 0].tolist()) == {4, 5, 6}  # any point of the side


# ---------------------------------------------------------------------------- regrowth
@pytest.mark.parametrize("n_apple", [1, 4])
def test_collected_apple_reappears_exactly_n_apple_steps_later(env, step, n_apple):
    params = env.default_params.replace(n_apple=n_apple)
    state = place(env, [[5, 8], [1, 1]], [E_, N])  # agent 0 faces the apple at (5, 9)
    obs, state, reward, done, info = step(KEY, state, act(FORWARD, STAY), params)  # step t: collect
    assert reward.tolist() == [1.0, 0.0] and info["apples_eaten"].tolist() == [1, 0]
    assert state.pos[0].tolist() == [5, 9] and int(state.cells[5, 9]) == C.APPLE_CELL
    for k in range(1, n_apple + 1):  # steps t + 1 .. t + n_apple, standing on the cell
        obs, state, reward, done, info = step(jax.random.key(k), state, act(STAY, STAY), params)
        expected = C.APPLE if k == n_apple else C.APPLE_CELL
        assert int(state.cells[5, 9]) == expected, f"after step t + {k}"
        assert reward.tolist() == [0.0, 0.0]  # an apple that reappears under a player is not collected
    assert int((state.cells == C.APPLE).sum()) == 25
    assert int(state.timers.max()) == 0


def test_regrowth_timer_runs_per_cell(env, step):
    params = env.default_params.replace(n_apple=3)
    state = place(env, [[5, 8], [1, 1]], [E_, N])
    _, state, *_ = step(KEY, state, act(FORWARD, STAY), params)  # (5, 9) at step 1
    _, state, *_ = step(KEY, state, act(FORWARD, STAY), params)  # (5, 10) at step 2
    _, state, *_ = step(KEY, state, act(STAY, STAY), params)
    assert int(state.cells[5, 9]) == C.APPLE_CELL and int(state.cells[5, 10]) == C.APPLE_CELL
    _, state, *_ = step(KEY, state, act(STAY, STAY), params)  # step 4 = 1 + 3
    assert int(state.cells[5, 9]) == C.APPLE and int(state.cells[5, 10]) == C.APPLE_CELL
    _, state, *_ = step(KEY, state, act(STAY, STAY), params)  # step 5 = 2 + 3
    assert int(state.cells[5, 10]) == C.APPLE


# ----------------------------------------------------------------------------- tagging
def test_two_hits_tag_out_for_n_tagged_steps(env, step):
    n_tagged = 5
    params = env.default_params.replace(n_tagged=n_tagged)
    state = place(env, [[5, 3], [5, 10]], [E_, N])  # agent 0 beams east along row 5 at agent 1
    # first hit: counted, not removed
    obs, state, reward, done, info = step(KEY, state, act(BEAM, STAY), params)
    assert info["zaps_fired"].tolist() == [1, 0] and info["times_zapped"].tolist() == [0, 1]
    assert state.tagged.tolist() == [0, 1] and state.removed.tolist() == [0, 0]
    assert reward.tolist() == [0.0, 0.0]  # beaming costs and pays nothing
    _, state, *_ = step(KEY, state, act(STAY, STAY), params)
    assert state.tagged.tolist() == [0, 1] and state.removed.tolist() == [0, 0]
    # second hit (step t): removed
    obs, state, reward, done, info = step(KEY, state, act(BEAM, STAY), params)
    assert state.tagged.tolist() == [0, 2] and state.removed.tolist() == [0, n_tagged]
    assert info["removed"].tolist() == [False, True]
    assert np.all(np.asarray(obs["grid"][1]) == C.OUTSIDE)
    # off the map after steps t .. t + n_tagged - 1; its actions are ignored, it cannot be hit
    for k in range(1, n_tagged):
        obs, state, reward, done, info = step(jax.random.key(k), state, act(BEAM, FORWARD), params)
        assert bool(info["removed"][1]), f"after step t + {k}"
        assert info["times_zapped"].tolist() == [0, 0] and state.tagged.tolist() == [0, 2]
        assert state.pos[1].tolist() == [5, 10]
    # back after step t + n_tagged, on a free spawn point, hit count reset; over several keys
    spawn = {tuple(p) for p in env.spawn_points.tolist()}
    landed = set()
    for seed in range(12):
        obs, back, reward, done, info = step(jax.random.key(100 + seed), state, act(STAY, STAY), params)
        assert back.removed.tolist() == [0, 0] and not info["removed"].any()
        p = tuple(back.pos[1].tolist())
        assert p in spawn and p != (5, 3)  # (5, 3) is a spawn point, occupied by agent 0
        assert back.tagged.tolist() == [0, 0]
        landed.add(p)
    assert len(landed) > 1  # a random spawn point
    # the count restarted: one new hit does not remove it
    back = back.replace(pos=jnp.array([[5, 3], [5, 12]], jnp.int32), heading=jnp.array([E_, N], jnp.int32))
    _, back, *_ = step(KEY, back, act(BEAM, STAY), params)
    assert back.tagged.tolist() == [0, 1] and back.removed.tolist() == [0, 0]


def test_respawn_takes_the_only_free_spawn_point(env6, step6):
    params = env6.default_params.replace(n_tagged=3)
    # spawn points are (4|5|6, 3|21); all but (6, 21) are occupied after agent 1 is tagged
    pos = [[5, 3], [5, 10], [4, 3], [6, 3], [4, 21], [5, 21]]
    state = place(env6, pos, [E_, N, N, N, N, N])
    for _ in range(2):
        _, state, *_ = step6(KEY, state, act(BEAM, *[STAY] * 5), params)
    assert state.removed.tolist() == [0, 3, 0, 0, 0, 0]
    for seed in range(8):
        s = state
        for k in range(3):
            _, s, *_ = step6(jax.random.key(10 * seed + k), s, act(*[STAY] * 6), params)
        assert s.removed.tolist() == [0] * 6 and s.pos[1].tolist() == [6, 21]


# ------------------------------------------------------------------------------- beams
def test_beam_hits_only_the_first_player_in_line(env6, step6):
    # agent 0 beams east along row 5: agents 1 and 2 stand in line, 3 beside the ray, 4 and 5 away
    state = place(env6, [[5, 3], [5, 8], [5, 12], [4, 8], [1, 1], [9, 23]], [E_, N, N, N, N, N])
    _, state, _, _, info = step6(KEY, state, act(BEAM, *[STAY] * 5), env6.default_params)
    assert info["times_zapped"].tolist() == [0, 1, 0, 0, 0, 0]
    assert state.tagged.tolist() == [0, 1, 0, 0, 0, 0]


def test_beam_is_one_straight_ray_across_the_map_stopped_by_walls(env):
    rays = env.zap_rays
    assert rays.num_rays == 1 and rays.length >= max(env.map.shape)

    @jax.jit
    def trace(pos, heading, blocks, grid):
        return E.trace_beams(rays, pos[None], heading[None], jnp.array([True]), blocks, grid)

    def reached(pos, heading, walls=(), agents=()):
        blocks = env.walls.copy()
        for r, c in walls:
            blocks[r, c] = True
        grid = np.full(env.map.shape, -1, np.int32)
        grid[pos] = 0
        for k, (r, c) in enumerate(agents):
            grid[r, c] = k + 1
        cells, hit = trace(jnp.array(pos), jnp.array(heading), jnp.asarray(blocks), jnp.asarray(grid))
        return [tuple(c) for c in np.asarray(cells)[np.asarray(hit)].tolist()]

    assert reached((5, 3), E_) == [(5, c) for c in range(4, 24)]  # across the whole row, to the wall
    assert reached((5, 3), W) == [(5, 2), (5, 1)]  # the border wall stops it
    assert reached((5, 3), E_, walls=[(5, 6)], agents=[(5, 9)]) == [(5, 4), (5, 5)]  # a wall shields
    assert reached((5, 3), E_, agents=[(5, 7), (5, 9)]) == [(5, 4), (5, 5), (5, 6), (5, 7)]
    assert reached((1, 12), S) == [(r, 12) for r in range(2, 10)]  # apples do not stop it


# -------------------------------------------------------------------------------- sweep
def test_n_apple_and_n_tagged_sweep_in_one_compiled_call(env):
    """Random play, four (n_apple, n_tagged) settings x 128 seeds, one jit: scarcer
    apples -> fewer apples; a longer tag-out -> fewer apples (and more steps removed)."""
    steps, seeds = 1000, 128
    settings = [(1, 1), (30, 1), (1000, 1), (1, 1000)]

    def episode(key, params):
        _, state = env.reset(key, params)

        def body(carry, key):
            state, apples, removed = carry
            key_act, key_step = jax.random.split(key)
            _, state, reward, _, info = env.step(key_step, state, env.sample_actions(key_act, params), params)
            return (state, apples + reward.sum(), removed + info["removed"].sum()), None

        (_, apples, removed), _ = jax.lax.scan(body, (state, 0.0, 0), jax.random.split(key, steps))
        return apples, removed

    base = env.default_params
    params = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (len(settings),) + jnp.shape(x)), base)
    params = params.replace(n_apple=jnp.array([a for a, _ in settings], jnp.int32),
                            n_tagged=jnp.array([t for _, t in settings], jnp.int32))
    sweep = jax.jit(jax.vmap(jax.vmap(episode, in_axes=(0, None)), in_axes=(None, 0)))
    apples, removed = jax.device_get(sweep(jax.random.split(jax.random.key(7), seeds), params))
    assert sweep._cache_size() == 1
    mean = apples.mean(axis=1)
    abundant, medium, scarce, long_tag = mean
    assert abundant > medium > scarce > 0
    assert long_tag < abundant
    assert removed[3].mean() > 10 * removed[0].mean()


# ---------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("field, value", [("n_apple", 0), ("n_apple", -5), ("n_tagged", 0), ("n_tagged", -1),
                                          ("hits_to_tag", 0), ("n_apple", 2.5)])
def test_bad_params_raise_naming_the_field(env, field, value):
    with pytest.raises(ValueError, match=field):
        sj.make("gathering", **{field: value})
    with pytest.raises(ValueError, match=field):
        env.with_params(**{field: value})
    with pytest.raises(ValueError, match=field):
        env.reset(KEY, env.default_params.replace(**{field: value}))


def test_respawn_delay_is_rejected_in_favour_of_n_tagged(env):
    with pytest.raises(ValueError, match="respawn_delay.*n_tagged"):
        env.with_params(respawn_delay=10)
    GatheringParams().validate()  # the defaults are fine


def test_too_many_players_for_the_spawn_points():
    with pytest.raises(ValueError, match="spawn points"):
        sj.make("gathering", num_agents=7)
    with pytest.raises(ValueError, match="num_agents"):
        sj.make("gathering", num_agents=0)
