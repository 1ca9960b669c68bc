"""``socialjax train PRESET`` (a population, or donor-evolution) and ``socialjax train
--resume DIR``: every check of the arguments, the presets and the output folder runs
before anything is compiled.

Importing :mod:`socialjax.train` computes nothing, so JAX's backend has not started when
``--coordinator`` calls ``jax.distributed.initialize``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
from pathlib import Path

import jax

from socialjax.cli.common import (
    add_cache_flag,
    add_log_flags,
    check_out_dir,
    claimed,
    config_overrides,
    exit_now,
    floats,
    key_value,
    non_negative_int,
    open_trackers,
    positive_float,
    positive_int,
    seed_count,
    use_compile_cache,
)
from socialjax.core.registry import make
from socialjax.train import cultural_evolution, population, results, store
from socialjax.train.cultural_evolution import DonorEvolutionConfig
from socialjax.train.presets import DONOR_EVOLUTION, PRESETS, get_preset
from socialjax.train.rewards import make_shaping
from socialjax.train.runner import Destination, Failed, Stopped, Written, execute, what_is_kept
from socialjax.train.seating import make_plan
from socialjax.train.tracking import Listeners

DONOR_DEFAULTS = dict(generations=10, multipliers=(1.5, 2.0, 3.0), schedule="released")
DONOR_FLAGS = ("generations", "multipliers", "schedule", "punishment")
DONOR_REFUSED = (("updates", "--updates"), ("chunk", "--chunk"), ("memory", "--memory"))  # population only


def add_parser(subparsers) -> argparse.ArgumentParser:
    """``socialjax train``: its flags, help and the preset list."""
    train = subparsers.add_parser(
        "train", help="train a preset experiment (socialjax train --help lists them)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Train a preset: a population of learners in one compiled, vmapped call over seeds (and over "
                    "hyperparameters given as lists), or donor-evolution. Presets:\n" + "\n".join(
                        f"  {k:20s} {v.description}" for k, v in PRESETS.items()))
    train.add_argument("preset", nargs="?", default=None, help="preset name (see above); not with --resume")
    train.add_argument("--seeds", type=seed_count, default=None,
                       help="number of seeds, run as seeds 0..N-1 (default: the preset's)")
    train.add_argument("--seed", type=non_negative_int, default=None,
                       help="base random seed: run i uses fold_in(key(SEED), i) (default 0)")
    train.add_argument("--set", dest="overrides", type=key_value, action="append", default=[], metavar="KEY=VALUE",
                       help="override a TrainConfig field, repeatable (a Python literal: --set lr=1e-3; "
                            "a list sweeps: --set lr=[1e-3,3e-3]); for donor-evolution a DonorEvolutionConfig "
                            "field (--set mutation_std=0.2: num_generations, survival_fraction, mutation_std, "
                            "init_weight_scale, strategy_space, init_gift_max)")
    train.add_argument("--env-option", dest="env_options", type=key_value, action="append", default=[],
                       metavar="KEY=VALUE",
                       help="environment option for sj.make, repeatable (--env-option num_agents=2)")
    train.add_argument("--updates", type=positive_int, default=None, help="number of updates (= --set num_updates=N)")
    train.add_argument("--out", default=None, help="output folder (default results/<preset>); written whole when the "
                                                   "run ends, never over an earlier result without --overwrite")
    train.add_argument("--overwrite", action="store_true",
                       help="replace an earlier result (or unfinished run) in --out")
    train.add_argument("--checkpoint-every", type=positive_int, default=None, metavar="K",
                       help="save the complete training state every K updates into OUT/resume/ (atomically), so that "
                            "Ctrl-C or a crash loses at most K updates; continue with --resume OUT (same bits as an "
                            "uninterrupted run)")
    train.add_argument("--resume", default=None, metavar="DIR",
                       help="continue the unfinished run saved in DIR (by --checkpoint-every); its preset, settings "
                            "and seeds come from DIR")
    train.add_argument("--chunk", type=positive_int, default=None, metavar="K",
                       help="compute the runs K at a time on each device, so that a run's bits do not depend on "
                            "how many runs share the batch (slower where a wide vmap pays, e.g. on a GPU); by "
                            "default all of a device's runs at once, or the largest chunk that fits its memory")
    train.add_argument("--memory", type=positive_float, default=None, metavar="GIB",
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
    several.add_argument("--num-processes", type=positive_int, default=None, metavar="N",
                         help="number of processes")
    several.add_argument("--process-id", type=int, default=None, metavar="I", help="this process, 0..N-1")
    _add_donor_flags(train.add_argument_group("donor-evolution only"))
    train.set_defaults(subparser=train)
    add_cache_flag(train)
    add_log_flags(train)
    return train


def _add_donor_flags(donor) -> None:
    donor.add_argument("--generations", type=positive_int, default=None, help="generations (default 10)")
    donor.add_argument("--multipliers", type=floats, default=None,
                       help="donation multipliers g to sweep, comma-separated (default 1.5,2,3)")
    donor.add_argument("--schedule", choices=("released", "alternating"), default=None,
                       help="pairing schedule (default: released, the authors' released code)")
    donor.add_argument("--punishment", action="store_true", default=None, help="allow costly punishment")


def main(args: argparse.Namespace) -> int:
    """``socialjax train PRESET`` or ``--resume DIR``: every check runs before anything
    is compiled."""
    use_compile_cache(args)
    parser = args.subparser
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


def _train_donor(parser, args, preset) -> int:
    given = [flag for dest, flag in DONOR_REFUSED if getattr(args, dest)]
    if given:
        parser.error(f"not for donor-evolution: {', '.join(given)}; its flags are --seeds --generations "
                     "--multipliers --schedule --punishment, --set KEY=VALUE and --env-option KEY=VALUE")
    seeds = preset.seeds if args.seeds is None else args.seeds
    multipliers = DONOR_DEFAULTS["multipliers"] if args.multipliers is None else args.multipliers
    if seeds < 2:
        parser.error("--seeds must be at least 2 to report an interval across seeds")
    if not multipliers or any(g < 0 for g in multipliers):
        parser.error(f"--multipliers must be non-negative numbers, got {multipliers}")
    evolution = donor_overrides(parser, args)
    env_options = donor_env_options(parser, args)
    out_dir = args.out or f"results/{preset.name}"
    check_out_dir(parser, out_dir, args.overwrite)
    settings = dict(
        num_seeds=seeds,
        num_generations=evolution.pop("num_generations", DONOR_DEFAULTS["generations"]),
        multipliers=multipliers,
        seed=args.seed,
        env_options=env_options,
        **evolution,
    )
    return _run_donor(parser, args, settings, out_dir)


def donor_overrides(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict:
    """``--set KEY=VALUE`` of donor-evolution (and ``--generations``) as
    :class:`~socialjax.train.cultural_evolution.DonorEvolutionConfig` fields, checked."""
    fields = [f.name for f in dataclasses.fields(DonorEvolutionConfig)]
    overrides = dict(args.overrides)
    for key in overrides:
        if key not in fields:
            parser.error(f"--set {key}: not for donor-evolution: --set takes the evolution's settings "
                         f"({', '.join(fields)})")
    if args.generations is not None:
        if "num_generations" in overrides:
            parser.error("give the number of generations once: --generations or --set num_generations=..., not both")
        overrides["num_generations"] = args.generations
    try:
        DonorEvolutionConfig(**overrides)
    except (ValueError, TypeError) as err:
        parser.error(f"donor-evolution: --set: {err}")
    return overrides


def donor_env_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict:
    """The donor game's options: ``--schedule``, ``--punishment`` and ``--env-option``,
    checked by making the environment (before anything is compiled)."""
    options = {"schedule": args.schedule or DONOR_DEFAULTS["schedule"], "punishment": bool(args.punishment)}
    extra = dict(args.env_options)
    both = [f"--{k}" for k in ("schedule", "punishment") if k in extra and getattr(args, k) is not None]
    if both:
        parser.error(f"give {', '.join(both)} once: as the flag or as --env-option, not both")
    options.update(extra)
    try:
        make("donor_game", **options)
    except (ValueError, TypeError) as err:
        parser.error(f"donor-evolution: --env-option: {err}")
    return options


def _run_donor(parser, args, settings: dict, out_dir: str, resume: bool = False) -> int:
    """Donor evolution (:func:`~socialjax.train.cultural_evolution.run_experiment`, on the
    one runner), its stops and failures as the command's exit."""
    with tracking(open_trackers(parser, args, "donor-evolution")) as listeners:  # the folder: held by the runner
        try:
            cultural_evolution.run_experiment(**settings, out_dir=out_dir, verbose=not args.quiet,
                                              overwrite=args.overwrite, checkpoint_every=args.checkpoint_every,
                                              resume=resume, log=listeners)
        except store.OutputError as err:
            parser.exit(1, f"socialjax train donor-evolution: {err}{what_is_kept(Path(out_dir))}\n")
        except (Failed, Stopped) as stop:
            _exit(parser, args, stop, "socialjax train donor-evolution")
    return 0


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
    jax.distributed.initialize(coordinator_address=args.coordinator, num_processes=args.num_processes,
                               process_id=args.process_id)


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
    with claimed(parser, args.resume):  # another process resuming it: refused before anything is read
        pass
    try:
        checkpoint = results.load_checkpoint(args.resume)
        store.check_writable(Path(args.resume))
        if checkpoint.spec.kind == "donor-evolution":
            if args.coordinator is not None:
                parser.error("donor-evolution runs in one process: drop --coordinator, --num-processes, --process-id")
            return _run_donor(parser, args, cultural_evolution.donor_settings(checkpoint.spec), args.resume,
                              resume=True)
        snapshot = results.restore_snapshot(checkpoint, population.make_train(checkpoint.env, checkpoint.config))
    except (store.ResultError, store.OutputError, KeyError) as err:
        parser.error(f"--resume: {err}")
    meta, spec = checkpoint.meta, checkpoint.spec
    if args.checkpoint_every is None:  # the run's own (None: it was saved only when stopped)
        args.checkpoint_every = meta.get("segment")
    memory = args.memory if args.memory is not None else (meta.get("memory") or 0) / 2**30 or None
    job = dict(env=checkpoint.env, env_name=spec.env, env_options=dict(spec.env_options), config=checkpoint.config,
               preset=spec.preset, description="resumed from " + args.resume, seeds=list(spec.seeds),
               base_seed=spec.base_seed)
    return run_job(parser, args, job, args.resume, chunk=snapshot.chunk, memory=memory, resume=snapshot)


