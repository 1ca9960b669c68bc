"""An interactive rollout viewer, in Jupyter and in a standalone HTML file::

    import jax, socialjax as sj

    env = sj.make("harvest_open")
    viewer = sj.viz.Viewer.from_rollout(env, jax.random.key(0), num_steps=100)
    viewer                          # the last expression of a Jupyter cell: the player
    viewer.save("harvest.html")     # one file for any browser: no kernel, no network
    sj.viz.Viewer.from_rollout(sj.make("public_goods"), jax.random.key(0), 40)  # the table view

    out = sj.train.play(train, state.learners, jax.random.key(1), 200, render=True)
    sj.viz.Viewer.from_playback(out, train.env)   # a trained population, seats by member

What it shows. A grid game (the frame view): the frame (scaled up, pixelated; frame 0 is
the reset state, frame ``t`` the state after step ``t``). Any other game (the table
view): a timeline of each player's episode return in its colour (the steps to come
shaded) and the step's game-level ``info`` quantities (``stock``, ``round`` ...). Both:
play / pause, step back / forward, a slider, a frames-per-second box, and keys while the
viewer has focus (click it or tab to it): space plays / pauses, left / right step, Home
/ End jump (the fps box and the slider keep their own keys). Beside it a row per player:
a colour key (its sprite's colour, :func:`~socialjax.viz.video.player_colours`), the
action (by ``action_names``, else its index or value) and reward of the step that led to
the frame, the episode's return so far, and its events of that step under the game's
own names (``coins collected``: the ``event_keys`` its ``info`` carries per player; the
table view: every per-player ``info`` quantity, e.g. ``reputation``). Below: ``step t /
T``, and "episode ended" on an episode's last step (``step`` resets automatically, so
that frame already shows the next episode's start).

The layout does not move during play: columns have fixed widths and numbers are
tabular, so whether the table sits beside the frame or below it is decided by the
window's width when the page loads, never by the numbers shown. Everything is embedded
in the HTML: frames as base64 PNG (Pillow) at the rendered size (``scale`` only sets the
display size), the timeline as SVG, numbers as JSON, a few lines of JavaScript. Each
rendering gets its own element id, so several viewers share a notebook.
:func:`viewer_data` reads the JSON back out of a page or a notebook output.
"""

from __future__ import annotations

import base64
import dataclasses
import html as html_text
import io
import json
import os
import re
import uuid
from pathlib import Path

import numpy as np

from socialjax.envs.grid import render as R
from socialjax.viz import video
from socialjax.viz.viewer_page import PAGE, VALUES_TABLE

#: a viewer's page may embed this many bytes of data (frames as base64 PNG, numbers) at most
MAX_HTML_BYTES = 50 * 1024**2
MARKER = "socialjax-viewer"  # the class of a viewer's outer element
REWARD_DECIMALS = 6  # rewards, returns and float events are rounded in the JSON
# column widths in CSS px, fixed so that nothing reflows while numbers change (13 px font)
NUMBER_PX = 72  # a number: "-123.456" and padding
CHAR_PX, HEAD_CHAR_PX = 7.5, 8.5  # about one character; one of a column's (bold) head, whose words never break
LABEL_PX = (96, 220)  # the player column (its swatch, then the label): at least, at most
ACTION_PX = (72, 240)  # the action column: at least, at most
VIEW_MIN_PX = 360  # the frame column holds the controls, however small the frame
TIMELINE_PX = (480, 180)  # the table view's timeline: width, height
TIMELINE_MARGIN = (44, 8, 8, 18)  # left (axis labels), right, top, bottom


