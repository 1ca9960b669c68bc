"""``socialjax render --env NAME --out FILE`` (a random or no-op rollout of a grid game)
and ``socialjax render --checkpoint DIR --out FILE`` (a trained population), to a GIF, an
MP4 or an HTML page with the interactive viewer (:class:`socialjax.viz.Viewer`: frame by
frame, each player's action, reward and events beside it), chosen by the extension:
every check runs before anything is compiled. A game without frames (matrix, donor,
institution games) has only the viewer's table view: ``--out FILE.html``."""

from __future__ import annotations

import argparse
import importlib.util

import jax
import jax.numpy as jnp

from socialjax.cli.common import (
    add_cache_flag,
    bounded_int,
    check_row,
    ints,
    key_value,
    load_run,
    non_negative_int,
    positive_float,
    positive_int,
    run_index,
    use_compile_cache,
)
from socialjax.core.registry import env_class, make, registered_envs
from socialjax.train import store
from socialjax.train.playback import play
from socialjax.viz import video
from socialjax.viz.viewer import Viewer

RENDER_POLICIES = ("random", "noop")
VIEWER_EXTENSION = ".html"  # --out FILE.html: the interactive viewer, a standalone page
OUT_EXTENSIONS = (*video.VIDEO_EXTENSIONS, VIEWER_EXTENSION)


def add_parser(subparsers) -> argparse.ArgumentParser:
    render = subparsers.add_parser(
        "render", help="render a rollout of a grid game to a GIF, an MP4 or an HTML viewer (any game)",
        description="Render a rollout of a grid environment (one compiled scan) to a GIF (Pillow), an MP4 "
                    "(needs: pip install \"socialjax[video]\") or an HTML page to step through it frame by frame "
                    "with each player's action, reward and events (no kernel, no network), chosen by the extension "
                    "of --out: random or no-op actions (--env), or a trained population (--checkpoint DIR from "
                    "socialjax train). A game without frames (matrix, donor, institution games): --out FILE.html, "
                    "a table and a timeline of each round's actions, payoffs and the game's own quantities.")
    render.add_argument("--env", default=None, help="environment name (see `socialjax envs`)")
    render.add_argument("--checkpoint", default=None, metavar="DIR",
                        help="render the trained population saved in DIR (socialjax train --out); the environment "
                             "comes from the checkpoint")
    render.add_argument("--run", type=run_index, default=None, metavar="G,S",
                        help="with --checkpoint: grid point and seed index of the run (default 0,0)")
    render.add_argument("--greedy", action="store_true", help="with --checkpoint: most likely actions")
    render.add_argument("--row", type=ints, default=None, metavar="M0,M1,...",
                        help="with --checkpoint: the member in each seat (see socialjax evaluate --help)")
    render.add_argument("--steps", type=positive_int, default=200, help="steps to roll out (default 200)")
    render.add_argument("--out", required=True, help="output file: .gif, .mp4 or .html (the interactive viewer)")
    render.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    render.add_argument("--seed", type=non_negative_int, default=0, help="random seed (default 0)")
    render.add_argument("--fps", type=fps_value, default=10.0,
                        help=f"frames per second, {video.MIN_FPS:g} to {video.MAX_FPS:g} (default 10; .html: "
                             "the initial speed)")
    render.add_argument("--scale", type=scale_value, default=2,
                        help=f"integer upscaling, nearest neighbour, 1 to {video.MAX_SCALE} "
                             "(default 2: 16 px per cell; .html: the display size)")
    render.add_argument("--policy", choices=RENDER_POLICIES, default=None,
                        help="random: uniformly random actions (default); noop: every agent stands still")
    render.add_argument("--option", type=key_value, action="append", default=[], metavar="KEY=VALUE",
                        help="environment option for sj.make, repeatable (e.g. --option num_agents=3)")
    render.set_defaults(subparser=render)  # errors print this command's usage
    add_cache_flag(render)
    return render


def main(args: argparse.Namespace) -> int:
    use_compile_cache(args)
    parser = args.subparser
    try:
        out = store.check_out_file(args.out, overwrite=args.overwrite, suffixes=OUT_EXTENSIONS)
    except store.OutputError as err:
        parser.error(f"--out: {err}")
    if out.suffix.lower() == ".mp4":
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
    table = out.suffix.lower() == VIEWER_EXTENSION and not video.can_render(env)  # the viewer's table view
    if not video.can_render(env) and not table:
        renderable = [n for n in registered_envs() if _renders(n)]
        parser.error(f"--env {args.env!r} has no rendering (it is not a grid game): write --out FILE.html for the "
                     f"viewer's table view; environments that render: {renderable}")
    policy = None
    if args.policy == "noop":
        space = env.action_space(env.default_params)  # a vector per player in the punishment games
        noop = jnp.broadcast_to(jnp.asarray(env.noop_action, space.dtype), (env.num_agents, *space.shape))
        policy = lambda key, obs: noop  # noqa: E731
    if not table:
        _check_size(parser, env, args, out)
    key = jax.random.key(args.seed)
    if out.suffix.lower() == VIEWER_EXTENSION:
        viewer = Viewer.from_rollout(env, key, args.steps, policy=policy, fps=args.fps, scale=args.scale,
                                     title=f"{args.env}: {args.steps} steps, {args.policy} policy, seed {args.seed}")
        frames = viewer.frames
    else:
        viewer, frames = None, video.rollout_frames(env, key, args.steps, policy=policy)
    _write(parser, args, out, frames, viewer)
    print(f"wrote {out}: {_counted(frames, out, args)} ({args.steps} steps of {args.env}, {args.policy} policy, "
          f"seed {args.seed}){_size(frames, args)}, {args.fps:g} fps")
    return 0


