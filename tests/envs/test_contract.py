"""The environment contract (README.md, "The environment contract"), checked for every
registered environment with :func:`socialjax.testing.check_env` (the checks a user can
run on an environment of their own), plus what :class:`~socialjax.EpisodeStats` adds.

``check_env`` runs each environment as a jitted, vmapped random-action rollout (module-
scoped, so it compiles once per env), with the params passed as a traced argument of
the jitted function, and once more alone (the determinism check: a second compiled
program). Compilation is most of this file's time (a grid game's step takes seconds to
compile on a CPU), so the tests below read the trajectory ``check_env`` returns.
"""

import jax
import numpy as np
import pytest

import socialjax as sj
from socialjax.core import registry
from socialjax.testing import check_env

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
    return check_env(env, key=KEY, num_envs=NUM_ENVS, num_steps=NUM_STEPS, alone=first_of_its_class(env.name))


def test_check_env(env, traj):
    """The contract holds: check_env (in the fixture) raised nothing."""
    assert traj.done.shape == (NUM_ENVS, NUM_STEPS)
    assert traj.reward.shape == (NUM_ENVS, NUM_STEPS, env.num_agents)


def test_the_key_matters(traj):
    assert not np.array_equal(traj.actions[0], traj.actions[1])


def test_episode_stats_counts_episodes(traj):
    """EpisodeStats counts the episodes: +1 exactly on the steps with done."""
    done = traj.done
    np.testing.assert_array_equal(traj.info["episode_count"], np.cumsum(done, axis=1))
    np.testing.assert_array_equal(traj.info["returned_episode"], done)
