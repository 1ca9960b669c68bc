"""PettingZooAdapter: PettingZoo's own Parallel API test, determinism, episode end,
action checks, spaces, rendering, and rewards equal to the native environment's.

Each adapter is module-scoped, so its reset and step compile once for the file.
"""

import chex
import jax
import numpy as np
import pytest

import socialjax as sj

pytest.importorskip("pettingzoo")
from pettingzoo.test import parallel_api_test  # noqa: E402

from socialjax.core.pettingzoo import PettingZooAdapter  # noqa: E402

NUM_ROUNDS = 10
EPISODE_LENGTH = 12


@pytest.fixture(scope="module")
def ipd():
    return PettingZooAdapter(sj.make("ipd", num_rounds=NUM_ROUNDS), seed=0)


@pytest.fixture(scope="module")
def gathering():
    return PettingZooAdapter(sj.make("gathering", episode_length=EPISODE_LENGTH), seed=0, render_mode="rgb_array")


def random_actions(env, rng):
    return {a: int(rng.integers(env.action_space(a).n)) for a in env.agents}


def play(env, seed, action_seed):
    """One whole episode with numpy-random actions: lists of observations, actions,
    rewards, terminations and truncations (one entry per step)."""
    rng = np.random.default_rng(action_seed)
    obs, _ = env.reset(seed=seed)
    out = dict(obs=[obs], actions=[], rewards=[], terminations=[], truncations=[])
    while env.agents:
        actions = random_actions(env, rng)
        obs, rew, term, trunc, _ = env.step(actions)
        for name, value in zip(("obs", "actions", "rewards", "terminations", "truncations"),
                               (obs, actions, rew, term, trunc)):
            out[name].append(value)
    return out


def test_import_socialjax_does_not_import_pettingzoo():
    import subprocess
    import sys

    code = "import sys, socialjax; assert 'pettingzoo' not in sys.modules; assert 'gymnasium' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
    assert sj.core.PettingZooAdapter is PettingZooAdapter


@pytest.mark.parametrize("name", ["ipd", "gathering"])
def test_parallel_api(name, request):
    env = request.getfixturevalue(name)
    parallel_api_test(env, num_cycles=EPISODE_LENGTH + NUM_ROUNDS + 5)  # runs whole episodes


def test_agents_and_metadata(ipd, gathering):
    assert ipd.possible_agents == ["agent_0", "agent_1"]
    assert ipd.metadata["name"] == "ipd" and ipd.metadata["render_modes"] == ["human", "ansi"]
    assert gathering.metadata["render_modes"] == ["human", "rgb_array", "ansi"]


def test_reset_is_deterministic(gathering):
    a = play(gathering, seed=3, action_seed=1)
    b = play(gathering, seed=3, action_seed=1)
    for x, y in zip(a["obs"], b["obs"]):
        for agent in gathering.possible_agents:
            for k in x[agent]:
                np.testing.assert_array_equal(x[agent][k], y[agent][k])
    assert a["rewards"] == b["rewards"]


def test_episode_ends_with_empty_agents(ipd):
    run = play(ipd, seed=1, action_seed=2)
    assert ipd.agents == []
    last = [run["terminations"][-1][a] or run["truncations"][-1][a] for a in ipd.possible_agents]
    assert all(last)
    # no earlier step ended it
    assert not any(t[a] or u[a] for t, u in zip(run["terminations"][:-1], run["truncations"][:-1])
                   for a in ipd.possible_agents)
    assert len(run["rewards"]) <= NUM_ROUNDS
    with pytest.raises(RuntimeError, match="reset"):
        ipd.step({a: 0 for a in ipd.possible_agents})


@pytest.mark.parametrize(
    "actions, match",
    [
        ({"agent_0": 0}, "agent_1"),  # missing agent
        ({"agent_0": 0, "agent_1": 1, "agent_7": 0}, "agent_7"),  # unknown agent
        ({"agent_0": 0, "agent_1": 2}, "agent_1"),  # out of range
        ({"agent_0": -1, "agent_1": 0}, "-1"),
        ({"agent_0": 0.5, "agent_1": 0}, "0.5"),  # not an integer
        ({"agent_0": [0, 1], "agent_1": 0}, "agent_0"),  # wrong shape
    ],
)
def test_bad_actions_raise(ipd, actions, match):
    ipd.reset(seed=0)
    with pytest.raises(ValueError, match=match):
        ipd.step(actions)
    ipd.step({"agent_0": np.int64(1), "agent_1": np.array(0)})  # still usable; numpy ints are fine


def test_spaces_contain_observations(ipd, gathering):
    for env in (ipd, gathering):
        obs, _ = env.reset(seed=5)
        obs2, *_ = env.step({a: 0 for a in env.agents})
        for agent in env.possible_agents:
            space = env.observation_space(agent)
            assert space is env.observation_space(agent)
            assert env.action_space(agent) is env.action_space(agent)
            assert space.contains(obs[agent]) and space.contains(obs2[agent])
    assert isinstance(gathering.observation_space("agent_0"), __import__("gymnasium").spaces.Dict)
    with pytest.raises(ValueError, match="agent_9"):
        ipd.observation_space("agent_9")


