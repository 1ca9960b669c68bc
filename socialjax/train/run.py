"""Many runs in one call: seeds x hyperparameter grid, vmapped and spread over devices.

    result = sj.train.run(env, config, seeds=64)

runs ``train`` for every (grid point, seed) pair. The runs are cut into equal blocks,
one per device, and every device runs the same single-device programs on its block:
``jit(vmap(f))`` of the run's stages ``train.init``, ``train.updates`` (all updates, or
segments of ``segment`` updates) and ``train.finish`` (a lone run unbatched), compiled
once per device, in parallel threads, and dispatched asynchronously, so the devices run
at the same time. Between segments the runs can be saved (``on_segment``) and resumed
(``resume``) with the same bits as a run never cut: init and finish are always calls of
their own, and update ``i`` draws its key from the run's key and ``i`` alone. Each run's key is
``fold_in(key(base_seed), seed)``: it depends on the seed alone, never on the run's
position in the batch.

Bits. Every device compiles exactly the program a single device would, so a run gives
the same bits on one device or spread over eight (tests/train/test_run.py checks 1 vs 3
of 8 fake CPU devices). Within a device, XLA compiles a vmapped program differently for
different batch sizes, so float results can differ in their last bits from one batch
size to another (docs/training.md, "Many runs, many devices", gives the measurements,
and why one sharded program over all devices was not kept). So a run's bits are fixed by
its seed, its config, the backend and the number of runs computed together on a device:
``chunk=k`` computes a device's runs ``k`` at a time (``lax.map`` over vmapped chunks;
the per-device count is padded to a multiple of ``k``), every chunk is then the same
program, and a run gives the same bits alone or in a batch of a thousand (checked at 4,
16 and 64 runs per device). ``chunk`` costs speed where a wide vmap pays (GPUs); leave
it ``None`` for throughput. :class:`RunResult` records ``per_device`` and ``chunk``, so
a run can be recomputed to the bit. Runs are not padded beyond equal blocks (a lone run
is computed once), and a batch that does not fill its blocks is padded with copies of
its last run, which are dropped from the result. Devices that would hold only padding
are left idle.

Memory. Before running, the compiled program's memory analysis is compared with what a
device can hold (its allocator's limit on GPUs and TPUs, the physical memory on the
CPU: a property of the device, not of the moment, so the same machine makes the same
choice). When the runs of a device do not fit, they are computed in chunks that do
(the largest chunk that fits, evened out so that padding is smallest); when one run
does not fit, a ``MemoryError`` names the sizes to reduce, before anything has run.

Several processes (hosts). Call ``jax.distributed.initialize(...)`` in every process
before anything else touches JAX, then make the same ``run(...)`` call in every process.
``devices`` defaults to ``jax.devices()``, every device of every process, and every
device in the list gets a block (blocks ordered by process, then device id). Each
process compiles and computes only its own devices' blocks, and the results are
gathered onto every process with ``multihost_utils.process_allgather``, so every process
returns the full :class:`RunResult`; progress lines are printed by process 0 alone, over
every process's runs. The devices must span all the processes, as many of each
(the gather is a collective over all of them). A run gives the same bits as in one
process with the same number of runs per device: tests/train/test_multiprocess.py runs
2 local CPU processes (a localhost coordinator, gloo collectives, JAX's CPU default)
against 1 process with 2 devices. It has not been run on separate machines.
``socialjax train --coordinator HOST:PORT --num-processes N --process-id I`` does this
from the command line (process 0 alone writes the results).

Arguments of :func:`run` beyond the environment, config and seeds:

- ``chunk``: compute the runs this many at a time on each device, so that a run's bits
  do not depend on the batch it ran in (see "Bits"); ``None`` (default) vmaps over all
  of a device's runs at once, the fastest, and falls back to the largest chunk that fits
  when they do not fit in memory together.
- ``memory``: bytes a device may use (default: what the device holds, see
  :func:`~socialjax.train.memory.device_memory`); a program that needs more is chunked,
  or refused with a ``MemoryError`` when one run alone needs more.
- ``segment``: updates per compiled call (default: ``config.log_every`` when progress
  lines are printed, all of them in one otherwise; the segmenting never changes a run's
  bits). After every segment but the last, ``on_segment(snapshot)`` receives a
  :class:`Snapshot` of the runs (their complete state and the metrics so far, on the
  host): save it, and ``run(..., resume=snapshot)`` continues from it with the same bits
  as a run that was never stopped (same config, seeds, segment and runs per device). A
  first Ctrl-C stops the runs at the end of the segment under way (after
  ``on_segment``) by raising :class:`Interrupted`, which holds that snapshot; a second
  stops at once (:mod:`socialjax.train.interrupts`).
- ``progress``: print a line after every segment (every ``config.log_every`` updates
  unless ``segment`` is given) with the runs' mean reward per step and return at that
  update; ``False`` prints nothing; a :class:`~socialjax.train.progress.Progress` prints
  through it. The lines are printed between the compiled calls, not from inside them:
  JAX never caches a program that calls the host.
- ``devices``: where the runs go (default: ``jax.devices()``, which is this process's
  devices unless ``jax.distributed`` joined several processes; see above).
- ``compile_cache``: ``True`` (default) turns JAX's persistent compilation cache on, in
  the folder ``SOCIALJAX_COMPILATION_CACHE`` chooses (``~/.cache/socialjax/jax-cache``
  unless set; ``0`` turns it off), so that a rerun reads its programs from disk instead
  of compiling them; a path puts the cache there; ``False`` leaves JAX's settings as
  they are. See :mod:`socialjax.train.compilation`.

The pieces: :mod:`socialjax.train.devices` (blocks of runs on devices),
:mod:`socialjax.train.memory` (fitting them into a device's memory),
:mod:`socialjax.train.interrupts` (Ctrl-C between segments).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
import warnings
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from socialjax.train.compilation import enable_cache
from socialjax.train.config import TrainConfig
from socialjax.train.devices import (Layout, compile_blocks, device_program, dispatch, hp_device, multihost,
                                     on_device, place_blocks, put_state, take_state)
from socialjax.train.interrupts import interrupts
from socialjax.train.memory import compile_fitting
from socialjax.train.population import make_train
from socialjax.train.progress import Progress


@dataclasses.dataclass
class RunResult:
    """Results of :func:`run`, every array with leading axes ``(G, S)``: grid point, seed.

    ``metrics``: numpy arrays (see :func:`socialjax.train.make_train`); ``states``: the
    trained :class:`~socialjax.train.population.TrainState` (numpy leaves);
    ``grid``: ``{hyperparameter: (G,)}``; ``seeds``: ``(S,)``; ``nan_runs``: a line per
    run whose learning halted on a non-finite loss; ``seconds``: wall time of the call,
    compilation included; ``compile_seconds``: the part spent compiling;
    ``per_device``: runs computed on each device (padding included); ``chunk``: runs
    computed together within a device (``None``: all ``per_device`` at once), which with
    the seed, config and backend fixes a run's bits; ``memory_bytes``: what the compiled
    per-device program needs (XLA's memory analysis)."""

    config: TrainConfig
    env_name: str
    seeds: np.ndarray
    grid: dict[str, np.ndarray]
    metrics: dict[str, np.ndarray]
    states: Any
    nan_runs: list[str]
    seconds: float
    compile_seconds: float = 0.0
    per_device: int = 1
    chunk: int | None = None
    memory_bytes: int = 0

    @property
    def num_runs(self) -> int:
        return int(len(self.seeds) * len(next(iter(self.grid.values()))))

    def point(self, g: int, config: TrainConfig | None = None) -> "RunResult":
        """Grid point ``g`` alone (leading axes ``(1, S)``), as if run by itself with
        ``config`` (default: this result's config)."""
        take = lambda x: np.asarray(x)[g:g + 1]  # noqa: E731
        return dataclasses.replace(
            self, config=self.config if config is None else config, grid={k: take(v) for k, v in self.grid.items()},
            metrics={k: take(v) for k, v in self.metrics.items()}, states=jax.tree_util.tree_map(take, self.states),
            nan_runs=[line for line in self.nan_runs if f"grid point {g} " in line or "grid point" not in line],
        )


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
    memory: int | None = None,
    segment: int | None = None,
    on_segment: Callable[[Snapshot], None] | None = None,
    resume: Snapshot | None = None,
    compile_cache: bool | str | os.PathLike = True,
) -> RunResult:
    """Train ``len(grid) x len(seeds)`` runs in one call: equal blocks of runs, one per
    device, each device running the same compiled single-device program; in segments of
    ``segment`` updates, with a :class:`Snapshot` to ``on_segment`` after each, and from
    ``resume`` when given. The other arguments are described in the module docstring."""
    seeds = _checked_seeds(seeds)
    _check_counts(chunk=chunk, memory=memory, segment=segment)
    config.validate()
    grid = config.hparam_grid()
    G, S = len(next(iter(grid.values()))), len(seeds)
    U = config.num_updates
    chunk, done = _resume_point(resume, U, chunk)
    devices = list(devices) if devices is not None else jax.devices()
    if not devices:
        raise ValueError("devices must name at least one device")
    if compile_cache is not False:
        enable_cache(None if compile_cache is True else compile_cache)
    prog = _progress(progress, config, label)
    K = _segment_length(segment, config, prog)
    train = make_train(env, config, params=params)
    start = time.perf_counter()
    keys = run_keys(np.tile(seeds, G), base_seed)
    run_hparams = {k: np.repeat(v, S) for k, v in grid.items()}
    plan = stages(done, U, K, fresh=resume is None)
    blocks = compile_stages(train, config, plan, keys, run_hparams, done, devices, chunk, memory, resume)
    if resume is None:
        xs, metrics_so_far = blocks.keys, []
    else:
        xs, metrics_so_far = put_state(resume.state, blocks.layout), [resume.metrics]
    compile_seconds = time.perf_counter() - start
    final, metrics = run_segments(blocks, plan, xs, done, metrics_so_far, U, prog, train.plan.num_learners,
                                  on_segment)
    metrics = jax.tree_util.tree_map(lambda x: x.reshape(G, S, *x.shape[1:]), metrics)
    states = jax.tree_util.tree_map(lambda x: x.reshape(G, S, *x.shape[1:]), final)
    seconds = time.perf_counter() - start
    nan_runs = _nan_runs(metrics, grid, config, seeds)
    return RunResult(config, _env_name(env), seeds, grid, metrics, states, nan_runs, seconds, compile_seconds,
                     blocks.layout.per_device, blocks.chunk, blocks.memory_bytes)


