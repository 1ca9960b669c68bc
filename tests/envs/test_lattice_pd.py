"""Lattice prisoner's dilemma: payoffs, the periodic neighbourhood, observations, episode
length, bad input. The rules of a step are checked with and without jit
(``chex.variants``)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from socialjax.envs.institutions.lattice_pd import (
    OBS_EAST,
    OBS_NORTH,
    OBS_SELF,
    OBS_SOUTH,
    OBS_WEST,
    LatticePD,
    LatticePDParams,
    neighbour_actions,
)

L = 4  # 16 agents: small, and every cell of row/column 0 and 3 is on an edge
DR = 0.25


ENV = LatticePD(size=L, episode_length=3)
# one bound method each: the jitted variants compile once for the module
RESET, STEP = ENV.reset, ENV.step


def params():
    return ENV.default_params.replace(dilemma_strength=jnp.float32(DR))


def cell(r, c):
    return r * L + c


def play(step, grid):
    """One step from a fresh reset with the ``(L, L)`` action grid; returns the outputs."""
    obs, state = ENV.reset(jax.random.key(0), params())
    actions = jnp.asarray(np.asarray(grid, np.int32).reshape(-1))
    return step(jax.random.key(1), state, actions, params())


def test_neighbours_wrap_around_edges_and_corners():
    labels = jnp.arange(L * L)
    nb = np.asarray(neighbour_actions(labels, L))
    # corner (0, 0): north wraps to row 3, west wraps to column 3
    assert list(nb[cell(0, 0)]) == [cell(3, 0), cell(0, 1), cell(1, 0), cell(0, 3)]
    # corner (3, 3): south wraps to row 0, east wraps to column 0
    assert list(nb[cell(3, 3)]) == [cell(2, 3), cell(3, 0), cell(0, 3), cell(3, 2)]
    # edge (0, 2) and interior (1, 2)
    assert list(nb[cell(0, 2)]) == [cell(3, 2), cell(0, 3), cell(1, 2), cell(0, 1)]
    assert list(nb[cell(1, 2)]) == [cell(0, 2), cell(1, 3), cell(2, 2), cell(1, 1)]
    # every cell is the neighbour of exactly 4 cells (a 4-regular torus)
    np.testing.assert_array_equal(np.bincount(nb.reshape(-1), minlength=L * L), 4)


class StepRules(chex.TestCase):
    """Payoffs, observations, the episode's end and out-of-range actions of a step, with
    and without jit."""

    @chex.variants(with_jit=True, without_jit=True)
    def test_uniform_populations(self):
        step = self.variant(STEP)
        _, _, reward, _, _ = play(step, np.zeros((L, L)))
        np.testing.assert_allclose(reward, 1.0)  # R
        _, _, reward, _, _ = play(step, np.ones((L, L)))
        np.testing.assert_allclose(reward, 0.0)  # P

    @chex.variants(with_jit=True, without_jit=True)
    def test_single_defector_in_the_corner(self):
        grid = np.zeros((L, L), np.int32)
        grid[0, 0] = 1
        _, _, reward, _, info = play(self.variant(STEP), grid)
        chex.assert_type(reward, jnp.float32)
        reward = np.asarray(reward).reshape(L, L)
        np.testing.assert_allclose(reward[0, 0], 1 + DR, rtol=1e-6)  # T against 4 cooperators
        sucker = (3 * 1.0 - DR) / 4  # 3 R and one S
        for r, c in [(0, 1), (1, 0), (0, 3), (3, 0)]:  # two of them only through the wrap-around
            np.testing.assert_allclose(reward[r, c], sucker, rtol=1e-6)
        others = np.ones((L, L), bool)
        others[[0, 0, 1, 0, 3], [0, 1, 0, 3, 0]] = False
        np.testing.assert_allclose(reward[others], 1.0)
        assert int(np.asarray(info["cooperated"]).sum()) == L * L - 1

    @chex.variants(with_jit=True, without_jit=True)
    def test_checkerboard_and_stripes(self):
        step = self.variant(STEP)
        checker = np.indices((L, L)).sum(0) % 2
        _, _, reward, _, _ = play(step, checker)
        reward = np.asarray(reward).reshape(L, L)
        # on an even torus every neighbour of a C is a D and vice versa
        np.testing.assert_allclose(reward[checker == 0], -DR, rtol=1e-6)  # S
        np.testing.assert_allclose(reward[checker == 1], 1 + DR, rtol=1e-6)  # T
        stripes = np.zeros((L, L), np.int32)
        stripes[:, 1] = 1  # a column of defectors: each has C to the east and west, D north/south
        _, _, reward, _, _ = play(step, stripes)
        reward = np.asarray(reward).reshape(L, L)
        np.testing.assert_allclose(reward[:, 1], (2 * (1 + DR) + 2 * 0.0) / 4, rtol=1e-6)
        np.testing.assert_allclose(reward[:, 0], (3 * 1.0 - DR) / 4, rtol=1e-6)
        np.testing.assert_allclose(reward[:, 2], (3 * 1.0 - DR) / 4, rtol=1e-6)
        np.testing.assert_allclose(reward[:, 3], 1.0, rtol=1e-6)

    @chex.variants(with_jit=True, without_jit=True)
    def test_observation_bits(self):
        obs0, _ = self.variant(RESET)(jax.random.key(0), params())
        chex.assert_shape(obs0, (L * L, 5))
        chex.assert_type(obs0, jnp.int32)
        assert not np.asarray(obs0).any()  # before the first step: everyone "cooperated"
        grid = np.zeros((L, L), np.int32)
        grid[0, 0] = 1
        grid[2, 1] = 1
        obs, _, _, _, _ = play(self.variant(STEP), grid)
        obs = np.asarray(obs)
        assert list(obs[cell(0, 0)]) == [0, 0, 0, 0, 1]  # own D only
        assert obs[cell(1, 0), OBS_NORTH] == 1 and obs[cell(1, 0)].sum() == 1
        assert obs[cell(0, 1), OBS_WEST] == 1 and obs[cell(0, 1)].sum() == 1
        assert obs[cell(3, 0), OBS_SOUTH] == 1 and obs[cell(3, 0)].sum() == 1  # through the wrap
        assert obs[cell(0, 3), OBS_EAST] == 1 and obs[cell(0, 3)].sum() == 1  # through the wrap
        assert obs[cell(2, 1), OBS_SELF] == 1
        assert obs[cell(2, 2), OBS_WEST] == 1 and obs[cell(2, 0), OBS_EAST] == 1
        assert obs[cell(1, 1), OBS_SOUTH] == 1 and obs[cell(3, 1), OBS_NORTH] == 1
        assert obs.sum() == 2 * 5  # each defector is seen by itself and its 4 neighbours

    @chex.variants(with_jit=True, without_jit=True)
    def test_episode_truncates_and_resets(self):
        step = self.variant(STEP)
        obs, state = ENV.reset(jax.random.key(0), params())
        ones = jnp.ones(L * L, jnp.int32)
        dones = []
        for t in range(ENV.episode_length):
            obs, state, reward, done, info = step(jax.random.key(t), state, ones, params())
            dones.append(bool(done))
            assert not bool(info["terminated"])
            assert bool(info["truncated"]) == (t == ENV.episode_length - 1)
        assert dones == [False] * (ENV.episode_length - 1) + [True]
        assert int(state.step) == 0 and not np.asarray(obs).any()  # auto-reset
        assert np.asarray(info["final_obs"]).all()  # the last real observation: all defected

    @chex.variants(with_jit=True, without_jit=True)
    def test_out_of_range_actions_defect(self):
        _, state = ENV.reset(jax.random.key(0), params())
        actions = jnp.zeros(L * L, jnp.int32).at[5].set(7).at[6].set(-1)
        _, _, _, _, info = self.variant(STEP)(jax.random.key(1), state, actions, params())
        invalid = np.asarray(info["invalid_action"])
        assert invalid[[5, 6]].all() and invalid.sum() == 2
        coop = np.asarray(info["cooperated"])
        assert not coop[[5, 6]].any() and coop.sum() == L * L - 2


def test_initial_defect_prob():
    p = ENV.default_params.replace(initial_defect_prob=jnp.float32(1.0))
    obs, _ = ENV.reset(jax.random.key(0), p)
    assert np.asarray(obs).all()


def test_dilemma_strength_vmaps():
    grid = np.zeros(L * L, np.int32)
    grid[0] = 1
    _, state = ENV.reset(jax.random.key(0), params())
    drs = jnp.array([0.1, 0.4], jnp.float32)

    def reward_at(dr):
        p = params().replace(dilemma_strength=dr)
        return ENV.step(jax.random.key(1), state, jnp.asarray(grid), p)[2]

    rewards = np.asarray(jax.jit(jax.vmap(reward_at))(drs))
    np.testing.assert_allclose(rewards[:, 0], [1.1, 1.4], rtol=1e-6)


def test_bad_input():
    with pytest.raises(ValueError, match="size"):
        LatticePD(size=2)
    with pytest.raises(ValueError, match="episode_length"):
        LatticePD(size=3, episode_length=0)
    env = LatticePD(size=3)
    assert env.num_agents == 9
    with pytest.raises(ValueError, match="dilemma_strength"):
        env.with_params(dilemma_strength=1.5)
    with pytest.raises(ValueError, match="dilemma_strength"):
        env.with_params(dilemma_strength=-0.1)
    with pytest.raises(ValueError, match="initial_defect_prob"):
        env.with_params(initial_defect_prob=1.2)
    with pytest.raises(ValueError, match="R > P"):
        env.with_params(reward=0.0)
    _, state = env.reset(jax.random.key(0))
    with pytest.raises(ValueError, match="shape"):
        env.step(jax.random.key(0), state, jnp.zeros(8, jnp.int32))
    with pytest.raises(TypeError, match="integers"):
        env.step(jax.random.key(0), state, jnp.zeros(9, jnp.float32))
    assert isinstance(env.default_params, LatticePDParams)
