"""The one engine for long jobs: many runs of a :class:`Job`, in segments, over devices.

:func:`run_job` drives every long computation of :mod:`socialjax.train`: a population
(:func:`socialjax.train.run`, with :func:`~socialjax.train.population.make_train`'s
``Trainer``) and the donor game's cultural evolution
(:class:`~socialjax.train.cultural_evolution.DonorEvolution`). A job is the program of
one run, cut at its seams:

- ``init(key, hparams) -> state``: the run before its first update;
- ``updates(state, start, hparams, *, length) -> (state, metrics)``: updates ``start ..
  start + length - 1``, ``metrics`` ``{name: (length, ...)}``; update ``i`` draws its key
  from the run's key and ``i`` alone, so any cut into segments gives the same run;
- ``finish(state, hparams) -> (state, extra)``: the run's final state and the metrics
  of its end;

and says ``num_updates``, ``log_every`` (updates between progress lines by default),
``hparam_grid()`` (``{name: (G,)}``: one value per grid point, a run's ``hparams`` the
scalars of its point), ``tracked(metrics)`` (a segment's ``(R, K, ...)`` metrics as one
number per run and update, ``{name: (R, K)}``: what trackers log,
:mod:`socialjax.train.tracking`), ``summarised(extra)`` (the finish's metrics as one
number per run, ``{name: (R,)}``: the trackers' summary), ``headline`` (the tracked names a progress line and a
live display show), ``progress_line(step, values)`` (the line's text from each run's
headline values at a step), ``meta`` (the run's description for trackers, JSON values)
and ``grows_with`` (what its memory grows with, for the refusal of a run too big for a
device). The runs are every (grid point, seed) pair, grid-major; each run's key is
``fold_in(key(base_seed), seed)``. What the engine gives every job (segments,
:class:`Snapshot` s, Ctrl-C, bits, devices, memory) is described in
:mod:`socialjax.train.run`.

Listeners. Between its compiled calls, with the host arrays it has read back, the engine
calls one :class:`~socialjax.train.tracking.Listeners`: the trackers first, then the
live notebook display or the progress lines
(:class:`~socialjax.train.progress.ProgressLines`), each call in that order with the
same values; nothing is called from inside a compiled program. A listener that raises is
dropped with one line on stderr and the training goes on: a listener can neither stop a
run nor lose it, and :attr:`JobResult.listener_failures` lists those lines.
:func:`replay` streams runs computed earlier (read back from disk) to listeners as
:func:`run_job` would have while they trained.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from socialjax.train.compilation import enable_cache
from socialjax.train.devices import (
    multihost,
    put_state,
)
from socialjax.train.interrupts import StopRequest, interrupts
from socialjax.train.progress import Progress, ProgressLines
from socialjax.train.stages import INIT, Blocks, compile_stages, stage, stage_name, stages  # noqa: F401 (re-exported)
from socialjax.train.tracking import Listeners, RunSet, Tracker
from socialjax.viz.live import LiveDisplay, in_notebook


class Job(Protocol):
    """One run's program at its seams, and what the engine reports of it (see the module docstring)."""

    num_updates: int
    log_every: int
    grows_with: str
    headline: tuple[str, ...]
    meta: dict

    def init(self, key: jax.Array, hparams: dict) -> Any: ...

    def updates(self, state, start, hparams: dict, *, length: int) -> tuple[Any, dict]: ...

    def finish(self, state, hparams: dict) -> tuple[Any, dict]: ...

    def hparam_grid(self) -> dict[str, np.ndarray]: ...

    def tracked(self, metrics: dict[str, np.ndarray]) -> dict[str, np.ndarray]: ...

    def summarised(self, extra: dict[str, np.ndarray]) -> dict[str, np.ndarray]: ...

    def progress_line(self, step: int, values: dict[str, np.ndarray]) -> str: ...


