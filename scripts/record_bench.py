"""Turn the JSON that ``socialjax bench --json`` wrote into records of
``measurements/benchmarks/env_throughput.json`` (environments) or
``measurements/benchmarks/training_throughput.json`` (``--train``) and render
BENCHMARKS.md again.

    socialjax bench --envs ipd,coins --batch-sizes 1,64 --json bench.json
    python scripts/record_bench.py bench.json --table env-matrix-cpu --load "0.3 at the start, nothing else ran"

    socialjax bench --train harvest-ippo-small --seeds 1,4,16,64 --repeats 2 --json train.json
    python scripts/record_bench.py train.json --table train-aggregate-cpu --load "quiet"

The file says which it is: an environments file (its ``results``) becomes records of
``env_throughput.json``, one per measured row (one environment at one batch size;
``--envs`` keeps only the named environments); a ``--train`` file (its ``training``)
becomes records of ``training_throughput.json``, one per seed count S (seeds, how they
were computed, s per update, aggregate env-steps/s and agent-steps/s, the init's and
the update's compile seconds, the planned and, where the device says, the peak MiB).
``--table`` names the family's table the rows belong to (``env-matrix-cpu``,
``env-grid-codes-cpu``, ...; ``train-aggregate-cpu`` or a ``train-aggregate-gpu-*``
table); a table whose columns need a value the file does not hold is refused, naming
it, and nothing is made up. Their provenance comes from the file: the command (rebuilt
from the flags it records), the machine, device and software (from its machine
description), the batch sizes (the seed counts for ``--train``) and the repeats; the
date is the file's (its modification day) and the commit the checkout's (``git
rev-parse --short HEAD``; ``--commit`` names another). The load must be stated
(``--load``): what else ran while it measured is not in the file (only the load average
at the start, which is added), and a number without it cannot be compared. ``--notes``
adds a remark. ``--dry-run`` prints the records without writing them. The accelerator
check's report (``gpu_check.json``) is recorded by ``scripts/record_gpu_check.py``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import string
import subprocess
import sys
from pathlib import Path
from typing import Any

import render_tables
from render_tables import add_record, family_path, load_family, render, render_cell

FAMILY = "benchmarks/env_throughput"
TRAIN_FAMILY = "benchmarks/training_throughput"
FLAG_ORDER = ("envs", "batch_sizes", "steps", "budget", "repeats", "obs_mode", "seed")
TRAIN_FLAG_ORDER = ("train", "seeds", "repeats")


def command(flags: dict[str, Any], path: Path) -> str:
    """The ``socialjax bench`` command that wrote ``path``, from its recorded flags."""
    words = ["socialjax bench"]
    for name in FLAG_ORDER:
        value = flags.get(name)
        if value is not None:
            words.append(f"--{name.replace('_', '-')} {value}")
    return " ".join(words + [f"--json {path.name}"])


def train_command(flags: dict[str, Any], path: Path) -> str:
    """The ``socialjax bench --train`` command that wrote ``path``, from its recorded flags."""
    words = ["socialjax bench"]
    for name in TRAIN_FLAG_ORDER:
        if flags.get(name) is not None:
            words.append(f"--{name} {flags[name]}")
    words += [f"--set {key}={value}" for key, value in flags.get("overrides") or []]
    if flags.get("fit"):
        words.append("--fit")
    return " ".join(words + [f"--json {path.name}"])


def kind(data: Any) -> str:
    """``"envs"`` for the JSON of ``socialjax bench`` over environments, ``"train"`` for
    ``socialjax bench --train``'s; ``ValueError`` for anything else."""
    if isinstance(data, dict) and "results" in data:
        return "envs"
    if isinstance(data, dict) and "training" in data:
        return "train"
    if isinstance(data, dict) and "parts" in data:
        raise ValueError("the accelerator check's report, not `socialjax bench`'s JSON: record it with "
                         "python scripts/record_gpu_check.py")
    raise ValueError("not the JSON of `socialjax bench` (neither 'results' of environments nor 'training' of --train)")


