"""Throughput of every registered environment under random actions, and of training many
seeds in one call, measured here and run from the command line by ``socialjax bench``
(:mod:`socialjax.cli.bench`; also ``python scripts/bench_envs.py``, the same program for
the environments).

For each env and batch size B, one jitted call runs ``lax.scan`` over T steps of a
``vmap`` of B environments. Inside the timed loop: a fresh random key per env per
step, ``env.sample_actions``, ``env.step`` (with its auto-reset) and a reduction of the
observations and rewards (their float sum, carried through the scan and returned), so
XLA cannot drop any part of the step. The B resets happen once at the start of each
call (negligible against T steps).

Compile time (trace + lower + compile) is reported separately; throughput is the
median of ``--repeats`` timed calls, each ended with ``block_until_ready``.

    socialjax bench --envs ipd,stag_hunt --batch-sizes 1,64 --json out.json

Training (:func:`train_sweep`, ``socialjax bench --train PRESET --seeds 1,8,64``): for
each seed count S, S runs of the preset's config as :func:`socialjax.train.run` lays them
out on the first device (all together, or in the chunks the engine chooses for the
backend and the memory), the programs of the init and of one update compiled (their
seconds apart), one untimed update, then ``repeats`` timed updates, each ended with
``block_until_ready``: seconds per update (the median), aggregate env-steps/s (S x games
x rollout steps / seconds per update) and agent-steps/s, what the program plans to use
on the device (XLA's memory analysis) and the device's peak so far (GPUs and TPUs; the
process's peak, so measure seed counts in increasing order). With ``fit``, one more S:
as many runs as the device's memory holds together, from the largest S's plan.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import socialjax as sj
from socialjax.agents.networks import resolve_conv
from socialjax.train import TrainConfig, make_train
from socialjax.train.devices import as_key_data, wait
from socialjax.train.engine import INIT, compile_stages, run_keys, stages
from socialjax.train.memory import MEMORY_HEADROOM, device_memory
from socialjax.train.run import PopulationJob

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


UPDATE = (False, 1, False)  # the engine's stage of one update
FIT_MULTIPLE = 8  # the seed count that fits the device is rounded down to a multiple of this


def train_sweep(env, config: TrainConfig, seeds: Sequence[int], *, repeats: int = 1, fit: bool = False,
                report: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Aggregate training throughput of ``S`` runs in one call, for each ``S`` in ``seeds``
    (see the module docstring); with ``fit``, also the largest multiple of
    :data:`FIT_MULTIPLE` runs the first device's memory holds together, when it is more
    than the largest of ``seeds``. ``config``'s evaluation and progress are switched off;
    the updates are ``config``'s (num_envs x rollout_len env steps each)."""
    config = config.replace(num_updates=max(2, repeats + 1), evaluate=False, log_every=0)
    rows = []
    for S in seeds:
        rows.append(_train_row(env, config, int(S), repeats))
        if report is not None:
            report(rows[-1])
    limit = device_memory(jax.devices()[0])
    if fit and rows and limit and rows[-1]["chunk"] is None:
        per_run = rows[-1]["planned_bytes"] / rows[-1]["seeds"]
        most = int(MEMORY_HEADROOM * limit // per_run) // FIT_MULTIPLE * FIT_MULTIPLE
        if most > rows[-1]["seeds"]:
            rows.append(_train_row(env, config, most, repeats, note="as many as the device holds together"))
            if report is not None:
                report(rows[-1])
    return rows


def _train_row(env, config: TrainConfig, seeds: int, repeats: int, note: str = "") -> dict[str, Any]:
    job = PopulationJob(make_train(env, config))
    grid = job.hparam_grid()
    G = len(next(iter(grid.values())))
    keys = run_keys(np.tile(np.arange(seeds), G))
    hparams = {k: np.repeat(v, seeds) for k, v in grid.items()}
    plan = stages(0, config.num_updates, 1, fresh=True)[:2]  # the init and one update
    blocks = compile_stages(job, plan, keys, hparams, 0, jax.devices()[:1], None, None, None)
    xs = [o[0] for o in blocks.start(INIT, blocks.keys, 0)]
    times = []
    for i in range(repeats + 1):  # the first call warms up
        t0 = time.perf_counter()
        outs = blocks.start(UPDATE, xs, i)
        wait(jax.tree_util.tree_map(as_key_data, outs))
        if i:
            times.append(time.perf_counter() - t0)
        xs = [o[0] for o in outs]
    per_update = statistics.median(times)
    env_steps = len(keys) * config.num_envs * config.rollout_len
    return {"env": getattr(env, "name", str(env)), "num_agents": env.num_agents, "seeds": seeds,
            "runs": len(keys), "per_device": blocks.layout.per_device, "chunk": blocks.chunk,
            "num_envs": config.num_envs, "rollout_len": config.rollout_len, "update_epochs": config.update_epochs,
            "num_minibatches": config.num_minibatches, "seating": config.seating, "network": config.network,
            "conv": resolve_conv(config.conv), "precision": config.precision,
            "compile_s": {name: sum(t) for name, t in blocks.compile_times.items()}, "times_s": times,
            "seconds_per_update": per_update, "env_steps_per_s": env_steps / per_update,
            "agent_steps_per_s": env_steps * env.num_agents / per_update, "planned_bytes": blocks.memory_bytes,
            "peak_memory_bytes": peak_memory(), "note": note}


def peak_memory() -> int | None:
    """The first device's peak bytes in use since the process started (``None`` where the
    backend does not say, e.g. the CPU). scripts/check_io.py reads it the same way for
    SocialJax's timing process, where ``socialjax`` names SocialJax's package, not this one."""
    try:
        stats = jax.devices()[0].memory_stats()
    except Exception:  # backends without memory statistics
        return None
    return int(stats["peak_bytes_in_use"]) if stats and "peak_bytes_in_use" in stats else None


def train_table(rows: list[dict[str, Any]]) -> str:
    """The rows of :func:`train_sweep` as a markdown table."""
    lines = ["| env | seating / network / conv / precision | seeds S | computed | games x steps | s per update | "
             "aggregate env-steps/s | agent-steps/s | compile s (init; update) | planned MiB | peak MiB |",
             "|---|---|---:|---|---|---:|---:|---:|---|---:|---:|"]
    for r in rows:
        together = f"{r['chunk']} at a time" if r["chunk"] else "all together"
        peak = "n/a" if r["peak_memory_bytes"] is None else f"{r['peak_memory_bytes'] / 2**20:,.0f}"
        compile_s = "; ".join(f"{t:.1f}" for t in r["compile_s"].values())
        lines.append(f"| {r['env']} | {r['seating']} / {r['network']} / {r['conv']} / {r['precision']} | "
                     f"{r['seeds']} | {together} | {r['num_envs']} x {r['rollout_len']} | "
                     f"{r['seconds_per_update']:.3f} | {r['env_steps_per_s']:,.0f} | {r['agent_steps_per_s']:,.0f} | "
                     f"{compile_s} | {r['planned_bytes'] / 2**20:,.0f} | {peak} |")
    return "\n".join(lines)