def _render_checkpoint(parser: argparse.ArgumentParser, args: argparse.Namespace, out) -> int:
    """``socialjax render --checkpoint DIR``: the trained population of one run."""
    given = [flag for flag, value in (("--env", args.env), ("--option", args.option), ("--policy", args.policy))
             if value]
    if given:
        parser.error(f"{', '.join(given)} cannot be combined with --checkpoint: the environment and the policies "
                     "come from the checkpoint")
    index = args.run or (0, 0)
    loaded = load_run(parser, args.checkpoint, index)
    renders = video.can_render(loaded.env)  # else only the viewer's table view
    if not renders and out.suffix.lower() != VIEWER_EXTENSION:
        parser.error(f"--checkpoint {args.checkpoint!r}: {loaded.env_name} has no rendering (it is not a grid game): "
                     "write --out FILE.html for the viewer's table view, or use socialjax evaluate to play it")
    g, s = index
    row = check_row(parser, loaded.train, args.row)
    if renders:
        _check_size(parser, loaded.env, args, out)
    result = play(loaded.train, loaded.learners(g, s), jax.random.key(args.seed), args.steps, row=row,
                  render=renders, greedy=args.greedy)
    acting = "greedy" if args.greedy else "sampled"
    viewer = None
    if out.suffix.lower() == VIEWER_EXTENSION:
        title = (f"{loaded.env_name}: trained population from {loaded.path}, run ({g}, {s}), {args.steps} steps, "
                 f"{acting} actions, seed {args.seed}")
        viewer = Viewer.from_playback(result, loaded.env, title=title, fps=args.fps, scale=args.scale)
    _write(parser, args, out, result.frames, viewer)
    returns = ", ".join(f"{r:g}" for r in result.rewards.sum(axis=0))
    print(f"wrote {out}: {_counted(result.frames, out, args)} ({args.steps} steps of {loaded.env_name}, trained "
          f"population from {loaded.path}, run ({g}, {s}), {acting} actions, seed {args.seed})"
          f"{_size(result.frames, args)}, {args.fps:g} fps; return per seat: {returns}")
    return 0


def _write(parser: argparse.ArgumentParser, args: argparse.Namespace, out, frames, viewer: Viewer | None) -> None:
    """Write ``frames`` as a video (``viewer`` None), or ``viewer``'s page, atomically to ``out``."""
    if viewer is None:
        with store.replacing(out) as tmp:
            video.save_video(frames, tmp, fps=args.fps, scale=args.scale)
        return
    try:
        page = viewer.html()
    except ValueError as err:  # beyond the page's size limit
        parser.error(f"--steps {args.steps}: {err}")
    with store.replacing(out) as tmp:
        tmp.write_text(page, encoding="utf-8")


def _counted(frames, out, args: argparse.Namespace) -> str:
    """``"201 frames"``, for the viewer ``"a viewer of 201 frames"``, or for the viewer
    of a game without frames ``"a table viewer of 200 steps"``."""
    if frames is None:
        return f"a table viewer of {args.steps} steps"
    return f"{'a viewer of ' if out.suffix.lower() == VIEWER_EXTENSION else ''}{len(frames)} frames"


def _size(frames, args: argparse.Namespace) -> str:
    """``", 384x288 px"``: the frames' size on screen (none without frames)."""
    if frames is None:
        return ""
    _, h, w, _ = frames.shape
    return f", {w * args.scale}x{h * args.scale} px"


def _check_size(parser: argparse.ArgumentParser, env, args: argparse.Namespace, out) -> None:
    """Refuse, before the rollout, a video too large to write (``--steps`` x ``--scale``;
    a viewer holds its frames unscaled)."""
    scale = 1 if out.suffix.lower() == VIEWER_EXTENSION else args.scale
    try:
        video.check_video_size(video.frame_shape(env), args.steps + 1, scale)
    except ValueError as err:
        parser.error(f"--steps {args.steps} --scale {args.scale}: {err}")


def fps_value(text: str) -> float:
    value = positive_float(text)
    if not video.MIN_FPS <= value <= video.MAX_FPS:
        raise argparse.ArgumentTypeError(f"expected a number in [{video.MIN_FPS:g}, {video.MAX_FPS:g}] "
                                         f"(GIF times frames in 10 ms units), got {text!r}")
    return value


def scale_value(text: str) -> int:
    return bounded_int(text, 1, f"an integer in [1, {video.MAX_SCALE}]", video.MAX_SCALE)


def _renders(name: str) -> bool:
    """Whether the registered environment ``name`` has ``render``, without building it."""
    try:
        return callable(getattr(env_class(name), "render", None))
    except Exception:  # an environment that fails to import does not render
        return False
