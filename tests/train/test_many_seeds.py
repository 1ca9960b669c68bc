"""Many seeds on one device: no program vmapped over members, learners, seeds or grid
points contains a grouped convolution, whatever ``conv`` says; a device's runs beyond
what it gains from computing together go in chunks that are separate calls of one
program, so that what is compiled does not grow with the seeds; chunked runs keep the
bits of the same runs computed alone in a chunk of that size.

The programs are lowered, not compiled (a lowering takes about two seconds; compiling
would take ten times longer), and the convolutions are read off the HLO text: what XLA
receives, before any of its passes.
"""

import re

import jax
import numpy as np
import pytest
from support import assert_same
from train_configs import IPD_TFT, ipd_env

import socialjax as sj
from socialjax.agents.convolution import MAP_MEMBERS
from socialjax.agents.networks import CONVS
from socialjax.train import make_train, run_keys
from socialjax.train.devices import device_program, lay_out
from socialjax.train.engine import INIT, stage
from socialjax.train.memory import MOST_TOGETHER, first_chunk
from socialjax.train.run import PopulationJob

# three independent CNN learners (harvest-ippo-small's network) on a small batch: the
# shape of the program, not its size, decides what the convolutions become
HARVEST = dict(seating="independent", num_envs=2, rollout_len=8, num_updates=1, update_epochs=1,
               num_minibatches=2, hidden=16, channels=4, embed_dim=2, eval_envs=2, eval_steps=4, log_every=0)
# (conv, seeds): every implementation at 2 and 8 seeds (XLA's maps at most MAP_MEMBERS members
# one by one), XLA's at 12 too (batched products over the patches); "auto" is resolved to
# one of them before a network is built
CASES = [(conv, seeds) for conv in CONVS if conv != "auto" for seeds in (2, 8)] + [("xla", MAP_MEMBERS + 4)]
GROUPED = re.compile(r"(feature|batch)_group_count=(\d+)")


def lowered_stages(conv: str, seeds: int, algo: str = "ppo") -> dict[str, str]:
    """Each stage's program of ``seeds`` runs as the engine builds it, lowered to HLO text."""
    env = sj.make("harvest_open", num_agents=3, episode="fixed", episode_length=50)
    config = sj.train.TrainConfig(**HARVEST, conv=conv, algo=algo).without_unread()
    job = PopulationJob(make_train(env, config))
    hparams = {k: np.repeat(v, seeds) for k, v in job.hparam_grid().items()}
    keys = run_keys(np.arange(seeds))
    init = device_program(stage(job, *INIT), seeds, shared=1)
    state = jax.eval_shape(init, keys, hparams, np.int32(0))[0]
    out = {}
    for name, st in (("init", INIT), ("update", (False, 1, False)), ("finish", (False, 0, True))):
        program = device_program(stage(job, *st), seeds, shared=1)
        out[name] = program.lower(keys if st[0] else state, hparams, np.int32(0)).as_text(dialect="hlo")
    return out


def grouped_convolutions(text: str) -> list[str]:
    return [m.group(0) for m in GROUPED.finditer(text) if int(m.group(2)) > 1]


@pytest.mark.parametrize("conv, seeds", CASES)
def test_no_program_of_many_runs_holds_a_grouped_convolution(conv, seeds):
    """Every stage of ``seeds`` runs x 3 learners (each learner and run its own kernels)
    with every ``conv``: no ``feature_group_count`` or ``batch_group_count`` above 1.
    The looped and XLA convolutions still run XLA's convolution where they map members
    one after another (the check is not passed by having no convolution at all)."""
    stages = lowered_stages(conv, seeds)
    for name, text in stages.items():
        assert not grouped_convolutions(text), f"{name} of {seeds} runs with conv={conv}"
    convolutions = sum(text.count(" convolution(") for text in stages.values())
    if conv == "patch":
        assert convolutions == 0
    elif conv == "looped" or seeds <= MAP_MEMBERS:
        assert convolutions > 0


def test_a_shared_q_network_of_many_runs_holds_no_grouped_convolution():
    """DQN's Q-network goes through the same layer: 12 runs x 3 learners, XLA's convolution."""
    for name, text in lowered_stages("xla", MAP_MEMBERS + 4, algo="dqn").items():
        assert not grouped_convolutions(text), name


@pytest.mark.parametrize("runs, devices, chunk", [
    (4, 1, None),      # few runs: together
    (16, 1, None),     # the CPU's most together
    (17, 1, 9),        # beyond it: two chunks, evened out (9 + 8 and one padding slot)
    (1024, 1, 16),     # 64 chunks of 16
    (1000, 1, 16),     # 63 chunks of 16 (1008 slots)
    (20, 2, None),     # 10 runs per device
    (40, 2, 10),       # 20 runs per device: 2 chunks of 10 on each
])
def test_the_first_chunk_tried_keeps_at_most_the_platforms_most_together(runs, devices, chunk):
    cpus = [_Cpu(i) for i in range(devices)]
    assert first_chunk(runs, cpus) == chunk
    if chunk is not None:
        assert chunk <= MOST_TOGETHER["cpu"]
        layout = lay_out(runs, cpus, chunk)
        assert layout.padded - runs < chunk * devices  # less than a chunk of padding per device
        assert layout.blocks_per_device == layout.per_device // chunk


def test_other_platforms_compute_all_of_a_devices_runs_together():
    assert first_chunk(1024, [_Cpu(0, platform="gpu")]) is None


def test_a_devices_blocks_run_in_order_over_its_slots():
    layout = lay_out(10, [_Cpu(0), _Cpu(1)], 3)  # 5 runs per device, in chunks of 3: 6 slots each
    assert (layout.per_device, layout.block, layout.blocks_per_device) == (6, 3, 2)
    parts = [(d.id, p.start, p.stop) for d, p in layout.local_blocks()]
    assert parts == [(0, 0, 3), (0, 3, 6), (1, 6, 9), (1, 9, 12)]


def test_runs_beyond_the_most_together_are_chunked_and_keep_the_bits_of_that_chunk():
    """20 IPD runs on the CPU (one learning rate x 20 seeds) go in 2 chunks of 10; the last
    10 seeds, run by themselves in a chunk of 10, give the same bits, and the summary
    names each stage's compile time."""
    config = IPD_TFT.replace(lr=3e-3, num_updates=3)
    many = sj.train.run(ipd_env(), config, seeds=20, progress=False)
    if jax.default_backend() != "cpu":
        pytest.skip("the chunk tried first is the CPU's")
    assert (many.chunk, many.per_device) == (10, 20)
    assert list(many.compile_times) == ["init", "1 update", "finish"]  # one program each, one update per call
    assert all(len(t) == 1 for t in many.compile_times.values())
    last = sj.train.run(ipd_env(), config, seeds=list(range(10, 20)), progress=False, chunk=10)
    for k in many.metrics:
        assert_same(many.metrics[k][:, 10:], last.metrics[k], err_msg=k)


class _Cpu:
    """Stands in for a ``jax.Device`` in layout tests."""

    def __init__(self, i, process=0, platform="cpu"):
        self.id, self.process_index, self.platform = i, process, platform