@dataclasses.dataclass(repr=False, eq=False)
class Viewer:
    """A rollout to step through: ``T`` steps of ``N`` players.

    - ``frames`` ``(T + 1, H, W, 3) uint8``: the reset state, then the state after each
      step; ``None`` for the table view (a game that does not render);
    - ``rewards`` ``(T, N)`` float; ``actions`` ``(T, N)`` (action indices, or values of a
      continuous action) or ``(T, N, K)`` (a vector per player); ``dones`` ``(T,)`` bool;
    - ``events`` ``{name: (T, N)}``: per-player quantities of each step (event counts);
    - ``action_names``: the name of action ``a`` (an action without one shows its index);
    - ``players``: ``N`` row labels (default ``"player i"``); ``title``;
    - ``fps``: the initial speed; ``scale``: screen pixels per frame pixel;
    - ``colours`` ``(N, 3)`` uint8: each player's colour, drawn beside its row (``None``:
      no colour key; the table view's timeline then draws the players' mean return);
    - ``values`` ``{name: (T,)}``: game-level quantities of each step (the table view).

    Shown in Jupyter as a cell's last expression; :meth:`html` is the standalone page.
    """

    frames: np.ndarray | None
    rewards: np.ndarray
    actions: np.ndarray
    dones: np.ndarray
    events: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    action_names: tuple[str, ...] = ()
    players: tuple[str, ...] = ()
    title: str = "rollout"
    fps: float = 10
    scale: int = 3
    colours: np.ndarray | None = None
    values: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        T = self._check_frames()
        self.rewards = _per_player("rewards", self.rewards, T)
        N = self.rewards.shape[1]
        self.actions = _per_player("actions", self.actions, T, N, vectors=True)
        self.dones = _per_step("dones", self.dones, T).astype(bool)
        self.events = {str(name): _per_player(f"events[{name!r}]", v, T, N) for name, v in self.events.items()}
        self.values = {str(name): _per_step(f"values[{name!r}]", v, T) for name, v in self.values.items()}
        self.action_names = tuple(str(a) for a in self.action_names)
        self.players = tuple(str(p) for p in self.players) or tuple(f"player {i}" for i in range(N))
        if len(self.players) != N:
            raise ValueError(f"players must name the {N} players, got {len(self.players)}: {list(self.players)}")
        if self.colours is not None:
            self.colours = np.asarray(self.colours)
            if self.colours.shape != (N, 3) or not np.issubdtype(self.colours.dtype, np.integer) or not (
                    (self.colours >= 0) & (self.colours <= 255)).all():
                raise ValueError(f"colours must be (N, 3) = ({N}, 3) RGB integers in [0, 255], got "
                                 f"{self.colours.shape} {self.colours.dtype}")
            self.colours = self.colours.astype(np.uint8)
        self.title = str(self.title)
        video._check_fps_scale(self.fps, self.scale)

    def _check_frames(self) -> int:
        """Check ``frames`` (or, without frames, that there are rewards) and return ``T >= 1``."""
        if self.frames is None:
            T = np.shape(self.rewards)[0] if np.ndim(self.rewards) else 0
        else:
            self.frames = video._as_frames(self.frames)
            T = len(self.frames) - 1
        if T < 1:
            got = "no rewards" if self.frames is None else f"{len(self.frames)} frames"
            raise ValueError("a viewer needs at least one step: frames must hold T + 1 >= 2 frames (the reset state, "
                             f"then one per step), or rewards T >= 1 rows without frames, got {got}")
        return T

    # ---------------------------------------------------------------------- constructors
    @classmethod
    def from_rollout(cls, env, key, num_steps: int, policy: video.Policy | None = None, params=None, *,
                     title: str | None = None, fps: float = 10, scale: int = 3) -> Viewer:
        """``num_steps`` steps of ``env`` (any registered game, or a wrapper of one) from a
        reset, as one compiled rollout. A game that renders (the grid games) gets the frame
        view (:func:`~socialjax.viz.video.record_rollout`, shared with
        :func:`~socialjax.viz.rollout_frames`), any other the table view
        (:func:`~socialjax.viz.video.record_steps`: its per-player and game-level ``info``
        quantities). ``key``, ``policy`` ``(key, obs) -> actions`` (``None``: random
        actions) and ``params`` as for ``rollout_frames``; the run is
        :func:`socialjax.rollout.rollout`'s with the same key."""
        if isinstance(num_steps, bool) or not isinstance(num_steps, (int, np.integer)) or num_steps < 1:
            raise ValueError(f"num_steps must be a positive int, got {num_steps!r}")
        renders = video.can_render(env)
        run = (video.record_rollout if renders else video.record_steps)(env, key, num_steps, policy, params)
        acting = "random actions" if policy is None else "a given policy"
        return cls(run.frames, run.rewards, run.actions, run.dones, run.events, action_names=_action_names(env),
                   title=title or f"{getattr(env, 'name', type(env).__name__)}: {num_steps} steps, {acting}",
                   fps=fps, scale=scale, colours=_key_colours(env, renders), values=run.values)

    @classmethod
    def from_playback(cls, playback, env, *, title: str | None = None, fps: float = 10,
                      scale: int = 3) -> Viewer:
        """A trained population's game: ``playback``, the ``Playback`` that
        :func:`socialjax.train.play` returns (viz sits below train, so it is not imported
        here; a grid game's with ``render=True``), ``env`` its environment (``train.env``,
        for the action names and colours). A game that does not render gets the table
        view of the recorded per-player quantities and game-level values. Rows are
        labelled by seat and member, e.g. ``"seat 0 (learner 1)"``."""
        renders = video.can_render(env)
        if playback.frames is None and renders:
            raise ValueError("the playback has no frames: play it with render=True")
        num_seats = playback.rewards.shape[-1]
        players = tuple(f"seat {i} ({m})" for i, m in enumerate(playback.members)) or tuple(
            f"seat {i}" for i in range(num_seats))
        name = getattr(env, "name", type(env).__name__)
        return cls(playback.frames if renders else None, playback.rewards, playback.actions, playback.dones,
                   playback.events, action_names=_action_names(env), players=players,
                   title=title or f"{name}: trained population, {len(playback.dones)} steps", fps=fps, scale=scale,
                   colours=_key_colours(env, renders), values=playback.values)

    # ---------------------------------------------------------------------- the numbers
    @property
    def num_steps(self) -> int:
        return len(self.dones)

    @property
    def returns(self) -> np.ndarray:
        """``(T, N)`` float64: each player's return in the current episode up to and
        including step ``t`` (an episode's last step holds its whole return; the next
        step starts from 0)."""
        out = np.zeros(self.rewards.shape)
        total = np.zeros(self.rewards.shape[1])
        for t, (reward, done) in enumerate(zip(self.rewards, self.dones)):
            total = total + reward
            out[t] = total
            if done:
                total = np.zeros_like(total)
        return out

    def _page_data(self, frames: list[str], timeline: dict | None) -> dict:
        """What the page's JavaScript reads (see :func:`viewer_data`), ``frames`` the base64 PNGs."""
        return {
            "frames": frames, "players": list(self.players), "action_names": list(self.action_names),
            "colours": None if self.colours is None else [_hex(c) for c in self.colours],
            "actions": _numbers(self.actions), "rewards": _numbers(self.rewards), "returns": _numbers(self.returns),
            "dones": self.dones.tolist(),
            "events": {name: _numbers(v) for name, v in self.events.items()},
            "values": {name: _numbers(v) for name, v in self.values.items()},
            "labels": {name: label(name) for name in [*self.events, *self.values]},
            "timeline": timeline, "fps": float(self.fps),
        }

    # ---------------------------------------------------------------------- HTML
    def _repr_html_(self) -> str:
        """The viewer as an HTML fragment (style, markup, data, script), with a fresh id."""
        uid = f"sjv-{uuid.uuid4().hex}"
        if self.frames is None:
            frames, (view, timeline) = [], _timeline(self.returns, self.dones, self.colours)
            what, width = f"{self.num_steps} steps of {len(self.players)} players", TIMELINE_PX[0]
        else:
            frames, timeline = [_png_base64(frame) for frame in self.frames], None
            (h, w), scale = self.frames.shape[1:3], self.scale
            view = (f'<img class="sjv-frame" width="{w * scale}" height="{h * scale}" alt="frame"'
                    f' src="data:image/png;base64,{frames[0]}">')
            what, width = f"{len(frames)} frames of {w}x{h} px", w * scale
        data = json.dumps(self._page_data(frames, timeline), allow_nan=False).replace("<", "\\u003c")
        if len(data) > MAX_HTML_BYTES:  # no "</script>" inside: "<" is escaped
            fit = max(1, int(self.num_steps * MAX_HTML_BYTES / len(data)))
            raise ValueError(
                f"the viewer would embed {len(data) / 1024**2:.1f} MiB of frames and numbers ({what}), more than "
                f"{MAX_HTML_BYTES / 1024**2:g} MiB: use fewer steps (about {fit} fit). The frames are embedded at "
                "their rendered size; scale only sets the display size")
        columns = self._column_widths()
        return PAGE.substitute(
            uid=uid, marker=MARKER, title=html_text.escape(self.title), view=view, view_width=max(width, VIEW_MIN_PX),
            table_width=sum(columns), cols="".join(f'<col style="width:{c}px">' for c in columns),
            values_table=VALUES_TABLE if self.values else "", T=self.num_steps, fps=f"{self.fps:g}",
            min_fps=f"{video.MIN_FPS:g}", max_fps=f"{video.MAX_FPS:g}", data=data)

    def _column_widths(self) -> list[int]:
        """The table's column widths in px: player, action, reward, return, then one per
        event (its head's longest word fits); fixed at load, so that play never reflows them."""
        player = _clip(30 + CHAR_PX * max(map(len, self.players)), LABEL_PX)
        return [player, _clip(16 + CHAR_PX * self._action_chars(), ACTION_PX), NUMBER_PX, NUMBER_PX,
                *[_clip(14 + HEAD_CHAR_PX * max(map(len, label(e).split())), (NUMBER_PX, LABEL_PX[1]))
                  for e in self.events]]

    def _action_chars(self) -> int:
        """The most characters an action of this rollout takes as the page writes it."""
        a, names = self.actions, self.action_names
        if not np.issubdtype(a.dtype, np.integer):
            return 7 * (1 if a.ndim == 2 else a.shape[2] + 1)  # "-12.345": the page writes 3 decimals at most
        if a.ndim == 3:
            return (max(len(str(int(a.max()))), len(str(int(a.min())))) + 1) * a.shape[2]
        return max(len(names[i]) if 0 <= i < len(names) else len(str(i)) for i in np.unique(a).tolist())

    def html(self) -> str:
        """The standalone page: opens in any browser, needs no kernel and no network."""
        return (f'<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8">\n<meta name="viewport" '
                f'content="width=device-width, initial-scale=1">\n<title>{html_text.escape(self.title)}</title>'
                f"</head>\n<body>\n{self._repr_html_()}\n</body>\n</html>\n")

    def save(self, path: str | os.PathLike) -> Path:
        """Write :meth:`html` to ``path`` (UTF-8). Returns the path."""
        path = Path(path)
        path.write_text(self.html(), encoding="utf-8")
        return path

    def __repr__(self) -> str:
        shown = (f"table view, values {list(self.values)}" if self.frames is None
                 else "{1}x{0} px frames".format(*self.frames.shape[1:3]))
        return (f"Viewer({self.title!r}: {self.num_steps} steps, {len(self.players)} players, {shown}, "
                f"events {list(self.events)})")


