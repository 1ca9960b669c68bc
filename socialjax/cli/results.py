"""``socialjax results DIR [--csv OUT [--overwrite]]``: a saved run's summary, or every
saved value as one row of a long CSV table."""

from __future__ import annotations

import argparse

from socialjax.train import store, tables


def add_parser(subparsers) -> argparse.ArgumentParser:
    cmd = subparsers.add_parser(
        "results", help="print the summary of a results folder, or write it as a long CSV table",
        description="Print the summary of a folder written by `socialjax train` (a population run or "
                    "donor-evolution), or with --csv write every saved value as one row of a CSV file: "
                    "grid_point, the swept hyperparameters, seed, update, member, metric, value (donor-evolution: "
                    "multiplier, seed, generation, metric, value). In Python: "
                    "socialjax.train.results.to_frame(DIR) gives the same table as a pandas DataFrame.")
    cmd.add_argument("dir", help="folder written by socialjax train (--out)")
    cmd.add_argument("--csv", default=None, metavar="OUT", help="write the long-format table to the file OUT")
    cmd.add_argument("--overwrite", action="store_true", help="with --csv: replace OUT if it exists")
    cmd.set_defaults(subparser=cmd)
    return cmd


def main(args: argparse.Namespace) -> int:
    """--csv is checked before the folder is read."""
    parser = args.subparser
    if args.overwrite and args.csv is None:
        parser.error("--overwrite applies to --csv OUT")
    if args.csv is not None:
        try:
            out = store.check_out_file(args.csv, overwrite=args.overwrite)
        except store.OutputError as err:
            parser.error(f"--csv: {err}")
    try:
        if args.csv is None:
            print(tables.summary(args.dir))
            return 0
        rows = tables.write_csv(args.dir, out)
    except FileNotFoundError as err:
        parser.error(str(err))
    except BrokenPipeError:  # the reader went away (`| head`): the command's own handling
        raise
    except OSError as err:  # the disk, permissions: one line, status 1
        parser.exit(1, f"socialjax results: {store.os_error_line(err, 'write the table' if args.csv else 'read')}\n")
    except ValueError as err:
        parser.error(str(err))
    print(f"wrote {out}: {rows:,} rows, one per value saved in {args.dir}")
    return 0
