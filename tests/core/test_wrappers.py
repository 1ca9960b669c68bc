"""EpisodeStats (episode returns across auto-resets, under vmap) and the JaxMARL adapter."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import socialjax as sj
from socialjax import testing

NUM_ENVS = 64
NUM_ROUNDS = 5
NUM_STEPS = 23  # four whole episodes and part of a fifth


def rollout(env, params, key, num_steps):
    """Random actions in ``key.shape[0]`` envs; returns ``(T, B, ...)`` reward, done, info."""
    traj = testing.rollout(env, key, num_steps, params=params)  # (B, T, ...)
    return jax.tree_util.tree_map(lambda x: jnp.swapaxes(x, 0, 1), (traj.reward, traj.done, traj.info))


@pytest.fixture(scope="module")
def stats_env():
    return sj.EpisodeStats(sj.make("ipd", num_rounds=NUM_ROUNDS))


@pytest.fixture(scope="module")
def run_stats(stats_env):
    run = jax.jit(lambda key, params: rollout(stats_env, params, key, NUM_STEPS))
    return lambda key, params: jax.device_get(run(jax.random.split(key, NUM_ENVS), params))


def reference_episodes(rewards: np.ndarray, dones: np.ndarray):
    """Per-env Python bookkeeping of what EpisodeStats must report after every step.

    rewards: (T, B, N); dones: (T, B). Returns returned returns (T, B, N), returned
    lengths (T, B) and episode counts (T, B).
    """
    num_steps, num_envs, num_agents = rewards.shape
    returned = np.zeros((num_steps, num_envs, num_agents), np.float32)
    lengths = np.zeros((num_steps, num_envs), np.int64)
    counts = np.zeros((num_steps, num_envs), np.int64)
    for b in range(num_envs):
        running, length, last, last_length, count = np.zeros(num_agents, np.float32), 0, np.zeros(num_agents,
                                                                                                  np.float32), 0, 0
        for t in range(num_steps):
            running = running + rewards[t, b]
            length += 1
            if dones[t, b]:
                last, last_length, count = running, length, count + 1
                running, length = np.zeros(num_agents, np.float32), 0
            returned[t, b], lengths[t, b], counts[t, b] = last, last_length, count
    return returned, lengths, counts


def test_episode_stats_fixed_length_episodes(stats_env, run_stats):
    rewards, dones, info = run_stats(jax.random.key(1), stats_env.default_params)
    steps = np.arange(1, NUM_STEPS + 1)
    ends = steps % NUM_ROUNDS == 0  # the episode ends on every 5th step
    np.testing.assert_array_equal(dones, np.broadcast_to(ends[:, None], (NUM_STEPS, NUM_ENVS)))
    np.testing.assert_array_equal(info["returned_episode"], dones)
    np.testing.assert_array_equal(info["episode_count"], np.broadcast_to((steps // NUM_ROUNDS)[:, None], dones.shape))

    # the return of episode k is the sum of the rewards of its 5 steps, final step included
    whole = (NUM_STEPS // NUM_ROUNDS) * NUM_ROUNDS
    per_episode = rewards[:whole].reshape(-1, NUM_ROUNDS, NUM_ENVS, 2).sum(axis=1)  # (episodes, B, N)
    np.testing.assert_array_equal(info["returned_episode_returns"][ends], per_episode)
    np.testing.assert_array_equal(info["returned_episode_lengths"][ends], NUM_ROUNDS)
    # random play: not every episode has the same return, so the check above has teeth
    assert len(np.unique(per_episode)) > 5

    # between ends the last completed episode is kept; before the first end, zeros
    last_end = np.maximum.accumulate(np.where(ends, np.arange(NUM_STEPS), -1))
    for t in range(NUM_STEPS):
        expected = info["returned_episode_returns"][last_end[t]] if last_end[t] >= 0 else 0.0
        np.testing.assert_array_equal(info["returned_episode_returns"][t], expected)


def test_episode_stats_random_length_episodes(stats_env, run_stats):
    params = stats_env.default_params.replace(continue_prob=jnp.float32(0.7), noise=jnp.float32(0.1))
    rewards, dones, info = run_stats(jax.random.key(2), params)
    assert dones.sum() > NUM_ENVS  # several episodes per env, of different lengths
    returned, lengths, counts = reference_episodes(rewards, dones)
    assert len(np.unique(lengths[dones])) > 2
    np.testing.assert_allclose(info["returned_episode_returns"], returned, rtol=0, atol=1e-5)
    np.testing.assert_array_equal(info["returned_episode_lengths"], lengths)
    np.testing.assert_array_equal(info["episode_count"], counts)
    np.testing.assert_array_equal(info["returned_episode"], dones)


def test_episode_stats_state_and_forwarding(stats_env):
    obs, state = stats_env.reset(jax.random.key(0))
    chex.assert_shape([state.episode_returns, state.episode_count], [(2,), ()])
    chex.assert_type(state.episode_returns, jnp.float32)
    assert int(state.episode_count) == 0
    assert stats_env.num_agents == 2 and stats_env.name == "ipd"
    assert stats_env.agents == ["agent_0", "agent_1"]
    assert stats_env.action_space() == sj.Discrete(2)
    assert stats_env.observation_space().shape == (1,)
    assert stats_env.unwrapped.num_rounds == NUM_ROUNDS
    env = sj.EpisodeStats(sj.make("ipd"))
    noisy = env.with_params(noise=0.2)
    assert isinstance(noisy, sj.EpisodeStats) and noisy is not env
    assert float(noisy.default_params.noise) == pytest.approx(0.2)
    assert float(env.default_params.noise) == 0.0


# --------------------------------------------------------------------------- JaxMARL
@pytest.fixture(scope="module")
def nplayer():
    return sj.make("nplayer_matrix", num_agents=3, num_rounds=NUM_ROUNDS)


@pytest.fixture(scope="module")
def adapter(nplayer):
    return sj.JaxMARLAdapter(sj.EpisodeStats(nplayer))


def test_adapter_api(adapter, nplayer):
    assert adapter.agents == ["agent_0", "agent_1", "agent_2"]
    assert adapter.num_agents == 3
    assert adapter.name == "nplayer_matrix"
    assert set(adapter.observation_spaces) == set(adapter.agents) == set(adapter.action_spaces)
    assert adapter.action_space("agent_1") == nplayer.action_space()
    assert adapter.observation_space("agent_2") == nplayer.observation_space()
    assert adapter.action_space().n == 2
    with pytest.raises(ValueError, match="unknown agent 'agent_3'"):
        adapter.observation_space("agent_3")
    avail = adapter.get_avail_actions(None)
    assert set(avail) == set(adapter.agents)
    chex.assert_shape(avail["agent_0"], (2,))


def test_adapter_round_trip_equals_array_api(adapter, nplayer):
    """The dict API returns exactly the array API's values, agent i under "agent_i"."""
    stats = sj.EpisodeStats(nplayer)
    num_envs = 8

    @jax.jit
    def both(key):
        keys = jax.random.split(key, 2 * NUM_ROUNDS + 1)
        obs_d, state_d = adapter.reset(keys[0])
        obs_a, state_a = stats.reset(keys[0])
        out = [(obs_d, obs_a)]
        for t in range(NUM_ROUNDS + 2):  # crosses an auto-reset
            actions = nplayer.sample_actions(jax.random.fold_in(keys[1], t))
            actions_d = {f"agent_{i}": actions[i] for i in range(3)}
            obs_d, state_d, rew_d, done_d, info_d = adapter.step(keys[t + 2], state_d, actions_d)
            obs_a, state_a, rew_a, done_a, info_a = stats.step(keys[t + 2], state_a, actions)
            out.append(((obs_d, rew_d, done_d, info_d), (obs_a, rew_a, done_a, info_a)))
        return out, (state_d, state_a)

    out, (state_d, state_a) = jax.device_get(jax.vmap(both)(jax.random.split(jax.random.key(3), num_envs)))
    agents = adapter.agents
    obs_d, obs_a = out[0]
    assert set(obs_d) == set(agents)
    for i, a in enumerate(agents):
        np.testing.assert_array_equal(obs_d[a], obs_a[:, i])
    saw_done = False
    for (obs_d, rew_d, done_d, info_d), (obs_a, rew_a, done_a, info_a) in out[1:]:
        assert set(obs_d) == set(rew_d) == set(agents)
        assert set(done_d) == set(agents) | {"__all__"}
        np.testing.assert_array_equal(done_d["__all__"], done_a)
        saw_done |= bool(done_a.any())
        for i, a in enumerate(agents):
            chex.assert_shape([obs_d[a], rew_d[a]], [(num_envs,) + nplayer.observation_space().shape, (num_envs,)])
            chex.assert_type(rew_d[a], np.float32)
            np.testing.assert_array_equal(obs_d[a], obs_a[:, i])
            np.testing.assert_array_equal(rew_d[a], rew_a[:, i])
            np.testing.assert_array_equal(done_d[a], done_a)
        # per-agent scalars only, each (N,) per env: JaxMARL baselines reshape them to (B * N,)
        per_agent = {k for k, v in info_a.items() if v.shape in [(num_envs,), (num_envs, 3)]}
        assert {"terminated", "truncated", "invalid_action", "returned_episode_returns"} <= per_agent
        assert set(info_d) == per_agent and "final_obs" in info_a
        for name in per_agent:
            value = info_a[name]
            expected = value if value.ndim == 2 else np.broadcast_to(value[:, None], (num_envs, 3))
            chex.assert_shape(info_d[name], (num_envs, 3), custom_message=name)
            np.testing.assert_array_equal(info_d[name], expected, err_msg=name)
    assert saw_done
    for a, b in zip(jax.tree_util.tree_leaves(state_d), jax.tree_util.tree_leaves(state_a)):
        np.testing.assert_array_equal(a, b)