def _checked_seeds(seeds: int | Sequence[int]) -> np.ndarray:
    """``seeds`` as a ``(S,)`` array of distinct non-negative ints (a count ``n``: ``0..n-1``)."""
    seeds = np.arange(seeds) if isinstance(seeds, (int, np.integer)) else np.asarray(list(seeds))
    if seeds.ndim != 1 or seeds.size == 0 or not np.issubdtype(seeds.dtype, np.integer) or np.any(seeds < 0):
        raise ValueError(f"seeds must be a positive count or a list of non-negative ints, got {seeds!r}")
    if len(set(seeds.tolist())) != len(seeds):
        raise ValueError("seeds must be distinct (a repeated seed repeats the same run)")
    return seeds


def _check_counts(**counts: int | None) -> None:
    for name, value in counts.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1):
            raise ValueError(f"{name} must be a positive int or None, got {value!r}")


def _resume_point(resume: Snapshot | None, num_updates: int, chunk: int | None) -> tuple[int | None, int]:
    """``(chunk, updates done)`` to start from: the snapshot's, checked, when resuming."""
    if resume is None:
        return chunk, 0
    if not 0 < resume.updates_done < num_updates:
        raise ValueError(f"the snapshot has {resume.updates_done} of {num_updates} updates done: nothing to resume")
    if chunk is not None and chunk != resume.chunk:
        raise ValueError(f"the snapshot's runs were computed with chunk={resume.chunk}; resume with the same")
    return resume.chunk, resume.updates_done


