"""Settings for the whole test suite.

XLA compilation, not running, dominates the suite's time on a small CPU. The tests
therefore compile with XLA's backend optimisations mostly off
(``jax_disable_most_optimizations``: LLVM at -O0 and no expensive LLVM passes), which
cuts the suite's time by about a fifth on the 2-core CI machine (measured: 541 s ->
432 s); the programs compute the same functions, only less optimised. The variable is
also exported so that the processes the tests start (notebook kernels, the CLI, the
8-device subprocess whose bits are compared with this process's) compile the same way.
Run ``JAX_DISABLE_MOST_OPTIMIZATIONS=0 python -m pytest`` to test the optimised programs.

Under pytest-xdist (``python -m pytest -n 8`` on a GPU machine) each worker is its own
JAX process; JAX's default of preallocating 75% of a GPU's memory in every process
would leave the second worker without any, so workers allocate on demand
(``XLA_PYTHON_CLIENT_PREALLOCATE=false``, unless set). No effect on the CPU backend.

What the tests may assume about the backend (bit equality on the CPU, tolerances
elsewhere, CPU-only tests) is in tests/support.py and docs/testing.md.
"""

import os

os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402  (after the variable, which JAX reads at import)

jax.config.update("jax_disable_most_optimizations", os.environ["JAX_DISABLE_MOST_OPTIMIZATIONS"] not in ("0", "false",
                                                                                                         "False", ""))