def machine_provenance(machine: dict[str, Any], load: str) -> dict[str, Any]:
    """The machine, device, software and load of a ``socialjax bench`` file's description."""
    return {
        "machine": f"{machine.get('cpu')} ({machine.get('cpu_count')} CPUs), {machine.get('platform')}",
        "device": f"{machine.get('backend')} (`jax.devices()` = {machine.get('devices')})",
        "software": f"Python {machine.get('python')}, jax {machine.get('jax')}, socialjax {machine.get('socialjax')}",
        "load": f"{load}; load average at the start {machine.get('load_average_1_5_15min')}",
    }


def records(data: dict[str, Any], path: Path, table: str, load: str, *, envs: list[str] | None = None,
            commit: str | None = None, notes: str | None = None) -> list[dict[str, Any]]:
    """The records of ``table`` for the rows of a ``socialjax bench --json`` file over
    environments (:func:`train_records` for a ``--train`` file)."""
    if "results" not in data:
        raise ValueError(f"{path}: not the JSON of `socialjax bench` over environments (no 'results'; "
                         "a --train measurement goes to training_throughput.json: train_records)")
    machine, flags = data.get("machine", {}), data.get("args", {})
    rows = [r for r in data["results"] if envs is None or r["env"] in envs]
    if not rows:
        raise ValueError(f"{path}: no measured row" + (f" of {', '.join(envs)}" if envs else ""))
    date = datetime.date.fromtimestamp(path.stat().st_mtime).isoformat()
    about = machine_provenance(machine, load)
    provenance = {
        "command": command(flags, path), "machine": about["machine"], "device": about["device"],
        "software": about["software"], "date": date, "commit": commit,
        "batch_sizes": sorted({r["batch"] for r in data["results"]}),
        "repeats": f"median of {flags.get('repeats')} timed calls after the compiling one",
        "load": about["load"], "notes": notes,
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


def mib(nbytes: int | None) -> int | None:
    """Bytes as whole MiB (``None`` stays ``None``: the backend did not say)."""
    return None if nbytes is None else round(nbytes / 2**20)


def aggregate_values(r: dict[str, Any]) -> dict[str, Any]:
    """What an aggregate table shows of one row of :func:`socialjax.bench.train_sweep`
    (``socialjax bench --train`` and the accelerator check's ``aggregate`` parts): the
    compile seconds of the init and of one update when the row names those stages, else
    every stage's as text."""
    stages = r["compile_s"]
    init, update = stages.get("init"), stages.get("1 update")
    text = None if init is not None and update is not None else (
        "; ".join(f"{name} {t:.1f}" for name, t in stages.items()) or None)
    computed = f"{r['chunk']} at a time" if r["chunk"] else "all together"
    return {"what": f"ours, {r['env']}: {r['seating']} / {r['network']} / {r['conv']} / {r['precision']}",
            "seeds": r["seeds"], "computed": computed + (f" ({r['note']})" if r.get("note") else ""),
            "s_per_update": round(r["seconds_per_update"], 3), "env_steps_per_s": round(r["env_steps_per_s"]),
            "agent_steps_per_s": round(r["agent_steps_per_s"]), "status": None,
            "compile_init_s": None if init is None else round(init, 1),
            "compile_update_s": None if update is None else round(update, 1), "compile_text": text,
            "planned_mib": mib(r["planned_bytes"]), "peak_mib": mib(r.get("peak_memory_bytes"))}


def shaped(spec: dict[str, Any], table: str, values: dict[str, Any], provenance: dict[str, Any]) -> dict[str, Any]:
    """The record of ``table`` (its ``spec``) for a measurement's ``values``: the values its
    columns show (a value only a fallback template names is null when the measurement has
    none), then the provenance. ``ValueError`` naming the column when a column's first
    template needs a value the measurement does not have: a table of another kind, and
    nothing is made up for it."""
    keys: list[str] = []
    for column in spec["columns"]:
        templates = column["cell"] if isinstance(column["cell"], list) else [column["cell"]]
        for i, template in enumerate(templates):
            fields = [f for _, f, _, _ in string.Formatter().parse(template) if f]
            absent = [f for f in fields if f not in values]
            if i == 0 and absent:
                raise ValueError(f"table {table!r}, column {column['header']!r}: the measurement has no {absent} "
                                 "(a table of another kind?)")
            keys += fields
    record = {"table": table, **{k: values.get(k) for k in dict.fromkeys(keys)}, "provenance": provenance}
    for column in spec["columns"]:
        render_cell(column, record)  # a value of the wrong type fails here, not in the document
    return record


def train_records(data: dict[str, Any], path: Path, table: str, load: str, *, commit: str | None = None,
                  notes: str | None = None, spec: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The records of ``table`` of training_throughput.json (its ``spec``; read from the
    family file when not given) for the rows of a ``socialjax bench --train --json`` file:
    one per seed count S."""
    if "training" not in data:
        raise ValueError(f"{path}: not the JSON of `socialjax bench --train` (no 'training'; an environments "
                         "file goes to env_throughput.json: records)")
    rows = data["training"]
    if not rows:
        raise ValueError(f"{path}: no measured row")
    if spec is None:
        tables = load_family(family_path(TRAIN_FAMILY))["tables"]
        if table not in tables:
            raise ValueError(f"{table!r} is not a table of training_throughput.json; its tables: {sorted(tables)}")
        spec = tables[table]
    machine, flags = data.get("machine", {}), data.get("args", {})
    about = machine_provenance(machine, load)
    provenance = {
        "command": train_command(flags, path), "machine": about["machine"], "device": about["device"],
        "software": about["software"], "date": datetime.date.fromtimestamp(path.stat().st_mtime).isoformat(),
        "commit": commit, "batch_sizes": [r["seeds"] for r in rows],
        "repeats": f"the init and one update compiled, one untimed update, {flags.get('repeats')} timed; median",
        "load": about["load"], "notes": notes,
    }
    return [shaped(spec, table, aggregate_values(r), provenance) for r in rows]


def checkout_commit() -> str | None:
    try:
        done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=render_tables.ROOT, capture_output=True,
                              text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return done.stdout.strip() or None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("json", type=Path, help="the file `socialjax bench --json` (or `--train ... --json`) wrote")
    parser.add_argument("--table", required=True, help="the table of env_throughput.json (an environments file) or "
                        "of training_throughput.json (a --train file) the rows belong to")
    parser.add_argument("--load", required=True, help="what else ran while it measured (e.g. 'quiet')")
    parser.add_argument("--envs", default=None, help="comma-separated: only these environments' rows")
    parser.add_argument("--commit", default=None, help="the commit measured (default: the checkout's)")
    parser.add_argument("--notes", default=None)
    parser.add_argument("--dry-run", action="store_true", help="print the records, write nothing")
    args = parser.parse_args(argv)
    if not args.load.strip():
        parser.error("--load: say what else ran while it measured")
    try:
        data = json.loads(args.json.read_text())
        what = kind(data)
    except (OSError, ValueError) as err:
        parser.error(f"{args.json}: {err}")
    family = TRAIN_FAMILY if what == "train" else FAMILY
    path = family_path(family)
    tables = load_family(path)["tables"]
    if args.table not in tables:
        parser.error(f"--table: {args.table!r} is not a table of {path.name}; its tables: {sorted(tables)}")
    if what == "train" and args.envs:
        parser.error("--envs: a --train file measured a training preset, not environments")
    commit = args.commit or checkout_commit()
    try:
        if what == "train":
            made = train_records(data, args.json, args.table, args.load, commit=commit, notes=args.notes,
                                 spec=tables[args.table])
        else:
            made = records(data, args.json, args.table, args.load, envs=args.envs.split(",") if args.envs else None,
                           commit=commit, notes=args.notes)
    except (OSError, ValueError, KeyError, TypeError) as err:
        parser.error(f"{args.json}: {err}")
    for record in made:
        if args.dry_run:
            print(json.dumps(record))
        else:
            add_record(family, record, render_documents=False)
    if not args.dry_run:
        render()
        print(f"recorded {len(made)} row(s) in measurements/{family}.json; BENCHMARKS.md rendered")
    return 0


if __name__ == "__main__":
    sys.exit(main())
