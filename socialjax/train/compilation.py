"""Compiling training programs once, and quickly: JAX's persistent compilation cache
and the options the training programs are compiled with.

The cache. XLA compilation dominates a short run (the README's main job, ``socialjax
train ipd-mixed``, spent 15 of its 20 s compiling on a 2-core CPU), and without a cache
every rerun pays it again. :func:`enable_cache` points JAX's persistent compilation
cache at a folder, so that a program compiled once is read back from disk by every
later process that compiles the same program (same code, shapes, options, jax version
and device kind). :func:`socialjax.train.run` and the ``socialjax`` command turn it on by
default, in :func:`default_cache_dir` (``$XDG_CACHE_HOME/socialjax/jax-cache``, or
``~/.cache/socialjax/jax-cache``). The variable ``SOCIALJAX_COMPILATION_CACHE`` chooses:
unset, the default folder; a path, that folder; ``0`` (or ``off``, ``false``, ``no``),
no cache, even where JAX's own ``JAX_COMPILATION_CACHE_DIR`` names one (:func:`disable_cache`:
JAX's ``jax_enable_compilation_cache`` turned off, as ``--no-compile-cache`` does).
Otherwise, where ``JAX_COMPILATION_CACHE_DIR`` (or the config option
``jax_compilation_cache_dir``) is already set, that folder is used and left alone. The
cache is a process-wide JAX setting, read at the process's first compilation: turn it on
or off before anything compiles.
``socialjax cache`` shows the folder and its size, ``socialjax cache --clear`` empties
it (so does deleting the folder).

Programs are cached whatever their compile time (JAX's default keeps only those that
took a second or more; the small ones add up: 0.7 s of the main job's rerun), unless
``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS`` says otherwise. As JAX's documentation
warns, the folder is trusted: do not share it with people you do not trust.

A cache that fails is bypassed: a folder that cannot be created or written leaves the
run without a cache (one line says so); a damaged entry is compiled again and an entry
that cannot be stored (a full disk) is skipped, JAX's warning per program collapsed into
one line per kind.

The options. On the CPU, :func:`compiler_options` asks XLA for LLVM's optimisation level
1 instead of its default (2): the training programs compile in about half the time
(measured on a 2-core CPU: ipd-mixed 15.1 -> 9.5 s, harvest-ippo-small 27.1 -> 14.7 s)
and run as fast (4.8 vs 4.5 s, 3.69 vs 3.67 s per call; BENCHMARKS.md has the
table). Other backends, and a process where the user chose optimisation settings
(``jax_disable_most_optimizations``, or ``xla_backend_optimization_level`` in
``XLA_FLAGS``), compile with JAX's defaults.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import warnings
from pathlib import Path
from types import TracebackType
from typing import Any

import jax

CACHE_VARIABLE = "SOCIALJAX_COMPILATION_CACHE"
# jax.monitoring's events that together are a program's compile time: tracing to a jaxpr, lowering it
# to an MLIR module and XLA's compile (or, with the persistent cache, reading the compiled program back)
COMPILE_EVENTS = frozenset(("/jax/core/compile/jaxpr_trace_duration", "/jax/core/compile/jaxpr_to_mlir_module_duration",
                            "/jax/core/compile/backend_compile_duration"))
OFF = ("0", "off", "false", "no", "none")
# JAX caches only programs that took at least this long to compile, unless the user set it
MIN_COMPILE_SECONDS_VARIABLE = "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"
# LLVM's optimisation level for XLA:CPU's training programs (XLA's default is 2); see the module docstring
CPU_OPTIMIZATION_LEVEL = 1


class CompileClock:
    """The seconds this process spends compiling while the clock is open (``with
    CompileClock() as clock: ...``, then ``clock.seconds``): every program's tracing,
    lowering and XLA compile, or its read-back from the persistent cache, as JAX reports
    them (:data:`COMPILE_EVENTS`). Compiles on other threads of the process count too."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def _heard(self, event: str, duration: float, **_: Any) -> None:
        if event in COMPILE_EVENTS:
            self.seconds += duration

    def __enter__(self) -> CompileClock:
        jax.monitoring.register_event_duration_secs_listener(self._heard)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        jax.monitoring.unregister_event_duration_listener(self._heard)


def default_cache_dir() -> Path:
    """Where the cache lives unless told otherwise: ``$XDG_CACHE_HOME/socialjax/jax-cache``
    (``~/.cache`` when the variable is unset; ``~/Library/Caches`` on macOS)."""
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        base = "~/Library/Caches" if sys.platform == "darwin" else "~/.cache"
    return Path(base).expanduser() / "socialjax" / "jax-cache"


def chosen_cache_dir() -> Path | None:
    """The folder ``SOCIALJAX_COMPILATION_CACHE`` chooses: ``None`` when it turns the cache
    off, :func:`default_cache_dir` when unset."""
    value = os.environ.get(CACHE_VARIABLE)
    if value is None:
        return default_cache_dir()
    if value.strip().lower() in OFF or not value.strip():
        return None
    return Path(value).expanduser()


