"""What several commands share: argument types, the compile-cache flag, the checks of
an output folder and of a saved run, and ``--set KEY=VALUE`` as ``TrainConfig`` fields.

Every helper reports a bad argument through ``parser.error`` (usage and exit status 2)
before anything is compiled.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import math
import os
import sys

from socialjax.core.params import parse_bool
from socialjax.train import playback, results, store
from socialjax.train.compilation import CACHE_VARIABLE, disable_cache, enable_cache
from socialjax.train.config import BOOL_FIELDS, SWEEPABLE, TrainConfig
from socialjax.train.tracking import TRACKERS, experiment_name, make_trackers


# ----------------------------------------------------------------- argument types
def floats(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
    if not all(math.isfinite(v) for v in values):
        raise argparse.ArgumentTypeError(f"expected comma-separated finite numbers, got {text!r}")
    return values


def bounded_int(text: str, low: int, what: str, high: int | None = None) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if value < low or (high is not None and value > high):
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    return bounded_int(text, 1, "a positive integer")


MAX_SEEDS = 2**20  # seeds of one command: far more than fit any device, far less than fills the host


def seed_count(text: str) -> int:
    """A number of seeds: 1 .. :data:`MAX_SEEDS`."""
    return bounded_int(text, 1, f"a number of seeds in 1..{MAX_SEEDS:,}", MAX_SEEDS)


def non_negative_int(text: str) -> int:
    """A seed number: 0 .. 2**31 - 1."""
    return bounded_int(text, 0, "an integer in [0, 2**31)", 2**31 - 1)


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def key_value(text: str) -> tuple[str, object]:
    """``KEY=VALUE`` with a Python literal value (``num_agents=3``, ``obs_mode='rgb'``);
    a value that is not a literal is taken as a string (``episode=fixed``), and a bool
    option or field parses it where it is read (``recurrent=false`` is False: see
    :func:`socialjax.core.params.parse_bool`)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip().isidentifier():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key.strip(), ast.literal_eval(value.strip())
    except (ValueError, SyntaxError):
        return key.strip(), value.strip()


def ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def run_index(text: str) -> tuple[int, int]:
    """``G,S``: grid point and seed index of one run."""
    parts = text.split(",")
    try:
        g, s = (int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected G,S (grid point, seed index), got {text!r}") from None
    if g < 0 or s < 0:
        raise argparse.ArgumentTypeError(f"expected non-negative G,S, got {text!r}")
    return g, s


# ------------------------------------------------------------------ stopping
def exit_now(status: int, message: str) -> None:
    """Print ``message`` to stderr and end the process at once, without the
    interpreter's shutdown: a stop during compilation or a computation must not wait
    for XLA's threads to finish their work (a minute, for a long compile) nor tear the
    interpreter down under them (which can end in a segmentation fault). Everything
    written so far is flushed; locks held by the process are the kernel's to release."""
    sys.stdout.flush()
    sys.stderr.write(message)
    sys.stderr.flush()
    store.release_claims()
    os._exit(status)


# ------------------------------------------------------------ compilation cache
def add_cache_flag(command: argparse.ArgumentParser) -> None:
    """``--no-compile-cache``, for the commands that compile."""
    command.add_argument("--no-compile-cache", action="store_true",
                         help="compile without JAX's persistent compilation cache (on by default, in "
                              "~/.cache/socialjax/jax-cache: a rerun reads its compiled programs back; "
                              f"{CACHE_VARIABLE}=0 does the same)")


def add_log_flags(command: argparse.ArgumentParser) -> None:
    """``--log NAME`` (repeatable) and ``--log-dir DIR``: experiment tracking."""
    command.add_argument("--log", action="append", default=[], choices=TRACKERS,
                         help="stream every update's metrics, per grid point and seed, to TensorBoard, Weights & "
                              "Biases or CSV while training (repeatable; needs the extra of the same name, "
                              "except csv); the final figures are added at the end; a tracker that fails is "
                              "dropped with one line and the training goes on")
    command.add_argument("--log-dir", default="runs", metavar="DIR",
                         help="where --log writes: DIR/<name>/<date-time>[-n]/{tensorboard,csv,wandb}, a folder "
                              "of its own per run (default runs; tensorboard --logdir DIR shows it)")


def open_trackers(parser: argparse.ArgumentParser, args: argparse.Namespace, name: str) -> list:
    """The trackers of ``--log`` for the experiment ``name`` (an error names a missing extra)."""
    try:
        return make_trackers(args.log, args.log_dir, experiment_name(name)) if args.log else []
    except (ImportError, ValueError) as err:
        parser.error(f"--log: {err}")


def use_compile_cache(args: argparse.Namespace) -> None:
    """Turn JAX's persistent compilation cache on, or off under ``--no-compile-cache``
    (as the variable, so that ``run()`` and child processes see it too; off even where
    ``JAX_COMPILATION_CACHE_DIR`` names a folder)."""
    if args.no_compile_cache:
        os.environ[CACHE_VARIABLE] = "0"
        disable_cache()
    else:
        enable_cache()


# ------------------------------------------------------------------ output folders
def check_out_dir(parser: argparse.ArgumentParser, path: str, overwrite: bool, resume: bool = False):
    """:func:`socialjax.train.store.check_out_dir`, its refusal a usage error."""
    try:
        return store.check_out_dir(path, overwrite=overwrite, resume=resume)
    except store.OutputError as err:
        parser.error(f"--out: {err}" if not resume else f"--resume: {err}")


def claimed(parser: argparse.ArgumentParser, out_dir) -> contextlib.ExitStack:
    """The output folder's lock (:func:`socialjax.train.store.claim`); a folder another
    job holds is an error before anything is compiled."""
    stack = contextlib.ExitStack()
    try:
        stack.enter_context(store.claim(out_dir))
    except store.OutputError as err:
        parser.error(f"--out: {err}")
    return stack


# --------------------------------------------------------------------- saved runs
def load_run(parser: argparse.ArgumentParser, path: str, index: tuple[int, int]):
    """The run saved in ``path`` (:func:`socialjax.train.results.load_run`), with
    ``index`` = (grid point, seed index) checked against it."""
    try:
        loaded = results.load_run(path)
    except (FileNotFoundError, ValueError, TypeError) as err:
        parser.error(str(err))
    g, s = index
    if g >= loaded.grid_size or s >= len(loaded.seeds):
        parser.error(f"--run {g},{s}: {path} holds {loaded.grid_size} grid point(s) x {len(loaded.seeds)} seed(s) "
                     f"(G in 0..{loaded.grid_size - 1}, S in 0..{len(loaded.seeds) - 1})")
    return loaded


def check_row(parser: argparse.ArgumentParser, train, row):
    """``--row M0,M1,...`` checked against the population (``None``: the default seating)."""
    try:
        return playback.check_row(train, row)
    except ValueError as err:
        parser.error(f"--row: {err}")


# ----------------------------------------------------------------- --set overrides
def config_overrides(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """``--set`` pairs as ``TrainConfig.replace`` arguments: a bool field is parsed
    (``recurrent=false`` is False, ``recurrent=maybe`` an error); a list becomes a tuple (a
    sweep for a numeric hyperparameter); a hyperparameter must be a number or a list of them."""
    sequences = {f.name for f in dataclasses.fields(TrainConfig) if str(f.type).startswith("tuple")}
    out = {}
    for key, value in pairs:
        if isinstance(value, list):
            value = tuple(value)
        if key in BOOL_FIELDS:
            value = parse_bool(f"--set {key}", value)
        if key in sequences and isinstance(value, str):
            raise ValueError(f"--set {key}={value}: {key} takes a list, e.g. --set \"{key}=['a', 'b']\" "
                             "(quoted, so that the shell keeps the brackets and quotes)")
        if isinstance(value, str) and value.strip().startswith("["):
            raise ValueError(f"--set {key}={value}: not a list Python can read; quote each item, e.g. "
                             f"--set \"{key}=['a', 'b']\"")
        if key in SWEEPABLE:
            items = value if isinstance(value, tuple) else (value,)
            if not items or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in items):
                raise ValueError(f"--set {key}={value!r}: {key} takes a number or a list of numbers (a sweep)")
        out[key] = value
    return out
