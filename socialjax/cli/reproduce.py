"""``socialjax reproduce NAME [--scale small|paper] [--seeds N] [--seed S] [--out DIR]`` and
``socialjax reproduce --list``."""

from __future__ import annotations

import argparse

from socialjax.cli.common import (
    add_cache_flag,
    add_log_flags,
    exit_now,
    non_negative_int,
    seed_count,
    use_compile_cache,
)
from socialjax.reproduce import DEFAULT_SCALE, ENTRIES, SCALES, get_entry, reproduce
from socialjax.reproduce.core import FIGURE_FILE, TABLE_FILE, Stopped, format_table, seed_text
from socialjax.reproduce.staging import kept_text
from socialjax.train import store
from socialjax.train.runner import Failed


def add_parser(subparsers) -> argparse.ArgumentParser:
    cmd = subparsers.add_parser(
        "reproduce", help="rerun a published experiment and compare with the paper (--list shows them)",
        description="Rerun a published experiment: train every condition, write the figure with the published "
                    "values overlaid, a published-vs-ours table with 95%% intervals over seeds, and a verdict "
                    "computed from the numbers (reproduced / partly / not reproduced, criterion stated). "
                    "--scale cpu (the default) is sized for the published direction to show on a 2-core CPU in at "
                    "most 10 minutes; --scale paper is the published size.")
    cmd.add_argument("name", nargs="?", help="the experiment (socialjax reproduce --list)")
    cmd.add_argument("--list", action="store_true", help="list the experiments and exit")
    cmd.add_argument("--scale", choices=SCALES, default=DEFAULT_SCALE,
                     help="small: a pipeline check; cpu: sized for the published direction to show on a 2-core CPU in "
                          "at most 10 minutes; gpu: at most 6 minutes on one H100-class GPU (gridworld entries); "
                          "paper: the published configuration")
    cmd.add_argument("--seeds", type=seed_count, default=None,
                     help="seeds per condition (at least 2; default: the entry's for the scale)")
    cmd.add_argument("--seed", type=non_negative_int, default=0,
                     help="the first seed number (default 0, the seed set REPRODUCTIONS.md reports; another "
                          "number, e.g. 1000, checks the result on seeds nobody tuned to)")
    cmd.add_argument("--out", default=None, help="output folder (default results/reproduce/NAME-SCALE)")
    cmd.add_argument("--overwrite", action="store_true",
                     help="replace an earlier result in --out (kept until the new one is complete), or start an "
                          "unfinished one again (without it, a rerun reuses the runs a stopped one finished)")
    cmd.add_argument("--quiet", action="store_true", help="no progress lines")
    cmd.set_defaults(subparser=cmd)
    add_cache_flag(cmd)
    add_log_flags(cmd)
    return cmd


def main(args: argparse.Namespace) -> int:
    use_compile_cache(args)
    parser = args.subparser
    if args.list:
        for entry in ENTRIES.values():
            print(f"{entry.name:20s} {entry.title}  [{entry.citation}]")
        return 0
    if args.name is None:
        parser.error("give an experiment (socialjax reproduce --list shows them)")
    try:
        entry = get_entry(args.name)
    except ValueError as err:
        parser.error(str(err))
    if args.seeds is not None and args.seeds < 2:
        parser.error("--seeds must be at least 2 (the verdict compares intervals over seeds)")
    out = args.out or f"results/reproduce/{entry.name}-{args.scale}" + (f"-seed{args.seed}" if args.seed else "")
    try:
        store.check_out_dir(out, overwrite=args.overwrite, resume=True)  # an unfinished run of it is continued
        with store.claim(out):
            try:
                rep = reproduce(entry, args.scale, args.seeds, base_seed=args.seed, out=out,
                                overwrite=args.overwrite, progress=not args.quiet, log=args.log,
                                log_dir=args.log_dir)
            except KeyboardInterrupt:  # a second Ctrl-C, or one while compiling
                exit_now(130, f"\nstopped at once{kept_text(out)}\n")
    except Stopped as stop:
        if stop.at_once:
            exit_now(130, f"\n{entry.name}: {stop}\n")
        parser.exit(130, f"\n{entry.name}: {stop}\n")
    except Failed as err:  # memory, a full or read-only disk: one line, with what is kept
        parser.exit(1, f"socialjax reproduce {entry.name}: {err}\n")
    except store.OutputError as err:
        parser.error(f"--out: {err}")
    except ImportError as err:  # a tracker's package (--log) is not installed: said before any training
        parser.error(f"--log: {err}")
    except ValueError as err:
        parser.error(f"{entry.name}: {err}")
    except (OSError, MemoryError) as err:
        line = store.os_error_line(err, "write the results") if isinstance(err, OSError) else str(err)
        parser.exit(1, f"socialjax reproduce {entry.name}: {line}{kept_text(out)}\n")
    print(f"\n{entry.name} ({args.scale}, {seed_text(rep)}, {rep.timings.total:.0f} s): {rep.verdict.upper()}")
    print(rep.reason)
    print(f"criterion: {entry.criterion_text}")
    print(f"{rep.timings.line()}\n")
    print("published:")
    reported = {row["condition"] for row in rep.rows}
    for ref in entry.references:
        if ref.condition in reported:
            finding = ref.note if ref.value is None else f"{ref.value:g}" + (f" ({ref.note})" if ref.note else "")
            print(f"  {ref.condition} / {ref.measure}: {finding} [{ref.source}]")
    print()
    print(format_table(rep.rows))
    print(f"\nwrote {out}/ ({FIGURE_FILE}, {TABLE_FILE}, summary.txt, one folder per condition)")
    return 0