def viewer_data(page: str) -> list[dict]:
    """The data of every viewer in an HTML text (a saved page or a notebook output), in
    order: ``frames`` (``T + 1`` base64 PNGs; none in the table view), ``players``,
    ``colours`` (``"#rrggbb"`` each, or ``None``), ``action_names``, ``actions``, ``rewards``,
    ``returns`` (:attr:`Viewer.returns`), ``events`` and ``values`` by name, ``labels``
    (names as shown), ``dones``, ``timeline`` (the table view's step-to-x, else ``None``), ``fps``."""
    return [json.loads(text) for text in re.findall(r'<script type="application/json" class="sjv-data">(.*?)</script>',
                                                   page, flags=re.S)]


def label(name: str) -> str:
    """An ``info`` key as the viewer shows it: ``"coins_collected"`` -> ``"coins collected"``."""
    return name.replace("_", " ")


def _action_names(env) -> tuple[str, ...]:
    """``env.action_names``, or none (the matrix and institution games name no actions)."""
    return tuple(getattr(env, "action_names", None) or ())


def _key_colours(env, renders: bool) -> np.ndarray | None:
    """The colour key of ``env``'s players: their sprite colours in a game that renders;
    in one that does not, the palette while it gives every player a colour of its own."""
    if not renders and env.num_agents > len(R.AGENT_COLOURS):
        return None
    return video.player_colours(env)


