"""What the GPU check's worker processes share (``scripts/gpu_check.py`` and
``scripts/peer_socialjax.py``): writing a measurement the moment it exists, timing
calls, and reading the device's memory. Imports nothing of socialjax, so the peer's
worker, where ``socialjax`` is SocialJax's package, can use it too."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any

import jax


def append_row(path: str, row: dict[str, Any]) -> None:
    """Append one measurement to the JSON-lines file ``path`` and flush it to disk, so
    that a worker killed at its deadline keeps every row it finished."""
    with open(path, "a") as f:
        f.write(json.dumps(row, default=_plain) + "\n")
        f.flush()
        os.fsync(f.fileno())


def _plain(x):
    try:
        return x.item()  # numpy and jax scalars
    except AttributeError:
        return str(x)


def timed(fn: Callable[[], Any], repeats: int, warmup: bool = True) -> list[float]:
    """Wall seconds of ``repeats`` calls of ``fn``, each ended with ``block_until_ready``
    (after one untimed call unless ``warmup`` is False)."""
    if warmup:
        jax.block_until_ready(fn())
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - t0)
    return times


def compiled(jitted, *args) -> tuple[Any, float]:
    """``jitted`` compiled for ``args`` and the seconds it took (trace, lower, compile)."""
    t0 = time.perf_counter()
    program = jitted.lower(*args).compile()
    return program, time.perf_counter() - t0


def peak_memory() -> int | None:
    """The device's peak bytes in use since the process started (``None`` where the
    backend does not say, e.g. the CPU)."""
    try:
        stats = jax.devices()[0].memory_stats()
    except Exception:  # backends without memory statistics
        return None
    return int(stats["peak_bytes_in_use"]) if stats and "peak_bytes_in_use" in stats else None


def device_name() -> str:
    d = jax.devices()[0]
    return f"{d.platform}: {getattr(d, 'device_kind', '?')} x{len(jax.devices())}"
