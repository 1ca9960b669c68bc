"""Rollouts rendered to RGB frames, and frames saved as GIF / MP4 or shown in Jupyter.

The rollout is one compiled ``lax.scan`` (:func:`socialjax.rollout.rollout`) whose
states are rendered with the environment's own ``render(state) -> (8 H, 8 W, 3) uint8``
in the same compiled call, so only the frames leave the device. Export runs on the
host afterwards::

    import jax, socialjax as sj
    env = sj.make("harvest_open")
    frames = sj.viz.rollout_frames(env, jax.random.key(0), num_steps=200)  # (201, 144, 192, 3)
    sj.viz.save_gif(frames, "harvest.gif", fps=10, scale=2)
    sj.viz.animate(frames)   # in Jupyter: an HTML/JavaScript player
    run = sj.viz.video.record_rollout(env, jax.random.key(0), 200)  # the same compiled call:
    run.frames, run.rewards, run.actions, run.dones, run.events   # what sj.viz.Viewer shows
    run = sj.viz.video.record_steps(sj.make("public_goods"), 0, 20)  # any game, no frames:
    run.events, run.values   # its per-player and game-level info quantities of each step

GIFs need only Pillow (which matplotlib already requires); MP4 needs
``pip install "socialjax[video]"`` (imageio and imageio-ffmpeg, which bundles ffmpeg).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

from socialjax.core.wrappers import Wrapper
from socialjax.envs.grid import constants as C
from socialjax.envs.grid import render as R
from socialjax.rollout import rollout

#: file extensions :func:`save_video` understands
VIDEO_EXTENSIONS = (".gif", ".mp4")
MP4_INSTALL_HINT = 'pip install "socialjax[video]" (or: pip install imageio imageio-ffmpeg)'

Policy = Callable[[jax.Array, Any], jax.Array]  # policy(key, obs) -> actions (N,)

#: ``info`` entries every environment carries for the contract (episode ends, bad input,
#: the observation before an auto-reset), not quantities of the game itself
BOOKKEEPING = ("terminated", "truncated", "invalid_action", "invalid_params", "final_obs")
BODY_PIXEL = 4  # row and column of a pixel in the body of an agent sprite (render._agent)


# ------------------------------------------------------------------------------ rollout
def can_render(env) -> bool:
    """Whether ``env`` (or the environment a wrapper holds) has a ``render(state)``."""
    return callable(getattr(env, "render", None))


def _render(env, state) -> jax.Array:
    """``env.render(state)``, unwrapping wrappers (and their states) that do not render
    themselves: a wrapper forwards ``render`` to the environment it holds, which
    expects its own state, not the wrapper's."""
    while isinstance(env, Wrapper) and "render" not in vars(type(env)):
        state = getattr(state, "env_state", state)
        env = env._env
    return env.render(state)


def player_colours(env) -> np.ndarray:
    """``(N, 3) uint8``: the colour player ``j``'s sprite is drawn in, read off the body of
    its sprite in the environment's atlas (the grid games), else the engine's agent
    colours in order (the LOLA coin game draws its players' frames in them; a game
    without frames gets the same palette, so that a table's rows and a timeline's lines
    match). The viewer draws them as a colour key beside each player's row."""
    n = env.num_agents
    atlas = getattr(env, "atlas", None)  # a wrapper forwards it
    if atlas is not None:
        return np.asarray(atlas)[C.AGENT_BASE + 4 * np.arange(n), BODY_PIXEL, BODY_PIXEL]
    return np.asarray([R.AGENT_COLOURS[j % len(R.AGENT_COLOURS)] for j in range(n)], np.uint8)


class Recording(NamedTuple):
    """What :func:`record_rollout` and :func:`record_steps` return (numpy arrays):
    ``frames`` ``(T + 1, 8 H, 8 W, 3) uint8`` (the reset state, then the state after each
    step; ``None`` from ``record_steps``), ``rewards`` ``(T, N)``, ``actions`` ``(T, N,
    *action_shape)``, ``dones`` ``(T,)``, ``events`` ``{name: (T, N)}``: per-player
    quantities of each step (``record_rollout``: the environment's ``event_keys`` that its
    ``info`` carries per player; ``record_steps``: every per-player ``info`` entry but the
    :data:`BOOKKEEPING`, the ``event_keys`` first), and ``values`` ``{name: (T,)}``: the
    game-level scalars of ``info`` (``record_steps`` only, e.g. a commons' ``stock``)."""

    frames: np.ndarray | None
    rewards: np.ndarray
    actions: np.ndarray
    dones: np.ndarray
    events: dict[str, np.ndarray]
    values: dict[str, np.ndarray] = {}


