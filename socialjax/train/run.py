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
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import os
import signal
import sys
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from socialjax.train.compilation import compiler_options, enable_cache
from socialjax.train.config import TrainConfig
from socialjax.train.population import make_train
from socialjax.train.progress import Progress


MEMORY_HEADROOM = 0.9  # share of a device's memory a program may plan to use (XLA needs scratch beyond its plan)


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
    device, each device running the same compiled single-device program.

    ``chunk``: compute the runs this many at a time on each device, so that a run's bits
    do not depend on the batch it ran in (see the module docstring); ``None`` (default)
    vmaps over all of a device's runs at once, the fastest, and falls back to the
    largest chunk that fits when they do not fit in memory together.

    ``memory``: bytes a device may use (default: what the device holds, see
    :func:`device_memory`); a program that needs more is chunked, or refused with a
    ``MemoryError`` when one run alone needs more.

    ``segment``: updates per compiled call (default: ``config.log_every`` when progress
    lines are printed, all of them in one otherwise; the segmenting never changes a run's
    bits). After every segment but the last, ``on_segment(snapshot)`` receives a
    :class:`Snapshot` of the runs (their complete state and the metrics so far, on the
    host): save it, and ``run(..., resume=snapshot)`` continues from it with the same bits
    as a run that was never stopped (same config, seeds, segment and runs per device). A
    first Ctrl-C stops the runs at the end of the segment under way (after
    ``on_segment``) by raising :class:`Interrupted`, which holds that snapshot; a second
    stops at once.

    ``progress``: print a line after every segment (every ``config.log_every`` updates
    unless ``segment`` is given) with the runs' mean reward per step and return at that
    update; ``False`` prints nothing; a :class:`~socialjax.train.progress.Progress` prints
    through it. The lines are printed between the compiled calls, not from inside them:
    JAX never caches a program that calls the host.

    ``devices``: where the runs go (default: ``jax.devices()``, which is this process's
    devices unless ``jax.distributed`` joined several processes; see the module docstring).

    ``compile_cache``: ``True`` (default) turns JAX's persistent compilation cache on, in
    the folder ``SOCIALJAX_COMPILATION_CACHE`` chooses (``~/.cache/socialjax/jax-cache``
    unless set; ``0`` turns it off), so that a rerun reads its programs from disk instead
    of compiling them; a path puts the cache there; ``False`` leaves JAX's settings as
    they are. See :mod:`socialjax.train.compilation`."""

    seeds = np.arange(seeds) if isinstance(seeds, (int, np.integer)) else np.asarray(list(seeds))
    if seeds.ndim != 1 or seeds.size == 0 or not np.issubdtype(seeds.dtype, np.integer) or np.any(seeds < 0):
        raise ValueError(f"seeds must be a positive count or a list of non-negative ints, got {seeds!r}")
    if len(set(seeds.tolist())) != len(seeds):
        raise ValueError("seeds must be distinct (a repeated seed repeats the same run)")
    for name, value in (("chunk", chunk), ("memory", memory), ("segment", segment)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1):
            raise ValueError(f"{name} must be a positive int or None, got {value!r}")
    config.validate()
    grid = config.hparam_grid()
    G, S = len(next(iter(grid.values()))), len(seeds)
    R, U = G * S, config.num_updates
    done = 0
    if resume is not None:
        if not 0 < resume.updates_done < U:
            raise ValueError(f"the snapshot has {resume.updates_done} of {U} updates done: nothing to resume")
        if chunk is not None and chunk != resume.chunk:
            raise ValueError(f"the snapshot's runs were computed with chunk={resume.chunk}; resume with the same")
        chunk, done = resume.chunk, resume.updates_done
    devices = list(devices) if devices is not None else jax.devices()
    if not devices:
        raise ValueError("devices must name at least one device")
    if compile_cache is not False:
        enable_cache(None if compile_cache is True else compile_cache)

    if isinstance(progress, Progress):
        prog = progress
    elif progress and config.log_every:
        prog = Progress(U, label=label, format_line=_line)
    else:
        prog = None
    if segment is not None:
        K = min(int(segment), U)
    else:  # with progress lines, they come between segments of log_every updates
        K = min(max(int(config.log_every), 1), U) if prog is not None else U
    train = make_train(env, config, params=params)
    start = time.perf_counter()
    keys = run_keys(np.tile(seeds, G), base_seed)
    run_hparams = {k: np.repeat(v, S) for k, v in grid.items()}
    plan = stages(done, U, K, fresh=resume is None)
    sized = max(plan, key=lambda st: st[1])  # the stage whose memory decides the chunk

    @functools.cache  # one jitted program per stage and layout, so that each is traced once
    def program(st, per_device, chunk):
        return device_program(stage(train, *st), per_device, chunk, shared=1)

    def block_args(layout):  # arguments of that stage, on each device (the run states as shapes)
        inputs = place_blocks(layout, keys[layout.index], {k: v[layout.index] for k, v in run_hparams.items()})
        if sized[0]:
            return [(k, hp, np.int32(done)) for k, hp in inputs]
        init = program(INIT, layout.per_device, chunk)
        return [(_on(jax.eval_shape(init, k, hp, np.int32(0))[0], hp_device(hp)), hp, np.int32(done))
                for k, hp in inputs]

    compiled, args, layout, chunk, need = compile_fitting(functools.partial(program, sized), config, R, devices,
                                                          chunk, memory, block_args)
    if resume is not None and layout.per_device != resume.per_device:
        warnings.warn(f"the snapshot's runs were computed {resume.per_device} per device, these {layout.per_device}: "
                      "the resumed runs may differ from uninterrupted ones in the last bits", stacklevel=2)
    B = layout.per_device
    programs = {sized: compiled}
    hps = [hp for _, hp, _ in args]
    key_blocks = [k for k, _ in place_blocks(layout, keys[layout.index], {})]
    init = program(INIT, B, chunk)
    state_shapes = [_on(jax.eval_shape(init, k, hp, np.int32(0))[0], hp_device(hp)) for k, hp in zip(key_blocks, hps)]
    for st in plan:  # every stage compiled before any runs: compile time is not run time
        if st not in programs:
            programs[st] = compile_blocks(program(st, B, chunk),
                                          [(k if st[0] else x, hp, np.int32(0))
                                           for k, x, hp in zip(key_blocks, state_shapes, hps)])
    if resume is None:
        xs, metrics_so_far = key_blocks, []
    else:
        xs, metrics_so_far = put_state(resume.state, layout), [resume.metrics]
    compile_seconds = time.perf_counter() - start
    multihost = _multihost(layout.devices)
    segments = sum(1 for st in plan if st[1])
    with interrupts(enabled=not multihost, stoppable=segments > 1) as stop:
        for st in plan:
            outs = dispatch(programs[st], [(x, hp, np.int32(done)) for x, hp in zip(xs, hps)])
            xs = [o[0] for o in outs]
            if st[1]:
                metrics_so_far.append(take_state([o[1] for o in outs], layout, R))
                done += st[1]
                if prog is not None:
                    prog.show(done - 1, _progress_values(metrics_so_far[-1], train.plan.num_learners))
            if st[2]:
                final, extra = take_state(xs, layout, R), take_state([o[2] for o in outs], layout, R)
            elif st[1] and done < U and (on_segment is not None or stop.requested):
                snapshot = Snapshot(done, take_state(xs, layout, R), _concat(metrics_so_far), B, chunk)
                metrics_so_far = [snapshot.metrics]
                if on_segment is not None:
                    on_segment(snapshot)
                if stop.requested:
                    raise Interrupted(snapshot, done, U)
    metrics = {**_concat(metrics_so_far), **extra}
    metrics = jax.tree_util.tree_map(lambda x: x.reshape(G, S, *x.shape[1:]), metrics)
    states = jax.tree_util.tree_map(lambda x: x.reshape(G, S, *x.shape[1:]), final)
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
    return RunResult(config, str(name), seeds, grid, metrics, states, nan_runs, seconds, compile_seconds,
                     layout.per_device, chunk, need)


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


def hp_device(hparams: dict):
    return next(iter(hparams.values())).devices().pop()


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


def compile_fitting(program, config, num_runs, devices, chunk, memory, block_args):
    """Lay the runs out, compile ``program(per_device, chunk)`` (a device's program,
    e.g. :func:`device_program` of one run's) on the first device, and check it against
    the device's memory: when it does not fit, chunk the runs (or, with ``chunk`` given or
    one run per device, raise ``MemoryError``). ``block_args(layout)`` gives each
    device's arguments (arrays or shapes placed on the device). Returns ``(compiled,
    args, layout, chunk, bytes)``."""
    asked = chunk
    while True:
        layout = lay_out(num_runs, devices, chunk)
        args = block_args(layout)
        limit = memory if memory is not None else device_memory(layout.devices[0])
        found = {}

        def fits(first):
            found["need"] = need = program_bytes(first)
            if limit is None or need <= MEMORY_HEADROOM * limit:
                return True
            group = chunk or layout.per_device
            if asked is not None or group == 1:
                raise MemoryError(_too_big(config, need, limit, layout, asked))
            found["chunk"] = fit_chunk(layout.per_device, group, first.memory_analysis(), MEMORY_HEADROOM * limit)
            return False

        compiled = compile_blocks(program(layout.per_device, chunk), args, fits)
        if compiled is not None:
            return compiled, args, layout, chunk, found.get("need", 0)
        # the estimate is linear in the chunk; when even one run seems not to fit, the
        # one-run program is compiled to say so with its real size; when a chunked
        # program still does not fit, the next round halves the chunk
        new = max(found["chunk"], 1)
        chunk = new if chunk is None else min(new, chunk // 2)


def device_memory(device) -> int | None:
    """Bytes a program may plan to use on ``device``: the allocator's limit on GPUs and
    TPUs (``memory_stats()["bytes_limit"]``), the machine's physical memory on the CPU,
    ``None`` when the device does not say."""
    stats = None
    try:
        stats = device.memory_stats()
    except Exception:  # some backends do not implement it
        pass
    if stats and stats.get("bytes_limit"):
        return int(stats["bytes_limit"])
    if getattr(device, "platform", None) == "cpu":
        try:
            return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):
            return None
    return None


def program_bytes(compiled) -> int:
    """What a compiled program needs on its device, from XLA's memory analysis:
    arguments, outputs and temporaries (less what outputs alias), or the reported peak
    when that is larger."""
    m = compiled.memory_analysis()
    if m is None:
        return 0
    total = m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes - m.alias_size_in_bytes
    return int(max(total, getattr(m, "peak_memory_in_bytes", 0) or 0))


def fit_chunk(per_device: int, group: int, analysis, budget: float) -> int:
    """The chunk of runs per device that fits ``budget`` bytes, from the memory analysis
    of a program that computes ``group`` runs together over ``per_device`` runs: the
    temporaries scale with the chunk, the arguments and outputs (every run's keys,
    results and trained state) do not shrink. The chunk is then evened out (the same
    number of chunks, padding smallest). 0 when not even one run fits."""
    fixed = analysis.argument_size_in_bytes + analysis.output_size_in_bytes - analysis.alias_size_in_bytes
    per_run = max(analysis.temp_size_in_bytes, 1) / group
    k = int((budget - fixed) // per_run)
    k = min(k, group - 1)
    if k < 1:
        return 0
    n = -(-per_device // k)  # chunks needed at k; the smallest chunk with that many
    return -(-per_device // n)


def _too_big(config, need: int, limit: int, layout: Layout, asked: int | None) -> str:
    device = layout.devices[0]
    if asked is not None:
        what = f"computing chunk={asked} runs at a time, the {layout.per_device} runs of a device need"
    elif layout.per_device == 1:
        what = "one run of this config needs"
    else:
        what = f"computing one run at a time, the {layout.per_device} runs of a device need"
    sizes = (f"num_envs ({config.num_envs}) x rollout_len ({config.rollout_len}) (the stored rollout), "
             f"the minibatch (the rollout's samples / num_minibatches ({config.num_minibatches})) and the network "
             f"(hidden={config.hidden}, channels={config.channels})")
    return (f"{what} {_size(need)} on {device}; {_size(MEMORY_HEADROOM * limit)} is usable "
            f"({MEMORY_HEADROOM:.0%} of {_size(limit)}). "
            + ("Pass a smaller chunk, or none to let run() choose one that fits. " if asked is not None else "")
            + f"A run's memory grows with {sizes}: reduce num_envs or rollout_len, or raise num_minibatches"
            + ("." if layout.per_device == 1 else ", or spread the runs over more devices or calls."))


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
    """Equal blocks of runs (whole chunks with ``chunk``), spread over as many of
    ``devices`` as hold a real run. Over several hosts every device gets a block (each
    host must hold the same number of blocks to gather)."""
    D = len(devices)
    if chunk is None:
        per_device = -(-num_runs // D)
    else:  # every chunk is the same program, whatever its size; pad to whole chunks
        per_device = -(-num_runs // (D * chunk)) * chunk
    if _multihost(devices):
        used = tuple(sorted(devices, key=lambda d: (d.process_index, d.id)))
    else:
        used = tuple(devices[: -(-num_runs // per_device)])
    return Layout(num_runs, per_device, used)


def device_program(fn: Callable, per_device: int, chunk: int | None = None, shared: int = 0) -> Callable:
    """What one device runs on its block of ``per_device`` runs: ``fn`` is one run's
    program, every argument but the last ``shared`` has a leading run axis.
    ``jit(vmap(fn))``; with ``chunk``, a ``lax.map`` over vmapped chunks of ``chunk``
    runs; a lone run (``per_device=1``) is computed as ``fn`` itself, unbatched."""

    def call(*args):
        batched, common = args[: len(args) - shared], args[len(args) - shared:]
        one = lambda b: fn(*b, *common)  # noqa: E731
        if chunk is not None:
            return jax.lax.map(one, batched, batch_size=chunk)
        if per_device == 1:
            out = one(jax.tree_util.tree_map(lambda x: x[0], batched))
            return jax.tree_util.tree_map(lambda x: x[None], out)
        return jax.vmap(lambda *b: one(b))(*batched)

    return jax.jit(call)


def place_blocks(layout: Layout, keys: jax.Array, hparams: dict[str, np.ndarray]) -> list[tuple]:
    """``(keys, hparams)`` of each of this host's blocks, on its device."""
    B = layout.per_device
    here = jax.process_index()
    blocks = []
    for i, device in enumerate(layout.devices):
        if device.process_index != here:
            continue
        part = slice(i * B, (i + 1) * B)
        blocks.append((jax.device_put(keys[part], device),
                       {k: jax.device_put(v[part], device) for k, v in hparams.items()}))
    return blocks


