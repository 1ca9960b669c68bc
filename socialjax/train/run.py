"""Many runs in one call: seeds x hyperparameter grid, vmapped and spread over devices.

    result = sj.train.run(env, config, seeds=64)

runs ``train`` for every (grid point, seed) pair. The runs are cut into equal blocks,
one per device, and every device runs the same single-device program
``jit(vmap(train))`` on its block (compiled once per device, in parallel threads, and
dispatched asynchronously, so the devices run at the same time). Each run's key is
``fold_in(key(base_seed), seed)``: it depends on the seed alone, never on the run's
position in the batch.

Bits. Every device compiles exactly the program a single device would, so a run gives
the same bits on one device or spread over eight (tests/train/test_run.py checks 1 vs
3 of 8 fake CPU devices). An earlier version used ``jit(shard_map(vmap(train)))``: XLA
then optimises the one-device program (JAX inlines the body) differently from the
partitioned one (it rewrites ``x / constant`` as ``x * (1 / constant)`` in one and not
the other), and 1 vs 2+ devices differed in the last bits. Within a device, XLA
compiles a vmapped program differently for different batch sizes, and the float
results can differ in their last bits. Measured on CPU (PPO vs TFT in the IPD): a run's
bits were the same at 4, 5, 6 and 8 runs per device, but its learner parameters
differed at 64 runs per device (its social metrics already at 16), and batches of one
to three differ again. So each device gets at least four runs (a lone run is padded),
and ``chunk=k`` computes the runs ``k`` at a time on each device (``lax.map`` over
vmapped chunks; the per-device count is padded to a multiple of ``k``): every chunk is
then the same program, and a run gives the same bits alone or in a batch of a
thousand (checked at 4, 16 and 64 runs per device). ``chunk`` costs speed where a wide
vmap pays (GPUs); leave it ``None`` for throughput. A batch that does not fill its
blocks is padded with copies of its last run; the copies are dropped from the result.
Devices that would hold only padding are left idle.

Several processes (hosts). Call ``jax.distributed.initialize(...)`` in every process
before anything else touches JAX, then make the same ``run(...)`` call in every process.
``devices`` defaults to ``jax.devices()``, every device of every process, and every
device in the list gets a block (blocks ordered by process, then device id). Each
process compiles and computes only its own devices' blocks, and the results are
gathered onto every process with ``multihost_utils.process_allgather``, so every process
returns the full :class:`RunResult`; progress lines are printed by process 0 alone and
count only its own runs. The devices must span all the processes, as many of each
(the gather is a collective over all of them). A run gives the same bits as in one
process with the same number of runs per device: tests/train/test_multiprocess.py runs
2 local CPU processes (a localhost coordinator, gloo collectives, JAX's CPU default)
against 1 process with 2 devices. It has not been run on separate machines.
``socialjax train --coordinator HOST:PORT --num-processes N --process-id I`` does this
from the command line (process 0 alone writes the results).
"""

from __future__ import annotations

import collections
import dataclasses
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from socialjax.train.config import TrainConfig
from socialjax.train.population import make_train
from socialjax.train.progress import Progress


MIN_PER_DEVICE = 4


@dataclasses.dataclass
class RunResult:
    """Results of :func:`run`, every array with leading axes ``(G, S)``: grid point, seed.

    ``metrics``: numpy arrays (see :func:`socialjax.train.make_train`); ``states``: the
    trained :class:`~socialjax.train.population.TrainState` (numpy leaves);
    ``grid``: ``{hyperparameter: (G,)}``; ``seeds``: ``(S,)``; ``nan_runs``: a line per
    run whose learning halted on a non-finite loss; ``seconds``: wall time of the call,
    compilation included; ``compile_seconds``: the part spent compiling."""

    config: TrainConfig
    env_name: str
    seeds: np.ndarray
    grid: dict[str, np.ndarray]
    metrics: dict[str, np.ndarray]
    states: Any
    nan_runs: list[str]
    seconds: float
    compile_seconds: float = 0.0

    @property
    def num_runs(self) -> int:
        return int(len(self.seeds) * len(next(iter(self.grid.values()))))


def run_keys(seeds: Sequence[int], base_seed: int = 0) -> jax.Array:
    """One key per seed: ``fold_in(key(base_seed), seed)``."""
    base = jax.random.key(base_seed)
    return jax.vmap(lambda s: jax.random.fold_in(base, s))(jnp.asarray(seeds, jnp.uint32))


