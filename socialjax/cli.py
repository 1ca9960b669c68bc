"""Command line: ``socialjax envs | train``.

``socialjax train donor-evolution`` is the README's main job: cultural evolution of
parametric donor-game strategies for many seeds in one compiled call.
"""

from __future__ import annotations

import argparse
import sys


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


PRESETS = {
    "donor-evolution": "cultural evolution of parametric donor strategies (Vallinder & Hughes 2024 setting)",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="socialjax", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")

    sub.add_parser("envs", help="list the registered environments")

    train = sub.add_parser("train", help="run a preset experiment", description="Presets: " + "; ".join(
        f"{k}: {v}" for k, v in PRESETS.items()))
    train.add_argument("preset", choices=sorted(PRESETS), help="experiment preset")
    train.add_argument("--seeds", type=_positive_int, default=256, help="number of seeds (default 256)")
    train.add_argument("--generations", type=_positive_int, default=10, help="generations (default 10)")
    train.add_argument("--multipliers", type=_floats, default=(1.5, 2.0, 3.0),
                       help="donation multipliers g to sweep, comma-separated (default 1.5,2,3)")
    train.add_argument("--schedule", choices=("released", "alternating"), default="released",
                       help="pairing schedule (default: the authors' released code)")
    train.add_argument("--punishment", action="store_true", help="allow costly punishment")
    train.add_argument("--seed", type=int, default=0, help="base random seed")
    train.add_argument("--out", default=None, help="output folder (default results/<preset>)")
    train.add_argument("--quiet", action="store_true", help="no progress or summary output")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "envs":
        from socialjax.core.registry import describe_envs

        for name, desc in describe_envs().items():
            print(f"{name:16s} {desc}")
        return 0
    if args.command == "train" and args.preset == "donor-evolution":
        from socialjax.train.cultural_evolution import run_experiment

        if args.seeds < 2:
            parser.error("--seeds must be at least 2 to report an interval across seeds")
        if not args.multipliers or any(g < 0 for g in args.multipliers):
            parser.error(f"--multipliers must be non-negative numbers, got {args.multipliers}")
        run_experiment(
            num_seeds=args.seeds,
            num_generations=args.generations,
            multipliers=args.multipliers,
            out_dir=args.out or f"results/{args.preset}",
            seed=args.seed,
            env_options={"schedule": args.schedule, "punishment": args.punishment},
            verbose=not args.quiet,
        )
        return 0
    parser.error(f"unknown command {args.command!r}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