def compile_blocks(program: Callable, args: list[tuple], fits: Callable[[Any], bool] | None = None):
    """Compile ``program`` for each device's arguments (one compile per device: the
    same HLO everywhere, so the same bits), with the training programs' compiler
    options for the backend (:func:`~socialjax.train.compilation.compiler_options`). The
    first is compiled alone and shown to ``fits`` (which may refuse it: then ``None`` is
    returned before the others compile); the rest compile in parallel threads."""
    lowered = [program.lower(*a) for a in args]  # tracing is shared; lowering is cheap
    options = compiler_options(_device_of(args[0]))
    first = lowered[0].compile(options)
    if fits is not None and not fits(first):
        return None
    with ThreadPoolExecutor(max(len(lowered) - 1, 1)) as pool:
        return [first, *pool.map(lambda low: low.compile(options), lowered[1:])]


def _device_of(args) -> jax.Device:
    """The device the first placed argument (an array or a placed shape) is on."""
    for leaf in jax.tree_util.tree_leaves(args):
        sharding = getattr(leaf, "sharding", None)
        if sharding is not None:
            return next(iter(sharding.device_set))
    return jax.devices()[0]


def dispatch(compiled: list, args: list[tuple]) -> list:
    """Start every block (asynchronously, so the devices run together)."""
    return [fn(*a) for fn, a in zip(compiled, args)]