def run(
    env,
    config: TrainConfig,
    seeds: int | Sequence[int] = 1,
    *,
    params=None,
    base_seed: int = 0,
    devices: Sequence[jax.Device] | None = None,
    progress: bool | Progress = True,
    label: str = "",
    chunk: int | None = None,
) -> RunResult:
    """Train ``len(grid) x len(seeds)`` runs in one call: equal blocks of runs, one per
    device, each device running the same compiled single-device program.

    ``chunk``: compute the runs this many at a time on each device, so that a run's bits
    do not depend on the batch it ran in (see the module docstring); ``None`` (default)
    vmaps over all of a device's runs at once, the fastest.

    ``devices``: where the runs go (default: ``jax.devices()``, which is this process's
    devices unless ``jax.distributed`` joined several processes; see the module docstring)."""

    seeds = np.arange(seeds) if isinstance(seeds, (int, np.integer)) else np.asarray(list(seeds))
    if seeds.ndim != 1 or seeds.size == 0 or not np.issubdtype(seeds.dtype, np.integer) or np.any(seeds < 0):
        raise ValueError(f"seeds must be a positive count or a list of non-negative ints, got {seeds!r}")
    if len(set(seeds.tolist())) != len(seeds):
        raise ValueError("seeds must be distinct (a repeated seed repeats the same run)")
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1):
        raise ValueError(f"chunk must be a positive int or None, got {chunk!r}")
    config.validate()
    grid = config.hparam_grid()
    G, S = len(next(iter(grid.values()))), len(seeds)
    R = G * S
    devices = list(devices) if devices is not None else jax.devices()
    if not devices:
        raise ValueError("devices must name at least one device")
    layout = lay_out(R, devices, chunk)
    run_seeds = np.tile(seeds, G)[layout.index]
    run_grid = {k: np.repeat(v, S)[layout.index] for k, v in grid.items()}

    if isinstance(progress, Progress):
        prog = progress
    elif progress and config.log_every:
        prog = Progress(config.num_updates, layout.local_slots, label=label, format_line=_line)
    else:
        prog = None
    train = make_train(env, config, params=params, progress=prog)
    program = device_program(train, chunk)
    keys = run_keys(run_seeds, base_seed)
    hparams = {k: np.asarray(v) for k, v in run_grid.items()}
    start = time.perf_counter()
    compiled, inputs = compile_blocks(program, layout, keys, hparams)
    compile_seconds = time.perf_counter() - start
    states, metrics = execute_blocks(compiled, inputs, layout)
    metrics = jax.tree_util.tree_map(lambda x: x[:R].reshape(G, S, *x.shape[1:]), metrics)
    states = jax.tree_util.tree_map(lambda x: x[:R].reshape(G, S, *x.shape[1:]), states)
    seconds = time.perf_counter() - start
    nan_runs = []
    for g in range(G):
        for s in range(S):
            u = int(metrics["nan_update"][g, s])
            if u >= 0:
                point = ", ".join(f"{k}={grid[k][g]:g}" for k in config.sweep_axes())
                where = f"grid point {g} ({point}), " if point else ""
                nan_runs.append(
                    f"{where}seed {int(seeds[s])}: non-finite loss at update {u} "
                    f"(learner {int(metrics['nan_member'][g, s])}); its updates stopped there"
                )
    name = getattr(env, "name", None) or type(getattr(env, "unwrapped", env)).__name__
    return RunResult(config, str(name), seeds, grid, metrics, states, nan_runs, seconds, compile_seconds)



@dataclasses.dataclass(frozen=True)
class Layout:
    """How ``num_runs`` runs are cut into equal blocks, one per used device.

    ``per_device`` runs per block; ``devices`` the devices used, in block order;
    ``index`` ``(padded,)``: the run each slot computes (padding repeats the last run)."""

    num_runs: int
    per_device: int
    devices: tuple

    @property
    def padded(self) -> int:
        return self.per_device * len(self.devices)

    @property
    def local_slots(self) -> int:
        """Slots computed by this process (all of them in a single process)."""
        return self.per_device * sum(d.process_index == jax.process_index() for d in self.devices)

    @property
    def index(self) -> np.ndarray:
        return np.minimum(np.arange(self.padded), self.num_runs - 1)


