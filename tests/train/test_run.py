"""``sj.train.run``: the same seed gives the same bits whatever batch, grid or device
count it ran in; seeds given as a count or a list; bad seeds rejected; how runs are laid
out over devices; runs that do not fit a device's memory are chunked, and one that
cannot fit is refused before it runs.

Compilation dominates the run time, so the runs compared are the session fixture
``ipd_tft`` of tests/train/conftest.py (PPO vs TFT, 2 learning rates x 4 seeds, one
device), one lone run here, and one batch in a subprocess that fakes 8 CPU devices; the
memory-fitting logic is exercised on a toy program that compiles in a second.
"""

import functools
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from support import ON_CPU, assert_same, with_devices
from train_configs import IPD_ROUNDS, IPD_TFT, IPD_TFT_SEEDS, ipd_env

import socialjax as sj
from socialjax.train.devices import device_program, execute_blocks, lay_out, place_blocks
from socialjax.train.memory import MEMORY_HEADROOM, compile_fitting, fit_chunk
from socialjax.train.run import run_keys

LONE_SEED = 1
LONE_LR = 3e-3
SHARDED_SEEDS = 5  # 2 learning rates x 5 seeds = 10 runs in chunks of 8: blocks of 8 and 2 + 6 padding
# as wide as the ipd_tft batch (8 runs): bits are promised for the same width only (docs/testing.md); 4 and 8
# agree bit for bit under XLA's default CPU settings but not with the suite's fusion emitters off
CHUNK = 8

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
    result = sj.train.run(env, config, seeds={seeds}, devices=jax.devices(), progress=False, chunk={chunk})
    out = {{f"metric|{{k}}": v for k, v in result.metrics.items()}}
    out.update({{f"state|{{i}}": np.asarray(x) for i, x in enumerate(jax.tree_util.tree_leaves(result.states))}})
    out["seeds"] = result.seeds
    np.savez(sys.argv[2], **out)
    """
)


def as_run(result):
    """``{"metrics", "states" (leaves)}`` of a :class:`RunResult`."""
    return {"metrics": result.metrics, "states": [np.asarray(x) for x in jax.tree_util.tree_leaves(result.states)]}


@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    """The ``ipd_tft`` grid (lr 3e-3 and 1e30) for seeds 0..4, run in a subprocess with
    8 fake CPU devices in chunks of 8: 10 runs in blocks of 8 on devices 0 and 1, the
    last block padded. A dict with ``metrics``, ``states`` (leaves) and ``seeds``."""
    if jax.default_backend() != "cpu":
        pytest.skip("compares with this process's CPU results")
    path = tmp_path_factory.mktemp("sharded") / "runs.npz"
    env = {**os.environ, "XLA_FLAGS": with_devices(8), "JAX_PLATFORMS": "cpu"}
    code = SHARDED.format(rounds=IPD_ROUNDS, seeds=SHARDED_SEEDS, chunk=CHUNK)
    done = subprocess.run([sys.executable, "-c", code, repr(IPD_TFT), str(path)], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    with np.load(path) as data:
        raw = {k: data[k] for k in data.files}
    n_states = sum(k.startswith("state|") for k in raw)
    return {
        "metrics": {k.split("|", 1)[1]: v for k, v in raw.items() if k.startswith("metric|")},
        "states": [raw[f"state|{i}"] for i in range(n_states)],
        "seeds": raw["seeds"],
    }


@pytest.fixture(scope="module")
def lone():
    """Seed 1 at lr 3e-3 alone (one seed, one-point grid) on this process's one device,
    in a chunk of 8 (the run and seven copies of it)."""
    result = sj.train.run(ipd_env(), IPD_TFT.replace(lr=LONE_LR), seeds=[LONE_SEED], progress=False, chunk=CHUNK)
    assert (result.per_device, result.chunk) == (CHUNK, CHUNK)
    return as_run(result)


def assert_same_run(a, b, index_a, index_b):
    """Run ``index_a`` of result ``a`` and ``index_b`` of ``b`` have the same bits."""
    assert a["metrics"].keys() == b["metrics"].keys()
    for k in a["metrics"]:
        assert_same(a["metrics"][k][index_a], b["metrics"][k][index_b], err_msg=k)
    assert len(a["states"]) == len(b["states"])
    for x, y in zip(a["states"], b["states"]):
        assert_same(x[index_a], y[index_b])


@pytest.mark.slow
def test_a_seed_gives_the_same_bits_alone_on_one_device_or_in_a_batch_over_devices(lone, sharded):
    """With ``chunk=8``, seed 1 at lr 3e-3 gives bit-identical metrics and trained states
    alone on one device and inside a batch of 10 runs (5 seeds x 2 learning rates, half
    of them halted on NaN) spread over 2 of 8 devices. Only the real runs come back
    from padded batches."""
    np.testing.assert_array_equal(sharded["seeds"], np.arange(SHARDED_SEEDS))
    for k, v in sharded["metrics"].items():
        assert lone["metrics"][k].shape[:2] == (1, 1) and v.shape[:2] == (2, SHARDED_SEEDS), k
    assert (sharded["metrics"]["nan_update"][1] >= 0).all()  # the lr 1e30 neighbours did halt
    assert (sharded["metrics"]["nan_update"][0] < 0).all()
    assert_same_run(lone, sharded, (0, 0), (0, LONE_SEED))
    # another seed is another run, so the comparison above can fail
    rate = sharded["metrics"]["reward_rate"][0]
    assert not np.array_equal(rate[0], rate[LONE_SEED])


@pytest.mark.slow
def test_a_run_gives_the_same_bits_on_one_device_as_on_several(ipd_tft, sharded):
    """The same bits however many devices a batch is spread over, one device included:
    the ``ipd_tft`` batch (8 runs vmapped together on this process's single device)
    against the same runs among the 10 spread over 2 devices in chunks of 8 in the
    subprocess (the same width: the promise is for the same chunk size)."""
    assert_same_run(as_run(ipd_tft), sharded, (slice(None), slice(0, IPD_TFT_SEEDS)),
                    (slice(None), slice(0, IPD_TFT_SEEDS)))


class _Device:
    """Stands in for a ``jax.Device`` in layout tests: an id and a host."""

    def __init__(self, i, process=0):
        self.id, self.process_index = i, process


@pytest.mark.parametrize("runs, chunk, per_device, used", [
    (1, None, 1, 1),                # a lone run is computed once, on one device
    (10, None, 2, 5),               # 2 per device on 5 devices; devices 5..7 stay idle
    (3, None, 1, 3),                # one each on 3 devices
    (1, 4, 4, 1),                   # chunk=4 asked for: a chunk of 4 (the run and 3 copies)
    (64, None, 8, 8),               # 8 per device on all 8
    (65, None, 9, 8),               # 9 per device, 7 padding slots on the last
    (10, 4, 4, 3),                  # whole chunks
    (100, 4, 16, 7),                # 13 runs per device rounded up to whole chunks: 16
])
def test_runs_are_laid_out_in_equal_blocks_over_the_devices_that_hold_real_runs(runs, chunk, per_device, used):
    devices = [_Device(i) for i in range(8)]
    layout = lay_out(runs, devices, chunk)
    assert layout.per_device == per_device
    assert [d.id for d in layout.devices] == list(range(used))
    assert layout.padded == per_device * used >= runs
    index = layout.index
    np.testing.assert_array_equal(index[:runs], np.arange(runs))  # every real run once, in order
    assert (index[runs:] == runs - 1).all()  # padding repeats the last run
    assert layout.padded - runs < per_device  # no block is all padding


def test_over_several_hosts_every_device_gets_a_block_in_host_order():
    """Two hosts: each computes its own devices' blocks and the results are gathered in
    host order, so the blocks are ordered by host and every host holds as many."""
    devices = [_Device(0, 0), _Device(2, 1), _Device(1, 0), _Device(3, 1)]
    layout = lay_out(5, devices)
    assert [(d.process_index, d.id) for d in layout.devices] == [(0, 0), (0, 1), (1, 2), (1, 3)]
    assert layout.per_device == 2 and layout.padded == 8


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


@pytest.mark.slow
def test_chunked_runs_give_the_same_bits_in_a_batch_of_64(ipd_tft):
    """``chunk=8``: 64 runs on one device (2 learning rates x 32 seeds), computed eight at
    a time, give the same bits for seeds 0..3 as the 8-run ``ipd_tft`` batch. (Without
    ``chunk``, a 64-run vmap changed the learners' last bits: measured, see run.py.)"""
    big = sj.train.run(ipd_env(), IPD_TFT, seeds=32, progress=False, chunk=CHUNK)
    assert big.metrics["reward_rate"].shape[:2] == (2, 32)
    small = {"metrics": ipd_tft.metrics, "states": [np.asarray(x) for x in jax.tree_util.tree_leaves(ipd_tft.states)]}
    big = {"metrics": {k: v[:, :IPD_TFT_SEEDS] for k, v in big.metrics.items()},
           "states": [np.asarray(x)[:, :IPD_TFT_SEEDS] for x in jax.tree_util.tree_leaves(big.states)]}
    assert_same_run(small, big, (slice(None),), (slice(None),))


@pytest.mark.parametrize("chunk", [0, -4, 2.5, True])
def test_bad_chunk_is_rejected(chunk):
    with pytest.raises(ValueError, match="chunk"):
        sj.train.run(ipd_env(), IPD_TFT, seeds=4, progress=False, chunk=chunk)


class _Analysis:
    """Stands in for XLA's memory analysis in :func:`fit_chunk` tests."""

    def __init__(self, temp, args=0, out=0):
        self.temp_size_in_bytes, self.argument_size_in_bytes, self.output_size_in_bytes = temp, args, out
        self.alias_size_in_bytes = 0


@pytest.mark.parametrize("per_device, group, temp, fixed, budget, chunk", [
    (64, 64, 64_000, 1_000, 17_000, 16),  # 1,000 bytes a run: 16 fit, 4 chunks of 16
    (10, 10, 10_000, 0, 4_500, 4),        # 4 fit: 3 chunks, evened out to 4 (2 padding slots)
    (10, 10, 10_000, 0, 3_500, 3),        # 3 fit: 4 chunks, evened out to 3
    (8, 8, 8_000, 0, 1_500, 1),           # one at a time
    (8, 8, 8_000, 2_000, 2_500, 0),       # not even one run fits beside the inputs and results
    (8, 4, 8_000, 0, 5_000, 2),           # a chunked program's temporaries are per chunk (group)
])
def test_the_chunk_that_fits_is_the_largest_evened_out(per_device, group, temp, fixed, budget, chunk):
    assert fit_chunk(per_device, group, _Analysis(temp, args=fixed), budget) == chunk


def _toy_train(key, hparams):
    """A cheap program whose runs each need about 16 MiB of temporaries (a sorted
    2048 x 2048 float32 matrix, which XLA cannot fuse away)."""
    x = jax.random.uniform(key, (2048,))
    m = jnp.outer(x, x) + hparams["lr"]
    return jnp.sort(m, axis=0)[1024], x[:4]


def _toy_fit(runs, memory, chunk=None):
    keys, hparams = run_keys(np.arange(runs)), {"lr": np.full((runs,), 0.5, np.float32)}

    def block_args(layout):
        return place_blocks(layout, keys[layout.index], {k: v[layout.index] for k, v in hparams.items()})

    return compile_fitting(functools.partial(device_program, _toy_train), "the toy's matrix", runs,
                           jax.local_devices()[:1], chunk, memory, block_args)


@pytest.mark.slow
def test_runs_that_do_not_fit_the_device_are_chunked_with_the_same_results():
    """8 toy runs need about 128 MiB together; given 60 MiB they are computed 3 at a
    time (9 slots: 8 runs and one copy) and give the same numbers; given 20 MiB, one at
    a time. A program is never handed more than it fits."""
    whole = _toy_fit(8, None)
    assert whole.chunk is None and whole.layout.per_device == 8 and len(whole.compiles) == 1
    if ON_CPU:  # the CPU's memory analysis; other backends plan other scratch space
        assert whole.need > 100 * 2**20
    full = execute_blocks(whole.compiled, whole.args, whole.layout)
    for memory, expect in ((60 * 2**20, 3), (20 * 2**20, 1)):
        fit = _toy_fit(8, memory)
        assert fit.layout.per_device == -(-8 // fit.chunk) * fit.chunk
        assert len(fit.compiles) >= 2  # the whole batch was tried first
        if ON_CPU:
            assert fit.chunk == expect
        assert fit.need <= MEMORY_HEADROOM * memory
        fitted = execute_blocks(fit.compiled, fit.args, fit.layout)
        for a, b in zip(full, fitted):
            np.testing.assert_allclose(a, b[:8], rtol=1e-6)


def test_a_chunk_asked_for_that_does_not_fit_is_refused():
    with pytest.raises(MemoryError, match="chunk=8 .* smaller chunk"):
        _toy_fit(8, 60 * 2**20, chunk=8)


def test_runs_whose_states_alone_overflow_the_device_are_refused_at_once():
    """64 toy runs keep about 3 KB between calls (keys, hyperparameters, results): given
    1 KB, no chunk can help, and the refusal comes after the first compile, naming the
    runs' kept bytes and what to do."""
    with pytest.raises(MemoryError, match=r"the 64 runs of a device keep .* between calls.*fewer runs per call"):
        _toy_fit(64, 1000)


def test_a_run_too_big_for_the_device_is_refused_before_it_runs():
    """A lone run that needs more than the device holds raises ``MemoryError`` naming
    the sizes to reduce, after compiling and before running (a lone run is not padded:
    the message is about one run)."""
    with pytest.raises(MemoryError, match=r"one run of this config needs .*num_envs \(16\) x rollout_len \(20\)"):
        sj.train.run(ipd_env(), IPD_TFT.replace(lr=LONE_LR), seeds=[LONE_SEED], progress=False, memory=1000)


@pytest.mark.parametrize("memory", [0, -1, 2.5, True])
def test_bad_memory_is_rejected(memory):
    with pytest.raises(ValueError, match="memory"):
        sj.train.run(ipd_env(), IPD_TFT, seeds=4, progress=False, memory=memory)