def _progress(progress: bool | Progress, config: TrainConfig, label: str) -> Progress | None:
    """Where the progress lines go (``None``: nowhere)."""
    if isinstance(progress, Progress):
        return progress
    if progress and config.log_every:
        return Progress(config.num_updates, label=label, format_line=_line)
    return None


def _segment_length(segment: int | None, config: TrainConfig, prog: Progress | None) -> int:
    """Updates per compiled call: ``segment`` when given; with progress lines, they come
    between segments of ``log_every`` updates; otherwise all of them in one."""
    U = config.num_updates
    if segment is not None:
        return min(int(segment), U)
    return min(max(int(config.log_every), 1), U) if prog is not None else U


def _nan_runs(metrics: dict[str, np.ndarray], grid: dict[str, np.ndarray], config: TrainConfig,
              seeds: np.ndarray) -> list[str]:
    """A line per run whose learning halted on a non-finite loss (``metrics``: ``(G, S, ...)``)."""
    G, S = metrics["nan_update"].shape[:2]
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
    return nan_runs


def _env_name(env) -> str:
    name = getattr(env, "name", None) or type(getattr(env, "unwrapped", env)).__name__
    return str(name)


INIT = (True, 0, False)  # the stage that only initialises the runs


def stages(done: int, num_updates: int, segment: int, fresh: bool) -> list[tuple[bool, int, bool]]:
    """The compiled calls of a run as ``(init, updates, finish)`` stages: init (unless
    resuming), the segments of ``segment`` updates (the last one shorter when
    ``segment`` does not divide what is left), the finish. Init and finish are always
    calls of their own: a program that fuses them with the updates compiles faster
    but gives other bits in the last place, and a run's bits must not depend on how it
    was cut into segments."""
    plan = [INIT] if fresh else []
    at = done
    while at < num_updates:
        n = min(segment, num_updates - at)
        plan.append((False, n, False))
        at += n
    return plan + [(False, 0, True)]


