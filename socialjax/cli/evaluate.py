"""``socialjax evaluate DIR``: play one game with a population saved by ``socialjax
train`` and print each seat's return."""

from __future__ import annotations

import argparse

import jax
import numpy as np

from socialjax.cli.common import (
    add_cache_flag,
    check_row,
    ints,
    load_run,
    non_negative_int,
    positive_int,
    run_index,
    use_compile_cache,
)
from socialjax.train.playback import play
from socialjax.train.results import member_names


def add_parser(subparsers) -> argparse.ArgumentParser:
    evaluate = subparsers.add_parser(
        "evaluate", help="play a trained population from a checkpoint folder",
        description="Reload a folder written by `socialjax train` (config.json, checkpoint.msgpack), rebuild the "
                    "population and play one game with the trained learners, printing each seat's return.")
    evaluate.add_argument("dir", help="folder written by socialjax train (--out)")
    evaluate.add_argument("--run", type=run_index, default=(0, 0), metavar="G,S",
                          help="grid point and seed index of the run to play (default 0,0)")
    evaluate.add_argument("--steps", type=positive_int, default=None,
                          help="steps to play (default: the training rollout length)")
    evaluate.add_argument("--seed", type=non_negative_int, default=0, help="random seed of the game (default 0)")
    evaluate.add_argument("--greedy", action="store_true", help="most likely actions instead of sampling")
    evaluate.add_argument("--row", type=ints, default=None, metavar="M0,M1,...",
                          help="the member in each seat: learners 0..L-1, then the scripted members "
                               "(default: the training seating, or learner i mod L in seat i under random seating)")
    evaluate.set_defaults(subparser=evaluate)
    add_cache_flag(evaluate)
    return evaluate


def main(args: argparse.Namespace) -> int:
    use_compile_cache(args)
    parser = args.subparser
    loaded = load_run(parser, args.dir, args.run)
    g, s = args.run
    steps = args.steps or loaded.config.rollout_len
    train = loaded.train
    row = check_row(parser, train, args.row)
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
