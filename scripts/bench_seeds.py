"""Many seeds on one device: what compiling costs as the seeds grow, and how many runs
computed together (the chunk) an update's time wants.

- ``--which compile``: for each preset of ``--presets``, each convolution of ``--convs``
  and each seed count of ``--seeds``, the engine compiles every stage of a one-update run
  exactly as :func:`socialjax.train.run` does (``engine.compile_stages``: the memory
  check, the chunk it settles on, a progress line per update), and nothing is run. Each
  measurement is a fresh process with the compilation cache off, so tracing, lowering
  and compiling are all counted; ``--repeats`` rounds, the configurations alternated
  within a round. Reported: the median seconds of each stage (init, the update, the
  finish with its evaluation), the programs the update needed (more than one when the
  first did not fit the device), the chunk and the bytes the program plans.
- ``--which chunk``: ``--updates`` updates of ``--presets``' first preset with
  ``--seeds``' largest count, run by :func:`socialjax.train.run` computing the runs
  ``--chunks`` at a time (``none``: the engine's choice), evaluation off, alternated
  over ``--repeats`` rounds; the median run seconds (compile apart) and env-steps/s.

    python scripts/bench_seeds.py --which compile --presets harvest-ippo-small --seeds 4,256,1024 \\
        --convs xla,looped --repeats 3
    python scripts/bench_seeds.py --which compile --presets cleanup-ippo-paper --seeds 4,256,1024 \\
        --convs xla,looped --repeats 3 --memory 141
    python scripts/bench_seeds.py --which chunk --presets harvest-ippo-small --seeds 64 --chunks 4,16,64 \\
        --updates 3 --repeats 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

WHICH = ("compile", "chunk")


def compile_once(preset_name: str, conv: str, seeds: int, memory: int | None) -> dict:
    """Compile a one-update run of ``seeds`` seeds as ``run`` would (this process, cache off),
    fitting the runs to ``memory`` bytes (``None``: the device's)."""
    import jax
    import numpy as np

    from socialjax.train import make_train
    from socialjax.train.engine import compile_stages, run_keys, stages
    from socialjax.train.presets import get_preset
    from socialjax.train.run import PopulationJob

    preset = get_preset(preset_name)
    start = time.perf_counter()
    job = PopulationJob(make_train(preset.make_env(), preset.make_config(num_updates=1, log_every=1, conv=conv)))
    grid = job.hparam_grid()
    G = len(next(iter(grid.values())))
    keys = run_keys(np.tile(np.arange(seeds), G))
    hparams = {k: np.repeat(v, seeds) for k, v in grid.items()}
    plan = stages(0, job.num_updates, 1, fresh=True)
    blocks = compile_stages(job, plan, keys, hparams, 0, jax.devices(), None, memory, None)
    return {"preset": preset_name, "conv": conv, "seeds": seeds, "total_s": time.perf_counter() - start,
            "stages": {k: list(v) for k, v in blocks.compile_times.items()}, "chunk": blocks.chunk,
            "per_device": blocks.layout.per_device, "memory_bytes": blocks.memory_bytes}


def bench_compile(args) -> list[dict]:
    rows: dict[tuple, list[dict]] = {}
    env = {**os.environ, "SOCIALJAX_COMPILATION_CACHE": "0"}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    for r in range(args.repeats):
        for preset in args.presets:
            for conv in args.convs:
                for seeds in args.seeds:
                    out = subprocess.run([sys.executable, __file__, "--one", preset, conv, str(seeds),
                                          str(args.memory or 0)], env=env, capture_output=True, text=True)
                    if out.returncode:
                        raise SystemExit(f"{preset} {conv} {seeds}: failed\n{out.stderr[-3000:]}")
                    row = json.loads(out.stdout.strip().splitlines()[-1])
                    print(f"round {r + 1}: {preset} conv={conv} S={seeds}: {row['total_s']:.1f} s "
                          f"{row['stages']} chunk {row['chunk']}", file=sys.stderr, flush=True)
                    rows.setdefault((preset, conv, seeds), []).append(row)
    table = []
    for (preset, conv, seeds), rs in rows.items():
        stage_names = list(rs[0]["stages"])
        table.append({"preset": preset, "conv": conv, "seeds": seeds, "chunk": rs[0]["chunk"],
                      "memory_bytes": rs[0]["memory_bytes"],
                      "programs": max(len(r["stages"][n]) for r in rs for n in stage_names),
                      "stage_s": {n: statistics.median(sum(r["stages"][n]) for r in rs) for n in stage_names},
                      "total_s": statistics.median(r["total_s"] for r in rs),
                      "totals_s": [r["total_s"] for r in rs]})
    return table


def bench_chunk(args) -> list[dict]:
    import socialjax as sj
    from socialjax.train.presets import get_preset

    preset = get_preset(args.presets[0])
    env = preset.make_env()
    config = preset.make_config(num_updates=args.updates, log_every=0, evaluate=False)
    seeds = max(args.seeds)
    times: dict[str, list[float]] = {c: [] for c in args.chunks}
    chosen = {}
    for _ in range(args.repeats):
        for c in args.chunks:
            result = sj.train.run(env, config, seeds=seeds, progress=False, chunk=None if c == "none" else int(c))
            times[c].append(result.seconds - result.compile_seconds)
            chosen[c] = result.chunk
            print(f"chunk {c}: run {times[c][-1]:.2f} s", file=sys.stderr, flush=True)
    steps = seeds * args.updates * config.num_envs * config.rollout_len
    return [{"preset": args.presets[0], "seeds": seeds, "chunk": c, "computed_chunk": chosen[c],
             "updates": args.updates, "times_s": ts, "median_s": statistics.median(ts),
             "env_steps_per_s": steps / statistics.median(ts)} for c, ts in times.items()]


def markdown(which: str, rows: list[dict]) -> str:
    if which == "compile":
        lines = ["| preset | conv | seeds | chunk | programs for the update | init s | update s | finish s "
                 "| compile s (median) | x the fewest seeds' |",
                 "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        base = {}
        for r in rows:
            base.setdefault((r["preset"], r["conv"]), r["total_s"])
            s = list(r["stage_s"].values())
            lines.append(f"| {r['preset']} | {r['conv']} | {r['seeds']} | {r['chunk'] or 'all'} | {r['programs']} | "
                         + " | ".join(f"{x:.1f}" for x in s) + f" | {r['total_s']:.1f} | "
                         f"{r['total_s'] / base[(r['preset'], r['conv'])]:.2f} |")
        return "\n".join(lines)
    lines = ["| preset | seeds | chunk asked | computed | median run s | env-steps/s |",
             "|---|---:|---|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['preset']} | {r['seeds']} | {r['chunk']} | {r['computed_chunk'] or 'all'} | "
                     f"{r['median_s']:.2f} | {r['env_steps_per_s']:,.0f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--which", choices=WHICH, default="compile")
    p.add_argument("--presets", type=lambda s: s.split(","), default=["harvest-ippo-small"])
    p.add_argument("--seeds", type=lambda s: [int(x) for x in s.split(",")], default=[4, 256, 1024])
    p.add_argument("--convs", type=lambda s: s.split(","), default=["xla", "looped"])
    p.add_argument("--chunks", type=lambda s: s.split(","), default=["none", "4", "16", "64"])
    p.add_argument("--updates", type=int, default=3)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", default=None, help="write the rows here")
    p.add_argument("--memory", type=lambda g: int(float(g) * 2**30), default=None, metavar="GIB",
                   help="compile: the device memory the runs are fitted to (default: the device's; "
                        "cleanup-ippo-paper's 1,024 runs hold 45 GB of state: --memory 141, an H200's, compiles "
                        "what such a device would)")
    p.add_argument("--one", nargs=4, metavar=("PRESET", "CONV", "SEEDS", "MEMORY"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:  # a worker: one compile measurement, printed as JSON
        print(json.dumps(compile_once(args.one[0], args.one[1], int(args.one[2]), int(args.one[3]) or None)))
        return 0
    import jax

    load = os.getloadavg()
    rows = bench_compile(args) if args.which == "compile" else bench_chunk(args)
    end = os.getloadavg()
    print(f"command: `python scripts/bench_seeds.py {' '.join(sys.argv[1:] if argv is None else argv)}`")
    print(f"jax {jax.__version__}, {os.cpu_count()} CPUs ({jax.default_backend()}), load average at start "
          f"{load[0]:.2f}, at end {end[0]:.2f}")
    print(markdown(args.which, rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"which": args.which, "load_start": load, "load_end": end, "rows": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