@dataclasses.dataclass
class JobResult:
    """What :func:`run_job` returns, every array with leading axes ``(G, S)``: grid point, seed.

    ``metrics``: the per-update metrics ``(G, S, U, ...)`` and the finish's; ``states``: the
    finished runs (numpy leaves, keys as key data); ``grid``: ``{name: (G,)}``; ``seeds``
    ``(S,)``; ``seconds``: wall time, compilation included; ``compile_seconds``: the part
    spent compiling; ``per_device``, ``chunk``, ``memory_bytes``, ``compile_times``: see
    :class:`~socialjax.train.run.RunResult`; ``listener_failures``: a line per listener
    (tracker, progress lines, live display) that failed during the run and was dropped
    while the training went on."""

    seeds: np.ndarray
    grid: dict[str, np.ndarray]
    metrics: dict[str, np.ndarray]
    states: Any
    seconds: float
    compile_seconds: float
    per_device: int
    chunk: int | None
    memory_bytes: int
    compile_times: dict[str, tuple[float, ...]] = dataclasses.field(default_factory=dict)
    listener_failures: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Snapshot:
    """The runs of :func:`run_job` between two segments, on the host: ``updates_done``; the
    complete ``state`` of every run (numpy leaves with a leading run axis ``R = G x S``,
    grid-major; random keys as their ``key_data``); the per-update ``metrics`` so far
    ``(R, updates_done, ...)``; and ``per_device`` and ``chunk``, which a resumed run
    must keep to give the same bits."""

    updates_done: int
    state: Any
    metrics: dict[str, np.ndarray]
    per_device: int
    chunk: int | None


class DeviceMemoryError(MemoryError):
    """The device ran out of memory while the runs were computed (XLA's plan fitted, the
    allocator then failed: fragmentation, another process on the device); the message
    names the sizes to reduce. Snapshots already handed to ``on_segment`` are intact."""


def out_of_memory(err: Exception) -> bool:
    """Whether a runtime error from XLA is a failed device allocation."""
    text = str(err)
    return "RESOURCE_EXHAUSTED" in text or "Out of memory" in text or "out of memory" in text


class Interrupted(Exception):
    """Raised by :func:`run_job` when Ctrl-C or SIGTERM stopped it after an update;
    ``snapshot`` holds the runs (already handed to ``on_segment``)."""

    def __init__(self, snapshot: Snapshot, done: int, total: int):
        super().__init__(f"interrupted after update {done} of {total}")
        self.snapshot = snapshot


def run_keys(seeds: Sequence[int], base_seed: int = 0) -> jax.Array:
    """One key per seed: ``fold_in(key(base_seed), seed)``."""
    base = jax.random.key(base_seed)
    return jax.vmap(lambda s: jax.random.fold_in(base, s))(jnp.asarray(seeds, jnp.uint32))


def run_job(
    job: Job,
    seeds: int | Sequence[int] = 1,
    *,
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
    trackers: Sequence[Tracker] | Listeners = (),
) -> JobResult:
    """Run ``job`` for every (grid point, seed) pair: equal blocks of runs, one per
    device, each running the same compiled single-device programs; one update per call
    where a signal can stop them (the main thread of one process), calls of ``segment``
    updates otherwise (default: ``job.log_every`` with progress lines, else all); every
    call's values to the listeners (:func:`_listeners`); a :class:`Snapshot` to
    ``on_segment`` every ``segment`` updates, and from ``resume`` when given. The
    arguments are those of :func:`socialjax.train.run`."""
    seeds = checked_seeds(seeds)
    check_counts(chunk=chunk, memory=memory, segment=segment)
    grid = job.hparam_grid()
    G, S = len(next(iter(grid.values()))), len(seeds)
    U = job.num_updates
    chunk, done = _resume_point(resume, U, chunk)
    devices = _devices(devices, compile_cache)
    K = _segment_length(segment, job, bool(progress) and bool(job.log_every))
    listeners, shown = _listeners(job, trackers, progress, label, K)
    failed_before = len(listeners.failures)
    runs = _opened(listeners, job, seeds, label, resume)  # before the clock starts: a W&B run takes a while
    with listeners.including(*shown, runs=runs):
        start = time.perf_counter()
        keys = run_keys(np.tile(seeds, G), base_seed)
        run_hparams = {k: np.repeat(v, S) for k, v in grid.items()}
        with interrupts(enabled=not multihost(devices)) as stop:  # (the bits do not depend on the cut)
            plan = stages(done, U, 1 if stop.enabled else K, fresh=resume is None)
            blocks = compile_stages(job, plan, keys, run_hparams, done, devices, chunk, memory,
                                    None if resume is None else resume.per_device)
            xs, metrics_so_far = ((blocks.keys, []) if resume is None
                                  else (put_state(resume.state, blocks.layout), [resume.metrics]))
            compile_seconds = time.perf_counter() - start
            if stop.at_once:  # a signal while compiling whose KeyboardInterrupt was lost on the way
                raise KeyboardInterrupt
            stop.stoppable = True
            try:
                final, metrics = run_segments(job, blocks, plan, xs, done, metrics_so_far, listeners, K, on_segment,
                                              stop)
            except jax.errors.JaxRuntimeError as err:
                if not out_of_memory(err):
                    raise
                raise _part_way(err, job, blocks) from None
    by_point = functools.partial(jax.tree_util.tree_map, lambda x: x.reshape(G, S, *x.shape[1:]))  # (G, S, ...)
    return JobResult(seeds, grid, by_point(metrics), by_point(final), time.perf_counter() - start, compile_seconds,
                     blocks.layout.per_device, blocks.chunk, blocks.memory_bytes, blocks.compile_times,
                     listeners.failures[failed_before:])