def _per_player(name: str, values, T: int, N: int | None = None, vectors: bool = False) -> np.ndarray:
    """``values`` as a finite ``(T, N)`` numpy array (``N`` any when ``None``; with
    ``vectors``, ``(T, N, K)`` too: the actions of a multi-part action), else an error."""
    values, also = np.asarray(values), " (or (T, N, K): a vector per player)" if vectors else ""
    if values.ndim not in ((2, 3) if vectors else (2,)) or values.shape[0] != T or N not in (None, values.shape[1]):
        raise ValueError(f"{name} must have shape (T, N) = ({T}, {'N' if N is None else N}){also} for {T} steps, "
                         f"got {values.shape}")
    return _finite(name, values)


def _per_step(name: str, values, T: int) -> np.ndarray:
    """``values`` as a finite ``(T,)`` numpy array, else an error."""
    if np.shape(values) != (T,):
        raise ValueError(f"{name} must have shape (T,) = ({T},), got {np.shape(values)}")
    return _finite(name, np.asarray(values))


def _finite(name: str, values: np.ndarray) -> np.ndarray:
    """``values`` unless they are not numbers or not finite."""
    if not (np.issubdtype(values.dtype, np.number) or values.dtype == bool):
        raise TypeError(f"{name} must be numbers, got dtype {values.dtype}")
    if not np.isfinite(values).all():
        raise ValueError(f"{name} must be finite, got {values[~np.isfinite(values)][:3].tolist()}")
    return values


