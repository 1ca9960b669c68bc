"""Environment throughput of two source trees of socialjax, alternated on one machine: the
before/after of a change that should make the simulator faster (or a refactor that
should not make it slower).

Each round runs ``socialjax bench`` (:mod:`socialjax.bench`: B games x T steps of
uniformly random play in one jitted ``lax.scan``, observations and rewards summed inside
the loop, compile time apart, median of ``--repeats`` calls) once in a new process per
tree, with that tree first on ``PYTHONPATH``; the order of the trees alternates between
rounds, so drift in the machine's load falls on both. Reported per env and batch size:
the median over the rounds of each tree's median, and their ratio, with the load average
before and after.

    git worktree add /tmp/before <commit>
    python scripts/bench_trees.py --before /tmp/before --after . --envs harvest_open,cleanup --json trees.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def bench(tree: Path, envs: str, batch_sizes: str, budget: int, repeats: int, out: Path, pin: list[str]) -> list[dict]:
    """One ``socialjax bench`` run of ``tree`` in a new process; its result rows."""
    path = os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env = {**os.environ, "PYTHONPATH": path}
    command = [*pin, sys.executable, "-c", "import sys; from socialjax.cli import main; sys.exit(main(sys.argv[1:]))",
               "bench", "--envs", envs, "--batch-sizes", batch_sizes, "--budget", str(budget),
               "--repeats", str(repeats), "--json", str(out), "--overwrite"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=tree)
    if done.returncode != 0:
        raise SystemExit(f"the bench of {tree} failed:\n{done.stderr[-3000:]}")
    return json.loads(out.read_text())["results"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--before", type=Path, required=True, help="the tree before the change (a git worktree)")
    p.add_argument("--after", type=Path, default=Path("."), help="the tree after (default: this one)")
    p.add_argument("--envs", required=True, help="comma-separated env names")
    p.add_argument("--batch-sizes", default="64")
    p.add_argument("--budget", type=int, default=200_000, help="env-steps per timed call (T = budget / B)")
    p.add_argument("--repeats", type=int, default=5, help="timed calls per process (median)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--taskset", default=None, metavar="CPUS",
                   help="run every timed process on these CPUs only (Linux taskset -c, e.g. 0: one core, no "
                        "threads competing for it)")
    p.add_argument("--json", type=Path, default=None, help="write every measurement here")
    args = p.parse_args(argv)
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    for name, tree in trees.items():
        if not (tree / "socialjax" / "__init__.py").is_file():
            p.error(f"--{name} {tree}: not a socialjax source tree (no socialjax/__init__.py)")
    pin = ["taskset", "-c", args.taskset] if args.taskset else []
    load_before = os.getloadavg()
    print(f"load average before: {load_before[0]:.2f} (1 min); {args.rounds} rounds, median of {args.repeats} calls"
          + (f", every process on CPUs {args.taskset}" if args.taskset else ""))
    speeds: dict[tuple[str, int], dict[str, list[float]]] = {}
    compiles: dict[tuple[str, int], dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for name in (("before", "after") if r % 2 == 0 else ("after", "before")):
                for row in bench(trees[name], args.envs, args.batch_sizes, args.budget, args.repeats,
                                 Path(tmp) / f"{name}.json", pin):
                    cell = speeds.setdefault((row["env"], row["batch"]), {"before": [], "after": []})
                    cell[name].append(row["env_steps_per_s"])
                    compiles.setdefault((row["env"], row["batch"]), {"before": [], "after": []})[name].append(
                        row["compile_s"])
                    print(f"  round {r} {name:6s} {row['env']} B={row['batch']}: {row['env_steps_per_s']:,.0f} "
                          f"env-steps/s (T={row['steps']}, compile {row['compile_s']:.1f} s)", flush=True)
    load_after = os.getloadavg()
    print(f"load average after: {load_after[0]:.2f} (1 min)")
    rows = []
    for (env, batch), cell in speeds.items():
        before, after = statistics.median(cell["before"]), statistics.median(cell["after"])
        rows.append({"env": env, "batch": batch, "before": before, "after": after, "ratio": after / before,
                     "before_rounds": cell["before"], "after_rounds": cell["after"],
                     "compile_s": compiles[(env, batch)]})
        compile_s = {k: statistics.median(v) for k, v in compiles[(env, batch)].items()}
        print(f"{env:22s} B={batch:<6d} before {before:12,.0f}  after {after:12,.0f}  {after / before:5.2f}x  "
              f"(compile {compile_s['before']:.1f} -> {compile_s['after']:.1f} s)")
    if args.json:
        args.json.write_text(json.dumps({"before": str(trees["before"]), "after": str(trees["after"]),
                                         "budget": args.budget, "repeats": args.repeats, "rounds": args.rounds,
                                         "taskset": args.taskset,
                                         "load_before": load_before, "load_after": load_after, "rows": rows},
                                        indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
