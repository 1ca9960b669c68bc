"""Many runs in one compiled call: seeds x hyperparameter grid, vmapped and sharded.

    result = sj.train.run(env, config, seeds=64)

runs ``train`` for every (grid point, seed) pair as one ``jit(vmap(train))`` call whose
batch axis is sharded over a ``jax.sharding.Mesh`` of all local devices. Each run's key is
``fold_in(key(base_seed), seed)``: it depends on the seed alone, never on the run's
position in the batch.

Bits. XLA compiles a vmapped program differently for different batch sizes, and the
float results can differ in their last bits. Measured on CPU (PPO vs TFT in the IPD): a
run's bits were the same at 4, 5, 6 and 8 runs per device, but its learner parameters
differed at 64 runs per device (its social metrics already at 16), and batches of one
to three differ again. So each device gets at least four runs (a lone run is padded),
and ``chunk=k`` computes the runs ``k`` at a time on each device (``lax.map`` over
vmapped chunks; the per-device count is padded to a multiple of ``k``): every chunk is
then the same program, and a run gives the same bits alone or in a batch of a
thousand (checked at 4, 16 and 64 runs per device). ``chunk`` costs speed where a wide
vmap pays (GPUs); leave it ``None`` for throughput. Across device counts: the same on 2
and 8 devices, but a 1-device mesh differs from 2+ devices in the last bits (XLA
optimises the single-partition program differently: other divisions are rewritten;
tests/train/test_run.py holds it as a strict xfail). A batch that does not divide over
the devices is padded with copies of its last run; the copies are dropped from the
result.

Across hosts, call ``jax.distributed.initialize()`` first (before any other JAX call) on
every host and pass ``devices=jax.devices()``: the mesh then spans all hosts' devices,
and each host must run the same program (the standard JAX multi-controller model).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

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
    """Train ``len(grid) x len(seeds)`` runs in one compiled, sharded call.

    ``chunk``: compute the runs this many at a time on each device, so that a run's bits
    do not depend on the batch it ran in (see the module docstring); ``None`` (default)
    vmaps over all of a device's runs at once, the fastest."""
    import time

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
    devices = list(devices) if devices is not None else jax.local_devices()
    D = len(devices)
    # at least MIN_PER_DEVICE runs per device: XLA compiles batches of one to three
    # differently (a batch of one is squeezed; 2 and 3 gave other bits than 4+ on CPU)
    if chunk is None:
        per_device = max(-(-R // D), MIN_PER_DEVICE)
    else:  # every chunk is the same program, whatever its size; pad to whole chunks
        chunk = int(chunk)
        per_device = -(-R // (D * chunk)) * chunk
    padded = per_device * D
    index = np.minimum(np.arange(padded), R - 1)  # pad with copies of the last run
    run_seeds = np.tile(seeds, G)[index]
    run_grid = {k: np.repeat(v, S)[index] for k, v in grid.items()}

    if isinstance(progress, Progress):
        prog = progress
    elif progress and config.log_every:
        prog = Progress(config.num_updates, padded, label=label, format_line=_line)
    else:
        prog = None
    train = make_train(env, config, params=params, progress=prog)

    mesh = Mesh(np.asarray(devices), ("runs",))
    shard = NamedSharding(mesh, PartitionSpec("runs"))
    keys = jax.device_put(run_keys(run_seeds, base_seed), shard)
    hparams = {k: jax.device_put(jnp.asarray(v), shard) for k, v in run_grid.items()}
    # shard_map, not automatic partitioning: every device runs exactly the single-device
    # program on its slice of runs, so the floating-point bits do not depend on the mesh
    spec = PartitionSpec("runs")
    if chunk is None:
        per_device_fn = jax.vmap(train)
    else:
        def per_device_fn(keys, hparams):  # chunk runs at a time: the same program for every chunk
            return jax.lax.map(lambda args: train(*args), (keys, hparams), batch_size=chunk)
    batched = jax.jit(jax.shard_map(per_device_fn, mesh=mesh, in_specs=(spec, spec), out_specs=spec, check_vma=False))
    start = time.perf_counter()
    compiled = batched.lower(keys, hparams).compile()
    compile_seconds = time.perf_counter() - start
    states, metrics = compiled(keys, hparams)
    metrics = jax.tree_util.tree_map(lambda x: np.asarray(x)[:R].reshape(G, S, *x.shape[1:]), metrics)
    states = jax.tree_util.tree_map(lambda x: np.asarray(x)[:R].reshape(G, S, *x.shape[1:]), states)
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


def _line(step: int, values: dict[str, np.ndarray]) -> str:
    ret = values["ret"][np.isfinite(values["ret"])]  # NaN in runs where no episode ended this update
    return f"reward/step {np.nanmean(values['reward']):.3f}  return {f'{ret.mean():.3f}' if ret.size else '-'}"
