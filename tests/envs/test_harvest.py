"""Commons Harvest specifics: maps, presets, eating, regrowth under agents, SSD fines."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import socialjax as sj
from socialjax.envs.grid import constants as C
from socialjax.envs.harvest import CLOSED_MAP, PARTNERSHIP_MAP

N, E_, S, W = C.NORTH, C.EAST, C.SOUTH, C.WEST


def test_maps_and_presets():
    env = sj.make("harvest_open")
    assert env.map.shape == (18, 24) and env.num_agents == 7 and env.view == (9, 1, 5)
    assert len(env.map.points("inside_spawn")) == 2
    np.testing.assert_allclose(env.default_params.regrowth, [0, 0.0025, 0.005, 0.025])
    assert int(env.default_params.zap_cooldown) == 2 and int(env.default_params.respawn_delay) == 4
    closed = sj.make("harvest_closed")
    np.testing.assert_allclose(closed.default_params.regrowth, [0, 0.001, 0.005, 0.025])
    assert int(closed.default_params.zap_cooldown) == 1 and int(closed.default_params.respawn_delay) == 100
    assert closed.zap_rays.length == 4
    # partnership: the closed map with the WW column replaced by II in rows 1-6 and 8
    diff = [(r, c) for r, (a, b) in enumerate(zip(CLOSED_MAP.strip().split("\n"), PARTNERSHIP_MAP.split("\n")))
            for c, (x, y) in enumerate(zip(a, b)) if x != y]
    assert sorted({r for r, _ in diff}) == [1, 2, 3, 4, 5, 6, 8] and {c for _, c in diff} == {11, 12}
    part = sj.make("harvest_partnership")
    assert (part.map.cells != C.WALL).sum() == (closed.map.cells != C.WALL).sum() + 14
    ssd = sj.make("harvest_ssd")
    assert ssd.map.shape == (16, 38) and ssd.num_agents == 5 and ssd.view == (7, 7, 7)
    obs, _ = ssd.reset(jax.random.key(0))
    chex.assert_shape(obs["grid"], (5, 15, 15))


def test_entering_an_apple_cell_eats_it():
    env = sj.make("harvest_open", num_agents=2, episode="fixed")
    _, state = env.reset(jax.random.key(0))
    # (3, 8) is an apple cell in row 3 ("WA    AAAAA  AAAAA    AW"); put agent 0 below it
    assert int(state.cells[3, 8]) == C.APPLE
    state = state.replace(pos=jnp.array([[4, 8], [12, 20]]), heading=jnp.array([N, N]))
    _, new, reward, _, info = env.step(jax.random.key(1), state, jnp.array([1, 0]))
    assert [int(v) for v in new.pos[0]] == [3, 8]
    assert float(reward[0]) == 1.0 and int(info["apples_eaten"][0]) == 1
    assert int(new.cells[3, 8]) == C.APPLE_CELL
    # standing still on the now empty cell eats nothing
    _, _, reward, _, _ = env.step(jax.random.key(2), new, jnp.array([0, 0]))
    assert float(reward[0]) == 0.0


def test_regrowth_happens_under_a_standing_agent_in_meltingpot_not_in_ssd():
    for name, expect_growth in (("harvest_open", True), ("harvest_ssd", False)):
        env = sj.make(name, num_agents=2) if name == "harvest_open" else sj.make(name)
        _, state = env.reset(jax.random.key(0))
        r, c = (int(v) for v in env.map.points("apple_cell")[5])
        cells = state.cells.at[r, c].set(C.APPLE_CELL)
        pos = state.pos.at[0].set(jnp.array([r, c]))
        state = state.replace(cells=cells, pos=pos)
        params = env.default_params.replace(regrowth=jnp.array([1.0, 1.0, 1.0, 1.0]))
        noop = env.noop_action
        _, new, _, _, _ = env.step(jax.random.key(1), state, jnp.full(env.num_agents, noop), params)
        assert (int(new.cells[r, c]) == C.APPLE) == expect_growth, name


def test_ssd_fire_fines_and_removes_nobody():
    env = sj.make("harvest_ssd")
    _, state = env.reset(jax.random.key(0))
    # agent 0 at (14, 4) facing east, agent 1 two cells ahead: both on floor in row 14
    pos = state.pos.at[0].set(jnp.array([14, 2])).at[1].set(jnp.array([14, 4]))
    pos = pos.at[2:].set(jnp.array([[1, 30], [2, 30], [3, 30]]))
    state = state.replace(pos=pos, heading=state.heading.at[0].set(E_))
    fire = 7
    actions = jnp.full(5, 4).at[0].set(fire)  # the others stay
    _, new, reward, _, info = env.step(jax.random.key(1), state, actions)
    assert float(reward[0]) == -1.0 and float(reward[1]) == -50.0
    assert int(info["times_zapped"][1]) == 1 and not bool(info["removed"].any())
    assert int(new.removed.sum()) == 0


def test_a_custom_map_keeps_the_presets_rules():
    """``ascii_map``: the preset's legend and rules on the user's map; agents 0 and 1 start
    on its Q cells when it has them, on P otherwise; a map without apple cells or with an
    unknown character is refused, naming the option."""
    plain = "WWWWWW\nWA  PW\nWAA PW\nWWWWWW"
    small = dict(episode="fixed", view=(2, 1, 2))  # a view no larger than twice the map
    env = sj.make("harvest_open", num_agents=2, ascii_map=plain, **small)
    assert env.map.shape == (4, 6) and len(env.apple_cells) == 3
    np.testing.assert_allclose(env.default_params.regrowth, [0, 0.0025, 0.005, 0.025])
    _, state = env.reset(jax.random.key(0))
    assert {tuple(p) for p in np.asarray(state.pos)} == {(1, 4), (2, 4)}
    inside = sj.make("harvest_open", num_agents=3, ascii_map="WWWWWW\nWAQQPW\nWAAPPW\nWWWWWW", **small)
    for seed in range(4):
        _, state = inside.reset(jax.random.key(seed))
        assert {tuple(p) for p in np.asarray(state.pos)[:2]} == {(1, 2), (1, 3)}
    ssd = sj.make("harvest_ssd", num_agents=1, ascii_map="@@@@\n@AP@\n@@@@", view=(1, 1, 1))
    assert len(ssd.apple_cells) == 1 and float(ssd.default_params.zap_penalty) == -50.0
    with pytest.raises(ValueError, match="harvest_open ascii_map.*no apple cells"):
        sj.make("harvest_open", num_agents=1, ascii_map="WWWW\nW PW\nWWWW")
    with pytest.raises(ValueError, match="harvest_ssd ascii_map.*unknown character 'W'"):
        sj.make("harvest_ssd", num_agents=1, ascii_map="WWWW\nWAPW\nWWWW")
