"""An interactive rollout viewer, in Jupyter and in a standalone HTML file::

    import jax, socialjax as sj

    env = sj.make("harvest_open")
    viewer = sj.viz.Viewer.from_rollout(env, jax.random.key(0), num_steps=100)
    viewer                          # the last expression of a Jupyter cell: the player
    viewer.save("harvest.html")     # one file for any browser: no kernel, no network

    out = sj.train.play(train, state.learners, jax.random.key(1), 200, render=True)
    sj.viz.Viewer.from_playback(out, train.env)   # a trained population, seats by member

What it shows: the frame (scaled up, pixelated; frame 0 is the reset state, frame ``t``
the state after step ``t``), buttons to play / pause and to step back / forward, a
slider over the frames and a frames-per-second box. Beside the frame, a table with one
row per player: the action (by the environment's ``action_names``, else its index) and
the reward of the step that led to the frame, the episode's return so far, and each
per-player event counter of that step (the environment's ``event_keys`` that its
``info`` carries, e.g. ``zaps_fired``). Below: ``step t / T``, and "episode ended" on
an episode's last step (``step`` resets automatically, so that frame already shows the
next episode's start).

Everything is embedded in the HTML: the frames as base64 PNG (Pillow) at the rendered
size (8 pixels per cell; ``scale`` only sets the display size), the numbers as JSON, the
player as a few lines of JavaScript. Each rendering gets its own element id, so several
viewers (or one shown twice) share a notebook. :func:`viewer_data` reads the JSON back
out of a page or a notebook output.
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
from string import Template

import numpy as np

from socialjax.viz.video import MAX_FPS, MIN_FPS, Policy, _as_frames, _check_fps_scale, record_rollout

#: the frames embedded in one viewer may take this many bytes of base64 PNG at most
MAX_HTML_BYTES = 50 * 1024**2
MARKER = "socialjax-viewer"  # the class of a viewer's outer element
REWARD_DECIMALS = 6  # rewards, returns and float events are rounded in the JSON


@dataclasses.dataclass(repr=False, eq=False)
class Viewer:
    """A rollout to step through: ``T`` steps of ``N`` players.

    - ``frames`` ``(T + 1, H, W, 3) uint8``: the reset state, then the state after each step;
    - ``rewards`` ``(T, N)`` float, ``actions`` ``(T, N)`` int, ``dones`` ``(T,)`` bool;
    - ``events`` ``{name: (T, N)}``: per-player event counts of each step;
    - ``action_names``: the name of action ``a`` (an action without one shows its index);
    - ``players``: ``N`` row labels (default ``"player i"``); ``title``;
    - ``fps``: the initial speed; ``scale``: screen pixels per frame pixel.

    Shown in Jupyter as a cell's last expression (``_repr_html_``); :meth:`html` is the
    standalone page and :meth:`save` writes it.
    """

    frames: np.ndarray
    rewards: np.ndarray
    actions: np.ndarray
    dones: np.ndarray
    events: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    action_names: tuple[str, ...] = ()
    players: tuple[str, ...] = ()
    title: str = "rollout"
    fps: float = 10
    scale: int = 3

    def __post_init__(self):
        self.frames = _as_frames(self.frames)
        T = len(self.frames) - 1
        if T < 1:
            raise ValueError("a viewer needs at least one step: frames must hold T + 1 >= 2 frames (the reset state, "
                             f"then one per step), got {len(self.frames)}")
        self.rewards = _per_player("rewards", self.rewards, T)
        N = self.rewards.shape[1]
        self.actions = _per_player("actions", self.actions, T, N)
        if not np.issubdtype(self.actions.dtype, np.integer):
            raise TypeError(f"actions must be integer action indices, got dtype {self.actions.dtype}")
        self.dones = np.asarray(self.dones)
        if self.dones.shape != (T,):
            raise ValueError(f"dones must have shape (T,) = ({T},) for {T + 1} frames, got {self.dones.shape}")
        self.dones = self.dones.astype(bool)
        self.events = {str(name): _per_player(f"events[{name!r}]", v, T, N) for name, v in self.events.items()}
        self.action_names = tuple(str(a) for a in self.action_names)
        self.players = tuple(str(p) for p in self.players) or tuple(f"player {i}" for i in range(N))
        if len(self.players) != N:
            raise ValueError(f"players must name the {N} players, got {len(self.players)}: {list(self.players)}")
        self.title = str(self.title)
        _check_fps_scale(self.fps, self.scale)

    # ---------------------------------------------------------------------- constructors
    @classmethod
    def from_rollout(cls, env, key, num_steps: int, policy: Policy | None = None, params=None, *,
                     title: str | None = None, fps: float = 10, scale: int = 3) -> Viewer:
        """``num_steps`` steps of ``env`` (a grid game, or a wrapper of one) from a reset:
        one compiled rollout (:func:`~socialjax.viz.video.record_rollout`, shared with
        :func:`~socialjax.viz.rollout_frames`) that renders every state and keeps the
        rewards, actions, dones and events. ``key``, ``policy`` ``(key, obs) -> (N,)``
        (``None``: random actions) and ``params`` as for ``rollout_frames``; the run is
        :func:`socialjax.rollout.rollout`'s with the same key."""
        if isinstance(num_steps, bool) or not isinstance(num_steps, (int, np.integer)) or num_steps < 1:
            raise ValueError(f"num_steps must be a positive int, got {num_steps!r}")
        run = record_rollout(env, key, num_steps, policy, params)
        acting = "random actions" if policy is None else "a given policy"
        return cls(run.frames, run.rewards, run.actions, run.dones, run.events,
                   action_names=tuple(getattr(env, "action_names", ())),
                   title=title or f"{getattr(env, 'name', type(env).__name__)}: {num_steps} steps, {acting}",
                   fps=fps, scale=scale)

    @classmethod
    def from_playback(cls, playback, env, *, title: str | None = None, fps: float = 10,
                      scale: int = 3) -> Viewer:
        """A trained population's game: ``playback``, the ``Playback`` that
        :func:`socialjax.train.play` returns with ``render=True`` (viz sits below train, so
        it is not imported here), ``env`` its environment (``train.env``, for the action
        names). Rows are labelled by seat and member, e.g. ``"seat 0 (learner 1)"``."""
        if playback.frames is None:
            raise ValueError("the playback has no frames: play it with render=True")
        num_seats = playback.rewards.shape[-1]
        players = tuple(f"seat {i} ({m})" for i, m in enumerate(playback.members)) or tuple(
            f"seat {i}" for i in range(num_seats))
        name = getattr(env, "name", type(env).__name__)
        return cls(playback.frames, playback.rewards, playback.actions, playback.dones, playback.events,
                   action_names=tuple(getattr(env, "action_names", ())), players=players,
                   title=title or f"{name}: trained population, {len(playback.dones)} steps", fps=fps, scale=scale)

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

    def _page_data(self, frames: list[str]) -> dict:
        """What the page's JavaScript reads (see :func:`viewer_data`), ``frames`` the base64 PNGs."""
        return {
            "frames": frames,
            "players": list(self.players),
            "action_names": list(self.action_names),
            "actions": self.actions.tolist(),
            "rewards": _numbers(self.rewards),
            "returns": _numbers(self.returns),
            "dones": self.dones.tolist(),
            "events": {name: _numbers(v) for name, v in self.events.items()},
            "fps": float(self.fps),
        }

    # ---------------------------------------------------------------------- HTML
    def _repr_html_(self) -> str:
        """The viewer as an HTML fragment (style, markup, data, script), with a fresh id."""
        frames = [_png_base64(frame) for frame in self.frames]
        size, (h, w) = sum(map(len, frames)), self.frames.shape[1:3]
        if size > MAX_HTML_BYTES:
            fit = max(1, int(self.num_steps * MAX_HTML_BYTES / size))
            raise ValueError(
                f"the viewer would embed {size / 1024**2:.1f} MiB of frames ({len(frames)} frames of {w}x{h} px), "
                f"more than {MAX_HTML_BYTES / 1024**2:g} MiB: use fewer steps (about {fit} fit). The frames are "
                "embedded at their rendered size; scale only sets the display size"
            )
        data = json.dumps(self._page_data(frames), allow_nan=False).replace("<", "\\u003c")  # no "</script>" inside
        return _PAGE.substitute(uid=f"sjv-{uuid.uuid4().hex}", marker=MARKER, title=html_text.escape(self.title),
                                width=w * self.scale, height=h * self.scale, first=frames[0], T=self.num_steps,
                                fps=f"{self.fps:g}", min_fps=f"{MIN_FPS:g}", max_fps=f"{MAX_FPS:g}", data=data)

    def html(self) -> str:
        """The standalone page: opens in any browser, needs no kernel and no network."""
        return (f'<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8"><title>{html_text.escape(self.title)}'
                f"</title></head>\n<body>\n{self._repr_html_()}\n</body>\n</html>\n")

    def save(self, path: str | os.PathLike) -> Path:
        """Write :meth:`html` to ``path`` (UTF-8). Returns the path."""
        path = Path(path)
        path.write_text(self.html(), encoding="utf-8")
        return path

    def __repr__(self) -> str:
        h, w = self.frames.shape[1:3]
        return (f"Viewer({self.title!r}: {self.num_steps} steps, {len(self.players)} players, {w}x{h} px frames, "
                f"events {list(self.events)})")