def active_cache_dir() -> str | None:
    """The folder JAX caches compiled programs in now, ``None`` when it does not."""
    if not jax.config.values.get("jax_enable_compilation_cache", True):
        return None
    return jax.config.values.get("jax_compilation_cache_dir") or None


def enable_cache(path: str | os.PathLike | None = None) -> str | None:
    """Turn JAX's persistent compilation cache on, in ``path`` (default: the folder
    ``SOCIALJAX_COMPILATION_CACHE`` chooses, see the module docstring), and return the
    folder in use, or ``None`` when the variable turns the cache off. A folder already
    set in JAX (``JAX_COMPILATION_CACHE_DIR``) is kept, and returned, unless the variable
    turns the cache off."""
    if path is None and chosen_cache_dir() is None:
        disable_cache()
        return None
    current = active_cache_dir()
    if current:
        return current
    folder = Path(path).expanduser() if path is not None else chosen_cache_dir()
    if folder is None:
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as err:  # an unwritable home: compile without a cache rather than fail the run
        print(f"socialjax: compiling without a cache ({folder}: {err.strerror or err})", file=sys.stderr)
        return None
    _collapse_cache_warnings(folder)
    jax.config.update("jax_compilation_cache_dir", str(folder))
    if MIN_COMPILE_SECONDS_VARIABLE not in os.environ:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    return str(folder)


def disable_cache() -> None:
    """No persistent compilation cache in this process, whatever folder JAX was given
    (``JAX_COMPILATION_CACHE_DIR`` included); takes effect if nothing has compiled yet."""
    jax.config.update("jax_enable_compilation_cache", False)


_CACHE_WARNING = re.compile(r"Error (reading|writing) persistent compilation cache entry for '[^']*': (.*)", re.S)
_collapsing: dict[str, Any] = {}  # the cache folder whose warnings are collapsed, and the kinds already reported


def _collapse_cache_warnings(folder: Path) -> None:
    """JAX warns once per program when a cache entry cannot be read (a damaged file) or
    written (a full disk): dozens of warnings in one run. It then compiles the program
    (or goes on without storing it), so the run is right; these become one line per
    kind, saying so and what to do."""
    if _collapsing:
        _collapsing["folder"] = folder
        return
    _collapsing.update(folder=folder, seen=set())
    original = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        match = _CACHE_WARNING.match(str(message))
        if match is None:
            return original(message, category, filename, lineno, file, line)
        kind, reason = match.group(1), match.group(2).splitlines()[0]
        if kind not in _collapsing["seen"]:
            _collapsing["seen"].add(kind)
            what = "read (a damaged entry" if kind == "reading" else "written (a full or read-only disk"
            print(f"socialjax: the compilation cache {_collapsing['folder']} could not be {what}: {reason}); "
                  "compiling without it where it fails (`socialjax cache --clear` empties it, "
                  f"{CACHE_VARIABLE}=0 turns it off)", file=sys.stderr, flush=True)

    warnings.showwarning = show


def cache_contents(path: str | os.PathLike) -> tuple[int, int]:
    """``(files, bytes)`` in the cache folder ``path`` (``(0, 0)`` when it does not exist)."""
    folder = Path(path)
    if not folder.is_dir():
        return 0, 0
    files = [f for f in folder.rglob("*") if f.is_file()]
    return len(files), sum(f.stat().st_size for f in files)


def clear_cache(path: str | os.PathLike) -> tuple[int, int]:
    """Delete the cache folder ``path`` and everything in it; returns what it held
    (``(files, bytes)``). Refuses a folder that holds anything but JAX's cache files."""
    folder = Path(path)
    files, size = cache_contents(folder)
    if not folder.is_dir():
        return 0, 0
    strays = [f.name for f in folder.iterdir() if not _is_cache_file(f)]
    if strays:
        raise ValueError(f"{folder} holds files that are not JAX cache entries ({', '.join(sorted(strays)[:3])}"
                         f"{', ...' if len(strays) > 3 else ''}); not deleting it")
    shutil.rmtree(folder)
    return files, size


def _is_cache_file(path: Path) -> bool:
    # JAX names its entries "<program>-<sha256>-cache" (and "-atime", ".lockfile" when the cache has a size
    # limit); on GPUs XLA keeps its autotuning results in a subfolder ("xla_gpu_per_fusion_autotune_cache_dir")
    if path.is_dir():
        return path.name.startswith("xla_")
    return path.name.endswith(("-cache", "-atime")) or path.name == ".lockfile"


def compiler_options(device: jax.Device | None = None) -> dict[str, int]:
    """XLA options for compiling a training program for ``device`` (default: the
    first of ``jax.devices()``): LLVM's level :data:`CPU_OPTIMIZATION_LEVEL` on the CPU,
    nothing elsewhere or where the process chose its own optimisation settings."""
    platform = (device or jax.devices()[0]).platform
    if platform != "cpu" or jax.config.values.get("jax_disable_most_optimizations", False):
        return {}
    if "xla_backend_optimization_level" in os.environ.get("XLA_FLAGS", ""):
        return {}
    return {"xla_backend_optimization_level": CPU_OPTIMIZATION_LEVEL}
