"""The global observation (``Environment.global_observation``): what a centralised
critic sees of one game. The default stacks the players' observations (vectors
concatenated, images along the channel axis); the grid games show the whole map's codes
(or its rendering) with every player's own numbers. The check of every registered
environment against its space is in ``check_env`` (tests/envs/test_contract.py)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import socialjax as sj
from socialjax.core import Box, Dict, Discrete, Environment, Space
from socialjax.core.environment import stack_players, stacked_space
from socialjax.envs.grid import constants as C
from socialjax.envs.grid import engine as E

KEY = jax.random.key(0)
STAY = 7  # Gathering's "stay" (constants.GATHERING_NOOP)


@pytest.fixture(scope="module")
def gathering():
    return sj.make("gathering", episode_length=10)


@pytest.fixture(scope="module")
def gathering_rgb():
    return sj.make("gathering", episode_length=10, obs_mode="rgb")


def placed(env, pos, heading, removed=(0, 0), zap_cooldown=(0, 0)):
    """Gathering's first state with the two players put where the test says."""
    _, state = env.reset(KEY)
    as_int = lambda x: jnp.asarray(x, jnp.int32)  # noqa: E731
    return state.replace(pos=as_int(pos), heading=as_int(heading), removed=as_int(removed),
                         zap_cooldown=as_int(zap_cooldown))


# --------------------------------------------------------------------------- the default
def test_the_default_concatenates_vector_observations_player_0_first():
    env = sj.make("nplayer_matrix", num_agents=3, memory=2, observe_round=True, num_rounds=8)
    obs, state = env.reset(KEY)
    for t in range(2):
        obs, state, *_ = env.step(jax.random.fold_in(KEY, t), state, jnp.asarray([0, 1, 1]))
    world = env.global_observation(state)
    chex.assert_shape(world, (9,))
    chex.assert_type(world, jnp.int32)
    np.testing.assert_array_equal(world, np.concatenate(np.asarray(obs)))
    space = env.global_observation_space()
    high = np.asarray(env.observation_space().high)
    assert space == Box(0, np.tile(high, 3), (9,), jnp.int32)
    assert bool(space.contains(world))


def test_the_default_puts_images_along_the_channel_axis(gathering_rgb):
    """SocialJax's MAPPO world_state: (N, h, w, c) -> (h, w, N c), player 0's channels
    first; here the base class's rule applied to Gathering's RGB views."""
    env = gathering_rgb
    state = placed(env, [[1, 1], [5, 5]], [2, 1], zap_cooldown=(0, 3))
    obs = env.get_obs(state, env.default_params)
    world = Environment.global_observation(env, state)
    h, w = obs["rgb"].shape[1:3]
    chex.assert_shape(world["rgb"], (h, w, 6))
    chex.assert_type(world["rgb"], jnp.uint8)
    for i in range(2):
        np.testing.assert_array_equal(world["rgb"][..., 3 * i: 3 * i + 3], obs["rgb"][i])
    np.testing.assert_array_equal(world["ready_to_zap"], [1, 0])
    space = Environment.global_observation_space(env)
    assert space["rgb"] == Box(0, 255, (h, w, 6), jnp.uint8) and space["ready_to_zap"] == Box(0, 1, (2,), jnp.uint8)


def test_stacked_space_repeats_each_players_bounds_in_its_places():
    # an image whose channels have bounds of their own: (h, w, c) -> (h, w, N c)
    image = Box(0, np.broadcast_to(np.asarray([1, 2, 3], np.float32), (2, 2, 3)), (2, 2, 3), jnp.float32)
    stacked = stacked_space(image, 2)
    assert stacked.shape == (2, 2, 6) and stacked.dtype == jnp.float32
    np.testing.assert_array_equal(stacked.high[1, 0], [1, 2, 3, 1, 2, 3])
    # a vector: (k,) -> (N k); a Discrete scalar: (N,) integers; a Dict: entry by entry
    both = stacked_space(Dict({"v": Box(-1, np.asarray([4, 9]), (2,), jnp.int32), "d": Discrete(5)}), 3)
    assert both["v"] == Box(-1, np.asarray([4, 9] * 3), (6,), jnp.int32)
    assert both["d"] == Box(0, 4, (3,), jnp.int32)
    # the same rule shapes the arrays
    x = np.arange(2 * 2 * 2 * 3).reshape(2, 2, 2, 3)
    np.testing.assert_array_equal(stack_players(x)[1, 1], np.concatenate([x[0, 1, 1], x[1, 1, 1]]))


class _Odd(Space):
    shape, dtype = (), jnp.int32


class _OddEnv(Environment):
    def observation_space(self, params=None):
        return _Odd()


def test_bad_input():
    with pytest.raises(TypeError, match="no default global observation space for .*_Odd"):
        _OddEnv(2).global_observation_space()
    env = sj.make("ipd", num_rounds=8)
    _, state = env.reset(KEY)
    with pytest.raises(TypeError, match="params must be a MatrixParams"):
        env.global_observation(state, sj.make("gathering").default_params)


