"""Throughput of every registered environment under random actions, or of a training
preset at several seed counts in one call: ``socialjax bench`` (``python
scripts/bench_envs.py`` is the same program for the environments).

    socialjax bench --envs ipd,cleanup --batch-sizes 1,4096
    socialjax bench --train cleanup-ippo-paper --set seating=shared --seeds 1,8,64 --fit

The arguments, their checks and the printed report; the measuring is
:mod:`socialjax.bench`'s. A bad argument exits with its message (status 1) before
anything is compiled. JAX's persistent compilation cache is never turned on here: the
report includes compile time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import socialjax as sj
from socialjax import bench
from socialjax.bench import DEFAULT_BATCH_SIZES, MAX_STEPS, MIN_STEPS, STEP_BUDGET
from socialjax.cli.common import config_overrides, key_value, non_negative_int, seed_count
from socialjax.train import store
from socialjax.train.compilation import active_cache_dir
from socialjax.train.presets import DONOR_EVOLUTION, PRESETS, get_preset


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "bench", help="env-steps/s of environments under random actions, or of training many seeds in one call "
                      "(socialjax bench --help)",
        description=__doc__.split("\n\n")[0])
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
    parser.add_argument("--seed", type=non_negative_int, default=0)
    train = parser.add_argument_group(
        "training (--train)", "aggregate env-steps/s of S runs of a preset in one call, for each S of --seeds: the "
        "init and one update compiled (their seconds apart), one untimed update, --repeats timed ones")
    train.add_argument("--train", default=None, metavar="PRESET",
                       help=f"a population preset ({', '.join(k for k in PRESETS if k != DONOR_EVOLUTION)})")
    train.add_argument("--seeds", default="1,8,64", help="comma-separated seed counts, in increasing order "
                       "(default 1,8,64)")
    train.add_argument("--set", dest="overrides", action="append", type=key_value, default=[], metavar="KEY=VALUE",
                       help="override a TrainConfig field of the preset, repeatable (--set seating=shared)")
    train.add_argument("--fit", action="store_true", help="and as many runs as the device's memory holds "
                       "together (GPUs and TPUs)")
    parser.add_argument("--json", default=None, metavar="PATH", help="write the raw results here")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --json file")
    return parser


def _checked(args: argparse.Namespace) -> tuple[list[str], list[int]]:
    """The env names and batch sizes, every argument checked (``SystemExit`` with the
    reason otherwise)."""
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
        try:
            store.check_out_file(args.json, overwrite=args.overwrite, suffixes=(".json",))
        except store.OutputError as err:
            raise SystemExit(f"--json: {err}") from None
    return names, batch_sizes


def _progress(r: dict) -> None:
    print(f"{r['env']:>16} B={r['batch']:<6} T={r['steps']:<5} {r['env_steps_per_s']:>14,.0f} env-steps/s  "
          f"compile {r['compile_s']:.2f}s", file=sys.stderr, flush=True)


def _checked_training(args: argparse.Namespace):
    """The preset's env and config with the overrides, and the seed counts, every argument
    checked (``SystemExit`` with the reason otherwise)."""
    if args.envs is not None:
        raise SystemExit("--train measures a training preset, --envs environments: give one of them")
    if args.train == DONOR_EVOLUTION or args.train not in PRESETS:
        raise SystemExit(f"--train: {args.train!r} is not a population preset; `socialjax train --help` lists them")
    try:
        seeds = [seed_count(s) for s in args.seeds.split(",")]
    except (argparse.ArgumentTypeError, ValueError) as err:
        raise SystemExit(f"--seeds must be comma-separated seed counts: {err}") from None
    if seeds != sorted(set(seeds)):
        raise SystemExit(f"--seeds must be increasing (the device's peak memory is the process's), got {args.seeds}")
    if args.repeats < 1:
        raise SystemExit("--repeats must be positive")
    preset = get_preset(args.train)
    try:
        config = preset.make_config(**config_overrides(args.overrides))
        config.validate()
    except (ValueError, TypeError) as err:
        raise SystemExit(f"--set: {err}") from None
    if args.json:
        try:
            store.check_out_file(args.json, overwrite=args.overwrite, suffixes=(".json",))
        except store.OutputError as err:
            raise SystemExit(f"--json: {err}") from None
    return preset.make_env(), config, seeds


def _train_progress(r: dict) -> None:
    together = f"{r['chunk']} at a time" if r["chunk"] else "together"
    print(f"{r['seeds']:>6} seed(s) ({together}): {r['seconds_per_update']:.3f} s per update, "
          f"{r['env_steps_per_s']:>14,.0f} env-steps/s  compile {sum(r['compile_s'].values()):.1f}s",
          file=sys.stderr, flush=True)


def main_training(args: argparse.Namespace) -> int:
    env, config, seeds = _checked_training(args)
    info = bench.machine()
    print(f"machine: {info['cpu']} ({info['cpu_count']} CPUs), {info['platform']}")
    print(f"jax {info['jax']}, backend {info['backend']}, devices {info['devices']}")
    print(f"load average at start (1, 5, 15 min): {info['load_average_1_5_15min']}")
    print(f"{args.train}{' with ' + ', '.join(f'{k}={v!r}' for k, v in args.overrides) if args.overrides else ''}: "
          f"{config.num_envs} games x {config.rollout_len} steps per update; seeds {seeds}; median of "
          f"{args.repeats} timed update(s) after one untimed\n")
    rows = bench.train_sweep(env, config, seeds, repeats=args.repeats, fit=args.fit, report=_train_progress)
    print(bench.train_table(rows))
    end_load = list(os.getloadavg())
    print(f"\nload average at end (1, 5, 15 min): {end_load}")
    if args.json:
        info["load_average_end"] = end_load
        flags = {k: v for k, v in vars(args).items() if k not in ("command", "main", "subparser")}
        with store.replacing(args.json) as tmp, open(tmp, "w") as f:
            json.dump({"machine": info, "args": flags, "training": rows}, f, indent=2)
    return 0


def main(args: argparse.Namespace) -> int:
    if args.train is not None:
        return main_training(args)
    names, batch_sizes = _checked(args)
    info = bench.machine()
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

    results, skipped = bench.measure(names, batch_sizes, steps=args.steps, budget=args.budget, repeats=args.repeats,
                                     seed=args.seed, obs_mode=args.obs_mode, report=_progress)
    print(bench.markdown_table(results))
    for name, why in skipped.items():
        print(f"\nskipped {name}: {why}")
    end_load = list(os.getloadavg())
    print(f"\nload average at end (1, 5, 15 min): {end_load}")
    if args.json:
        info["load_average_end"] = end_load
        flags = {k: v for k, v in vars(args).items() if k not in ("command", "main", "subparser")}  # not flags
        with store.replacing(args.json) as tmp, open(tmp, "w") as f:
            json.dump({"machine": info, "args": flags, "results": results, "skipped": skipped}, f, indent=2)
    return 0