def viewer_data(page: str) -> list[dict]:
    """The data of every viewer in an HTML text (a saved page or a notebook cell's
    ``text/html`` output), in order: ``frames`` (``T + 1`` base64 PNGs), ``players``,
    ``action_names``, ``actions``, ``rewards``, ``returns`` (:attr:`Viewer.returns`) and,
    per name, ``events`` (``T x N`` lists), ``dones`` (``T``) and ``fps``."""
    return [json.loads(text) for text in re.findall(r'<script type="application/json" class="sjv-data">(.*?)</script>',
                                                   page, flags=re.S)]


def _per_player(name: str, values, T: int, N: int | None = None) -> np.ndarray:
    """``values`` as a finite ``(T, N)`` numpy array (``N`` any when ``None``), else an error."""
    values = np.asarray(values)
    if values.ndim != 2 or values.shape[0] != T or (N is not None and values.shape[1] != N):
        raise ValueError(f"{name} must have shape (T, N) = ({T}, {'N' if N is None else N}) for {T + 1} frames, "
                         f"got {values.shape}")
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


def _png_base64(frame: np.ndarray) -> str:
    """An ``(H, W, 3) uint8`` frame as base64 PNG text."""
    from PIL import Image  # on call: viz is imported by `import socialjax`, and Pillow only serves exports

    buffer = io.BytesIO()
    Image.fromarray(frame).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