def test_adapter_rejects_bad_action_dicts(adapter):
    _, state = adapter.reset(jax.random.key(0))
    with pytest.raises(ValueError, match=r"missing \['agent_2'\], unknown \[\]"):
        adapter.step(jax.random.key(1), state, {"agent_0": 0, "agent_1": 1})
    with pytest.raises(ValueError, match=r"unknown \['agent_9'\]"):
        adapter.step(jax.random.key(1), state, {"agent_0": 0, "agent_1": 1, "agent_2": 0, "agent_9": 0})
    with pytest.raises(TypeError, match="actions must be a dict"):
        adapter.step(jax.random.key(1), state, jnp.zeros((3,), jnp.int32))


def test_adapter_params(nplayer):
    adapter = sj.JaxMARLAdapter(nplayer, nplayer.default_params.replace(noise=jnp.float32(0.3)))
    assert float(adapter.params.noise) == pytest.approx(0.3)
    assert float(nplayer.default_params.noise) == 0.0  # the env's defaults are untouched
    changed = adapter.with_params(continue_prob=0.5)
    assert changed is not adapter and float(adapter.params.continue_prob) == 1.0
    assert float(changed.params.continue_prob) == 0.5 and float(changed.params.noise) == pytest.approx(0.3)
    with pytest.raises(ValueError, match=r"noise=1.5 is above its maximum"):
        adapter.with_params(noise=1.5)
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['nois'\]"):
        adapter.with_params(nois=0.1)