def stage(train, init: bool, updates: int, finish: bool) -> Callable:
    """One run's program for a stage: ``(x, hparams, start) -> (x, metrics, extra)``,
    where ``x`` is the run's key before init and its state after, and its final
    :class:`~socialjax.train.population.TrainState` after finish; ``metrics`` are the
    per-update ones of these ``updates``, ``extra`` those of the finish."""

    def fn(x, hp, at):
        state = train.init(x, hp) if init else x
        metrics, extra = {}, {}
        if updates:
            state, metrics = train.updates(state, at, hp, length=updates)
        if finish:
            state, extra = train.finish(state, hp)
        return state, metrics, extra

    return fn


@dataclasses.dataclass
class Snapshot:
    """The runs of :func:`run` between two segments, on the host: ``updates_done``; the
    complete ``state`` of every run (numpy leaves with a leading run axis ``R = G x S``,
    grid-major; random keys as their ``key_data``); the per-update ``metrics`` so far
    ``(R, updates_done, ...)``; and ``per_device`` and ``chunk``, which a resumed run
    must keep to give the same bits."""

    updates_done: int
    state: Any
    metrics: dict[str, np.ndarray]
    per_device: int
    chunk: int | None


class Interrupted(Exception):
    """Raised by :func:`run` when Ctrl-C stopped it between segments; ``snapshot``
    holds the runs (already handed to ``on_segment``)."""

    def __init__(self, snapshot: Snapshot, done: int, total: int):
        super().__init__(f"interrupted after update {done} of {total}")
        self.snapshot = snapshot


@dataclasses.dataclass
class Blocks:
    """The compiled stages of a run, one program per device, and the blocks they run on.

    ``programs``: ``{stage: [compiled per device]}``; ``layout``: the runs' blocks;
    ``chunk``: runs computed together within a device (``None``: all at once);
    ``memory_bytes``: what the largest stage needs per device; ``keys``, ``hparams``:
    each of this host's blocks' run keys ``(per_device,)`` and hyperparameters
    ``{name: (per_device,)}``, on its device; ``num_runs``: the real runs ``R``."""

    programs: dict
    layout: Layout
    chunk: int | None
    memory_bytes: int
    keys: list
    hparams: list
    num_runs: int

    def start(self, st, xs: list, done: int) -> list:
        """Dispatch stage ``st`` on every block, from the blocks' ``xs`` (keys or states)."""
        return dispatch(self.programs[st], [(x, hp, np.int32(done)) for x, hp in zip(xs, self.hparams)])

    def host(self, outs: list):
        """Blocks' outputs on the host, the ``num_runs`` real runs."""
        return take_state(outs, self.layout, self.num_runs)


