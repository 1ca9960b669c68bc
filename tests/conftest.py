"""Settings for the whole test suite.

XLA compilation, not running, dominates the suite's time on a small CPU. The tests
therefore compile with XLA's backend optimisations mostly off
(``jax_disable_most_optimizations``: LLVM at -O0 and no expensive LLVM passes), which
cuts the suite's time by about a fifth on the 2-core CI machine (measured: 541 s ->
432 s); the programs compute the same functions, only less optimised. The variable is
also exported so that the processes the tests start (notebook kernels, the CLI, the
8-device subprocess whose bits are compared with this process's) compile the same way.
With that, XLA's CPU fusion emitters are turned off too (``--xla_cpu_use_fusion_emitters=false``
appended to ``XLA_FLAGS``, inherited by those processes the same way): unoptimised, a
fused loop compiles in about half the time (measured on the 2-core machine: a grid
game's contract rollout 3.4 -> 2.1 s, a small CNN training program 8.5 -> 4.4 s, the
same bits) and the fast tier took 722 s instead of 1,007 s. (With optimisations on they
save no compile time and run slower, so a user's programs keep them.) Run
``JAX_DISABLE_MOST_OPTIMIZATIONS=0 python -m pytest`` to test the optimised programs as
users compile them (neither setting).

Under pytest-xdist (``python -m pytest -n 8`` on a GPU machine) each worker is its own
JAX process; JAX's default of preallocating 75% of a GPU's memory in every process
would leave the second worker without any, so workers allocate on demand
(``XLA_PYTHON_CLIENT_PREALLOCATE=false``, unless set). No effect on the CPU backend.

Programs compiled in one process are cached on disk for the others of the same run
(``JAX_COMPILATION_CACHE_DIR``, a temporary folder made by the first process and
inherited by the xdist workers and by every process a test starts: the CLI runs that are
stopped and resumed, the multi-process runs, the notebook kernels), so a program two
processes need is compiled once (measured on the 2-core machine: the resume and
multi-process tests, 109 s -> 89 s). The folder is removed when the run ends. Set the
variable yourself to keep a cache between runs.

What the tests may assume about the backend (bit equality on the CPU, tolerances
elsewhere, CPU-only tests) is in tests/support.py and docs/testing.md.
"""

import atexit
import os
import shutil
import tempfile

os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")
UNOPTIMISED = os.environ["JAX_DISABLE_MOST_OPTIMIZATIONS"] not in ("0", "false", "False", "")
FUSION_EMITTERS_OFF = "--xla_cpu_use_fusion_emitters=false"
if UNOPTIMISED and FUSION_EMITTERS_OFF not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {FUSION_EMITTERS_OFF}".strip()
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:  # the first process of the run makes (and removes) it
    _cache = tempfile.mkdtemp(prefix="socialjax-test-jax-cache-")
    os.environ["JAX_COMPILATION_CACHE_DIR"] = _cache
    atexit.register(shutil.rmtree, _cache, ignore_errors=True)
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402  (after the variable, which JAX reads at import)

jax.config.update("jax_disable_most_optimizations", UNOPTIMISED)

import pytest  # noqa: E402

_CACHE_SETTINGS = ("jax_enable_compilation_cache", "jax_compilation_cache_dir")


@pytest.fixture(autouse=True)
def _keep_the_suites_compilation_cache():
    """A test that turns the cache off in this process (``--no-compile-cache`` through
    ``cli.main``, ``SOCIALJAX_COMPILATION_CACHE=0`` through ``run``) leaves JAX's global
    setting off for every later test of the same worker: those would compile without
    the shared cache, and a test of the cache itself would see none. Restored here."""
    before = {name: jax.config.values[name] for name in _CACHE_SETTINGS}
    yield
    for name, value in before.items():
        if jax.config.values[name] != value:
            jax.config.update(name, value)