def test_adapter_runs_a_jaxmarl_style_rollout():
    """The loop of JaxMARL's IPPO baselines, unchanged: dict actions from a flat batch,
    vmapped step, info leaves reshaped to (num_actors,), dones["__all__"] tiled."""
    env = sj.JaxMARLAdapter(sj.EpisodeStats(sj.make("donor_game")))
    num_envs, num_actors = 4, 4 * env.num_agents

    def batchify(x: dict, agents, num_actors):
        return jnp.stack([x[a] for a in agents]).reshape((num_actors, -1))

    @jax.jit
    def run(key):
        obs, state = jax.vmap(env.reset)(jax.random.split(key, num_envs))

        def env_step(carry, key):
            obs, state = carry
            key_act, key_step = jax.random.split(key)
            obs_batch = batchify(obs, env.agents, num_actors)
            action = env.action_space(env.agents[0]).sample(key_act, (num_actors,))
            env_act = {a: action.reshape(env.num_agents, num_envs)[i] for i, a in enumerate(env.agents)}
            obs, state, reward, done, info = jax.vmap(env.step)(jax.random.split(key_step, num_envs), state, env_act)
            info = jax.tree_util.tree_map(lambda x: x.reshape((num_actors,)), info)
            global_done = jnp.tile(done["__all__"], env.num_agents)
            return (obs, state), (obs_batch, batchify(reward, env.agents, num_actors).squeeze(), global_done, info)

        return jax.lax.scan(env_step, (obs, state), jax.random.split(key, 30))[1]

    obs, reward, done, info = jax.device_get(run(jax.random.key(0)))
    chex.assert_shape(obs, (30, num_actors) + env.observation_space("agent_0").shape)
    chex.assert_shape([reward, done], (30, num_actors))
    assert done.any() and info["returned_episode"].any()
    np.testing.assert_array_equal(info["returned_episode"], done)


def test_adapter_full_info_passes_every_leaf(nplayer):
    env = sj.JaxMARLAdapter(nplayer, full_info=True)
    _, state = env.reset(jax.random.key(0))
    _, _, _, _, info = env.step(jax.random.key(1), state, {a: 0 for a in env.agents})
    chex.assert_shape([info["final_obs"], info["terminated"]], [(3,) + nplayer.observation_space().shape, (3,)])
