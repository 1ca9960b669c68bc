"""The compiled stages of a job's runs, and the blocks of runs they compute on.

A run is computed as stages (:func:`stages`): init, segments of updates, the finish,
each one compiled program of a block of runs per device (:func:`compile_stages`, which
sizes the chunk of runs computed together to the device's memory), dispatched by
:class:`Blocks`. ``job`` is the engine's :class:`~socialjax.train.engine.Job`; the
engine (:func:`~socialjax.train.engine.run_job`) runs the stages in order.
"""

from __future__ import annotations

import dataclasses
import functools
import time
import warnings
from collections.abc import Callable, Sequence

import jax
import numpy as np

from socialjax.train.devices import (
    Layout,
    compile_blocks,
    device_program,
    dispatch,
    hp_device,
    on_device,
    place_blocks,
    take_state,
)
from socialjax.train.memory import compile_fitting

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


def stage(job, init: bool, updates: int, finish: bool) -> Callable:
    """One run's program for a stage: ``(x, hparams, start) -> (x, metrics, extra)``,
    where ``x`` is the run's key before init and its state after (its finished state
    after finish); ``metrics`` are the per-update ones of these ``updates``, ``extra``
    those of the finish."""

    def fn(x, hp, at):
        state = job.init(x, hp) if init else x
        metrics, extra = {}, {}
        if updates:
            state, metrics = job.updates(state, at, hp, length=updates)
        if finish:
            state, extra = job.finish(state, hp)
        return state, metrics, extra

    return fn


@dataclasses.dataclass
class Blocks:
    """The compiled stages of a run, one program per device, and the blocks they run on.

    ``programs``: ``{stage: [compiled per block]}`` (a device's blocks share one
    program); ``layout``: the runs' blocks;
    ``chunk``: runs computed together within a device (``None``: all at once);
    ``memory_bytes``: what the largest stage needs per device; ``keys``, ``hparams``:
    each of this host's blocks' run keys ``(block,)`` and hyperparameters
    ``{name: (block,)}``, on its device; ``num_runs``: the real runs ``R``;
    ``compile_times``: the seconds each stage's programs took to compile, by
    :func:`stage_name` (the stage sized to memory: one entry per program tried)."""

    programs: dict
    layout: Layout
    chunk: int | None
    memory_bytes: int
    keys: list
    hparams: list
    num_runs: int
    compile_times: dict[str, tuple[float, ...]] = dataclasses.field(default_factory=dict)

    def start(self, st, xs: list, done: int) -> list:
        """Dispatch stage ``st`` on every block, from the blocks' ``xs`` (keys or states)."""
        return dispatch(self.programs[st], [(x, hp, np.int32(done)) for x, hp in zip(xs, self.hparams)])

    def host(self, outs: list):
        """Blocks' outputs on the host, the ``num_runs`` real runs."""
        return take_state(outs, self.layout, self.num_runs)


def stage_name(st) -> str:
    """A stage's name in reports: ``init``, ``N update(s)``, ``finish``."""
    init, updates, finish = st
    return "init" if init else "finish" if finish else f"{updates} update{'s' if updates > 1 else ''}"


def compile_stages(job, plan: list, keys: jax.Array, run_hparams: dict[str, np.ndarray], done: int,
                   devices: Sequence[jax.Device], chunk: int | None, memory: int | None,
                   resumed_per_device: int | None) -> Blocks:
    """Lay the ``R`` runs (``keys`` ``(R,)``, ``run_hparams`` ``{name: (R,)}``) out over
    ``devices`` and compile every stage of ``plan`` for every device before any runs
    (compile time is not run time). The stage with the most updates decides the chunk
    that fits in memory (:func:`~socialjax.train.memory.compile_fitting`)."""
    program = _stage_programs(job)
    sized = max(plan, key=lambda st: st[1])  # the stage whose memory decides the chunk

    def block_args(layout):  # arguments of that stage, for each block (the run states as shapes)
        inputs = place_blocks(layout, keys[layout.index], {k: v[layout.index] for k, v in run_hparams.items()})
        if sized[0]:
            return [(k, hp, np.int32(done)) for k, hp in inputs]
        init = program(INIT, layout.block)
        return [(on_device(jax.eval_shape(init, k, hp, np.int32(0))[0], hp_device(hp)), hp, np.int32(done))
                for k, hp in inputs]

    fitted = compile_fitting(functools.partial(program, sized), job.grows_with, len(keys), devices, chunk, memory,
                             block_args)
    layout = fitted.layout
    if resumed_per_device is not None and layout.per_device != resumed_per_device:
        warnings.warn(f"the snapshot's runs were computed {resumed_per_device} per device, these {layout.per_device}: "
                      "the resumed runs may differ from uninterrupted ones in the last bits", stacklevel=4)
    programs = {sized: fitted.compiled}
    times = {stage_name(sized): fitted.compiles}
    hps = [hp for _, hp, _ in fitted.args]
    key_blocks = [k for k, _ in place_blocks(layout, keys[layout.index], {})]
    init = program(INIT, layout.block)
    state_shapes = [on_device(jax.eval_shape(init, k, hp, np.int32(0))[0], hp_device(hp))
                    for k, hp in zip(key_blocks, hps)]
    for st in plan:
        if st not in programs:
            start = time.perf_counter()
            programs[st] = compile_blocks(program(st, layout.block),
                                          [(k if st[0] else x, hp, np.int32(0))
                                           for k, x, hp in zip(key_blocks, state_shapes, hps)])
            times[stage_name(st)] = (time.perf_counter() - start,)
    times = {stage_name(st): times[stage_name(st)] for st in plan}  # in the order they run
    return Blocks(programs, layout, fitted.chunk, fitted.need, key_blocks, hps, len(keys), times)


def _stage_programs(job) -> Callable:
    """``program(stage, block)``: the jitted program of a stage on a block of runs."""

    @functools.cache  # one jitted program per stage and block size, so that each is traced once
    def program(st, block):
        return device_program(stage(job, *st), block, shared=1)

    return program
