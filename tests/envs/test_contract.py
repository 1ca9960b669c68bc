"""The environment contract (README.md, "The environment contract"), checked for every
registered environment.

Each environment runs once as a jitted, vmapped random-action rollout (module-scoped,
so it compiles once per env), with the params passed as a traced argument of the jitted
function; the tests then read that rollout. Compilation is most of this file's time (a
grid game's step takes seconds to compile on a CPU), so the tests share that one program
and compile only one more: the single-env rollout of the determinism test.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import socialjax as sj

from support import ON_CPU, assert_tree_same

# Small static options per environment; a newly registered env must be added here.
ENV_OPTIONS = {
    "ipd": {"num_rounds": 8},
    "stag_hunt": {"num_rounds": 8},
    "chicken": {"num_rounds": 8},
    "matrix_game": {"num_rounds": 8},
    "nplayer_matrix": {"num_agents": 3, "num_rounds": 8},
    "donor_game": {},  # one episode = one generation: 2 games x 12 rounds
    "harvest_open": {"num_agents": 3, "episode": "fixed", "episode_length": 25},
    "harvest_closed": {"num_agents": 3, "episode": "fixed", "episode_length": 25},
    "harvest_partnership": {"num_agents": 3, "episode": "fixed", "episode_length": 25},
    "harvest_ssd": {"num_agents": 3, "episode_length": 25},
    "cleanup": {"num_agents": 3, "episode": "fixed", "episode_length": 25},
    "cleanup_ssd": {"num_agents": 3, "episode_length": 25},
    "gathering": {"episode_length": 25},
    "partner_punishment": {"num_rounds": 2, "third_party_punishment": True},  # 1 + 5 games x 2 rounds x 2 steps
    "commons": {"num_agents": 3, "episode_length": 12, "monitoring": True, "sanctions": "pot", "quota_vote": True},
    "commons_govsim": {},  # 12 rounds (fewer if it collapses)
    "commons_ostrom": {"num_agents": 3, "episode_length": 10},
    "indirect_reciprocity": {"num_agents": 6, "episode_length": 25},
    "lattice_pd": {"size": 4, "episode_length": 25},
    "public_goods": {"num_periods": 5},
    "public_goods_punishment": {"num_agents": 8, "matching": "stranger", "num_periods": 5},  # 10 steps
    "public_goods_punishment_2000": {"num_periods": 5},  # 10 steps
    "public_goods_sequential": {"num_agents": 8, "matching": "stranger", "num_periods": 5},  # 20 steps
}
NUM_STEPS = 60  # covers at least two whole episodes of every env above
NUM_ENVS = 4
KEY = jax.random.key(42)


def obs_parts(obs, space):
    """``(array, space)`` pairs, one per observation entry (a Dict space has several)."""
    if isinstance(space, sj.core.Dict):
        assert set(obs) == set(space.spaces)
        return [(obs[k], s) for k, s in space.spaces.items()]
    return [(obs, space)]


def tree_equal(a, b) -> bool:
    """Same structure and bit-identical leaves."""
    leaves_a, tree_a = jax.tree_util.tree_flatten(a)
    leaves_b, tree_b = jax.tree_util.tree_flatten(b)
    return tree_a == tree_b and all(np.array_equal(x, y) for x, y in zip(leaves_a, leaves_b))


def rollout(env: sj.EpisodeStats, key: jax.Array, params, num_steps: int) -> dict:
    """Random actions in one environment. Leaves of the result are ``(T, ...)``; also
    returns the first observation and, per step, the observation and state of a fresh
    reset with the key that ``Environment.step`` uses for its auto-reset."""
    key_reset, key_run = jax.random.split(key)
    obs0, state0 = env.reset(key_reset, params)

    def body(state, key):
        key_act, key_step = jax.random.split(key)
        actions = env.sample_actions(key_act, params)
        obs, state, reward, done, info = env.step(key_step, state, actions, params)
        # Environment.step splits its key into (step, reset) and resets from the second
        reset_obs, reset_state = env.unwrapped.reset(jax.random.split(key_step)[1], params)
        out = dict(
            actions=actions, obs=obs, reward=reward, done=done, info=info,
            env_state=state.env_state, reset_obs=reset_obs, reset_state=reset_state,
        )
        return state, out

    _, traj = jax.lax.scan(body, state0, jax.random.split(key_run, num_steps))
    traj["obs0"] = obs0
    return traj


@pytest.fixture(scope="module", params=sj.registered_envs())
def env(request) -> sj.EpisodeStats:
    name = request.param
    assert name in ENV_OPTIONS, f"add small static options for {name!r} to ENV_OPTIONS"
    return sj.EpisodeStats(sj.make(name, **ENV_OPTIONS[name]))


@pytest.fixture(scope="module")
def batched_rollout(env):
    """``run(keys (B,), params)``: the params are an argument of the jitted function, so
    reset and step must work with traced params (a sweep over them is a vmap)."""
    return jax.jit(jax.vmap(lambda key, params: rollout(env, key, params, NUM_STEPS), in_axes=(0, None)))


@pytest.fixture(scope="module")
def traj(env, batched_rollout):
    """``(B, T, ...)`` leaves: NUM_ENVS random-action rollouts."""
    return jax.device_get(batched_rollout(jax.random.split(KEY, NUM_ENVS), env.default_params))


def test_reset_and_step_jit_and_vmap(env, traj):
    """Reset and step under ``jit(vmap(...))`` with traced params (the rollout above):
    shapes and dtypes of what they return, for a batch of NUM_ENVS."""
    inner = env.unwrapped
    n = inner.num_agents
    params = inner.default_params
    batch = (NUM_ENVS, NUM_STEPS)
    obs_space, act_space = inner.observation_space(params), inner.action_space(params)
    obs = traj["reset_obs"]  # the unwrapped env's reset, (B, T, N, ...)
    for part, space in obs_parts(obs, obs_space):
        assert part.shape == batch + (n,) + space.shape and part.dtype == space.dtype
    for part, space in obs_parts(traj["obs0"], obs_space):  # the first reset, (B, N, ...)
        assert part.shape == (NUM_ENVS, n) + space.shape and part.dtype == space.dtype
    actions = traj["actions"]
    assert actions.shape == batch + (n,) + act_space.shape and actions.dtype == act_space.dtype
    # step returns observations and a state shaped like reset's
    for a, b in ((traj["obs"], obs), (traj["env_state"], traj["reset_state"])):
        assert jax.tree_util.tree_structure(a) == jax.tree_util.tree_structure(b)
        for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
            assert x.shape == y.shape and x.dtype == y.dtype
    assert traj["reward"].shape == batch + (n,) and traj["reward"].dtype == jnp.float32
    assert traj["done"].shape == batch and traj["done"].dtype == jnp.bool_


def test_same_key_gives_the_same_trajectory(env, batched_rollout, traj):
    keys = jax.random.split(KEY, NUM_ENVS)
    params = env.default_params
    assert tree_equal(traj, jax.device_get(batched_rollout(keys, params)))
    # whatever batch it ran in: env 1 alone equals env 1 of the batch. Alone is another
    # compiled program: the same bits on the CPU; elsewhere (e.g. a GPU's reductions)
    # integer leaves equal and float leaves close (tests/support.py)
    alone = jax.device_get(jax.jit(lambda key, params: rollout(env, key, params, NUM_STEPS))(keys[1], params))
    in_batch = jax.tree_util.tree_map(lambda x: x[1], traj)
    if ON_CPU:
        assert tree_equal(alone, in_batch)
    else:
        assert_tree_same(alone, in_batch)
    # and the key matters
    assert not np.array_equal(traj["actions"][0], traj["actions"][1])


def test_observations_are_in_the_observation_space(env, traj):
    space = env.observation_space(env.default_params)
    for name in ("obs0", "obs", "reset_obs"):
        for obs, part_space in obs_parts(traj[name], space):
            assert obs.dtype == part_space.dtype, name
            assert obs.shape[-1 - len(part_space.shape):] == (env.num_agents,) + part_space.shape, name
            assert bool(part_space.contains(obs)), f"{name} outside {part_space}"
        assert bool(space.contains(traj[name]))


def test_step_output_types(env, traj):
    n, batch = env.num_agents, (NUM_ENVS, NUM_STEPS)
    assert traj["reward"].shape == batch + (n,) and traj["reward"].dtype == np.float32
    assert np.all(np.isfinite(traj["reward"]))
    assert traj["done"].shape == batch and traj["done"].dtype == np.bool_
    info = traj["info"]
    for key in ("terminated", "truncated"):
        assert info[key].shape == batch and info[key].dtype == np.bool_, key
    assert jax.tree_util.tree_map(np.shape, info["final_obs"]) == jax.tree_util.tree_map(np.shape, traj["obs"])
    assert info["invalid_action"].shape == batch + (n,) and info["invalid_action"].dtype == np.bool_
    np.testing.assert_array_equal(traj["done"], info["terminated"] | info["truncated"])
    assert not np.any(info["terminated"] & info["truncated"])


def test_auto_reset(env, traj):
    done = traj["done"]
    assert done.any(axis=1).all(), f"no episode ended within {NUM_STEPS} steps"
    # the step that ends an episode returns the first observation of the next one
    fresh_obs, _ = jax.eval_shape(env.reset, KEY)  # shapes and dtypes of a reset, nothing run
    for got, fresh, reset in zip(*(jax.tree_util.tree_leaves(x) for x in (traj["obs"], fresh_obs, traj["reset_obs"]))):
        assert got.shape[2:] == fresh.shape and got.dtype == fresh.dtype
        np.testing.assert_array_equal(got[done], reset[done])
    for got, fresh in zip(jax.tree_util.tree_leaves(traj["env_state"]), jax.tree_util.tree_leaves(traj["reset_state"])):
        np.testing.assert_array_equal(got[done], fresh[done])
    # info["final_obs"] is the observation before the auto-reset (to bootstrap from)
    final_obs = traj["info"]["final_obs"]
    for final, got in zip(jax.tree_util.tree_leaves(final_obs), jax.tree_util.tree_leaves(traj["obs"])):
        np.testing.assert_array_equal(final[~done], got[~done])
    assert bool(env.observation_space(env.default_params).contains(final_obs))
    # EpisodeStats counts the episodes: +1 exactly on the steps with done
    count = traj["info"]["episode_count"]
    np.testing.assert_array_equal(count, np.cumsum(done, axis=1))
    np.testing.assert_array_equal(traj["info"]["returned_episode"], done)


def test_sampled_actions_are_always_valid(env, traj):
    space = env.action_space(env.default_params)
    assert bool(space.contains(traj["actions"]))
    assert not traj["info"]["invalid_action"].any()