def test_render(ipd, gathering):
    gathering.reset(seed=0)
    frame = gathering.render()
    native = sj.make("gathering", episode_length=EPISODE_LENGTH)
    _, state = native.reset(jax.random.split(jax.random.key(0))[1])
    chex.assert_type(frame, np.uint8)
    chex.assert_equal_shape([frame, native.render(state)])
    assert frame.ndim == 3 and frame.shape[-1] == 3
    with pytest.raises(RuntimeError, match="render_mode"):
        ipd.render()
    with pytest.raises(ValueError, match="rgb_array: the grid games only"):
        PettingZooAdapter(sj.make("ipd", num_rounds=NUM_ROUNDS), render_mode="rgb_array")


def test_ansi_and_human_render_the_last_step_as_text(capsys):
    """``ansi`` is a line naming the step and each agent's last action and reward;
    ``human`` prints it where there is no map to show (a matrix game, here) and
    returns None (what PettingZoo's render_test asks of it)."""
    text = PettingZooAdapter(sj.make("ipd", num_rounds=NUM_ROUNDS), seed=0, render_mode="ansi")
    text.reset(seed=0)
    assert text.render() == "ipd: reset, no step yet (2 agents)"
    _, rewards, *_ = text.step({"agent_0": 0, "agent_1": 1})
    line = text.render()
    assert line == (f"ipd step 1: agent_0 action 0 reward {rewards['agent_0']:.4g}; "
                    f"agent_1 action 1 reward {rewards['agent_1']:.4g}")
    human = PettingZooAdapter(sj.make("ipd", num_rounds=NUM_ROUNDS), seed=0, render_mode="human")
    human.reset(seed=0)
    human.step({"agent_0": 0, "agent_1": 1})
    capsys.readouterr()
    assert human.render() is None and capsys.readouterr().out.strip() == line


def test_human_shows_a_grid_games_map_in_a_window_where_matplotlib_has_one(monkeypatch):
    """A grid game's ``human`` frame goes to one matplotlib image, updated in place (here
    with the backend made to look interactive and the pause stubbed); the same map as
    ``rgb_array``."""
    plt = pytest.importorskip("matplotlib.pyplot")
    monkeypatch.setattr("socialjax.core.pettingzoo._window_backend", lambda: True)
    monkeypatch.setattr(plt, "pause", lambda seconds: None)
    env = PettingZooAdapter(sj.make("gathering", episode_length=EPISODE_LENGTH), seed=0, render_mode="human")
    env.reset(seed=0)
    assert env.render() is None
    image = env._shown
    env.step({a: 0 for a in env.agents})
    env.render()
    assert env._shown is image
    np.testing.assert_array_equal(np.asarray(image.get_array()), np.asarray(env._render_fn(env._state)))
    plt.close("all")


def agent_obs(obs, i):
    """Agent ``i``'s slice of a native observation, as numpy leaves."""
    return jax.tree_util.tree_map(lambda x: np.asarray(x[i]), obs)


def assert_tree_equal(a, b):
    leaves_a, tree_a = jax.tree_util.tree_flatten(a)
    leaves_b, tree_b = jax.tree_util.tree_flatten(b)
    assert tree_a == tree_b
    for x, y in zip(leaves_a, leaves_b):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("name, make", [
    ("ipd", lambda: sj.make("ipd", num_rounds=NUM_ROUNDS)),
    ("gathering", lambda: sj.make("gathering", episode_length=EPISODE_LENGTH)),
])
def test_rewards_match_native_env(name, make, request):
    """The adapter's key chain replayed on the native ``env.step`` with the same actions:
    the same rewards every step, and the same observations (the native last one is
    ``info["final_obs"]``, since the native step auto-resets)."""
    adapter = request.getfixturevalue(name)
    seed = 11
    run = play(adapter, seed=seed, action_seed=4)
    env = make()
    agents = adapter.possible_agents
    key, key_reset = jax.random.split(jax.random.key(seed))
    obs, state = env.reset(key_reset)
    assert_tree_equal(agent_obs(obs, 0), run["obs"][0]["agent_0"])
    step = jax.jit(env.step)
    native = []
    for t, actions in enumerate(run["actions"]):
        key, key_step = jax.random.split(key)
        obs, state, reward, done, info = step(key_step, state, np.array([actions[a] for a in agents], np.int32))
        native.append(np.asarray(reward))
        assert bool(done) == (t == len(run["actions"]) - 1)
        for i, agent in enumerate(agents):
            assert_tree_equal(agent_obs(info["final_obs"], i), run["obs"][t + 1][agent])
            assert run["rewards"][t][agent] == float(reward[i])
    returns = np.array([sum(r[a] for r in run["rewards"]) for a in agents])
    np.testing.assert_allclose(returns, np.sum(native, axis=0), rtol=0, atol=1e-5)
    if name == "ipd":
        assert returns.sum() > 0  # a non-trivial comparison (gathering's short episode may have none)
