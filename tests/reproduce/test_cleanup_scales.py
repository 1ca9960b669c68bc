"""The cpu and gpu sizes of the Clean Up entries (socialjax.reproduce.cleanup_scales):
the configurations are valid, the small map keeps Cleanup's dilemma, and the gpu runs fit
their budget."""

import jax.numpy as jnp
import numpy as np
import pytest

import socialjax as sj
from socialjax.envs import cleanup as CU
from socialjax.envs.grid import constants as C
from socialjax.reproduce import get_entry
from socialjax.reproduce.cleanup_scales import (
    CPU_ENV_OPTIONS,
    GPU_BATCH,
    GPU_ENV_STEPS_PER_S,
    GPU_SEEDS,
    GPU_TRAIN_SECONDS,
)
from socialjax.reproduce.core import group_plans, merged_config
from socialjax.train import TrainConfig

ENTRIES = ("cleanup-reward", "schelling", "inequity-aversion")


def plans(entry, scale):
    out = []
    for cond in entry.conditions_at(scale):
        env = sj.make(cond.env[scale], **dict(cond.env_options[scale]))
        config = TrainConfig().replace(**dict(cond.config[scale]))
        config.validate()
        out.append((cond, env, config))
    return out


@pytest.mark.parametrize("name", ENTRIES)
def test_cpu_and_gpu_scales_build_and_the_gpu_runs_fit_five_minutes(name):
    entry = get_entry(name)
    assert {"cpu", "gpu"} <= set(entry.scales)
    for cond, env, _ in plans(entry, "cpu"):
        if name != "schelling":  # schelling's cpu scale is Harvest's (test_schelling.py)
            assert cond.env["cpu"] == "cleanup_ssd" and env.num_agents == CPU_ENV_OPTIONS["num_agents"]
    env_steps = 0
    for group in group_plans(plans(entry, "gpu"), "gpu"):
        grid = merged_config(group)
        points = int(np.prod([len(v) for v in grid.sweep_axes().values()])) if grid.sweep_axes() else 1
        assert grid.num_envs * grid.rollout_len == GPU_BATCH  # SocialJax's batch
        env_steps += points * entry.seeds["gpu"] * grid.num_updates * GPU_BATCH
    assert entry.seeds["gpu"] == GPU_SEEDS
    assert GPU_TRAIN_SECONDS * 0.8 <= env_steps / GPU_ENV_STEPS_PER_S <= GPU_TRAIN_SECONDS


def test_the_cpu_map_keeps_the_dilemma():
    """The river starts too dirty for apples; a clean river grows them at the full rate;
    and the river is at least three cells from the orchard, so a player cleans or eats."""
    env = sj.make("cleanup_ssd", **CPU_ENV_OPTIONS)
    params = env.default_params
    cells = jnp.asarray(env.map.cells)
    fraction = CU.dirt_fraction(cells, env.river_cells)
    assert fraction >= params.threshold
    assert CU.apple_probability(fraction, params.apple_rate, params.threshold) == 0
    clean = cells.at[env.river_cells[:, 0], env.river_cells[:, 1]].set(C.RIVER)
    assert CU.apple_probability(CU.dirt_fraction(clean, env.river_cells), params.apple_rate,
                                params.threshold) == pytest.approx(params.apple_rate)
    gap = env.apple_cells[:, 1].min() - env.river_cells[:, 1].max()
    assert gap >= 3, gap
