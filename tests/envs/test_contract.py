"""The environment contract (README.md, "The environment contract"), checked for every
registered environment with :func:`socialjax.testing.check_env` (the checks a user can
run on an environment of their own), plus what :class:`~socialjax.EpisodeStats` adds.

``check_env`` runs each environment as a jitted, vmapped random-action rollout (module-
scoped, so it compiles once per env), with the params passed as a traced argument of
the jitted function, and once more alone (the determinism check: a second compiled
program). Compilation is most of this file's time (a grid game's step takes seconds to
compile on a CPU), so the tests below read the trajectory ``check_env`` returns.

Its part 4, reset and steps called without jit, is left out here (``eager_steps=0``):
eager calls dispatch every operation on its own, about 90 s for the grid games on the
2-core CPU. :class:`WithAndWithoutJit` (slow tier) checks the same of every environment
with ``chex.variants``.
"""

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from absl.testing import parameterized

import socialjax as sj
from socialjax.core import registry
from socialjax.rollout import rollout_keys
from socialjax.testing import assert_trees_same, check_env, rollout

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
    "prisoners_dilemma_in_the_matrix": {"variant": "repeated", "episode": "fixed", "episode_length": 25},
    "stag_hunt_in_the_matrix": {"num_agents": 3, "episode": "fixed", "episode_length": 25},
    "chicken_in_the_matrix": {"variant": "repeated", "episode": "fixed", "episode_length": 25},
    "coop_mining": {"num_agents": 3, "episode": "fixed", "episode_length": 25},
    "coins": {"width": 6, "height": 6, "episode": "fixed", "episode_length": 25},
    "mushrooms": {"num_agents": 3, "episode": "fixed", "episode_length": 25},
    "gift_refinements": {"num_agents": 3, "episode": "fixed", "episode_length": 25},
    "territory_open": {"num_agents": 3, "episode": "fixed", "episode_length": 25},
    "territory_rooms": {"num_agents": 3, "episode": "fixed", "episode_length": 25},
    "partner_punishment": {"num_rounds": 2, "third_party_punishment": True},  # 1 + 5 games x 2 rounds x 2 steps
    "partner_punishment_one_action": {"num_rounds": 2},  # 1 + 5 games x 2 rounds x 2 steps
    "commons": {"num_agents": 3, "episode_length": 12, "monitoring": True, "sanctions": "pot", "quota_vote": True},
    "commons_govsim": {},  # 12 rounds (fewer if it collapses)
    "commons_ostrom": {"num_agents": 3, "episode_length": 10},
    "indirect_reciprocity": {"num_agents": 6, "episode_length": 25},
    "lattice_pd": {"size": 4, "episode_length": 25},
    "public_goods": {"num_periods": 5},
    "public_goods_punishment": {"num_agents": 8, "matching": "stranger", "num_periods": 5},  # 10 steps
    "public_goods_punishment_2000": {"num_periods": 5},  # 10 steps
    "public_goods_standard_punishment": {"num_agents": 8, "matching": "stranger", "num_periods": 5},  # 10 steps
    "public_goods_sequential": {"num_agents": 8, "matching": "stranger", "num_periods": 5},  # 20 steps
}
NUM_STEPS = 60  # covers at least two whole episodes of every env above
NUM_ENVS = 4
KEY = jax.random.key(42)


@pytest.fixture(scope="module", params=sj.registered_envs())
def env(request) -> sj.EpisodeStats:
    name = request.param
    assert name in ENV_OPTIONS, f"add small static options for {name!r} to ENV_OPTIONS"
    return sj.EpisodeStats(sj.make(name, **ENV_OPTIONS[name]))


def first_of_its_class(name: str) -> bool:
    """Whether ``name`` is the first registered name of its environment class: the
    comparison with a run alone (a second compilation) is made once per class (the
    other names of a class differ in map or preset, not in how the step batches)."""
    target = registry.env_target
    return next(n for n in sj.registered_envs() if target(n) == target(name)) == name


@pytest.fixture(scope="module")
def traj(env):
    """``(B, T, ...)`` leaves: the NUM_ENVS random-action rollouts check_env checked
    (shapes and dtypes against the spaces, info keys, observations in the space, auto-
    reset, out-of-range actions flagged, determinism; see its docstring)."""
    return check_env(env, key=KEY, num_envs=NUM_ENVS, num_steps=NUM_STEPS, alone=first_of_its_class(env.name),
                     eager_steps=0)


def test_check_env(env, traj):
    """The contract holds: check_env (in the fixture) raised nothing."""
    chex.assert_shape([traj.done, traj.reward], [(NUM_ENVS, NUM_STEPS), (NUM_ENVS, NUM_STEPS, env.num_agents)])


def test_the_key_matters(traj):
    assert not np.array_equal(traj.actions[0], traj.actions[1])


def test_episode_stats_counts_episodes(traj):
    """EpisodeStats counts the episodes: +1 exactly on the steps with done."""
    done = traj.done
    np.testing.assert_array_equal(traj.info["episode_count"], np.cumsum(done, axis=1))
    np.testing.assert_array_equal(traj.info["returned_episode"], done)


# --------------------------------------------------------------------------- with and without jit
EAGER_STEPS = 3


@functools.cache
def jitted_rollout(name: str):
    """``(env, params, key_reset, key_step, actions, traj)``: the library's rollout of
    ``name`` (one ``lax.scan``), jitted, EAGER_STEPS random steps, its leaves numpy."""
    env = sj.make(name, **ENV_OPTIONS[name])
    params = env.default_params
    key_reset, key_act, key_step = rollout_keys(KEY, EAGER_STEPS)
    actions = jax.vmap(lambda k: env.sample_actions(k, params))(key_act)
    traj = jax.jit(lambda p: rollout(env, KEY, EAGER_STEPS, params=p, actions=actions))(params)
    return env, params, key_reset, key_step, actions, as_numpy(traj)


def as_numpy(tree):
    """Numpy leaves; a key as its data."""
    data = lambda x: jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x  # noqa: E731
    return jax.device_get(jax.tree_util.tree_map(data, tree))


def at(tree, index):
    return jax.tree_util.tree_map(lambda x: x[index], tree)


@pytest.mark.slow
class WithAndWithoutJit(chex.TestCase):
    """Every registered environment's ``reset`` and first steps, called with and without
    ``jit`` (``chex.variants``), give the library's jitted rollout with the same keys and
    actions: integer and bool leaves equal, floats within ``socialjax.testing``'s ``RTOL``
    and ``ATOL`` (a
    compiled program may fuse arithmetic, e.g. ``c - a * b`` into one multiply-add, that
    op-by-op calls round in between). check_env's part 4, for every environment; in the
    slow tier for its time (the eager calls and the compilations, about 90 s each)."""

    @chex.variants(with_jit=True, without_jit=True)
    @parameterized.named_parameters(*((name, name) for name in sj.registered_envs()))
    def test_reset_and_steps(self, name):
        env, params, key_reset, key_step, actions, traj = jitted_rollout(name)
        reset, step = self.variant(env.reset), self.variant(env.step)
        got = [reset(key_reset, params)]
        for t in range(EAGER_STEPS):
            got.append(step(key_step[t], got[-1][1], actions[t], params))
        want = [(at(traj.obs, 0), at(traj.state, 0))] + [
            (at(traj.obs, t + 1), at(traj.state, t + 1), traj.reward[t], traj.done[t], at(traj.info, t))
            for t in range(EAGER_STEPS)
        ]
        assert_trees_same(as_numpy(got), want, exact=False)
