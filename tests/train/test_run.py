"""``sj.train.run``: the same seed gives the same bits whatever batch, grid or device
count it ran in; seeds given as a count or a list; bad seeds rejected.

Compilation dominates the run time, so the runs compared are the session fixture
``ipd_tft`` of tests/train/conftest.py (PPO vs TFT, 2 learning rates x 4 seeds, one
device) and two runs of the same config in one subprocess that fakes 8 CPU devices.
"""

import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

import socialjax as sj
from socialjax.train.run import run_keys

from conftest import IPD_ROUNDS, IPD_TFT, IPD_TFT_SEEDS, ipd_env

LONE_SEED = 1
LONE_LR = 3e-3

SHARDED = textwrap.dedent(
    """
    import sys
    import jax
    import numpy as np
    import socialjax as sj
    from socialjax.train import TrainConfig

    assert len(jax.devices()) == 8, jax.devices()
    config = eval(sys.argv[1], {{"TrainConfig": TrainConfig}})
    env = sj.make("ipd", num_rounds={rounds})
    out = {{}}
    for name, cfg, seeds, devices in (
        ("lone8", config.replace(lr={lr}), [{seed}], jax.devices()),  # 1 run, padded to 8 x 4
        ("batch2", config, [0, 1, 2], jax.devices()[:2]),  # 2 x 3 = 6 runs, padded to 2 x 4
    ):
        result = sj.train.run(env, cfg, seeds=seeds, devices=devices, progress=False)
        out.update({{f"{{name}}|metric|{{k}}": v for k, v in result.metrics.items()}})
        out.update({{f"{{name}}|state|{{i}}": np.asarray(x) for i, x in enumerate(jax.tree_util.tree_leaves(result.states))}})
        out[f"{{name}}|seeds"] = result.seeds
    np.savez(sys.argv[2], **out)
    """
)


