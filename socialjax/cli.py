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
game to a GIF / MP4, and ``--checkpoint DIR`` renders the trained population instead.
``socialjax results DIR`` prints a saved run's summary (``--csv OUT``: a long table).
``socialjax bench --envs cleanup --batch-sizes 1,64`` measures env-steps/s and
agent-steps/s under random actions on this machine (:mod:`socialjax.bench`).

The commands that compile (train, evaluate, render, reproduce) keep compiled programs in
JAX's persistent compilation cache (:mod:`socialjax.train.compilation`), so a rerun
starts in seconds; ``--no-compile-cache`` (or ``SOCIALJAX_COMPILATION_CACHE=0``) turns it
off. ``socialjax cache`` shows the cache folder and its size; ``--clear`` empties it.
``socialjax bench`` never uses the cache: it measures compile time.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

from socialjax.train import compilation
from socialjax.train.compilation import CACHE_VARIABLE, enable_cache


def _floats(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
    if not all(math.isfinite(v) for v in values):
        raise argparse.ArgumentTypeError(f"expected comma-separated finite numbers, got {text!r}")
    return values


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _option(text: str) -> tuple[str, object]:
    """``KEY=VALUE`` with a Python literal value (``num_agents=3``, ``obs_mode='rgb'``);
    a value that is not a literal is taken as a string (``episode=fixed``), and a bool
    option or field parses it where it is read (``recurrent=false`` is False: see
    :func:`socialjax.core.params.parse_bool`)."""
    import ast

    key, sep, value = text.partition("=")
    if not sep or not key.strip().isidentifier():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key.strip(), ast.literal_eval(value.strip())
    except (ValueError, SyntaxError):
        return key.strip(), value.strip()


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def _run_index(text: str) -> tuple[int, int]:
    """``G,S``: grid point and seed index of one run."""
    parts = text.split(",")
    try:
        g, s = (int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected G,S (grid point, seed index), got {text!r}") from None
    if g < 0 or s < 0:
        raise argparse.ArgumentTypeError(f"expected non-negative G,S, got {text!r}")
    return g, s


RENDER_POLICIES = ("random", "noop")

DONOR_DEFAULTS = dict(generations=10, multipliers=(1.5, 2.0, 3.0), schedule="released")
DONOR_FLAGS = ("generations", "multipliers", "schedule", "punishment")
POPULATION_FLAGS = (("overrides", "--set"), ("env_options", "--env-option"), ("updates", "--updates"),
                    ("chunk", "--chunk"), ("memory", "--memory"))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="socialjax", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")

    sub.add_parser("envs", help="list the registered environments")

    from socialjax.train.presets import PRESETS

    train = sub.add_parser(
        "train", help="train a preset experiment (socialjax train --help lists them)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Train a preset: a population of learners in one compiled, vmapped call over seeds (and over "
                    "hyperparameters given as lists), or donor-evolution. Presets:\n" + "\n".join(
                        f"  {k:20s} {v.description}" for k, v in PRESETS.items()))
    train.add_argument("preset", nargs="?", default=None, help="preset name (see above); not with --resume")
    train.add_argument("--seeds", type=_positive_int, default=None,
                       help="number of seeds, run as seeds 0..N-1 (default: the preset's)")
    train.add_argument("--seed", type=int, default=None,
                       help="base random seed: run i uses fold_in(key(SEED), i) (default 0)")
    train.add_argument("--set", dest="overrides", type=_option, action="append", default=[], metavar="KEY=VALUE",
                       help="override a TrainConfig field, repeatable (a Python literal: --set lr=1e-3; "
                            "a list sweeps: --set lr=[1e-3,3e-3])")
    train.add_argument("--env-option", dest="env_options", type=_option, action="append", default=[],
                       metavar="KEY=VALUE",
                       help="environment option for sj.make, repeatable (--env-option num_agents=2)")
    train.add_argument("--updates", type=_positive_int, default=None, help="number of updates (= --set num_updates=N)")
    train.add_argument("--out", default=None, help="output folder (default results/<preset>); written whole when the "
                                                   "run ends, never over an earlier result without --overwrite")
    train.add_argument("--overwrite", action="store_true",
                       help="replace an earlier result (or unfinished run) in --out")
    train.add_argument("--checkpoint-every", type=_positive_int, default=None, metavar="K",
                       help="save the complete training state every K updates into OUT/resume/ (atomically), so that "
                            "Ctrl-C or a crash loses at most K updates; continue with --resume OUT (same bits as an "
                            "uninterrupted run)")
    train.add_argument("--resume", default=None, metavar="DIR",
                       help="continue the unfinished run saved in DIR (by --checkpoint-every); its preset, settings "
                            "and seeds come from DIR")
    train.add_argument("--chunk", type=_positive_int, default=None, metavar="K",
                       help="compute the runs K at a time on each device, so that a run's bits do not depend on "
                            "how many runs share the batch (slower where a wide vmap pays, e.g. on a GPU); by "
                            "default all of a device's runs at once, or the largest chunk that fits its memory")
    train.add_argument("--memory", type=_positive_float, default=None, metavar="GIB",
                       help="memory each device may use, in GiB (default: what the device holds); runs that do not "
                            "fit are computed in chunks that do")
    train.add_argument("--quiet", action="store_true", help="no progress or summary output")
    several = train.add_argument_group(
        "several processes (jax.distributed)",
        "start the same command once per process, each with its --process-id (0..N-1) and the same "
        "--coordinator (process 0's address and a free port); the runs are spread over every process's "
        "devices, gathered, and written by process 0 alone")
    several.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                         help="address of process 0, where the jax.distributed coordinator listens")
    several.add_argument("--num-processes", type=_positive_int, default=None, metavar="N",
                         help="number of processes")
    several.add_argument("--process-id", type=int, default=None, metavar="I", help="this process, 0..N-1")
    donor = train.add_argument_group("donor-evolution only")
    donor.add_argument("--generations", type=_positive_int, default=None, help="generations (default 10)")
    donor.add_argument("--multipliers", type=_floats, default=None,
                       help="donation multipliers g to sweep, comma-separated (default 1.5,2,3)")
    donor.add_argument("--schedule", choices=("released", "alternating"), default=None,
                       help="pairing schedule (default: released, the authors' released code)")
    donor.add_argument("--punishment", action="store_true", default=None, help="allow costly punishment")
    train.set_defaults(subparser=train)
    _cache_flag(train)

    evaluate = sub.add_parser(
        "evaluate", help="play a trained population from a checkpoint folder",
        description="Reload a folder written by `socialjax train` (config.json, checkpoint.msgpack), rebuild the "
                    "population and play one game with the trained learners, printing each seat's return.")
    evaluate.add_argument("dir", help="folder written by socialjax train (--out)")
    evaluate.add_argument("--run", type=_run_index, default=(0, 0), metavar="G,S",
                          help="grid point and seed index of the run to play (default 0,0)")
    evaluate.add_argument("--steps", type=_positive_int, default=None,
                          help="steps to play (default: the training rollout length)")
    evaluate.add_argument("--seed", type=int, default=0, help="random seed of the game (default 0)")
    evaluate.add_argument("--greedy", action="store_true", help="most likely actions instead of sampling")
    evaluate.add_argument("--row", type=_ints, default=None, metavar="M0,M1,...",
                          help="the member in each seat: learners 0..L-1, then the scripted members "
                               "(default: the training seating, or learner i mod L in seat i under random seating)")
    evaluate.set_defaults(subparser=evaluate)
    _cache_flag(evaluate)

    render = sub.add_parser(
        "render", help="render a rollout of a grid game to a GIF or MP4",
        description="Render a rollout of a grid environment (one compiled scan) to a GIF (Pillow) or an MP4 "
                    "(needs: pip install \"socialjax[video]\"), chosen by the extension of --out: random or "
                    "no-op actions (--env), or a trained population (--checkpoint DIR from socialjax train).")
    render.add_argument("--env", default=None, help="environment name (see `socialjax envs`)")
    render.add_argument("--checkpoint", default=None, metavar="DIR",
                        help="render the trained population saved in DIR (socialjax train --out); the environment "
                             "comes from the checkpoint")
    render.add_argument("--run", type=_run_index, default=None, metavar="G,S",
                        help="with --checkpoint: grid point and seed index of the run (default 0,0)")
    render.add_argument("--greedy", action="store_true", help="with --checkpoint: most likely actions")
    render.add_argument("--row", type=_ints, default=None, metavar="M0,M1,...",
                        help="with --checkpoint: the member in each seat (see socialjax evaluate --help)")
    render.add_argument("--steps", type=_positive_int, default=200, help="steps to roll out (default 200)")
    render.add_argument("--out", required=True, help="output file, .gif or .mp4")
    render.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    render.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    render.add_argument("--fps", type=_positive_float, default=10.0, help="frames per second (default 10)")
    render.add_argument("--scale", type=_positive_int, default=2,
                        help="integer upscaling, nearest neighbour (default 2: 16 px per cell)")
    render.add_argument("--policy", choices=RENDER_POLICIES, default=None,
                        help="random: uniformly random actions (default); noop: every agent stands still")
    render.add_argument("--option", type=_option, action="append", default=[], metavar="KEY=VALUE",
                        help="environment option for sj.make, repeatable (e.g. --option num_agents=3)")
    render.set_defaults(subparser=render)  # errors print this command's usage
    _cache_flag(render)

    results_cmd = sub.add_parser(
        "results", help="print the summary of a results folder, or write it as a long CSV table",
        description="Print the summary of a folder written by `socialjax train` (a population run or "
                    "donor-evolution), or with --csv write every saved value as one row of a CSV file: "
                    "grid_point, the swept hyperparameters, seed, update, member, metric, value (donor-evolution: "
                    "multiplier, seed, generation, metric, value). In Python: "
                    "socialjax.train.results.to_frame(DIR) gives the same table as a pandas DataFrame.")
    results_cmd.add_argument("dir", help="folder written by socialjax train (--out)")
    results_cmd.add_argument("--csv", default=None, metavar="OUT", help="write the long-format table to the file OUT")
    results_cmd.add_argument("--overwrite", action="store_true", help="with --csv: replace OUT if it exists")
    results_cmd.set_defaults(subparser=results_cmd)

    from socialjax.reproduce.command import add_parser as add_reproduce

    _cache_flag(add_reproduce(sub, _positive_int))

    cache = sub.add_parser(
        "cache", help="show (or --clear) the compilation cache",
        description="Show where compiled programs are cached (JAX's persistent compilation cache, which train, "
                    "evaluate, render and reproduce use unless --no-compile-cache or "
                    "SOCIALJAX_COMPILATION_CACHE=0), how many files it holds and their size; --clear deletes them.")
    cache.add_argument("--clear", action="store_true", help="delete the cache folder and everything in it")
    cache.set_defaults(subparser=cache)

    # parsed by socialjax.bench itself (main() hands it the arguments); listed here for --help
    sub.add_parser("bench", help="env-steps/s of environments under random actions (socialjax bench --help)",
                   add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["bench"]:
        from socialjax.bench import main as bench

        return bench(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "cache":
        return _cache(args.subparser, args)
    if getattr(args, "no_compile_cache", False):  # as the variable, so run() and child processes see it too
        os.environ[CACHE_VARIABLE] = "0"
    elif args.command in ("train", "evaluate", "render", "reproduce"):
        enable_cache()
    if args.command == "envs":
        from socialjax.core.registry import describe_envs

        for name, desc in describe_envs().items():
            print(f"{name:16s} {desc}")
        return 0
    if args.command == "train":
        return _train(args.subparser, args)
    if args.command == "evaluate":
        return _evaluate(args.subparser, args)
    if args.command == "render":
        return _render(args.subparser, args)
    if args.command == "results":
        return _results(args.subparser, args)
    if args.command == "reproduce":
        from socialjax.reproduce.command import main as reproduce

        return reproduce(args.subparser, args)
    parser.error(f"unknown command {args.command!r}")
    return 2


# ------------------------------------------------------------------------------ train
def _train(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``socialjax train PRESET`` or ``--resume DIR``: every check runs before anything
    is compiled."""
    from socialjax.train.presets import DONOR_EVOLUTION, get_preset

    if args.resume is not None:
        _resume(parser, args)
        return 0
    if args.preset is None:
        parser.error("give a preset (listed by socialjax train --help), or --resume DIR")
    args.seed = 0 if args.seed is None else args.seed
    try:
        preset = get_preset(args.preset)
    except ValueError as err:
        parser.error(str(err))
    if preset.kind == DONOR_EVOLUTION:
        if args.coordinator is not None or args.num_processes is not None or args.process_id is not None:
            parser.error("donor-evolution runs in one process: drop --coordinator, --num-processes, --process-id")
        return _train_donor(parser, args, preset)
    join_processes(parser, args)
    given = [f"--{name}" for name in DONOR_FLAGS if getattr(args, name) is not None]
    if given:
        parser.error(f"donor-evolution only: {', '.join(given)}; for {preset.name!r} use --set KEY=VALUE")
    train_preset(parser, args, preset)
    return 0


def _out_dir(parser: argparse.ArgumentParser, path: str, overwrite: bool, resume: bool = False):
    from socialjax.train import store

    try:
        return store.check_out_dir(path, overwrite=overwrite, resume=resume)
    except store.OutputError as err:
        parser.error(f"--out: {err}" if not resume else f"--resume: {err}")


def _train_donor(parser, args, preset) -> int:
    given = [flag for dest, flag in POPULATION_FLAGS if getattr(args, dest)]
    if given:
        parser.error(f"not for donor-evolution: {', '.join(given)}; its flags are "
                     "--seeds --generations --multipliers --schedule --punishment")
    seeds = preset.seeds if args.seeds is None else args.seeds
    multipliers = DONOR_DEFAULTS["multipliers"] if args.multipliers is None else args.multipliers
    if seeds < 2:
        parser.error("--seeds must be at least 2 to report an interval across seeds")
    if not multipliers or any(g < 0 for g in multipliers):
        parser.error(f"--multipliers must be non-negative numbers, got {multipliers}")
    out_dir = args.out or f"results/{preset.name}"
    _out_dir(parser, out_dir, args.overwrite)
    settings = dict(
        num_seeds=seeds,
        num_generations=DONOR_DEFAULTS["generations"] if args.generations is None else args.generations,
        multipliers=multipliers,
        seed=args.seed,
        env_options={"schedule": args.schedule or DONOR_DEFAULTS["schedule"], "punishment": bool(args.punishment)},
    )
    return _run_donor(parser, args, settings, out_dir)


def _run_donor(parser, args, settings: dict, out_dir: str, resume: bool = False) -> int:
    from socialjax.train.cultural_evolution import Interrupted, run_experiment

    with _claimed(parser, out_dir):
        try:
            run_experiment(**settings, out_dir=out_dir, verbose=not args.quiet, overwrite=args.overwrite,
                           checkpoint_every=args.checkpoint_every, resume=resume)
        except Interrupted as stop:
            if stop.saved:
                parser.exit(130, f"\nstopped after generation {stop.done} of {stop.total}: the state is saved in "
                                 f"{out_dir}/resume; continue with: socialjax train --resume {out_dir}\n")
            parser.exit(130, "\nstopped; nothing was saved (--checkpoint-every K saves the state)\n")
        except KeyboardInterrupt:
            parser.exit(130, "\nstopped at once" + (f"; the last checkpoint is in {out_dir}/resume"
                                                      if args.checkpoint_every else "; nothing was saved") + "\n")
    return 0


def _claimed(parser: argparse.ArgumentParser, out_dir):
    """The output folder's lock (:func:`socialjax.train.store.claim`); a folder another
    job holds is an error before anything is compiled."""
    import contextlib

    from socialjax.train import store

    stack = contextlib.ExitStack()
    try:
        stack.enter_context(store.claim(out_dir))
    except store.OutputError as err:
        parser.error(f"--out: {err}")
    return stack


def join_processes(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``--coordinator HOST:PORT --num-processes N --process-id I``: join the other
    processes with ``jax.distributed.initialize`` before anything else touches JAX (the
    backend must not have started). Nothing without the flags."""
    given = {"--coordinator": args.coordinator, "--num-processes": args.num_processes,
             "--process-id": args.process_id}
    if all(v is None for v in given.values()):
        return
    missing = [flag for flag, v in given.items() if v is None]
    if missing:
        parser.error(f"several processes need --coordinator, --num-processes and --process-id; missing "
                     f"{', '.join(missing)}")
    host, sep, port = args.coordinator.rpartition(":")
    if not sep or not host or not port.isdigit():
        parser.error(f"--coordinator: expected HOST:PORT, got {args.coordinator!r}")
    if not 0 <= args.process_id < args.num_processes:
        parser.error(f"--process-id must be in 0..{args.num_processes - 1}, got {args.process_id}")
    import jax

    jax.distributed.initialize(coordinator_address=args.coordinator, num_processes=args.num_processes,
                               process_id=args.process_id)


def config_overrides(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """``--set`` pairs as ``TrainConfig.replace`` arguments: a bool field is parsed
    (``recurrent=false`` is False, ``recurrent=maybe`` an error); a list becomes a tuple (a
    sweep for a numeric hyperparameter); a hyperparameter must be a number or a list of them."""
    import dataclasses

    from socialjax.core.params import parse_bool
    from socialjax.train.config import BOOL_FIELDS, SWEEPABLE, TrainConfig

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


def train_preset(parser: argparse.ArgumentParser, args: argparse.Namespace, preset):
    """Build, check, run and save a population preset; returns the ``RunResult``."""
    overrides = dict(args.overrides)
    if args.updates is not None:
        if "num_updates" in overrides:
            parser.error("give the number of updates once: --updates or --set num_updates=..., not both")
        overrides["num_updates"] = args.updates
    try:
        config = preset.make_config(**config_overrides(list(overrides.items())))
    except (ValueError, TypeError) as err:
        parser.error(f"{preset.name}: {err}")
    env_options = preset.options(**dict(args.env_options))
    try:
        env = preset.make_env(**dict(args.env_options))
    except (ValueError, TypeError) as err:
        parser.error(f"{preset.name}: {err}")
    from socialjax.train.rewards import make_shaping
    from socialjax.train.seating import make_plan

    try:  # the population against the seats, without building the loop (run() builds it once)
        plan = make_plan(config, env.num_agents)
        make_shaping(config, plan.num_learners, plan.num_members, env.num_agents)
    except (ValueError, TypeError) as err:
        parser.error(f"{preset.name}: {err}")
    seeds = preset.seeds if args.seeds is None else args.seeds
    job = dict(env=env, env_name=preset.env, env_options=env_options, config=config, preset=preset.name,
               description=preset.description, seeds=list(range(seeds)), base_seed=args.seed)
    return run_job(parser, args, job, args.out or f"results/{preset.name}", chunk=args.chunk, memory=args.memory)


def _resume(parser: argparse.ArgumentParser, args: argparse.Namespace):
    """``socialjax train --resume DIR``: the unfinished run saved in DIR, continued."""
    fixed = [flag for flag, given in (("PRESET", args.preset), ("--seeds", args.seeds), ("--seed", args.seed),
                                      ("--set", args.overrides), ("--env-option", args.env_options),
                                      ("--updates", args.updates), ("--chunk", args.chunk), ("--out", args.out),
                                      ("--overwrite", args.overwrite))
             if given not in (None, False, [])]
    fixed += [f"--{name}" for name in DONOR_FLAGS if getattr(args, name) is not None]
    if fixed:
        parser.error(f"--resume continues the saved run with its own settings: drop {', '.join(fixed)}")
    join_processes(parser, args)
    from pathlib import Path

    from socialjax.train import population, results, store

    try:
        checkpoint = results.load_checkpoint(args.resume)
        store.check_writable(Path(args.resume))
        if checkpoint.meta.get("job") == "donor-evolution":
            if args.coordinator is not None:
                parser.error("donor-evolution runs in one process: drop --coordinator, --num-processes, --process-id")
            settings = {k: checkpoint.meta[k] for k in ("num_seeds", "num_generations", "multipliers", "seed",
                                                         "env_options")}
            return _run_donor(parser, args, settings, args.resume, resume=True)
        snapshot = results.restore_snapshot(checkpoint, population.make_train(checkpoint.env, checkpoint.config))
    except (store.ResultError, store.OutputError, KeyError) as err:
        parser.error(f"--resume: {err}")
    meta = checkpoint.meta
    if args.checkpoint_every is None:
        args.checkpoint_every = int(meta["segment"])
    memory = args.memory if args.memory is not None else (meta.get("memory") or 0) / 2**30 or None
    job = dict(env=checkpoint.env, env_name=meta["env"], env_options=meta.get("env_options", {}),
               config=checkpoint.config, preset=meta.get("preset"), description="resumed from " + args.resume,
               seeds=meta["seeds"], base_seed=int(meta["base_seed"]))
    return run_job(parser, args, job, args.resume, chunk=snapshot.chunk, memory=memory, resume=snapshot)


def run_job(parser, args, job: dict, out_dir: str, *, chunk=None, memory=None, resume=None):
    """Run a population job (fresh or resumed) and save it: the output folder checked
    and locked first, checkpoints every ``--checkpoint-every`` updates, Ctrl-C handled.
    Returns the ``RunResult``."""
    import jax
    import numpy as np

    from socialjax.train import results
    from socialjax.train.run import Interrupted, run

    lead = jax.process_index() == 0  # under jax.distributed, process 0 alone prints and writes
    if lead and resume is None:
        _out_dir(parser, out_dir, args.overwrite)
    config, name = job["config"], job["preset"] or job["env_name"]
    every = args.checkpoint_every
    memory_bytes = None if memory is None else int(memory * 2**30)
    meta = results.run_meta(config, job["env_name"], job["env_options"], job["preset"], job["seeds"], job["base_seed"])
    saved = {"updates": resume.updates_done if resume is not None else 0}

    def checkpoint(snapshot):  # every process takes the snapshot (a collective); process 0 writes it
        if lead:
            results.save_checkpoint(out_dir, snapshot, meta, segment=every, memory=memory_bytes)
            saved["updates"] = snapshot.updates_done

    with _claimed(parser, out_dir) if lead else _nothing():
        if not args.quiet and lead:
            devices = jax.devices()  # of every process
            processes = f" in {jax.process_count()} processes" if jax.process_count() > 1 else ""
            grid_size = len(next(iter(config.hparam_grid().values())))
            sweep = ", ".join(f"{k}=[{', '.join(f'{x:g}' for x in v)}]" for k, v in config.sweep_axes().items())
            start = f" from update {resume.updates_done}" if resume is not None else ""
            print(f"{name}: {job['description']}\n"
                  f"{grid_size} grid point(s){f' ({sweep})' if sweep else ''} x {len(job['seeds'])} seed(s), "
                  f"{config.num_updates} updates of {config.num_envs} games x {config.rollout_len} steps{start}, on "
                  f"{len(devices)} {devices[0].platform} device(s){processes}"
                  f"{f'; a checkpoint every {every} updates in {out_dir}/resume' if every else ''}; compiling...",
                  flush=True)
        try:
            result = run(job["env"], config, seeds=np.asarray(job["seeds"]), base_seed=job["base_seed"],
                         progress=not args.quiet, label=name, chunk=chunk, memory=memory_bytes, segment=every,
                         on_segment=checkpoint if every else None, resume=resume)
        except (ValueError, TypeError) as err:  # the population against the seats, the batch sizes: before compiling
            parser.error(f"{name}: {err}")
        except MemoryError as err:  # raised after compiling, before anything ran
            parser.exit(1, f"socialjax train {name}: {err}\n")
        except Interrupted as stop:
            if not every:
                parser.exit(130, f"\nstopped after update {stop.snapshot.updates_done} of {config.num_updates}; "
                                 "nothing was saved (with --checkpoint-every K a stopped run can be resumed)\n")
            parser.exit(130, f"\nstopped after update {stop.snapshot.updates_done} of {config.num_updates}: the "
                             f"training state is saved in {out_dir}/resume; continue with: socialjax train --resume "
                             f"{out_dir}\n")
        except KeyboardInterrupt:
            if saved["updates"]:
                parser.exit(130, f"\nstopped at once: the last checkpoint (update {saved['updates']} of "
                                 f"{config.num_updates}) is in {out_dir}/resume; continue with: socialjax train "
                                 f"--resume {out_dir}\n")
            parser.exit(130, "\nstopped at once; nothing was saved" + (
                " (no checkpoint yet)" if every else
                ": a run without --checkpoint-every is one compiled call and cannot be resumed") + "\n")
        if lead:
            text = results.save_run(result, out_dir, env_name=job["env_name"], env_options=job["env_options"],
                                    preset=job["preset"], base_seed=job["base_seed"],
                                    overwrite=args.overwrite or bool(every) or resume is not None)
            if not args.quiet:
                print(text, flush=True)
    return result


def _cache_flag(command: argparse.ArgumentParser) -> None:
    command.add_argument("--no-compile-cache", action="store_true",
                         help="compile without JAX's persistent compilation cache (on by default, in "
                              "~/.cache/socialjax/jax-cache: a rerun reads its compiled programs back; "
                              f"{CACHE_VARIABLE}=0 does the same)")


def _cache(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``socialjax cache [--clear]``."""
    folder = compilation.active_cache_dir() or compilation.chosen_cache_dir()
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
    except (ValueError, OSError) as err:
        parser.error(str(err))
    print(f"cleared {folder}: {files} file(s), {size / 2**20:.1f} MiB")
    return 0


def _nothing():
    import contextlib

    return contextlib.nullcontext()


# --------------------------------------------------------------------------- evaluate
def _load(parser: argparse.ArgumentParser, path: str, run_index: tuple[int, int]):
    from socialjax.train.results import load_run

    try:
        loaded = load_run(path)
    except (FileNotFoundError, ValueError, TypeError) as err:
        parser.error(str(err))
    g, s = run_index
    if g >= loaded.grid_size or s >= len(loaded.seeds):
        parser.error(f"--run {g},{s}: {path} holds {loaded.grid_size} grid point(s) x {len(loaded.seeds)} seed(s) "
                     f"(G in 0..{loaded.grid_size - 1}, S in 0..{len(loaded.seeds) - 1})")
    return loaded


def _row(parser: argparse.ArgumentParser, train, row):
    from socialjax.train.playback import check_row

    try:
        return check_row(train, row)
    except ValueError as err:
        parser.error(f"--row: {err}")


def _evaluate(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``socialjax evaluate DIR``: play one game with a saved population."""
    import jax
    import numpy as np

    from socialjax.train.playback import play
    from socialjax.train.results import member_names

    loaded = _load(parser, args.dir, args.run)
    g, s = args.run
    steps = args.steps or loaded.config.rollout_len
    train = loaded.train
    row = _row(parser, train, args.row)
    out = play(train, loaded.learners(g, s), jax.random.key(args.seed), steps, row=row, greedy=args.greedy)
    names = member_names(loaded.config, train.plan.num_learners)
    point = ", ".join(f"{k}={loaded.grid[k][g]:g}" for k in loaded.meta.get("sweep", []))
    where = f"grid point {g}{f' [{point}]' if point else ''}, seed {int(loaded.seeds[s])}"
    print(f"{loaded.preset or loaded.env_name} from {loaded.path}: run ({where}); {steps} steps of {loaded.env_name}, "
          f"{'greedy' if args.greedy else 'sampled'} actions, game seed {args.seed}")
    returns = out.rewards.sum(axis=0)
    width = max(len(names[m]) for m in out.row)
    print(f"{'seat':>4}  {'member':{width}s} {'return':>10s} {'reward/step':>12s}")
    for seat, (member, ret) in enumerate(zip(out.row, returns)):
        print(f"{seat:4d}  {names[member]:{width}s} {ret:10.3f} {ret / steps:12.4f}")
    print(f"collective return {returns.sum():.3f} ({returns.sum() / steps:.4f} per step); "
          f"episodes finished: {int(np.sum(out.dones))}")
    return 0


def _render(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``socialjax render``: every check runs before anything is compiled."""
    import jax
    import jax.numpy as jnp

    from socialjax.core.registry import make
    from socialjax.viz import video

    from socialjax.train import store

    try:
        out = store.check_out_file(args.out, overwrite=args.overwrite, suffixes=video.VIDEO_EXTENSIONS)
    except store.OutputError as err:
        parser.error(f"--out: {err}")
    if out.suffix.lower() == ".mp4":
        import importlib.util

        missing = [m for m in ("imageio", "imageio_ffmpeg") if importlib.util.find_spec(m) is None]
        if missing:
            parser.error(f"--out {args.out!r}: MP4 needs {' and '.join(missing)}: {video.MP4_INSTALL_HINT}; "
                         "or write a .gif")
    if args.checkpoint is not None:
        return _render_checkpoint(parser, args, out)
    if args.run is not None or args.greedy or args.row is not None:
        parser.error("--run, --row and --greedy apply to a trained population: give --checkpoint DIR")
    if args.env is None:
        parser.error("give --env NAME (a random or no-op rollout) or --checkpoint DIR (a trained population)")
    args.policy = args.policy or "random"
    try:
        env = make(args.env, **dict(args.option))
    except (ValueError, TypeError) as err:
        parser.error(str(err))
    if not video.can_render(env):
        from socialjax.core.registry import registered_envs

        renderable = [n for n in registered_envs() if _renders(n)]
        parser.error(f"--env {args.env!r} has no rendering (it is not a grid game); "
                     f"environments that render: {renderable}")
    policy = None
    if args.policy == "noop":
        noop = jnp.full((env.num_agents,), env.noop_action, jnp.int32)
        policy = lambda key, obs: noop  # noqa: E731
    frames = video.rollout_frames(env, jax.random.key(args.seed), args.steps, policy=policy)
    with store.replacing(out) as tmp:
        video.save_video(frames, tmp, fps=args.fps, scale=args.scale)
    t, h, w, _ = frames.shape
    print(f"wrote {out}: {t} frames ({args.steps} steps of {args.env}, {args.policy} policy, seed {args.seed}), "
          f"{w * args.scale}x{h * args.scale} px, {args.fps:g} fps")
    return 0


def _render_checkpoint(parser: argparse.ArgumentParser, args: argparse.Namespace, out) -> int:
    """``socialjax render --checkpoint DIR``: the trained population of one run."""
    import jax

    from socialjax.train.playback import play
    from socialjax.viz import video

    given = [flag for flag, value in (("--env", args.env), ("--option", args.option), ("--policy", args.policy))
             if value]
    if given:
        parser.error(f"{', '.join(given)} cannot be combined with --checkpoint: the environment and the policies "
                     "come from the checkpoint")
    run_index = args.run or (0, 0)
    loaded = _load(parser, args.checkpoint, run_index)
    if not video.can_render(loaded.env):
        parser.error(f"--checkpoint {args.checkpoint!r}: {loaded.env_name} has no rendering (it is not a grid game); "
                     "use socialjax evaluate to play it")
    g, s = run_index
    row = _row(parser, loaded.train, args.row)
    result = play(loaded.train, loaded.learners(g, s), jax.random.key(args.seed), args.steps, row=row, render=True,
                  greedy=args.greedy)
    from socialjax.train import store

    with store.replacing(out) as tmp:
        video.save_video(result.frames, tmp, fps=args.fps, scale=args.scale)
    t, h, w, _ = result.frames.shape
    returns = ", ".join(f"{r:g}" for r in result.rewards.sum(axis=0))
    print(f"wrote {out}: {t} frames ({args.steps} steps of {loaded.env_name}, trained population from "
          f"{loaded.path}, run ({g}, {s}), {'greedy' if args.greedy else 'sampled'} actions, seed {args.seed}), "
          f"{w * args.scale}x{h * args.scale} px, {args.fps:g} fps; return per seat: {returns}")
    return 0


# ---------------------------------------------------------------------------- results
def _results(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``socialjax results DIR [--csv OUT [--overwrite]]``: --csv is checked before the
    folder is read."""
    from socialjax.train import store, tables

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
    except (OSError, ValueError) as err:
        parser.error(str(err))
    print(f"wrote {out}: {rows:,} rows, one per value saved in {args.dir}")
    return 0


def _renders(name: str) -> bool:
    """Whether the registered environment ``name`` has ``render``, without building it."""
    from socialjax.core.registry import _REGISTRY, _load

    try:
        return callable(getattr(_load(_REGISTRY[name].target), "render", None))
    except Exception:  # an environment that fails to import does not render
        return False


if __name__ == "__main__":
    sys.exit(main())