# One viewer: $uid is fresh for every rendering; the script finds its elements inside it.
_PAGE = Template("""\
<div class="$marker" id="$uid">
<style>
.$marker{font:13px/1.4 system-ui,sans-serif;color:#222;margin:4px 0}
.$marker .sjv-main{display:flex;gap:16px;align-items:flex-start;flex-wrap:wrap}
.$marker img{image-rendering:pixelated;image-rendering:crisp-edges;display:block;max-width:none}
.$marker .sjv-controls{display:flex;gap:6px;align-items:center;margin-top:6px}
.$marker table{border-collapse:collapse}
.$marker th,.$marker td{padding:2px 8px;text-align:right;border-bottom:1px solid #ddd}
.$marker th:first-child,.$marker td:first-child{text-align:left}
.$marker .sjv-zero{color:#bbb}
.$marker .sjv-ended{color:#b00;font-weight:600;margin-left:8px}
</style>
<div><b>$title</b></div>
<div class="sjv-main">
<div>
<img class="sjv-frame" width="$width" height="$height" alt="frame" src="data:image/png;base64,$first">
<div class="sjv-controls">
<button class="sjv-back" title="step back">&#9664;</button>
<button class="sjv-play">play</button>
<button class="sjv-forward" title="step forward">&#9654;</button>
<input class="sjv-slider" type="range" min="0" max="$T" value="0" style="flex:1">
<label>fps <input class="sjv-fps" type="number" min="$min_fps" max="$max_fps" step="any" value="$fps"
 style="width:4em"></label>
</div>
<div><span class="sjv-step"></span><span class="sjv-ended"></span></div>
</div>
<table><thead><tr class="sjv-head"></tr></thead><tbody class="sjv-rows"></tbody></table>
</div>
<script type="application/json" class="sjv-data">$data</script>
<script>
(function () {
  var root = document.getElementById("$uid");
  var q = function (name) { return root.querySelector(".sjv-" + name); };
  var d = JSON.parse(q("data").textContent);
  var T = d.rewards.length, events = Object.keys(d.events), t = 0, timer = null;
  var img = q("frame"), slider = q("slider"), speed = q("fps"), play = q("play");
  var head = ["player", "action", "reward", "episode return"].concat(events);
  head.forEach(function (h) { q("head").appendChild(document.createElement("th")).textContent = h; });
  var cells = d.players.map(function (player) {
    var tr = q("rows").insertRow();
    return head.map(function (_, j) { var td = tr.insertCell(); if (j === 0) td.textContent = player; return td; });
  });
  function num(x) { return x === Math.round(x) ? String(x) : String(Number(x.toFixed(3))); }
  function show(k) {
    t = Math.max(0, Math.min(T, k));
    var s = t - 1;  // the step that led to frame t (none before frame 1)
    img.src = "data:image/png;base64," + d.frames[t];
    slider.value = t;
    q("step").textContent = "step " + t + " / " + T + (t === 0 ? " (reset)" : "");
    q("ended").textContent = s >= 0 && d.dones[s] ? "episode ended (the frame shows the next episode's start)" : "";
    cells.forEach(function (row, i) {
      var a = s < 0 ? null : d.actions[s][i];
      row[1].textContent = a === null ? "" : (a < d.action_names.length ? d.action_names[a] : String(a));
      row[2].textContent = s < 0 ? "" : num(d.rewards[s][i]);
      row[3].textContent = s < 0 ? "0" : num(d.returns[s][i]);
      events.forEach(function (e, j) {
        var v = s < 0 ? 0 : d.events[e][s][i];
        row[4 + j].textContent = num(v);
        row[4 + j].className = v ? "" : "sjv-zero";
      });
    });
  }
  function rate() { var f = parseFloat(speed.value); return f > 0 ? Math.min(f, $max_fps) : d.fps; }
  function stop() { clearTimeout(timer); timer = null; play.textContent = "play"; }
  function tick() { if (t >= T) { stop(); return; } show(t + 1); timer = setTimeout(tick, 1000 / rate()); }
  play.onclick = function () {
    if (timer) { stop(); return; }
    if (t >= T) show(0);
    play.textContent = "pause";
    timer = setTimeout(tick, 1000 / rate());
  };
  q("back").onclick = function () { stop(); show(t - 1); };
  q("forward").onclick = function () { stop(); show(t + 1); };
  slider.oninput = function () { stop(); show(parseInt(slider.value, 10)); };
  show(0);
})();
</script>
</div>""")
