"""What a test may assume about the backend it runs on (docs/testing.md).

On the CPU backend XLA computes a float32 result the same way in every compiled program
this suite builds, so tests compare different programs (batched vs alone, an adapter vs
the native env, chunked vs unchunked training) bit for bit there. On a GPU float32
matrix products use TF32 by default and fused reductions may sum in another order, so
two different programs agree only to a tolerance. The helpers below keep the CPU check
exactly as strict as it was and say what is checked elsewhere:

- :func:`assert_same` / :func:`assert_tree_same`: bit equality on the CPU; elsewhere,
  integer and bool leaves still equal and floating leaves within ``OFF_CPU_RTOL`` /
  ``OFF_CPU_ATOL`` (NaN equals NaN in both);
- :func:`tol`: a tolerance that is the CPU one on the CPU and a looser one elsewhere;
- :func:`cpu_only`: a skip marker for what is inherently about the CPU backend;
- :func:`with_devices`: ``XLA_FLAGS`` for a subprocess with more CPU devices, keeping
  this process's XLA flags (tests/conftest.py's), so that its programs compile as here.

The test directories are on ``sys.path`` (pytest's default ``prepend`` import mode puts
``tests/``, the folder of the root conftest.py, there), so test files anywhere below
``tests/`` use ``from support import ...``.
"""

from __future__ import annotations

import os
import signal

import jax
import numpy as np
import pytest

from socialjax.reproduce.core import Condition, Entry, Measure, sign_verdict
from socialjax.testing import ATOL, RTOL, assert_trees_same

BACKEND = jax.default_backend()
ON_CPU = BACKEND == "cpu"

# Off the CPU: TF32 matrix products carry about 1e-3 relative error (10-bit mantissa); the
# library's tolerance between programs that need not agree bit for bit
OFF_CPU_RTOL, OFF_CPU_ATOL = RTOL, ATOL


def cpu_only(reason: str):
    """Skip off the CPU backend: ``@cpu_only("LAPACK is XLA:CPU's library")``."""
    return pytest.mark.skipif(not ON_CPU, reason=f"CPU backend only ({BACKEND} here): {reason}")


def tol(cpu: float, elsewhere: float) -> float:
    """``cpu`` on the CPU backend, ``elsewhere`` on any other."""
    return cpu if ON_CPU else elsewhere


def _is_float(x: np.ndarray) -> bool:
    return np.issubdtype(x.dtype, np.inexact)


def assert_same(actual, desired, err_msg: str = "") -> None:
    """Bit-identical on the CPU; on other backends integer/bool arrays equal and float
    arrays close (``OFF_CPU_RTOL``, ``OFF_CPU_ATOL``)."""
    actual, desired = np.asarray(actual), np.asarray(desired)
    if ON_CPU or not (_is_float(actual) or _is_float(desired)):
        np.testing.assert_array_equal(actual, desired, err_msg=err_msg)
    else:
        np.testing.assert_allclose(actual, desired, rtol=OFF_CPU_RTOL, atol=OFF_CPU_ATOL, err_msg=err_msg)


def assert_tree_same(actual, desired, err_msg: str = "") -> None:
    """The same tree structure, shapes and dtypes; leaves as :func:`assert_same` compares
    them (socialjax.testing.assert_trees_same, exact on the CPU)."""
    try:
        assert_trees_same(jax.device_get(actual), jax.device_get(desired), exact=ON_CPU)
    except AssertionError as err:
        raise AssertionError(f"{err_msg} {err}".strip()) from None


def reseal(folder, kind: str | None = None) -> None:
    """Rewrite a results folder's manifest after a test edited its files by hand (as if
    a writer had produced them so), keeping its kind unless ``kind`` is given."""
    import json
    from pathlib import Path

    from socialjax.train import store

    folder = Path(folder)
    manifest = folder / store.MANIFEST
    if kind is None:
        kind = json.loads(manifest.read_text())["kind"]
    manifest.unlink(missing_ok=True)
    store.seal(folder, kind)


def play(step, state, schedule, params):
    """Step a grid game through ``schedule`` (a list of per-step action tuples) with the
    jitted ``step``, the key of step ``t`` being ``key(100 + t)``. Returns the states, the
    rewards (numpy) and the infos (on the host), one per step."""
    import jax.numpy as jnp

    states, rewards, infos = [], [], []
    for t, actions in enumerate(schedule):
        _, state, reward, _, info = step(jax.random.key(100 + t), state, jnp.asarray(actions, jnp.int32), params)
        states.append(state)
        rewards.append(np.asarray(reward))
        infos.append(jax.device_get(info))
    return states, rewards, infos


# a reproduction of two tiny IPD conditions (tests/reproduce/test_machinery.py, tests/train/test_listeners.py)
TINY_IPD = {"num_envs": 2, "rollout_len": 5, "num_updates": 2, "hidden": 8, "update_epochs": 1,
            "num_minibatches": 1, "evaluate": False, "seating": "fixed", "seats": (0, 1), "scripted": ("tft",)}


def two_run_entry():
    """A reproduction entry of two conditions that train as two runs (their games differ
    in length)."""
    conditions = tuple(Condition(name, env={"small": "ipd"}, env_options={"small": {"num_rounds": rounds}},
                                 config={"small": TINY_IPD}) for name, rounds in (("short", 5), ("long", 10)))
    return Entry(name="toy-ipd", title="two runs", citation="nobody", conditions=conditions,
                 measures=(Measure("reward", "reward_rate", "reward per step"),), references=(),
                 criterion=lambda f: sign_verdict(f[("long", "reward")] + 10.0, "reward"),
                 criterion_text="any", seeds={"small": 2})


def run_stopped_at(real_run, trained: list, at: int):
    """A stand-in for the engine's ``run`` (``socialjax.train.run.run``, which the runner
    calls) that records each run's label in ``trained`` and stops the ``at``-th after its
    first update as Ctrl-C does: a SIGINT to this process, seen by the engine's handler,
    which stops after the update under way with its state."""

    def ctrl_c(snapshot):
        os.kill(os.getpid(), signal.SIGINT)

    def run(env, config, **kwargs):
        trained.append(kwargs["label"])
        if len(trained) == at:
            kwargs.update(segment=1, on_segment=ctrl_c)
        return real_run(env, config, **kwargs)

    return run


def with_devices(count: int) -> str:
    """This process's ``XLA_FLAGS`` with ``count`` host CPU devices (for a subprocess
    whose bits are compared with this process's)."""
    kept = [f for f in os.environ.get("XLA_FLAGS", "").split() if not f.startswith("--xla_force_host_platform_device")]
    return " ".join([*kept, f"--xla_force_host_platform_device_count={count}"])