def lay_out(num_runs: int, devices: Sequence[jax.Device], chunk: int | None = None) -> Layout:
    """Blocks of at least :data:`MIN_PER_DEVICE` runs (whole chunks with ``chunk``),
    spread over as many of ``devices`` as hold a real run. Over several hosts every
    device gets a block (each host must hold the same number of blocks to gather)."""
    D = len(devices)
    if chunk is None:
        # XLA compiles batches of one to three differently (a batch of one is squeezed;
        # 2 and 3 gave other bits than 4+ on CPU)
        per_device = max(-(-num_runs // D), MIN_PER_DEVICE)
    else:  # every chunk is the same program, whatever its size; pad to whole chunks
        per_device = -(-num_runs // (D * chunk)) * chunk
    if _multihost(devices):
        used = tuple(sorted(devices, key=lambda d: (d.process_index, d.id)))
    else:
        used = tuple(devices[: -(-num_runs // per_device)])
    return Layout(num_runs, per_device, used)


def device_program(train: Callable, chunk: int | None = None) -> Callable:
    """What one device runs on its block of ``keys (B,)`` and ``hparams``
    (``{name: (B,)}``): ``jit(vmap(train))``, or with ``chunk`` a ``lax.map`` over
    vmapped chunks of ``chunk`` runs."""
    if chunk is None:
        return jax.jit(jax.vmap(train))
    return jax.jit(lambda keys, hp: jax.lax.map(lambda args: train(*args), (keys, hp), batch_size=chunk))


def compile_blocks(program: Callable, layout: Layout, keys: jax.Array, hparams: dict[str, np.ndarray]):
    """Put each of this host's blocks on its device and compile ``program`` there (one
    compile per device, in parallel threads: the same HLO everywhere, so the same bits).
    Returns the compiled programs and their inputs, for this host's devices only."""
    B = layout.per_device
    here = jax.process_index()
    blocks = []
    for i, device in enumerate(layout.devices):
        if device.process_index != here:
            continue
        part = slice(i * B, (i + 1) * B)
        args = (jax.device_put(keys[part], device), {k: jax.device_put(v[part], device) for k, v in hparams.items()})
        blocks.append(args)
    lowered = [program.lower(*args) for args in blocks]  # tracing is shared; lowering is cheap
    with ThreadPoolExecutor(len(lowered)) as pool:
        return list(pool.map(lambda low: low.compile(), lowered)), blocks


def execute_blocks(compiled: list, inputs: list, layout: Layout):
    """Dispatch every block (asynchronously, so the devices run together), then gather
    ``(states, metrics)`` as numpy arrays over all ``layout.padded`` slots. When the
    layout spans several processes, every process gathers every process's slots
    (``process_allgather``, a collective that all of them must enter: over gloo on CPU)."""
    outs = [fn(*args) for fn, args in zip(compiled, inputs)]
    local = jax.tree_util.tree_map(lambda *xs: np.concatenate([np.asarray(x) for x in xs]), *outs)
    if not _multihost(layout.devices):
        return local
    from jax.experimental import multihost_utils

    # (processes, local slots, ...) in process order, which is the block order
    gathered = multihost_utils.process_allgather(local, tiled=False)
    return jax.tree_util.tree_map(lambda x: np.asarray(x).reshape(-1, *x.shape[2:]), gathered)


def _multihost(devices: Sequence[jax.Device]) -> bool:
    """Whether ``devices`` span several processes. Raises ``ValueError`` for a list that
    this process cannot run: none of its own devices, or (across processes) not every
    process, or not as many devices of each (the results are gathered by a collective
    over all the processes, each contributing the same number of blocks)."""
    counts = collections.Counter(d.process_index for d in devices)
    if len(counts) == 1:
        if jax.process_index() not in counts:
            raise ValueError(f"devices holds none of this process's devices (process {jax.process_index()}); "
                             "pass devices of this process, or of every process (jax.devices())")
        return False
    missing = sorted(set(range(jax.process_count())) - set(counts)) if jax.process_count() > 1 else []
    if missing or len(set(counts.values())) > 1:
        per_process = ", ".join(f"process {p}: {n}" for p, n in sorted(counts.items()))
        raise ValueError(f"devices spread over several processes must include every process, as many devices "
                         f"of each (got {per_process}{f'; none of {missing}' if missing else ''}); "
                         "pass jax.devices()")
    return True


def _line(step: int, values: dict[str, np.ndarray]) -> str:
    ret = values["ret"][np.isfinite(values["ret"])]  # NaN in runs where no episode ended this update
    return f"reward/step {np.nanmean(values['reward']):.3f}  return {f'{ret.mean():.3f}' if ret.size else '-'}"
