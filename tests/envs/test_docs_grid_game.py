"""The minimal grid game that docs/gridworlds.md ("Adding a grid game") shows runs and
keeps the environment contract, so the example a user copies works."""

import pathlib
import re

import jax
import numpy as np

from socialjax.envs.grid import constants as C
from socialjax.testing import check_env, rollout

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "gridworlds.md"


def _example_module() -> dict:
    section = DOC.read_text().split("## Adding a grid game", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    namespace: dict = {}
    exec(compile(code, str(DOC), "exec"), namespace)
    return namespace


def test_the_documented_grid_game_keeps_the_contract_and_regrows_apples():
    ns = _example_module()
    env = ns["Orchard"](num_agents=2, episode_length=10)
    check_env(env, key=jax.random.key(0), num_envs=2, num_steps=25)
    # with certain regrowth every empty apple cell is full again after the world update
    params = env.default_params.replace(regrowth=1.0)
    traj = rollout(env, jax.random.key(1), 9, params=params)
    cells = np.asarray(traj.state.cells)
    assert not np.any(cells == C.APPLE_CELL)
    # without regrowth the apples only go: the count falls by exactly what was eaten
    env = ns["Orchard"](num_agents=2, episode_length=100)
    traj = rollout(env, jax.random.key(1), 99, params=env.default_params.replace(regrowth=0.0))
    apples = np.sum(np.asarray(traj.state.cells) == C.APPLE, axis=(1, 2))
    eaten = np.asarray(traj.reward).sum(axis=1)
    np.testing.assert_array_equal(apples[:-1] - apples[1:], eaten)
    assert apples[0] == 5 and eaten.sum() > 0