def run_job(parser, args, job: dict, out_dir: str, *, chunk=None, memory=None, resume=None):
    """Run a population job (fresh or resumed) through the one runner
    (:func:`socialjax.train.runner.execute`) and print its summary: the output folder
    checked and locked first, checkpoints every ``--checkpoint-every`` updates.
    Returns the ``RunResult``."""
    lead = jax.process_index() == 0  # under jax.distributed, process 0 alone prints and writes
    if lead and resume is None:
        check_out_dir(parser, out_dir, args.overwrite)
    config, name = job["config"], job["preset"] or job["env_name"]
    spec = results.population_spec(config, job["env_name"], job["env_options"], job["seeds"], job["base_seed"],
                                   job["preset"])
    dest = Destination(Path(out_dir), args.overwrite, args.checkpoint_every,
                       None if memory is None else int(memory * 2**30))
    with claimed(parser, out_dir) if lead else contextlib.nullcontext(), \
            tracking(open_trackers(parser, args, name) if lead else []) as listeners:
        result, text = _execute(parser, args, spec, dest, listeners, f"socialjax train {name}", resume=resume,
                                chunk=chunk, lead=lead,
                                start_line=_start_line(job, config, dest, resume) if not args.quiet and lead else None)
        if text and not args.quiet:
            print(text, flush=True)
    return result