def _opened(listeners: Listeners, job: Job, seeds: np.ndarray, label: str, resume: Snapshot | None) -> RunSet:
    """The owner's listeners opened for the runs; a resumed run's earlier updates go to
    them first (from its snapshot, in one call), so that each log holds the whole run."""
    runs = run_set(job, seeds, label)
    listeners.open(runs)
    if resume is not None:
        listeners.log(0, job.tracked(resume.metrics))
    return runs


def _devices(devices: Sequence[jax.Device] | None, compile_cache: bool | str | os.PathLike) -> list:
    """The devices the runs go to (default: every device of every process), with the
    compilation cache turned on as ``compile_cache`` asks."""
    devices = list(devices) if devices is not None else jax.devices()
    if not devices:
        raise ValueError("devices must name at least one device")
    if compile_cache is not False:
        enable_cache(None if compile_cache is True else compile_cache)
    return devices


def _listeners(job: Job, trackers, progress: bool | Progress, label: str, segment: int) -> tuple[Listeners, list]:
    """Who follows the run: the owner's ``trackers`` (a :class:`~socialjax.train.tracking.Listeners`,
    or trackers wrapped in one: a failing one is dropped with a line and the run goes on),
    then the engine's own for this run, returned apart (they leave at its end): in a
    Jupyter kernel a :class:`~socialjax.viz.live.LiveDisplay` (redrawn every
    ``job.log_every`` updates, or every tenth of the run when that is 0), elsewhere
    progress lines (``True``: a :class:`Progress` of ``job.progress_line`` headed
    ``label``, every ``job.log_every`` updates). Process 0 alone follows the run."""
    if jax.process_index() != 0:
        return Listeners(), []
    U = job.num_updates
    live = LiveDisplay(job.headline, job.progress_line, job.log_every or max(U // 10, 1), label) \
        if progress is True and in_notebook() else None
    progress = _progress(progress, job, label) if live is None else None
    lines = ProgressLines(progress, job.headline, job.log_every or segment, U) if progress is not None else None
    listeners = trackers if isinstance(trackers, Listeners) else Listeners(trackers)
    return listeners, [x for x in (live, lines) if x is not None]


def _part_way(err: Exception, job: Job, blocks: Blocks) -> DeviceMemoryError:
    """A failed device allocation while the runs were computed, naming what to reduce."""
    together = f" {blocks.chunk} at a time" if blocks.chunk else " together"
    return DeviceMemoryError(f"the device ran out of memory part-way ({str(err).splitlines()[0][:200]}), computing "
                             f"{blocks.layout.per_device} runs per device{together}; a run's memory grows with "
                             f"{job.grows_with}; or compute fewer runs together (chunk)")


def run_set(job: Job, seeds: np.ndarray, label: str = "") -> RunSet:
    """The :class:`~socialjax.train.tracking.RunSet` listeners are opened with: the job's
    runs, named ``label`` (default: the job's environment)."""
    return RunSet(label or str(job.meta.get("env", "run")), job.hparam_grid(), np.asarray(seeds), job.num_updates,
                  job.meta)


def replay(job: Job, seeds: int | Sequence[int], metrics: dict[str, np.ndarray], extra: dict[str, np.ndarray],
           listeners: Listeners, label: str = "") -> list[str]:
    """Stream runs of ``job`` computed earlier (``metrics`` the per-update ones ``(R, U,
    ...)``, ``extra`` the finish's ``(R, ...)``, runs grid-major) to ``listeners`` as
    :func:`run_job` did while they trained: opened with their
    :class:`~socialjax.train.tracking.RunSet`, every update's tracked values (in one
    call), the summary of their end. Nothing is computed on a device. Returns the lines
    of the listeners that failed."""
    failed_before = len(listeners.failures)
    listeners.open(run_set(job, checked_seeds(seeds), label))
    listeners.log(0, job.tracked(metrics))
    summary = job.summarised(extra)
    if summary:
        listeners.summary(summary)
    return listeners.failures[failed_before:]


def checked_seeds(seeds: int | Sequence[int]) -> np.ndarray:
    """``seeds`` as a ``(S,)`` array of distinct non-negative ints (a count ``n``: ``0..n-1``)."""
    seeds = np.arange(seeds) if isinstance(seeds, (int, np.integer)) else np.asarray(list(seeds))
    if seeds.ndim != 1 or seeds.size == 0 or not np.issubdtype(seeds.dtype, np.integer) or np.any(seeds < 0):
        raise ValueError(f"seeds must be a positive count or a list of non-negative ints, got {seeds!r}")
    if len(set(seeds.tolist())) != len(seeds):
        raise ValueError("seeds must be distinct (a repeated seed repeats the same run)")
    return seeds


def check_counts(**counts: int | None) -> None:
    """Each of ``counts`` a positive int or ``None``."""
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


def _progress(progress: bool | Progress, job: Job, label: str) -> Progress | None:
    """Where the progress lines go (``None``: nowhere)."""
    if isinstance(progress, Progress):
        return progress
    if progress and job.log_every:
        return Progress(job.num_updates, label=label, format_line=job.progress_line)
    return None


def _segment_length(segment: int | None, job: Job, shows: bool) -> int:
    """Updates between snapshots (and per compiled call where no signal can stop the
    run): ``segment`` when given; with progress shown, ``job.log_every``; otherwise all."""
    U = job.num_updates
    if segment is not None:
        return min(int(segment), U)
    return min(max(int(job.log_every), 1), U) if shows else U


def run_segments(job: Job, blocks: Blocks, plan: list, xs: list, done: int, metrics_so_far: list,
                 listeners: Listeners, segment: int, on_segment: Callable[[Snapshot], None] | None,
                 stop: StopRequest):
    """Run the stages of ``plan`` one compiled call after another, from the blocks'
    ``xs`` (keys, or the resumed states) with ``done`` updates done and their
    ``metrics_so_far`` (``[(R, done, ...)]``). Each call is dispatched before the one
    ahead of it is read back, so the devices never wait for the host. Each call's
    tracked values to ``listeners`` (the trackers, then the live display or the progress
    lines, which print every ``job.log_every`` updates), and the finish's summarised
    ones; a
    :class:`Snapshot` to ``on_segment`` every ``segment`` updates (counted from
    ``done``) but at the end. When ``stop.requested`` (a first Ctrl-C or SIGTERM):
    once the call under way is done, a snapshot of it (to ``on_segment`` too) and
    :class:`Interrupted` raised with it (the call queued behind it is dropped).
    Returns ``(final states, metrics)``, ``(R, ...)``: the per-update metrics
    ``(R, U, ...)`` and the finish's."""
    num_updates, first, at = job.num_updates, done, done
    pending = None  # the call dispatched before the last one: (stage, outputs)
    for st in [*plan, None]:
        if st is not None:
            outs = blocks.start(st, xs, at)
            xs = [o[0] for o in outs]
            at += st[1]
        if pending is not None:
            (_, updates, finish), done_outs = pending
            if updates:
                metrics_so_far.append(blocks.host([o[1] for o in done_outs]))
                if listeners:
                    listeners.log(done, job.tracked(metrics_so_far[-1]))
                done += updates
            if finish:
                final, extra = blocks.host([o[0] for o in done_outs]), blocks.host([o[2] for o in done_outs])
                summary = job.summarised(extra) if listeners else {}
                if summary:
                    listeners.summary(summary)
            elif updates and done < num_updates and (stop.requested or (on_segment is not None
                                                                        and (done - first) % segment == 0)):
                snapshot = Snapshot(done, blocks.host([o[0] for o in done_outs]), _concat(metrics_so_far),
                                    blocks.layout.per_device, blocks.chunk)
                metrics_so_far = [snapshot.metrics]
                if on_segment is not None:
                    on_segment(snapshot)
                if stop.requested:
                    raise Interrupted(snapshot, done, num_updates)
        pending = None if st is None else (st, outs)
    return final, {**_concat(metrics_so_far), **extra}


def _concat(parts: list[dict]) -> dict:
    return {k: np.concatenate([p[k] for p in parts], axis=1) for k in parts[0]}
