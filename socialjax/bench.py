"""Throughput of every registered environment under random actions, measured here and
run from the command line by ``socialjax bench`` (:mod:`socialjax.cli.bench`; also
``python scripts/bench_envs.py``, the same program).

For each env and batch size B, one jitted call runs ``lax.scan`` over T steps of a
``vmap`` of B environments. Inside the timed loop: a fresh random key per env per
step, ``env.sample_actions``, ``env.step`` (with its auto-reset) and a reduction of the
observations and rewards (their float sum, carried through the scan and returned), so
XLA cannot drop any part of the step. The B resets happen once at the start of each
call (negligible against T steps).

Compile time (trace + lower + compile) is reported separately; throughput is the
median of ``--repeats`` timed calls, each ended with ``block_until_ready``.

    socialjax bench --envs ipd,stag_hunt --batch-sizes 1,64 --json out.json
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

import socialjax as sj

DEFAULT_BATCH_SIZES = (1, 64, 1024, 16384)
# Adaptive T: about STEP_BUDGET env-steps per timed call (long enough to time, short enough
# to sweep many batch sizes; call times in BENCHMARKS.md), at least MIN_STEPS and at most
# MAX_STEPS scan steps.
STEP_BUDGET = 2_000_000
MIN_STEPS, MAX_STEPS = 10, 10_000


def adaptive_steps(batch: int, budget: int = STEP_BUDGET) -> int:
    """T = clip(budget // B, MIN_STEPS, MAX_STEPS)."""
    return max(MIN_STEPS, min(MAX_STEPS, budget // batch))


def make_run(env: sj.core.Environment, batch: int, steps: int) -> Callable[[jax.Array], jax.Array]:
    """``run(key) -> () float32``: B envs, T random-action steps, observation checksum."""
    params = env.default_params
    reset = jax.vmap(env.reset, in_axes=(0, None))
    sample = jax.vmap(env.sample_actions, in_axes=(0, None))
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def run(key: jax.Array) -> jax.Array:
        key_reset, key_run = jax.random.split(key)
        _, state = reset(jax.random.split(key_reset, batch), params)

        def body(carry, key):
            state, checksum = carry
            key_act, key_step = jax.random.split(key)
            actions = sample(jax.random.split(key_act, batch), params)
            obs, state, reward, done, info = step(jax.random.split(key_step, batch), state, actions, params)
            obs_sum = sum(jnp.sum(x.astype(jnp.float32)) for x in jax.tree_util.tree_leaves(obs))
            return (state, checksum + obs_sum + jnp.sum(reward)), None

        (_, checksum), _ = jax.lax.scan(body, (state, jnp.float32(0.0)), jax.random.split(key_run, steps))
        return checksum

    return jax.jit(run)


def bench(env: sj.core.Environment, batch: int, steps: int, repeats: int, seed: int) -> dict[str, Any]:
    """Compile once, then time ``repeats`` calls; returns the raw numbers."""
    run = make_run(env, batch, steps)
    key = jax.random.key(seed)
    t0 = time.perf_counter()
    compiled = run.lower(key).compile()
    compile_s = time.perf_counter() - t0
    compiled(key).block_until_ready()  # warm-up call (allocations), not timed
    times = []
    for r in range(repeats):
        k = jax.random.fold_in(key, r)
        t0 = time.perf_counter()
        compiled(k).block_until_ready()
        times.append(time.perf_counter() - t0)
    median_s = statistics.median(times)
    env_steps_per_s = batch * steps / median_s
    return {
        "env": env.name,
        "batch": batch,
        "steps": steps,
        "num_agents": env.num_agents,
        "compile_s": compile_s,
        "times_s": times,
        "median_s": median_s,
        "env_steps_per_s": env_steps_per_s,
        "agent_steps_per_s": env_steps_per_s * env.num_agents,
    }


def machine() -> dict[str, Any]:
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {
        "devices": [str(d) for d in jax.devices()],
        "backend": jax.default_backend(),
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "socialjax": sj.__version__,
        "load_average_1_5_15min": list(os.getloadavg()),  # other work sharing the CPUs
    }


def markdown_table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| env | obs | N | batch B | steps T | env-steps/s | agent-steps/s | median call s | min-max call s "
        "| compile s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['env']} | {r.get('obs_mode', 'native')} | {r['num_agents']} | {r['batch']} | {r['steps']} | "
            f"{r['env_steps_per_s']:,.0f} | "
            f"{r['agent_steps_per_s']:,.0f} | {r['median_s']:.3f} | "
            f"{min(r['times_s']):.3f}-{max(r['times_s']):.3f} | {r['compile_s']:.2f} |"
        )
    return "\n".join(lines)


def measure(names: list[str], batch_sizes: list[int], *, steps: int | None, budget: int, repeats: int,
            seed: int, obs_mode: str,
            report: Callable[[dict[str, Any]], None] | None = None) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """:func:`bench` for every env in ``names`` (default params; ``obs_mode="rgb"``: RGB
    observations) and every batch size B, T = ``steps`` or :func:`adaptive_steps`.
    Returns the rows (``report`` sees each as it is measured) and ``{name: why}`` for the
    envs skipped (in rgb mode, those without RGB observations)."""
    results, skipped = [], {}
    for name in names:
        options = {"obs_mode": "rgb"} if obs_mode == "rgb" else {}
        try:
            env = sj.make(name, **options)
        except ValueError as exc:
            if obs_mode != "rgb":
                raise
            skipped[name] = f"no RGB observations ({exc})"
            continue
        for batch in batch_sizes:
            r = bench(env, batch, steps or adaptive_steps(batch, budget), repeats, seed)
            r["obs_mode"] = getattr(env, "obs_mode", "native")
            results.append(r)
            if report is not None:
                report(r)
    return results, skipped