# --------------------------------------------------------------------------- grid games
def test_a_grid_games_global_observation_is_the_whole_maps_codes(gathering):
    env = gathering
    state = placed(env, [[1, 1], [9, 23]], [C.SOUTH, C.NORTH])
    forward = jnp.asarray([0, STAY])  # player 0 steps forward (south), player 1 stays
    _, state, *_ = env.step(KEY, state, forward, auto_reset=False)
    world = env.global_observation(state)
    assert set(world) == {"grid", "ready_to_zap"}
    np.testing.assert_array_equal(world["grid"], E.world_codes(state.cells, state.pos, state.heading,
                                                               state.removed == 0))
    chex.assert_shape(world["grid"], env.map.shape)
    chex.assert_type(world["grid"], jnp.uint8)
    assert world["grid"][2, 1] == C.AGENT_BASE + 4 * 0 + C.SOUTH  # player 0 on its new cell
    assert world["grid"][1, 1] == C.FLOOR  # and gone from the old one
    assert world["grid"][9, 23] == C.AGENT_BASE + 4 * 1 + C.NORTH
    space = env.global_observation_space()
    top = C.AGENT_BASE + 4 * env.num_agents - 1
    assert space == Dict({"grid": Box(0, top, env.map.shape, jnp.uint8), "ready_to_zap": Box(0, 1, (2,), jnp.uint8)})
    assert space["grid"].high.max() == env.observation_space()["grid"].high.max()
    assert bool(space.contains(world))


def test_removed_players_are_off_the_map_and_not_ready(gathering):
    env = gathering
    state = placed(env, [[1, 1], [9, 23]], [C.EAST, C.WEST], removed=(0, 3), zap_cooldown=(2, 0))
    world = env.global_observation(state)
    assert world["grid"][1, 1] == C.AGENT_BASE + C.EAST and world["grid"][9, 23] == state.cells[9, 23]
    np.testing.assert_array_equal(world["ready_to_zap"], [0, 0])  # cooling down; removed
    state = state.replace(removed=jnp.zeros(2, jnp.int32), zap_cooldown=jnp.asarray([0, 1], jnp.int32))
    np.testing.assert_array_equal(env.global_observation(state)["ready_to_zap"], [1, 0])


def test_rgb_mode_is_the_rendering_jitted_and_vmapped(gathering_rgb):
    env = gathering_rgb
    _, states = jax.vmap(env.reset)(jax.random.split(KEY, 2))
    world, frames = jax.jit(jax.vmap(lambda s: (env.global_observation(s), env.render(s))))(states)
    h, w = env.map.shape
    assert set(world) == {"rgb", "ready_to_zap"}
    chex.assert_shape(world["rgb"], (2, 8 * h, 8 * w, 3))
    np.testing.assert_array_equal(world["rgb"], frames)
    assert env.global_observation_space()["rgb"] == Box(0, 255, (8 * h, 8 * w, 3), jnp.uint8)


def test_a_games_own_per_player_entries_are_stacked_over_the_players():
    env = sj.make("prisoners_dilemma_in_the_matrix", variant="repeated")
    _, state = env.reset(KEY)
    state = state.replace(inventory=jnp.asarray([[1.0, 2.0], [3.0, 4.0]], jnp.float32))
    world = env.global_observation(state)
    assert set(world) == {"grid", "ready_to_zap", "inventory"}
    np.testing.assert_array_equal(world["inventory"], [1.0, 2.0, 3.0, 4.0])
    inventory = env.observation_space()["inventory"]
    assert env.global_observation_space()["inventory"] == Box(0.0, inventory.high[0], (4,), jnp.float32)


def test_every_grid_game_shows_its_map_and_every_other_observation_entry():
    """Traced only: each grid game's global observation holds the map and, stacked, every
    per-player entry of its observation (the ready flag, an inventory)."""
    for name in sj.registered_envs():
        env = sj.make(name)
        if not hasattr(env, "map"):
            continue
        obs, state = jax.eval_shape(env.reset, KEY)
        world = jax.eval_shape(env.global_observation, state)
        assert set(world) == (set(obs) - {"grid"}) | {"grid"}, name
        for key in set(obs) - {"grid"}:
            chex.assert_shape(world[key], (int(np.prod(obs[key].shape)),), custom_message=f"{name} {key}")
        chex.assert_shape(world["grid"], env.map.shape, custom_message=name)


# --------------------------------------------------------------------------- wrappers
def test_wrappers_pass_their_games_state_and_params(gathering):
    env = gathering
    _, state = sj.EpisodeStats(env).reset(KEY)
    want = env.global_observation(state.env_state)
    got = sj.EpisodeStats(env).global_observation(state)
    jax.tree_util.tree_map(np.testing.assert_array_equal, got, want)
    adapter = sj.JaxMARLAdapter(env)
    jax.tree_util.tree_map(np.testing.assert_array_equal, adapter.global_observation(state.env_state), want)
    assert adapter.global_observation_space() == env.global_observation_space()
