"""Visualisation: rendered rollouts (GIF / MP4 / Jupyter) and plots of results.

- :func:`rollout_frames`: a compiled rollout of any environment with ``render(state)``
  (the grid games), every state rendered inside the scan: ``(T + 1, 8 H, 8 W, 3) uint8``.
- :func:`save_gif` (Pillow), :func:`save_mp4` (``pip install "socialjax[video]"``),
  :func:`save_video` (by extension), :func:`animate` (a Jupyter player of frames).
- :class:`Viewer`: step through a rollout or a trained population's game frame by frame
  (a grid game), or round by round as a table and a timeline (any other game), each
  player's colour key, action, reward, return and events beside it, in Jupyter or as a
  standalone HTML file (:mod:`socialjax.viz.viewer`); :func:`player_colours`: the colour
  each player's sprite is drawn in.
- :class:`LiveDisplay`: a training run's progress and curves, redrawn in place in Jupyter
  (what ``sj.train.run`` and ``reproduce`` show there; :mod:`socialjax.viz.live`).
- :func:`colour_legend`: the sprite colours as a Markdown table.
- :mod:`socialjax.viz.plots`: matplotlib plots of results arrays.
"""

from socialjax.viz.legend import colour_legend
from socialjax.viz.live import LiveDisplay
from socialjax.viz.plots import mean_ci95, plot_bands
from socialjax.viz.video import (
    VIDEO_EXTENSIONS,
    animate,
    can_render,
    player_colours,
    rollout_frames,
    save_gif,
    save_mp4,
    save_video,
    upscale,
)
from socialjax.viz.viewer import Viewer

__all__ = [
    "VIDEO_EXTENSIONS",
    "LiveDisplay",
    "Viewer",
    "animate",
    "can_render",
    "colour_legend",
    "mean_ci95",
    "player_colours",
    "plot_bands",
    "rollout_frames",
    "save_gif",
    "save_mp4",
    "save_video",
    "upscale",
]
