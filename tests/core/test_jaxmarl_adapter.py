"""What JaxMARL's baselines need of ``sj.JaxMARLAdapter``, on every registered game (no
``jaxmarl`` needed: tests/core/test_jaxmarl_ippo.py runs the loops on its wrappers).

- Per-agent actions of shape ``()`` or ``(1,)`` (their ``unbatchify`` reshapes actions to
  ``(num_agents, num_envs, -1)``), from JAX or from the host.
- Per-agent observation spaces with a ``.shape`` that the observations have:
  ``jnp.zeros(env.observation_space(agent).shape)`` builds their networks, and
  ``.shape[0]`` is the MLP/RNN input width; a grid game's structured ``Dict`` stays
  available (``obs_format="dict"``), and ``"image"`` gives CNN input.
- No dict-valued ``infos`` entry, and every one ``(N,)`` per environment (they reshape
  every info leaf to ``(num_envs * N,)``).
"""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import socialjax as sj
from socialjax.core.spaces import Box, Discrete
from socialjax.envs.grid.base import GridEnv

KEY = jax.random.key(0)
NUM_ENVS = 3
# every game's check traces its step (seconds for a grid game): these in the fast tier, the rest in the slow one
FAST_GAMES = ("ipd", "donor_game", "partner_punishment", "coins", "prisoners_dilemma_in_the_matrix")
EVERY_GAME = [pytest.param(name, marks=() if name in FAST_GAMES else pytest.mark.slow) for name in sj.registered_envs()]


def jaxmarl_actions(adapter, key, num_envs):
    """Random actions as JaxMARL's baselines hand them over: ``{agent: (num_envs, 1)}``
    for a Discrete action space (``unbatchify``), ``{agent: (num_envs, *shape)}`` otherwise."""
    space = adapter.action_space()
    trailing = (1,) if isinstance(space, Discrete) else ()
    actions = space.sample(key, (adapter.num_agents, num_envs))
    return {a: actions[i].reshape((num_envs, *space.shape, *trailing)) for i, a in enumerate(adapter.agents)}


@pytest.fixture(scope="module")
def coins():
    return sj.make("coins")


@pytest.fixture(scope="module")
def coins_step(coins):
    """The array API's first observation and first step's ``info`` (one compilation)."""

    def reset_and_step(key):
        obs, state = coins.reset(key)
        return obs, coins.step(key, state, jnp.ones((2,), jnp.int32))[4]

    return jax.jit(reset_and_step)(KEY)


# --------------------------------------------------------------------------- actions
def test_actions_of_shape_1_are_the_same_actions(coins):
    """``(1,)`` per agent (JAX or host values) stacks exactly like ``()`` and steps the
    same; other shapes still get the environment's error."""
    adapter = sj.JaxMARLAdapter(coins)
    want = adapter.stack({"agent_0": jnp.int32(1), "agent_1": jnp.int32(2)})
    for actions in ({"agent_0": jnp.ones((1,), jnp.int32), "agent_1": jnp.full((1,), 2, jnp.int32)},
                    {"agent_0": jnp.int32(1), "agent_1": jnp.full((1,), 2, jnp.int32)},
                    {"agent_0": np.array([1]), "agent_1": np.array([2])}):
        got = adapter.stack(actions)
        chex.assert_shape(got, (2,))
        np.testing.assert_array_equal(got, want)
    ipd = sj.JaxMARLAdapter(sj.make("ipd"))
    _, state = ipd.reset(KEY)
    with pytest.raises(ValueError, match=r"actions must have shape \(2,\)"):
        ipd.step(KEY, state, {a: jnp.zeros((2,), jnp.int32) for a in ipd.agents})
    host = ipd.step(KEY, state, {"agent_0": np.array([1]), "agent_1": np.array([0])})
    jax.tree_util.tree_map(np.testing.assert_array_equal, host, ipd.step(KEY, state, {"agent_0": 1, "agent_1": 0}))
    *_, info = ipd.step(KEY, state, {"agent_0": np.array([2**40], np.int64), "agent_1": np.array([0])})
    np.testing.assert_array_equal(info["invalid_action"], [True, False])  # not wrapped to a valid 0


# --------------------------------------------------------------------------- observations
def test_flat_observation_is_the_grid_then_the_flags(coins, coins_step):
    obs, _ = coins_step
    adapter = sj.JaxMARLAdapter(coins)
    space = adapter.observation_space("agent_1")
    assert isinstance(space, Box) and space.shape == (11 * 11 + 1,) and space.dtype == jnp.float32
    assert float(space.high[0]) == 103 and float(space.high[-1]) == 1  # the grid codes' bound, then the flag's
    flat = adapter.unstack(adapter.format(obs))
    for i, agent in enumerate(adapter.agents):
        want = np.concatenate([np.ravel(obs["grid"][i]), [obs["ready_to_zap"][i]]]).astype(np.float32)
        np.testing.assert_array_equal(flat[agent], want)
        assert bool(space.contains(flat[agent]))


def test_image_observation_is_one_hot_codes_then_constant_channels():
    env = sj.make("prisoners_dilemma_in_the_matrix")  # grid, inventory (2,), ready_to_zap
    obs = env.observation_space().sample(KEY, (env.num_agents,))
    adapter = sj.JaxMARLAdapter(env, obs_format="image")
    space = adapter.observation_space()
    codes = int(np.max(env.observation_space()["grid"].high)) + 1
    assert space.shape == (11, 11, codes + 3) and space.dtype == jnp.float32
    image = adapter.unstack(adapter.format(obs))
    for i, agent in enumerate(adapter.agents):
        x = np.asarray(image[agent])
        np.testing.assert_array_equal(x[..., :codes].sum(-1), 1)
        np.testing.assert_array_equal(x[..., :codes].argmax(-1), obs["grid"][i])
        np.testing.assert_array_equal(x[..., codes:codes + 2], np.broadcast_to(obs["inventory"][i], (11, 11, 2)))
        np.testing.assert_array_equal(x[..., -1], obs["ready_to_zap"][i])
        assert bool(space.contains(x))