def player_events(env, info: dict, num_agents: int) -> dict[str, Any]:
    """The entries of ``info`` named by ``env.event_keys`` with one value per player
    (last axis ``N``); others (e.g. a game-level flag) are left out."""
    return {k: info[k] for k in getattr(env, "event_keys", ())
            if k in info and info[k].shape[-1:] == (num_agents,)}


def in_event_order(env, events: dict[str, Any]) -> dict[str, np.ndarray]:
    """``events`` (out of a compiled call, which sorts a dict's keys) as numpy arrays in
    the order of ``env.event_keys``."""
    return {k: np.asarray(events[k]) for k in getattr(env, "event_keys", ()) if k in events}


def in_table_order(env, per_player: dict[str, Any], values: dict[str, Any]) -> tuple[dict, dict]:
    """What a table view shows, as numpy arrays: the per-player quantities with the
    ``event_keys`` first (in their order), then the others by name; the game-level
    values by name."""
    declared = in_event_order(env, per_player)
    rest = {k: np.asarray(v) for k, v in sorted(per_player.items()) if k not in declared}
    return {**declared, **rest}, {k: np.asarray(v) for k, v in sorted(values.items())}


def game_quantities(info: dict, num_agents: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The game's own quantities in the ``info`` of a rollout (leaves ``(T, ...)``),
    leaving out the :data:`BOOKKEEPING`: the per-player entries ``(T, N)`` and the
    game-level scalars ``(T,)``, each a dict by name. Entries of other shapes are left out."""
    own = {k: v for k, v in info.items() if k not in BOOKKEEPING}
    per_player = {k: v for k, v in own.items() if v.ndim == 2 and v.shape[-1] == num_agents}
    return per_player, {k: v for k, v in own.items() if v.ndim == 1}


@partial(jax.jit, static_argnames=("env", "num_steps", "policy", "frames"))
def _rollout(env, key: jax.Array, params, num_steps: int, policy: Policy | None, frames: bool = True) -> Recording:
    act = None if policy is None else (lambda k, obs, state: policy(k, obs))
    traj = rollout(env, key, num_steps, params=params, policy=act)
    n = traj.reward.shape[-1]
    if not frames:
        return Recording(None, traj.reward, traj.actions, traj.done, *game_quantities(traj.info, n))
    images = jax.vmap(lambda state: _render(env, state))(traj.state)  # (T + 1, ...)
    return Recording(images, traj.reward, traj.actions, traj.done, player_events(env, traj.info, n))


def _check_rollout_args(key, num_steps, policy):
    """``key`` as a ``jax.random.key`` (an ``int`` is a seed), after checking ``num_steps`` and ``policy``."""
    if isinstance(num_steps, bool) or not isinstance(num_steps, (int, np.integer)) or num_steps < 0:
        raise ValueError(f"num_steps must be a non-negative int, got {num_steps!r}")
    if policy is not None and not callable(policy):
        raise TypeError(f"policy must be callable as policy(key, obs) -> actions, got {type(policy).__name__}")
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        key = jax.random.key(int(key))
    return key


def record_rollout(env, key, num_steps: int, policy: Policy | None = None, params=None) -> Recording:
    """Run ``env`` for ``num_steps`` steps, render every state and keep each step's
    rewards, actions, dones and per-player events: one compiled call per ``(env,
    num_steps, policy)`` (the one :func:`rollout_frames` uses). The arguments are those
    of :func:`rollout_frames`; the run is :func:`socialjax.rollout.rollout`'s with the
    same key, so its rewards are that function's."""
    if not can_render(env):
        raise TypeError(f"{getattr(env, 'name', type(env).__name__)} ({type(env).__name__}) has no "
                        "render(state) method: only the grid games render (record_steps records any game)")
    key = _check_rollout_args(key, num_steps, policy)
    params = env.resolve_single_params(params)
    run = jax.device_get(_rollout(env, key, params, int(num_steps), policy))
    return run._replace(events=in_event_order(env, run.events))


def record_steps(env, key, num_steps: int, policy: Policy | None = None, params=None) -> Recording:
    """:func:`record_rollout` of any game, without frames: each step's rewards,
    actions, dones, per-player ``info`` quantities (``events``: the ``event_keys`` first,
    then the others by name, e.g. a player's ``reputation`` or ``partner``) and game-level
    ``info`` scalars (``values``, e.g. ``stock``, ``quota``, ``round``). What the viewer's
    table view shows of a game that does not render."""
    key = _check_rollout_args(key, num_steps, policy)
    params = env.resolve_single_params(params)
    run = jax.device_get(_rollout(env, key, params, int(num_steps), policy, frames=False))
    events, values = in_table_order(env, run.events, run.values)
    return run._replace(events=events, values=values)


def rollout_frames(env, key, num_steps: int, policy: Policy | None = None, params=None) -> np.ndarray:
    """Run ``env`` for ``num_steps`` steps and render every state.

    Args:
        env: any environment (or wrapper) with ``render(state)``, e.g. the grid games.
        key: a ``jax.random.key`` (an ``int`` is taken as a seed).
        num_steps: steps ``T >= 0``. ``step`` auto-resets, so a rollout longer than an
            episode shows the next episode's first state after the last step.
        policy: ``policy(key, obs) -> actions (N,)`` (jittable; ``obs`` has the agent
            axis first). ``None``: uniformly random actions.
        params: the environment's params (default: ``env.default_params``).

    Returns:
        ``(T + 1, 8 H, 8 W, 3) uint8`` numpy frames: the reset state, then the state
        after each step. One compile per ``(env, num_steps, policy)``: pass the same
        objects to reuse it (:func:`record_rollout` shares it, and keeps the rewards,
        actions and events too).
    """
    return record_rollout(env, key, num_steps, policy, params).frames


# ------------------------------------------------------------------------------ export
def _as_frames(frames) -> np.ndarray:
    """Check ``(T, H, W, 3)`` and return a uint8 numpy array."""
    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.shape[0] < 1:
        raise ValueError(f"frames must have shape (T >= 1, H, W, 3), got {frames.shape}")
    if frames.dtype != np.uint8:
        raise TypeError(f"frames must be uint8 RGB (0-255), got dtype {frames.dtype}")
    return frames


# GIF stores each frame's duration in units of 10 ms: above 100 fps a duration rounds to
# 0, which viewers replace by their own default
MAX_FPS = 100.0
MIN_FPS = 0.01  # a frame per 100 s
MAX_SCALE = 32  # 256 screen pixels per grid cell at 8 pixels per cell
MAX_VIDEO_BYTES = 2 * 1024**3  # the upscaled frames, held in memory while a video is written


def _check_fps_scale(fps, scale) -> None:
    if (isinstance(fps, bool) or not isinstance(fps, (int, float, np.integer, np.floating))
            or not MIN_FPS <= fps <= MAX_FPS):
        raise ValueError(f"fps must be a number in [{MIN_FPS:g}, {MAX_FPS:g}] (GIF times frames in 10 ms units), "
                         f"got {fps!r}")
    if isinstance(scale, bool) or not isinstance(scale, (int, np.integer)) or not 1 <= scale <= MAX_SCALE:
        raise ValueError(f"scale must be an int in [1, {MAX_SCALE}], got {scale!r}")


def check_video_size(frame_shape: tuple[int, ...], num_frames: int, scale: int) -> None:
    """``ValueError`` naming the sizes unless ``num_frames`` frames of ``frame_shape``
    ``(H, W, 3)`` upscaled ``scale`` times fit :data:`MAX_VIDEO_BYTES`; call it before a
    rollout, so that a video too large to write fails before the work."""
    h, w, c = frame_shape
    size = num_frames * h * w * c * scale * scale
    if size > MAX_VIDEO_BYTES:
        raise ValueError(f"{num_frames} frames of {w * scale}x{h * scale} px need {size / 1024**3:.1f} GiB, more "
                         f"than the {MAX_VIDEO_BYTES / 1024**3:g} GiB a video may hold in memory: lower the steps or "
                         "the scale")


def frame_shape(env) -> tuple[int, ...]:
    """``(H, W, 3)`` of ``env``'s rendered frame, from shapes alone (nothing is run)."""
    def first(key):
        return _render(env, env.reset(key)[1])

    return tuple(jax.eval_shape(first, jax.random.key(0)).shape)


def upscale(frames: np.ndarray, scale: int) -> np.ndarray:
    """Nearest-neighbour upscaling of ``(..., H, W, C)`` by an integer ``scale``."""
    if scale == 1:
        return frames
    return np.repeat(np.repeat(frames, scale, axis=-3), scale, axis=-2)


def save_gif(frames, path: str | os.PathLike, fps: float = 10, scale: int = 1) -> Path:
    """Write ``(T, H, W, 3) uint8`` frames to an endlessly looping GIF with Pillow,
    each frame shown ``1 / fps`` s (GIF stores durations in 10 ms units) and upscaled
    ``scale`` times (nearest neighbour). Pillow merges identical consecutive frames
    into one longer frame, so the file may hold fewer frames than ``T`` for the same
    total duration. Returns the path."""
    from PIL import Image  # on call: viz is imported by `import socialjax`, and Pillow only serves GIFs

    _check_fps_scale(fps, scale)
    frames = upscale(_as_frames(frames), scale)
    path = Path(path)
    images = [Image.fromarray(frame) for frame in frames]
    images[0].save(path, format="GIF", save_all=True, append_images=images[1:],
                   duration=1000.0 / fps, loop=0)
    return path


def save_mp4(frames, path: str | os.PathLike, fps: float = 10, scale: int = 1) -> Path:
    """Write ``(T, H, W, 3) uint8`` frames to an H.264 MP4 (needs the ``video`` extra:
    imageio and imageio-ffmpeg). Odd sizes are padded by one black pixel row/column
    (H.264 needs even sizes). Returns the path."""
    try:
        import imageio.v2 as imageio
        import imageio_ffmpeg  # noqa: F401  (the ffmpeg plugin needs it)
    except ImportError as err:
        raise ImportError(f"save_mp4 needs imageio with ffmpeg ({err.name} is missing): {MP4_INSTALL_HINT}. "
                          "Or save a GIF, which needs only Pillow.") from err
    _check_fps_scale(fps, scale)
    frames = upscale(_as_frames(frames), scale)
    _, h, w, _ = frames.shape
    frames = np.pad(frames, ((0, 0), (0, h % 2), (0, w % 2), (0, 0)))
    path = Path(path)
    imageio.mimwrite(path, list(frames), format="FFMPEG", fps=fps, codec="libx264",
                     pixelformat="yuv420p", macro_block_size=1)
    return path


def save_video(frames, path: str | os.PathLike, fps: float = 10, scale: int = 1) -> Path:
    """:func:`save_gif` or :func:`save_mp4`, chosen by the extension of ``path``."""
    suffix = Path(path).suffix.lower()
    if suffix == ".gif":
        return save_gif(frames, path, fps, scale)
    if suffix == ".mp4":
        return save_mp4(frames, path, fps, scale)
    raise ValueError(f"unsupported video extension {suffix or '(none)'!r} in {str(path)!r}; "
                     f"use one of {VIDEO_EXTENSIONS}")


class _HTMLAnimation:
    """Stand-in for ``IPython.display.HTML`` when IPython is not installed."""

    def __init__(self, data: str):
        self.data = data

    def _repr_html_(self) -> str:
        return self.data


def animate(frames, fps: float = 10, scale: int = 2):
    """An HTML/JavaScript player of ``(T, H, W, 3)`` frames for Jupyter (matplotlib's
    ``to_jshtml``): shown when it is the last expression of a cell. Returns an
    ``IPython.display.HTML`` (or an object with ``_repr_html_`` and ``.data`` when
    IPython is not installed). Each image pixel is drawn as ``scale`` screen pixels."""
    # on call: viz is imported by `import socialjax`, which should not pay for matplotlib
    from matplotlib import animation
    from matplotlib.figure import Figure

    _check_fps_scale(fps, scale)
    frames = _as_frames(frames)
    _, h, w, _ = frames.shape
    dpi = 100
    fig = Figure(figsize=(w * scale / dpi, h * scale / dpi), dpi=dpi)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    image = ax.imshow(frames[0], interpolation="nearest")

    def draw(t):
        image.set_data(frames[t])
        return (image,)

    anim = animation.FuncAnimation(fig, draw, frames=len(frames), interval=1000.0 / fps, blit=True)
    html = anim.to_jshtml(fps=fps, default_mode="loop")
    try:  # IPython is optional: Jupyter has it, a script may not
        from IPython.display import HTML
    except ImportError:
        return _HTMLAnimation(html)
    return HTML(html)