def compile_stages(train, config: TrainConfig, plan: list, keys: jax.Array, run_hparams: dict[str, np.ndarray],
                   done: int, devices: Sequence[jax.Device], chunk: int | None, memory: int | None,
                   resume: Snapshot | None) -> Blocks:
    """Lay the ``R`` runs (``keys`` ``(R,)``, ``run_hparams`` ``{name: (R,)}``) out over
    ``devices`` and compile every stage of ``plan`` for every device before any runs
    (compile time is not run time). The stage with the most updates decides the chunk
    that fits in memory (:func:`~socialjax.train.memory.compile_fitting`)."""
    program = _stage_programs(train)
    sized = max(plan, key=lambda st: st[1])  # the stage whose memory decides the chunk

    def block_args(layout):  # arguments of that stage, on each device (the run states as shapes)
        inputs = place_blocks(layout, keys[layout.index], {k: v[layout.index] for k, v in run_hparams.items()})
        if sized[0]:
            return [(k, hp, np.int32(done)) for k, hp in inputs]
        init = program(INIT, layout.per_device, chunk)
        return [(on_device(jax.eval_shape(init, k, hp, np.int32(0))[0], hp_device(hp)), hp, np.int32(done))
                for k, hp in inputs]

    compiled, args, layout, fitted, need = compile_fitting(functools.partial(program, sized), config, len(keys),
                                                           devices, chunk, memory, block_args)
    if resume is not None and layout.per_device != resume.per_device:
        warnings.warn(f"the snapshot's runs were computed {resume.per_device} per device, these {layout.per_device}: "
                      "the resumed runs may differ from uninterrupted ones in the last bits", stacklevel=3)
    B = layout.per_device
    programs = {sized: compiled}
    hps = [hp for _, hp, _ in args]
    key_blocks = [k for k, _ in place_blocks(layout, keys[layout.index], {})]
    init = program(INIT, B, fitted)
    state_shapes = [on_device(jax.eval_shape(init, k, hp, np.int32(0))[0], hp_device(hp))
                    for k, hp in zip(key_blocks, hps)]
    for st in plan:
        if st not in programs:
            programs[st] = compile_blocks(program(st, B, fitted),
                                          [(k if st[0] else x, hp, np.int32(0))
                                           for k, x, hp in zip(key_blocks, state_shapes, hps)])
    return Blocks(programs, layout, fitted, need, key_blocks, hps, len(keys))


def _stage_programs(train) -> Callable:
    """``program(stage, per_device, chunk)``: a device's jitted program for a stage."""

    @functools.cache  # one jitted program per stage and layout, so that each is traced once
    def program(st, per_device, chunk):
        return device_program(stage(train, *st), per_device, chunk, shared=1)

    return program


def run_segments(blocks: Blocks, plan: list, xs: list, done: int, metrics_so_far: list, num_updates: int,
                 prog: Progress | None, num_learners: int, on_segment: Callable[[Snapshot], None] | None):
    """Run the stages of ``plan`` one compiled call after another, from the blocks'
    ``xs`` (keys, or the resumed states) with ``done`` updates done and their
    ``metrics_so_far`` (``[(R, done, ...)]``). After each segment: a progress line, and,
    when a later one follows, a :class:`Snapshot` to ``on_segment``; a first Ctrl-C
    raises :class:`Interrupted` there. Returns ``(final states, metrics)``, ``(R, ...)``:
    the per-update metrics ``(R, U, ...)`` and the finish's."""
    segments = sum(1 for st in plan if st[1])
    with interrupts(enabled=not multihost(blocks.layout.devices), stoppable=segments > 1) as stop:
        for st in plan:
            outs = blocks.start(st, xs, done)
            xs = [o[0] for o in outs]
            if st[1]:
                metrics_so_far.append(blocks.host([o[1] for o in outs]))
                done += st[1]
                if prog is not None:
                    prog.show(done - 1, _progress_values(metrics_so_far[-1], num_learners))
            if st[2]:
                final, extra = blocks.host(xs), blocks.host([o[2] for o in outs])
            elif st[1] and done < num_updates and (on_segment is not None or stop.requested):
                snapshot = Snapshot(done, blocks.host(xs), _concat(metrics_so_far), blocks.layout.per_device,
                                    blocks.chunk)
                metrics_so_far = [snapshot.metrics]
                if on_segment is not None:
                    on_segment(snapshot)
                if stop.requested:
                    raise Interrupted(snapshot, done, num_updates)
    return final, {**_concat(metrics_so_far), **extra}


def _concat(parts: list[dict]) -> dict:
    return {k: np.concatenate([p[k] for p in parts], axis=1) for k in parts[0]}


def _progress_values(metrics: dict[str, np.ndarray], num_learners: int) -> dict[str, np.ndarray]:
    """Each run's mean reward per step and mean return over its learners at the last
    update of a segment (``metrics``: ``(R, K, P)`` arrays)."""
    with warnings.catch_warnings():  # a run in which no episode ended has no return: NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        return {"reward": np.nanmean(metrics["reward_rate"][:, -1, :num_learners], axis=-1),
                "ret": np.nanmean(metrics["return"][:, -1, :num_learners], axis=-1)}


def _line(step: int, values: dict[str, np.ndarray]) -> str:
    ret = values["ret"][np.isfinite(values["ret"])]  # NaN in runs where no episode ended this update
    return f"reward/step {np.nanmean(values['reward']):.3f}  return {f'{ret.mean():.3f}' if ret.size else '-'}"