def gather(outs: list, layout: Layout):
    """The blocks' outputs as numpy arrays over all ``layout.padded`` slots. Waits in
    short sleeps, so that Ctrl-C is seen at once. When the layout spans several
    processes, every process gathers every process's slots (``process_allgather``, a
    collective that all of them must enter: over gloo on CPU)."""
    outs = jax.tree_util.tree_map(_key_data, outs)
    for leaf in jax.tree_util.tree_leaves(outs):
        while not leaf.is_ready():
            time.sleep(0.01)
    local = jax.tree_util.tree_map(lambda *xs: np.concatenate([np.asarray(x) for x in xs]), *outs)
    if not _multihost(layout.devices):
        return local
    from jax.experimental import multihost_utils

    # (processes, local slots, ...) in process order, which is the block order
    gathered = multihost_utils.process_allgather(local, tiled=False)
    return jax.tree_util.tree_map(lambda x: np.asarray(x).reshape(-1, *x.shape[2:]), gathered)


def execute_blocks(compiled: list, inputs: list, layout: Layout):
    """Dispatch every block and gather the outputs (see :func:`gather`)."""
    return gather(dispatch(compiled, inputs), layout)


def take_state(states: list, layout: Layout, num_runs: int):
    """The devices' run states on the host, the ``num_runs`` real runs (keys as key data)."""
    return jax.tree_util.tree_map(lambda x: x[:num_runs], gather(states, layout))


