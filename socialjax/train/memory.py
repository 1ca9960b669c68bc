"""Fitting a device's runs into its memory (see :mod:`socialjax.train.run`, "Memory").

Before running, the compiled program's memory analysis is compared with what a device
can hold (:func:`device_memory`: its allocator's limit on GPUs and TPUs, the physical
memory on the CPU). When the runs of a device do not fit, they are computed in chunks
that do (:func:`fit_chunk`); when one run does not fit, a ``MemoryError`` names the
sizes to reduce, before anything has run (:func:`compile_fitting`).

Whether a program fits is known only once it is compiled, and compiling the same runs in
another chunk is a second compile as long as the first. So the first program compiled is
already chunked where a backend gains nothing from a wider vmap
(:data:`MOST_TOGETHER`: on the CPU, 16 runs at a time), which keeps the memory of a
thousand runs within a small machine's and their compile to one program.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time

from socialjax.train.devices import Layout, compile_blocks, lay_out

MEMORY_HEADROOM = 0.9  # share of a device's memory a program may plan to use (XLA needs scratch beyond its plan)
# Runs computed together (one vmap) at most, per platform, unless a chunk is asked for; a
# device's runs beyond it go in equal chunks. On the 2-core CPU a wider vmap is hardly
# faster: one harvest-ippo-small seed already keeps it busy (2,072 env-steps/s for 1 seed,
# 2,039 for 16 together), 64 seeds ran their updates within 6% whether 4, 8, 16, 32 or all
# 64 went together (all 64 the slowest), and the IPD population's 256 runs took 7% longer
# 16 at a time than all together (BENCHMARKS.md, "Many seeds on one device"). Beyond 16 the
# memory and the compile time of the evaluation grow. GPUs and TPUs: all runs that fit.
MOST_TOGETHER = {"cpu": 16}


@dataclasses.dataclass(frozen=True)
class Fitted:
    """What :func:`compile_fitting` settled on: the ``compiled`` program of each device,
    their ``args``, the runs' ``layout``, the ``chunk`` (``None``: a device's runs all
    together), the bytes the program needs (``need``), and ``compiles``: the seconds of
    each program compiled on the way (more than one when one did not fit)."""

    compiled: list
    args: list
    layout: Layout
    chunk: int | None
    need: int
    compiles: tuple[float, ...]


def first_chunk(num_runs: int, devices) -> int | None:
    """The chunk tried first when none is asked for: ``None`` (a device's runs together)
    up to the platform's :data:`MOST_TOGETHER`, beyond it equal chunks of at most that many."""
    most = MOST_TOGETHER.get(devices[0].platform)
    per_device = lay_out(num_runs, devices).per_device
    if most is None or per_device <= most:
        return None
    chunks = -(-per_device // most)
    return -(-per_device // chunks)


def compile_fitting(program, grows_with: str, num_runs, devices, chunk, memory, block_args) -> Fitted:
    """Lay the runs out, compile ``program(block)`` (the program of a block of runs, e.g.
    :func:`~socialjax.train.devices.device_program` of one run's) on the first device, and check it against
    the device's memory: when it does not fit, chunk the runs (or, with ``chunk`` given or
    one run per device, raise ``MemoryError`` naming ``grows_with``: what a run's memory
    grows with and how to shrink it). Without ``chunk``, the first program tried is
    chunked by :func:`first_chunk`. ``block_args(layout)`` gives each device's arguments
    (arrays or shapes placed on the device)."""
    asked = chunk
    if chunk is None:
        chunk = first_chunk(num_runs, devices)
    seconds = []
    while True:
        layout = lay_out(num_runs, devices, chunk)
        args = block_args(layout)
        limit = memory if memory is not None else device_memory(layout.devices[0])
        found = {}

        def fits(first):
            found["need"] = need = device_bytes(first, layout.blocks_per_device)
            if limit is None or need <= MEMORY_HEADROOM * limit:
                return True
            group = chunk or layout.per_device
            kept = _resident(first) * layout.blocks_per_device  # every block's state, whatever the chunk
            if layout.per_device > 1 and kept > MEMORY_HEADROOM * limit:
                raise MemoryError(_states_too_big(kept, limit, layout))
            if asked is not None or group == 1:
                raise MemoryError(_too_big(grows_with, need, limit, layout, asked))
            found["chunk"] = fit_chunk(layout.per_device, group, first.memory_analysis(), MEMORY_HEADROOM * limit)
            return False

        start = time.perf_counter()
        compiled = compile_blocks(program(layout.block), args, fits)
        seconds.append(time.perf_counter() - start)
        if compiled is not None:
            return Fitted(compiled, args, layout, chunk, found.get("need", 0), tuple(seconds))
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
    with contextlib.suppress(Exception):  # some backends do not implement it
        stats = device.memory_stats()
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


def _resident(compiled) -> int:
    """What a block keeps on its device between calls: its program's arguments and
    outputs (the runs' state before and after, their keys and results)."""
    m = compiled.memory_analysis()
    if m is None:
        return 0
    return int(m.argument_size_in_bytes + m.output_size_in_bytes - m.alias_size_in_bytes)


def device_bytes(compiled, blocks: int) -> int:
    """What a device needs to compute ``blocks`` blocks of runs with ``compiled`` (one
    block's program) one after another: the running block's :func:`program_bytes` and
    every other block's arguments and outputs, which stay on the device between calls."""
    return program_bytes(compiled) + (blocks - 1) * _resident(compiled)


def fit_chunk(per_device: int, group: int, analysis, budget: float) -> int:
    """The chunk of runs per device that fits ``budget`` bytes, from the memory analysis
    of the program of a block of ``group`` runs (``per_device`` runs in blocks of
    ``group``): the temporaries scale with the chunk, the arguments and outputs (every
    run's keys, results and trained state, each block's kept on the device) do not
    shrink. The chunk is then evened out (the same number of chunks, padding smallest).
    0 when not even one run fits."""
    resident = analysis.argument_size_in_bytes + analysis.output_size_in_bytes - analysis.alias_size_in_bytes
    fixed = resident * per_device / group
    per_run = max(analysis.temp_size_in_bytes, 1) / group
    k = int((budget - fixed) // per_run)
    k = min(k, group - 1)
    if k < 1:
        return 0
    n = -(-per_device // k)  # chunks needed at k; the smallest chunk with that many
    return -(-per_device // n)


def _too_big(grows_with: str, need: int, limit: int, layout: Layout, asked: int | None) -> str:
    device = layout.devices[0]
    if asked is not None:
        what = f"computing chunk={asked} runs at a time, the {layout.per_device} runs of a device need"
    elif layout.per_device == 1:
        what = "one run of this config needs"
    else:
        what = f"computing one run at a time, the {layout.per_device} runs of a device need"
    return (f"{what} {_size(need)} on {device}; {_size(MEMORY_HEADROOM * limit)} is usable "
            f"({MEMORY_HEADROOM:.0%} of {_size(limit)}). "
            + ("Pass a smaller chunk, or none to let run() choose one that fits. " if asked is not None else "")
            + f"A run's memory grows with {grows_with}"
            + ("." if layout.per_device == 1 else ", or spread the runs over more devices or calls."))


def _states_too_big(kept: int, limit: int, layout: Layout) -> str:
    return (f"the {layout.per_device} runs of a device keep {_size(kept)} on {layout.devices[0]} between calls "
            f"(each run's state before and after an update, its key and results), more than the "
            f"{_size(MEMORY_HEADROOM * limit)} usable ({MEMORY_HEADROOM:.0%} of {_size(limit)}), whatever the chunk: "
            "compute fewer runs per call (fewer seeds or grid points), or spread them over more devices.")


def _size(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.2f} {unit}"
        n /= 1024
    raise AssertionError
