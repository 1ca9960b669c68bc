"""Command line: ``socialjax envs | train | render``.

``socialjax train donor-evolution`` is the README's main job: cultural evolution of
parametric donor-game strategies for many seeds in one compiled call. ``socialjax render
--env cleanup --out cleanup.gif`` renders a random rollout of a grid game to a GIF / MP4.
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
    a value that is not a literal is taken as a string (``episode=fixed``)."""
    import ast

    key, sep, value = text.partition("=")
    if not sep or not key.strip().isidentifier():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key.strip(), ast.literal_eval(value.strip())
    except (ValueError, SyntaxError):
        return key.strip(), value.strip()


RENDER_POLICIES = ("random", "noop")

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

    render = sub.add_parser(
        "render", help="render a rollout of a grid game to a GIF or MP4",
        description="Render a rollout of a grid environment (one compiled scan) to a GIF (Pillow) or an MP4 "
                    "(needs: pip install \"socialjax[video]\"), chosen by the extension of --out.")
    render.add_argument("--env", required=True, help="environment name (see `socialjax envs`)")
    render.add_argument("--steps", type=_positive_int, default=200, help="steps to roll out (default 200)")
    render.add_argument("--out", required=True, help="output file, .gif or .mp4")
    render.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    render.add_argument("--fps", type=_positive_float, default=10.0, help="frames per second (default 10)")
    render.add_argument("--scale", type=_positive_int, default=2,
                        help="integer upscaling, nearest neighbour (default 2: 16 px per cell)")
    render.add_argument("--policy", choices=RENDER_POLICIES, default="random",
                        help="random: uniformly random actions (default); noop: every agent stands still")
    render.add_argument("--option", type=_option, action="append", default=[], metavar="KEY=VALUE",
                        help="environment option for sj.make, repeatable (e.g. --option num_agents=3)")
    render.set_defaults(subparser=render)  # errors print this command's usage
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
    if args.command == "render":
        return _render(args.subparser, args)
    parser.error(f"unknown command {args.command!r}")
    return 2


def _render(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``socialjax render``: every check runs before anything is compiled."""
    from pathlib import Path

    import jax
    import jax.numpy as jnp

    from socialjax.core.registry import make
    from socialjax.viz import video

    out = Path(args.out)
    if out.suffix.lower() not in video.VIDEO_EXTENSIONS:
        parser.error(f"--out {args.out!r}: unsupported extension {out.suffix or '(none)'!r}; "
                     f"use one of {', '.join(video.VIDEO_EXTENSIONS)}")
    if out.suffix.lower() == ".mp4":
        import importlib.util

        missing = [m for m in ("imageio", "imageio_ffmpeg") if importlib.util.find_spec(m) is None]
        if missing:
            parser.error(f"--out {args.out!r}: MP4 needs {' and '.join(missing)}: {video.MP4_INSTALL_HINT}; "
                         "or write a .gif")
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
    out.parent.mkdir(parents=True, exist_ok=True)
    video.save_video(frames, out, fps=args.fps, scale=args.scale)
    t, h, w, _ = frames.shape
    print(f"wrote {out}: {t} frames ({args.steps} steps of {args.env}, {args.policy} policy, seed {args.seed}), "
          f"{w * args.scale}x{h * args.scale} px, {args.fps:g} fps")
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