def _numbers(values: np.ndarray) -> list:
    """Integers and bools as ints, floats rounded to :data:`REWARD_DECIMALS` decimals."""
    if values.dtype == bool or np.issubdtype(values.dtype, np.integer):
        return values.astype(np.int64).tolist()
    return np.round(values.astype(np.float64), REWARD_DECIMALS).tolist()


def _clip(px: float, bounds: tuple[int, int]) -> int:
    return int(min(max(px, bounds[0]), bounds[1]))


def _hex(rgb) -> str:
    return "#" + "".join(f"{int(c):02x}" for c in rgb)


def _timeline(returns: np.ndarray, dones: np.ndarray, colours: np.ndarray | None) -> tuple[str, dict]:
    """The table view's timeline: an SVG of each player's episode return by step (a
    line in its colour; without colours, the players' mean in grey), dotted lines at
    episode ends, a shade over the steps still to come and a cursor at the current step
    (the page moves both); and the step-to-x mapping the page moves them by."""
    T = len(returns)
    (w, h), (left, right, top, bottom) = TIMELINE_PX, TIMELINE_MARGIN
    series = returns.T if colours is not None else returns.mean(axis=1, keepdims=True).T
    hexes = [_hex(c) for c in colours] if colours is not None else ["#555555"]
    lo, hi = min(0.0, float(series.min())), max(0.0, float(series.max()))
    hi = hi if hi > lo else lo + 1
    x0, x1, dx = left, w - right, (w - right - left) / T
    y = lambda v: top + (h - top - bottom) * (hi - v) / (hi - lo)  # noqa: E731
    svg = [f'<svg class="sjv-timeline" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" '
           f'aria-label="episode return by step">',
           f'<line x1="{x0}" x2="{x1}" y1="{y(0):.1f}" y2="{y(0):.1f}" stroke="#bbb"/>',
           f'<text x="{x0 - 4}" y="{y(hi) + 4:.1f}" text-anchor="end">{hi:.4g}</text>',
           f'<text x="{x0 - 4}" y="{y(lo):.1f}" text-anchor="end">{lo:.4g}</text>',
           f'<text x="{x0}" y="{h - 4}">step 0</text><text x="{x1}" y="{h - 4}" text-anchor="end">{T}</text>']
    svg += [f'<line x1="{x0 + dx * (t + 1):.1f}" x2="{x0 + dx * (t + 1):.1f}" y1="{top}" y2="{h - bottom}" '
             'stroke="#ccc" stroke-dasharray="2 3"/>' for t in np.flatnonzero(dones)]
    for line, colour in zip(series, hexes):
        points = " ".join(f"{x0 + dx * t:.1f},{y(v):.1f}" for t, v in enumerate([0.0, *line.tolist()]))
        svg.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
    svg += [f'<rect class="sjv-future" x="{x0}" y="0" width="{x1 - x0}" height="{h - bottom}" fill="#fff" '
            'fill-opacity="0.75"/>',
            f'<line class="sjv-cursor" x1="{x0}" x2="{x0}" y1="{top}" y2="{h - bottom}" stroke="#222"/>', "</svg>"]
    caption = ("episode return by step, a line per player in its colour" if colours is not None
               else f"mean episode return of the {returns.shape[1]} players")
    return f'<div class="sjv-caption">{caption}</div>\n' + "\n".join(svg), {"x0": x0, "x1": x1, "dx": dx}


def _png_base64(frame: np.ndarray) -> str:
    """An ``(H, W, 3) uint8`` frame as base64 PNG text."""
    from PIL import Image  # on call: viz is imported by `import socialjax`, and Pillow only serves exports

    buffer = io.BytesIO()
    Image.fromarray(frame).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode("ascii")