def test_rgb_image_observation():
    env = sj.make("gathering", obs_mode="rgb")
    adapter = sj.JaxMARLAdapter(env, obs_format="image")
    obs = env.observation_space().sample(KEY, (env.num_agents,))
    image = adapter.unstack(adapter.format(obs))
    height, width, _ = obs["rgb"].shape[1:]
    assert adapter.observation_space().shape == (height, width, 4)
    np.testing.assert_array_equal(image["agent_0"][..., :3], obs["rgb"][0])
    np.testing.assert_array_equal(image["agent_1"][..., 3], obs["ready_to_zap"][1])
    assert bool(adapter.observation_space().contains(image["agent_0"]))


def test_dict_observation_is_the_environments(coins, coins_step):
    obs, _ = coins_step
    adapter = sj.JaxMARLAdapter(coins, obs_format="dict")
    assert adapter.observation_space() == coins.observation_space()
    structured = adapter.unstack(adapter.format(obs))
    jax.tree_util.tree_map(np.testing.assert_array_equal, structured["agent_1"], jax.tree_util.tree_map(
        lambda x: x[1], obs))


def test_box_observations_pass_unchanged():
    ipd = sj.make("ipd")
    for obs_format in ("flat", "dict"):
        adapter = sj.JaxMARLAdapter(ipd, obs_format=obs_format)
        assert adapter.observation_space() == ipd.observation_space()
        obs, _ = adapter.reset(KEY)
        chex.assert_type(obs["agent_0"], np.int32)


def test_bad_obs_format_or_reset_state_names_what_is_allowed(coins):
    with pytest.raises(ValueError, match=r"obs_format must be one of \('flat', 'image', 'dict'\), got 'pixels'"):
        sj.JaxMARLAdapter(coins, obs_format="pixels")
    with pytest.raises(ValueError, match=r"ipd: obs_format='image' needs a grid game's observation"):
        sj.JaxMARLAdapter(sj.make("ipd"), obs_format="image")
    ipd = sj.JaxMARLAdapter(sj.make("ipd"))
    _, state = ipd.reset(KEY)
    with pytest.raises(ValueError, match="reset_state is not supported"):
        ipd.step(KEY, state, {a: 0 for a in ipd.agents}, reset_state=state)


# --------------------------------------------------------------------------- infos
def test_infos_hold_no_dicts_and_full_info_gives_final_obs_in_the_adapters_format(coins, coins_step):
    _, info = coins_step
    assert isinstance(info["final_obs"], dict)  # the array API's
    for obs_format, full_info, final_obs in [("flat", False, None), ("flat", True, (2, 122)),
                                             ("image", True, (2, 11, 11, 105)), ("dict", True, (2, 11, 11))]:
        adapter = sj.JaxMARLAdapter(coins, full_info=full_info, obs_format=obs_format)
        out = adapter.per_agent_info(info)
        assert not any(isinstance(v, dict) for v in out.values()), obs_format
        key = "final_obs/grid" if obs_format == "dict" else "final_obs"
        if final_obs is None:
            assert not any(k.startswith("final_obs") for k in out)
        else:
            chex.assert_shape(out[key], final_obs)
        chex.assert_shape([out["terminated"], out["coins_collected"]], [(2,), (2,)])


# --------------------------------------------------------------------------- every game
@pytest.mark.parametrize("name", EVERY_GAME)
def test_every_game_has_the_shapes_jaxmarl_baselines_use(name):
    """Traced only (``jax.eval_shape``): the loop of JaxMARL's baselines over ``NUM_ENVS``
    vmapped games with their actions, in the default flat format; a grid game's image
    format's conversion too. ``FAST_GAMES`` (a matrix game, the donor game's Box action,
    a MultiDiscrete-like Box action, two grid games) in the fast tier, every game in the slow one."""
    env = sj.make(name)
    adapter = sj.JaxMARLAdapter(env)
    space = adapter.observation_space(adapter.agents[0])
    assert isinstance(space, Box) and len(space.shape) == 1, space
    chex.assert_shape(jnp.zeros(space.shape), space.shape)  # their network's init input

    def reset_and_step(key):
        obs, state = jax.vmap(adapter.reset)(jax.random.split(key, NUM_ENVS))
        actions = jaxmarl_actions(adapter, key, NUM_ENVS)
        return obs, jax.vmap(adapter.step)(jax.random.split(key, NUM_ENVS), state, actions)

    obs, (next_obs, _, reward, done, info) = jax.eval_shape(reset_and_step, KEY)
    for agent in adapter.agents[:2]:
        for o in (obs[agent], next_obs[agent]):
            assert (o.shape, o.dtype) == ((NUM_ENVS, *space.shape), space.dtype), o
        assert reward[agent].shape == done[agent].shape == (NUM_ENVS,)
    bad = {k: v for k, v in info.items() if isinstance(v, dict) or v.shape != (NUM_ENVS, adapter.num_agents)}
    assert not bad, bad
    if isinstance(env, GridEnv):
        image = sj.JaxMARLAdapter(env, obs_format="image")
        space = image.observation_space()
        assert isinstance(space, Box) and len(space.shape) == 3, space
        stacked = jax.eval_shape(image.format, env.observation_space().sample(KEY, (env.num_agents,)))
        assert (stacked.shape, stacked.dtype) == ((env.num_agents, *space.shape), space.dtype)
