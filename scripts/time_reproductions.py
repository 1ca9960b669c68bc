"""Where each reproduction's minutes go: compile, training (rollout and learning apart),
models, analysis, writing and the rest, per entry, on a cold compilation cache.

Each entry runs as ``socialjax reproduce NAME --scale SCALE`` in a process of its own
with the persistent compilation cache off (``SOCIALJAX_COMPILATION_CACHE=0``: every
program compiled as on a fresh machine); its phases are the ``timings`` of its
``reproduction.json`` (:class:`socialjax.reproduce.timings.Timings`) and its CPU seconds are
the process's user + system time. With ``--split`` a second process estimates how an
update of each trained population divides between the rollout (the env steps and the
acting) and learning: one update of the entry's own batch (its seeds vmapped, as
``reproduce`` runs them) and its rollout alone, each compiled and timed (median of
``--repeats`` calls); the rollout's share of the update, weighted over the entry's runs
by their env steps, splits the training's run time (training minus its compile).

    python scripts/time_reproductions.py --entries cleanup-reward,norms --split
    python scripts/time_reproductions.py --json times.json        # every entry at cpu scale

The printed table is what BENCHMARKS.md's "Where a reproduction's minutes go" shows
(its records in measurements/benchmarks/reproduction_time.json).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the scripts beside this one
from check_io import compiled, timed

from socialjax.reproduce.report import RESULT_FILE
from socialjax.reproduce.timings import Timings


def run_entry(name: str, scale: str, seed: int, out: Path) -> dict:
    """``socialjax reproduce`` of one entry in a fresh process, cache off: its timings,
    verdict, wall and CPU seconds."""
    env = dict(os.environ, SOCIALJAX_COMPILATION_CACHE="0")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    command = [sys.executable, "-m", "socialjax.cli", "reproduce", name, "--scale", scale, "--seed", str(seed),
               "--out", str(out), "--overwrite"]
    proc = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{name}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    result = json.loads((out / RESULT_FILE).read_text())
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"entry": name, "scale": scale, "base_seed": seed, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "verdict": result["verdict"], "reason": result["reason"], "timings": result["timings"]}


def seconds_per_call(fn, args, repeats: int) -> float:
    """Median seconds of ``jax.jit(fn)(*args)`` once compiled."""
    program, _ = compiled(jax.jit(fn), *args)
    return statistics.median(timed(lambda: program(*args), repeats))


def rollout_share(name: str, scale: str, repeats: int) -> dict:
    """The rollout's share of an update of each population the entry trains at
    ``scale`` (its seeds vmapped), weighted by the runs' env steps; ``{}`` for an entry
    without populations."""
    from bench_train import update_pieces  # noqa: PLC0415 (a script beside this one)

    from socialjax.reproduce import get_entry
    from socialjax.reproduce.core import _plans, group_plans, merged_config
    from socialjax.train import make_train, run_keys

    entry = get_entry(name)
    seeds = entry.seeds[scale]
    plans, _ = _plans(entry, scale, seeds, 0)
    parts, weights = [], []
    for group in group_plans(plans, scale):
        env, config = group[0][1], merged_config(group)
        config = config.replace(**{k: float(np.asarray(v).ravel()[0]) for k, v in config.sweep_axes().items()})
        train = make_train(env, config)
        keys = run_keys(list(range(seeds)))
        states = jax.jit(jax.vmap(train.init))(keys)
        rollout = update_pieces(train)[0]
        update_s = seconds_per_call(jax.vmap(lambda s: train.updates(s, 0, length=1)[0]), (states,), repeats)
        rollout_s = seconds_per_call(jax.vmap(rollout), (states, keys), repeats)
        points = len(group)
        parts.append(min(1.0, rollout_s / update_s))
        weights.append(points * seeds * config.num_updates * config.num_envs * config.rollout_len)
    if not parts:
        return {}
    return {"rollout_share": round(float(np.average(parts, weights=weights)), 3),
            "rollout_shares": [round(p, 3) for p in parts]}


def table_line(rec: dict) -> str:
    t = Timings.from_json(rec["timings"])
    train_run = t.training.seconds - t.training.compile_seconds
    share = rec.get("rollout_share")
    split = "" if share is None else f" (rollout {share * train_run:.0f}, learning {(1 - share) * train_run:.0f})"
    rate = "" if t.env_steps_per_second is None else f", {t.env_steps_per_second:,.0f} env-steps/s"
    return (f"{rec['entry']:22s} wall {rec['wall_s']:6.0f} s, cpu {rec['cpu_s']:6.0f} s | compile "
            f"{t.compile_seconds:5.0f} | training {train_run:5.0f}{split} | models "
            f"{t.models.seconds - t.models.compile_seconds:4.0f} | analysis "
            f"{t.analysis.seconds - t.analysis.compile_seconds:4.0f} | writing {t.writing.seconds:3.0f} | other "
            f"{t.host_seconds:3.0f}{rate} | {rec['verdict']}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", default="", help="comma-separated (default: every entry)")
    parser.add_argument("--scale", default="cpu")
    parser.add_argument("--seed", type=int, default=0, help="the reproductions' base seed")
    parser.add_argument("--split", action="store_true", help="estimate rollout vs learning (another process)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, help="write the records here")
    parser.add_argument("--keep", type=Path, help="keep each entry's folder here (default: a temporary one)")
    parser.add_argument("--share-of", help=argparse.SUPPRESS)  # the --split worker: one entry's share as JSON
    args = parser.parse_args(argv)
    if args.share_of:
        print(json.dumps(rollout_share(args.share_of, args.scale, args.repeats)))
        return 0
    from socialjax.reproduce import ENTRIES

    names = [n for n in args.entries.split(",") if n] or list(ENTRIES)
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            rec = run_entry(name, args.scale, args.seed, (args.keep or Path(tmp)) / f"{name}-{args.seed}")
            if args.split and rec["timings"]["env_steps"]:
                proc = subprocess.run([sys.executable, __file__, "--share-of", name, "--scale", args.scale,
                                       "--repeats", str(args.repeats)], capture_output=True, text=True, check=True)
                rec.update(json.loads(proc.stdout.strip().splitlines()[-1]))
            records.append(rec)
            print(table_line(rec), flush=True)
            if args.json:
                args.json.write_text(json.dumps(records, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
