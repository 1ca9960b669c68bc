"""Fitting a device's runs into its memory (see :mod:`socialjax.train.run`, "Memory").

Before running, the compiled program's memory analysis is compared with what a device
can hold (:func:`device_memory`: its allocator's limit on GPUs and TPUs, the physical
memory on the CPU). When the runs of a device do not fit, they are computed in chunks
that do (:func:`fit_chunk`); when one run does not fit, a ``MemoryError`` names the
sizes to reduce, before anything has run (:func:`compile_fitting`).
"""

from __future__ import annotations

import contextlib
import os

from socialjax.train.devices import Layout, compile_blocks, lay_out

MEMORY_HEADROOM = 0.9  # share of a device's memory a program may plan to use (XLA needs scratch beyond its plan)


def compile_fitting(program, grows_with: str, num_runs, devices, chunk, memory, block_args):
    """Lay the runs out, compile ``program(per_device, chunk)`` (a device's program,
    e.g. :func:`device_program` of one run's) on the first device, and check it against
    the device's memory: when it does not fit, chunk the runs (or, with ``chunk`` given or
    one run per device, raise ``MemoryError`` naming ``grows_with``: what a run's memory
    grows with and how to shrink it). ``block_args(layout)`` gives each device's
    arguments (arrays or shapes placed on the device). Returns ``(compiled, args, layout,
    chunk, bytes)``."""
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
                raise MemoryError(_too_big(grows_with, need, limit, layout, asked))
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


def _size(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.2f} {unit}"
        n /= 1024
    raise AssertionError
