"""Throughput of every registered environment under random actions:
``socialjax bench`` (and ``python scripts/bench_envs.py``, the same program).

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

import argparse
import json
import os
import platform
import statistics
import sys
import time
from typing import Any, Callable

import jax
import jax.numpy as jnp

import socialjax as sj
from socialjax.train.compilation import active_cache_dir

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


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="socialjax bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", default=None, help="comma-separated env names (default: all registered)")
    parser.add_argument("--batch-sizes", default=",".join(map(str, DEFAULT_BATCH_SIZES)))
    parser.add_argument(
        "--steps", type=int, default=None,
        help=f"scan steps T per call (default adaptive: clip({STEP_BUDGET:,} // B, {MIN_STEPS}, {MAX_STEPS}))",
    )
    parser.add_argument("--budget", type=int, default=STEP_BUDGET,
                        help=f"env-steps per timed call for the adaptive T (default {STEP_BUDGET:,})")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per configuration (median reported)")
    parser.add_argument("--obs-mode", choices=("codes", "rgb"), default="codes",
                        help="grid games: compact integer codes (default) or RGB sprites; "
                             "envs without the option are skipped in rgb mode")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, metavar="PATH", help="write the raw results here")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --json file")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    names = args.envs.split(",") if args.envs else sj.registered_envs()
    unknown = [n for n in names if n not in sj.registered_envs()]
    if unknown:
        raise SystemExit(f"unknown environment(s) {unknown}; `socialjax envs` lists them")
    try:
        batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    except ValueError:
        raise SystemExit(f"--batch-sizes must be comma-separated integers, got {args.batch_sizes!r}") from None
    if args.repeats < 1 or any(b < 1 for b in batch_sizes) or (args.steps is not None and args.steps < 1):
        raise SystemExit("--repeats, --batch-sizes and --steps must be positive")
    if args.json:
        from socialjax.train import store

        try:
            store.check_out_file(args.json, overwrite=args.overwrite, suffixes=(".json",))
        except store.OutputError as err:
            raise SystemExit(f"--json: {err}") from None

    info = machine()
    print(f"machine: {info['cpu']} ({info['cpu_count']} CPUs), {info['platform']}")
    print(f"jax {info['jax']}, backend {info['backend']}, devices {info['devices']}")
    print(f"load average at start (1, 5, 15 min): {info['load_average_1_5_15min']}")
    cache = active_cache_dir()  # set by the user (JAX_COMPILATION_CACHE_DIR); `socialjax bench` never sets it
    if cache:
        print(f"note: JAX's persistent compilation cache is on ({cache}): a program compiled before is read back, "
              "so 'compile s' may not be a cold compile")
    steps_rule = f"T = {args.steps}" if args.steps else (
        f"T = clip({args.budget:,} // B, {MIN_STEPS}, {MAX_STEPS}) (adaptive)"
    )
    print(f"batch sizes {batch_sizes}; {steps_rule}; median of {args.repeats} calls; default params\n")

    results, skipped = [], {}
    for name in names:
        options = {"obs_mode": "rgb"} if args.obs_mode == "rgb" else {}
        try:
            env = sj.make(name, **options)
        except ValueError as exc:
            if args.obs_mode != "rgb":
                raise
            skipped[name] = f"no RGB observations ({exc})"
            continue
        for batch in batch_sizes:
            steps = args.steps or adaptive_steps(batch, args.budget)
            r = bench(env, batch, steps, args.repeats, args.seed)
            r["obs_mode"] = getattr(env, "obs_mode", "native")
            results.append(r)
            print(
                f"{name:>16} B={batch:<6} T={steps:<5} {r['env_steps_per_s']:>14,.0f} env-steps/s  "
                f"compile {r['compile_s']:.2f}s", file=sys.stderr, flush=True,
            )

    print(markdown_table(results))
    for name, why in skipped.items():
        print(f"\nskipped {name}: {why}")
    end_load = list(os.getloadavg())
    print(f"\nload average at end (1, 5, 15 min): {end_load}")
    if args.json:
        info["load_average_end"] = end_load
        from socialjax.train import store

        with store.replacing(args.json) as tmp, open(tmp, "w") as f:
            json.dump({"machine": info, "args": vars(args), "results": results, "skipped": skipped}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