def put_state(state, layout: Layout) -> list:
    """A :class:`Snapshot`'s state back onto this host's devices, in ``layout``'s blocks
    (padding repeats the last run); key data becomes keys again."""
    B = layout.per_device
    here = jax.process_index()
    index = layout.index
    blocks = []
    for i, device in enumerate(layout.devices):
        if device.process_index != here:
            continue
        part = index[i * B:(i + 1) * B]
        blocks.append(jax.tree_util.tree_map(lambda x: jax.device_put(np.asarray(x)[part], device), state))
    return [jax.tree_util.tree_map(_from_key_data, b, is_leaf=_is_key_data) for b in blocks]


KEY_DATA = "__key_data__"


def _key_data(x):
    if isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
        return {KEY_DATA: jax.random.key_data(x)}
    return x


def _is_key_data(x) -> bool:
    return isinstance(x, dict) and set(x) == {KEY_DATA}


def _from_key_data(x):
    return jax.random.wrap_key_data(x[KEY_DATA]) if _is_key_data(x) else x


def _concat(parts: list[dict]) -> dict:
    return {k: np.concatenate([p[k] for p in parts], axis=1) for k in parts[0]}


def _on(shapes, device):
    """Shapes with ``device`` as their placement (to compile for it without data)."""
    sharding = jax.sharding.SingleDeviceSharding(device)
    return jax.tree_util.tree_map(lambda s: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sharding), shapes)


class _Stop:
    requested = False


@contextlib.contextmanager
def interrupts(enabled: bool, stoppable: bool):
    """While training: a first Ctrl-C asks to stop at the end of the segment under way
    (when there is a later one), a second (or the first, with no later segment) raises
    ``KeyboardInterrupt`` at once. Only in the main thread of a single process."""
    stop = _Stop()
    if not enabled or threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def handler(signum, frame):
        if stop.requested or not stoppable:
            raise KeyboardInterrupt
        stop.requested = True
        print("\ninterrupt: stopping at the end of the segment under way (Ctrl-C again to stop at once, losing it)",
              file=sys.stderr, flush=True)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)


def _size(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.2f} {unit}"
        n /= 1024
    raise AssertionError


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
