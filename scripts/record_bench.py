"""Turn the JSON that ``socialjax bench --json`` wrote into records of
``measurements/benchmarks/env_throughput.json`` and render BENCHMARKS.md again.

    socialjax bench --envs ipd,coins --batch-sizes 1,64 --json bench.json
    python scripts/record_bench.py bench.json --table env-matrix-cpu --load "0.3 at the start, nothing else ran"

Each measured row (one environment at one batch size) becomes one record of the table
named by ``--table`` (one of the family's tables: ``env-matrix-cpu``,
``env-grid-codes-cpu``, ...; ``--envs`` keeps only the named environments). Its
provenance comes from the file: the command (rebuilt from the flags it records), the
machine, device and software (from its machine description), the batch sizes and the
repeats; the date is the file's (its modification day) and the commit the checkout's
(``git rev-parse --short HEAD``; ``--commit`` names another). The load must be stated
(``--load``): what else ran while it measured is not in the file, and a number without
it cannot be compared. ``--notes`` adds a remark. ``--dry-run`` prints the records
without writing them.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from render_tables import ROOT, add_record, family_path, load_family, render

FAMILY = "benchmarks/env_throughput"
FLAG_ORDER = ("envs", "batch_sizes", "steps", "budget", "repeats", "obs_mode", "seed")


def command(flags: dict[str, Any], path: Path) -> str:
    """The ``socialjax bench`` command that wrote ``path``, from its recorded flags."""
    words = ["socialjax bench"]
    for name in FLAG_ORDER:
        value = flags.get(name)
        if value is not None:
            words.append(f"--{name.replace('_', '-')} {value}")
    return " ".join(words + [f"--json {path.name}"])


def records(data: dict[str, Any], path: Path, table: str, load: str, *, envs: list[str] | None = None,
            commit: str | None = None, notes: str | None = None) -> list[dict[str, Any]]:
    """The records of ``table`` for the rows of a ``socialjax bench --json`` file."""
    if "results" not in data:
        raise ValueError(f"{path}: not the JSON of `socialjax bench` over environments (no 'results'; "
                         "a --train measurement goes to training_throughput.json)")
    machine, flags = data.get("machine", {}), data.get("args", {})
    rows = [r for r in data["results"] if envs is None or r["env"] in envs]
    if not rows:
        raise ValueError(f"{path}: no measured row" + (f" of {', '.join(envs)}" if envs else ""))
    date = datetime.date.fromtimestamp(path.stat().st_mtime).isoformat()
    provenance = {
        "command": command(flags, path),
        "machine": f"{machine.get('cpu')} ({machine.get('cpu_count')} CPUs), {machine.get('platform')}",
        "device": f"{machine.get('backend')} (`jax.devices()` = {machine.get('devices')})",
        "software": f"Python {machine.get('python')}, jax {machine.get('jax')}, socialjax {machine.get('socialjax')}",
        "date": date, "commit": commit, "batch_sizes": sorted({r["batch"] for r in data["results"]}),
        "repeats": f"median of {flags.get('repeats')} timed calls after the compiling one",
        "load": f"{load}; load average at the start {machine.get('load_average_1_5_15min')}",
        "notes": notes,
    }
    out = []
    for r in rows:
        times = r["times_s"]
        out.append({"table": table, "env": r["env"], "agents": r["num_agents"], "batch": r["batch"],
                    "steps": r["steps"], "env_steps_per_s": round(r["env_steps_per_s"]),
                    "agent_steps_per_s": round(r["agent_steps_per_s"]), "median_call_s": round(r["median_s"], 3),
                    "min_call_s": round(min(times), 3), "max_call_s": round(max(times), 3),
                    "compile_s": round(r["compile_s"], 2), "provenance": provenance})
    return out


def checkout_commit() -> str | None:
    try:
        done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return done.stdout.strip() or None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("json", type=Path, help="the file `socialjax bench --json` wrote")
    parser.add_argument("--table", required=True, help="the table of env_throughput.json the rows belong to")
    parser.add_argument("--load", required=True, help="what else ran while it measured (e.g. 'quiet')")
    parser.add_argument("--envs", default=None, help="comma-separated: only these environments' rows")
    parser.add_argument("--commit", default=None, help="the commit measured (default: the checkout's)")
    parser.add_argument("--notes", default=None)
    parser.add_argument("--dry-run", action="store_true", help="print the records, write nothing")
    args = parser.parse_args(argv)
    tables = load_family(family_path(FAMILY))["tables"]
    if args.table not in tables:
        parser.error(f"--table: {args.table!r} is not a table of env_throughput.json; its tables: {sorted(tables)}")
    if not args.load.strip():
        parser.error("--load: say what else ran while it measured")
    try:
        data = json.loads(args.json.read_text())
        made = records(data, args.json, args.table, args.load, envs=args.envs.split(",") if args.envs else None,
                       commit=args.commit or checkout_commit(), notes=args.notes)
    except (OSError, ValueError, KeyError, TypeError) as err:
        parser.error(f"{args.json}: {err}")
    for record in made:
        if args.dry_run:
            print(json.dumps(record))
        else:
            add_record(FAMILY, record, render_documents=False)
    if not args.dry_run:
        render()
        print(f"recorded {len(made)} row(s) in {family_path(FAMILY).relative_to(ROOT)}; BENCHMARKS.md rendered")
    return 0


if __name__ == "__main__":
    sys.exit(main())
