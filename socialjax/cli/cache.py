"""``socialjax cache [--clear]``: where compiled programs are cached, their number and
size, or the cache emptied."""

from __future__ import annotations

import argparse
import os

from socialjax.train import compilation, store
from socialjax.train.compilation import CACHE_VARIABLE


def add_parser(subparsers) -> argparse.ArgumentParser:
    cache = subparsers.add_parser(
        "cache", help="show (or --clear) the compilation cache",
        description="Show where compiled programs are cached (JAX's persistent compilation cache, which train, "
                    "evaluate, render and reproduce use unless --no-compile-cache or "
                    "SOCIALJAX_COMPILATION_CACHE=0), how many files it holds and their size; --clear deletes them.")
    cache.add_argument("--clear", action="store_true", help="delete the cache folder and everything in it")
    cache.set_defaults(subparser=cache)
    return cache


def main(args: argparse.Namespace) -> int:
    chosen = compilation.chosen_cache_dir()  # None: the variable turns the cache off, whatever JAX was told
    folder = chosen and (compilation.active_cache_dir() or chosen)
    if folder is None:
        print(f"no compilation cache: {CACHE_VARIABLE}={os.environ[CACHE_VARIABLE]!r} turns it off")
        return 0
    files, size = compilation.cache_contents(folder)
    if not args.clear:
        print(f"compilation cache: {folder}\n{files} file(s), {size / 2**20:.1f} MiB"
              + ("" if files else " (empty: nothing compiled here yet)"))
        return 0
    try:
        files, size = compilation.clear_cache(folder)
    except ValueError as err:
        args.subparser.error(str(err))
    except OSError as err:
        args.subparser.exit(1, f"socialjax cache: {store.os_error_line(err, 'clear the cache')}\n")
    print(f"cleared {folder}: {files} file(s), {size / 2**20:.1f} MiB")
    return 0
