"""Command line: ``socialjax envs | train | evaluate | render | results | bench``.

``socialjax train PRESET`` trains a population (presets: :mod:`socialjax.train.presets`;
``--set field=value`` overrides any :class:`~socialjax.train.TrainConfig` field, a list
value is a sweep) and writes metrics, a checkpoint, learning curves and a summary, as
one folder written whole (never over an earlier result without ``--overwrite``);
``--checkpoint-every K`` saves the training state every K updates and ``socialjax train
--resume DIR`` continues an unfinished run;
``socialjax train donor-evolution`` runs the cultural evolution of donor-game
strategies. Over several processes (machines), start ``socialjax train ... --coordinator
HOST:PORT --num-processes N --process-id I`` once per process: ``jax.distributed`` joins
them, every process's devices get runs, and process 0 alone writes the results.
``socialjax evaluate DIR`` plays a trained population from its checkpoint;
``socialjax render --env cleanup --out cleanup.gif`` renders a random rollout of a grid
game to a GIF / MP4 (or, ``--out FILE.html``, an interactive viewer of each step), and
``--checkpoint DIR`` renders the trained population instead.
``socialjax results DIR`` prints a saved run's summary (``--csv OUT``: a long table).
``socialjax bench --envs cleanup --batch-sizes 1,64`` measures env-steps/s and
agent-steps/s under random actions on this machine (:mod:`socialjax.bench`).

The commands that compile (train, evaluate, render, reproduce) keep compiled programs in
JAX's persistent compilation cache (:mod:`socialjax.train.compilation`), so a rerun
starts in seconds; ``--no-compile-cache`` (or ``SOCIALJAX_COMPILATION_CACHE=0``) turns it
off. ``socialjax cache`` shows the cache folder and its size; ``--clear`` empties it.
``socialjax bench`` never uses the cache: it measures compile time.

Ctrl-C or SIGTERM stops ``train`` and ``reproduce`` after the update under way, saving
what is done (``train --resume DIR`` continues it; a rerun of ``reproduce`` reuses the
conditions it finished); a second one, or one during compilation, ends the process at
once (exit status 130), without waiting for the compiler.

Each command is a module of this package (:data:`COMMANDS`): ``add_parser(subparsers)``
declares its flags and help, ``main(args)`` runs it; what several share (argument
types, the cache flag, output-folder and saved-run checks, ``--set``) is in
:mod:`socialjax.cli.common`.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from socialjax.cli import bench, cache, envs, evaluate, render, reproduce, results, train
from socialjax.cli.common import config_overrides, exit_now
from socialjax.train import store

__all__ = ["COMMANDS", "build_parser", "config_overrides", "main"]

# One module per command, in the order `socialjax --help` lists them: each has
# ``add_parser(subparsers)`` (its flags and help; returns its parser) and
# ``main(args) -> int`` (run it; a bad argument is a usage error, status 2).
COMMANDS = (envs, train, evaluate, render, results, reproduce, cache, bench)


class Parser(argparse.ArgumentParser):
    """argparse's parser, its error always one line (after the usage): a path or value
    holding a newline is shown with the newline escaped."""

    def error(self, message: str):
        """Print the usage and ``message``, its newlines escaped, to stderr and exit (status 2)."""
        super().error(message.replace("\r", "\\r").replace("\n", "\\n"))


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="socialjax", description=__doc__.split("\n\n")[0])
    subparsers = parser.add_subparsers(dest="command")
    for command in COMMANDS:
        sub = command.add_parser(subparsers)
        sub.set_defaults(main=command.main, subparser=sub)  # a command's errors print its own usage
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    if args.command is None:
        parser.print_help()
        return 0
    _refuse_empty_values(args)
    main_thread = threading.current_thread() is threading.main_thread()
    if main_thread:  # SIGTERM as Ctrl-C: a clean stop, not a kill
        previous = signal.signal(signal.SIGTERM, _as_keyboard_interrupt)
    try:
        return args.main(args)
    except KeyboardInterrupt:  # a command that stops more gracefully says so itself (train, reproduce)
        exit_now(130, "\nstopped at once\n")
    except BrokenPipeError:  # the output's reader went away (`socialjax ... | head`): end quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as err:  # disk full, permissions, a read-only or busy path: one line, no traceback
        parser.exit(1, f"socialjax {args.command}: {store.os_error_line(err, 'read or write a file')}\n")
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)


def _as_keyboard_interrupt(signum, frame):
    raise KeyboardInterrupt


def _refuse_empty_values(args: argparse.Namespace) -> None:
    """``--flag=--`` reaches a command as an empty list (argparse does not call the
    flag's type on it): a usage error naming the flag."""
    command = args.subparser
    for action in command._actions:
        value = getattr(args, action.dest, None)
        if isinstance(action, argparse._AppendAction):  # a list of values: one of them empty
            empty = isinstance(value, list) and any(v == [] for v in value)
        else:
            empty = action.nargs is None and value == []
        if empty and action.option_strings:
            command.error(f"{action.option_strings[-1]}: expected a value, got '--'")