@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    """Two runs in a subprocess with 8 fake CPU devices: ``lone8``, seed 1 at lr 3e-3
    alone (one seed, one-point grid) sharded over all 8 devices, and ``batch2``, the
    ``ipd_tft`` grid (lr 3e-3 and 1e30) for seeds 0..2 on 2 devices. Each is a dict with
    ``metrics``, ``states`` (leaves) and ``seeds``."""
    if jax.default_backend() != "cpu":
        pytest.skip("compares with this process's CPU results")
    path = tmp_path_factory.mktemp("sharded") / "runs.npz"
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"}
    code = SHARDED.format(rounds=IPD_ROUNDS, seed=LONE_SEED, lr=LONE_LR)
    done = subprocess.run([sys.executable, "-c", code, repr(IPD_TFT), str(path)], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    with np.load(path) as data:
        raw = {k: data[k] for k in data.files}
    out = {}
    for name in ("lone8", "batch2"):
        n_states = sum(k.startswith(f"{name}|state|") for k in raw)
        out[name] = {
            "metrics": {k.split("|", 2)[2]: v for k, v in raw.items() if k.startswith(f"{name}|metric|")},
            "states": [raw[f"{name}|state|{i}"] for i in range(n_states)],
            "seeds": raw[f"{name}|seeds"],
        }
    return out


def assert_same_run(a, b, index_a, index_b):
    """Run ``index_a`` of result ``a`` and ``index_b`` of ``b`` have the same bits."""
    assert a["metrics"].keys() == b["metrics"].keys()
    for k in a["metrics"]:
        np.testing.assert_array_equal(a["metrics"][k][index_a], b["metrics"][k][index_b], err_msg=k)
    assert len(a["states"]) == len(b["states"])
    for x, y in zip(a["states"], b["states"]):
        np.testing.assert_array_equal(x[index_a], y[index_b])


def test_a_seed_gives_the_same_bits_alone_on_eight_devices_or_in_a_batch_on_two(sharded):
    """Seed 1 at lr 3e-3 gives bit-identical metrics and trained states alone (one
    seed, one-point grid, the single run padded to fill 8 devices) and inside a batch of
    6 runs (3 seeds x 2 learning rates, half of them halted on NaN, padded to fill 2
    devices). Only the real runs come back from padded batches."""
    lone, batch = sharded["lone8"], sharded["batch2"]
    np.testing.assert_array_equal(lone["seeds"], [LONE_SEED])
    np.testing.assert_array_equal(batch["seeds"], [0, 1, 2])
    for k in lone["metrics"]:
        assert lone["metrics"][k].shape[:2] == (1, 1) and batch["metrics"][k].shape[:2] == (2, 3), k
    assert (batch["metrics"]["nan_update"][1] >= 0).all()  # the lr 1e30 neighbours did halt
    assert_same_run(lone, batch, (0, 0), (0, LONE_SEED))
    # another seed is another run, so the comparison above can fail
    rate = batch["metrics"]["reward_rate"][0]
    assert not np.array_equal(rate[0], rate[LONE_SEED])


@pytest.mark.xfail(strict=True, reason=(
    "known: a run sharded over 2+ devices differs in its last bits from the same run on 1 device, "
    "at the same number of runs per device. XLA optimises the single-partition program "
    "differently (measured: the 2-device program keeps 7 more divisions, e.g. in Adam's bias "
    "correction, that the 1-device one rewrites); passing the closed-over constants as "
    "arguments did not change it. 2 and 8 devices agree."
))
def test_a_run_gives_the_same_bits_on_one_device_as_on_two(ipd_tft, sharded):
    """The contract (DESIGN.md): the same bits however many devices a batch is sharded
    over, one device included: the ``ipd_tft`` batch on this process's single device
    against the same runs on 2 devices in the subprocess."""
    here = {"metrics": {k: v[:, :3] for k, v in ipd_tft.metrics.items()},
            "states": [np.asarray(x)[:, :3] for x in jax.tree_util.tree_leaves(ipd_tft.states)]}
    assert_same_run(here, sharded["batch2"], (slice(None),), (slice(None),))


def test_run_keys_depend_on_the_seed_alone():
    """A run's key is ``fold_in(key(base_seed), seed)``, whatever else is in the batch."""
    alone = jax.random.key_data(run_keys([3]))[0]
    batch = jax.random.key_data(run_keys([7, 0, 3, 5]))[2]
    np.testing.assert_array_equal(alone, batch)
    np.testing.assert_array_equal(alone, jax.random.key_data(jax.random.fold_in(jax.random.key(0), 3)))
    assert not np.array_equal(alone, jax.random.key_data(run_keys([3], base_seed=1))[0])


def test_seeds_as_a_count_and_results_on_grid_by_seed_axes(ipd_tft):
    """``seeds=4`` means seeds 0..3; results have leading axes ``(grid points, seeds)``
    and ``grid`` holds each point's values."""
    np.testing.assert_array_equal(ipd_tft.seeds, np.arange(IPD_TFT_SEEDS))
    assert ipd_tft.num_runs == 2 * IPD_TFT_SEEDS
    assert ipd_tft.metrics["reward_rate"].shape == (2, IPD_TFT_SEEDS, IPD_TFT.num_updates, 2)
    assert ipd_tft.metrics["nan_update"].shape == (2, IPD_TFT_SEEDS)
    np.testing.assert_array_equal(ipd_tft.grid["lr"], np.float32([3e-3, 1e30]))


@pytest.mark.parametrize("seeds", [[1, 1], [-1, 2], [], 0, [0.5], [[0, 1]]])
def test_bad_seeds_are_rejected(seeds):
    """Repeated, negative, missing, non-integer or nested seeds raise ``ValueError``
    before anything is compiled."""
    with pytest.raises(ValueError, match="seed"):
        sj.train.run(ipd_env(), IPD_TFT, seeds=seeds, progress=False)


def test_chunked_runs_give_the_same_bits_in_a_batch_of_64(ipd_tft):
    """``chunk=4``: 64 runs on one device (2 learning rates x 32 seeds), computed four at
    a time, give the same bits for seeds 0..3 as the 8-run ``ipd_tft`` batch. (Without
    ``chunk``, a 64-run vmap changed the learners' last bits: measured, see run.py.)"""
    big = sj.train.run(ipd_env(), IPD_TFT, seeds=32, progress=False, chunk=4)
    assert big.metrics["reward_rate"].shape[:2] == (2, 32)
    small = {"metrics": ipd_tft.metrics, "states": [np.asarray(x) for x in jax.tree_util.tree_leaves(ipd_tft.states)]}
    big = {"metrics": {k: v[:, :IPD_TFT_SEEDS] for k, v in big.metrics.items()},
           "states": [np.asarray(x)[:, :IPD_TFT_SEEDS] for x in jax.tree_util.tree_leaves(big.states)]}
    assert_same_run(small, big, (slice(None),), (slice(None),))


@pytest.mark.parametrize("chunk", [0, -4, 2.5, True])
def test_bad_chunk_is_rejected(chunk):
    with pytest.raises(ValueError, match="chunk"):
        sj.train.run(ipd_env(), IPD_TFT, seeds=4, progress=False, chunk=chunk)