def _start_line(job: dict, config, dest: Destination, resume) -> str:
    """What a population run is about to do, printed before it compiles."""
    devices = jax.devices()  # of every process
    processes = f" in {jax.process_count()} processes" if jax.process_count() > 1 else ""
    grid_size = len(next(iter(config.hparam_grid().values())))
    sweep = ", ".join(f"{k}=[{', '.join(f'{x:g}' for x in v)}]" for k, v in config.sweep_axes().items())
    start = f" from update {resume.updates_done}" if resume is not None else ""
    every = dest.checkpoint_every
    return (f"{job['preset'] or job['env_name']}: {job['description']}\n"
            f"{grid_size} grid point(s){f' ({sweep})' if sweep else ''} x {len(job['seeds'])} seed(s), "
            f"{config.num_updates} updates of {config.num_envs} games x {config.rollout_len} steps{start}, on "
            f"{len(devices)} {devices[0].platform} device(s){processes}"
            f"{f'; a checkpoint every {every} updates in {dest.out}/resume' if every else ''}; compiling...")


def _execute(parser, args, spec, dest: Destination, listeners, command: str, **kwargs):
    """:func:`~socialjax.train.runner.execute`, its stops and failures as the command's
    exit: a usage error before compiling, status 1 for a failure, 130 for a stop."""
    try:
        return execute(spec, dest, listeners, progress=not args.quiet, **kwargs)
    except (ValueError, TypeError) as err:  # the population against the seats, the batch sizes: before compiling
        parser.error(f"{spec.label}: {err}")
    except (Failed, Stopped) as stop:
        _exit(parser, args, stop, command)


def _exit(parser, args, stop: Failed | Stopped, command: str) -> None:
    """The runner's stop or failure as the command's exit: status 1 and one line for a
    failure; 130 for a stop (at once without waiting for XLA's threads or the
    interpreter's shutdown when it was one; after the summary when the result got written)."""
    if isinstance(stop, Failed):
        parser.exit(1, f"{command}: {stop}\n")
    if isinstance(stop, Written):
        if not args.quiet:
            print(stop.text, flush=True)
        parser.exit(130, f"{stop}\n")
    if stop.at_once:
        exit_now(130, f"\n{stop}\n")
    parser.exit(130, f"\n{stop}\n")


@contextlib.contextmanager
def tracking(trackers: list):
    """``trackers`` as one :class:`~socialjax.train.tracking.Listeners` (the engine's
    fan-out: a tracker that fails is dropped with one line, and the job goes on), closed
    when the job ends, however it ends."""
    listeners = Listeners(trackers)
    try:
        yield listeners
    finally:
        listeners.close()
