"""Rendering for people: rollout frames, the sprite atlas, GIF / MP4 export, the Jupyter
player, the interactive viewer (its frame view and its table view of a game without
frames; its page's script run in node when node is installed: tests/viewer_page.js; in
a real browser: tests/test_viewer_browser.py), the ``socialjax render`` command, the
events each grid game declares and the colour legend in the docs.

One small Harvest env and its rollout are module-scoped, so the scan compiles once; so
are a short iterated prisoner's dilemma and its table view.
"""

import base64
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from PIL import Image

import socialjax as sj
from socialjax import cli
from socialjax.core.registry import registered_envs
from socialjax.envs.grid import constants as C
from socialjax.envs.grid import render as R
from socialjax.viz import video
from socialjax.viz import viewer as viewer_module
from socialjax.viz.viewer import Viewer, label, viewer_data

NUM_STEPS = 8  # crosses the end of the 5-step episode (auto-reset)
KEY = jax.random.key(0)
DOCS = Path(__file__).resolve().parents[1] / "docs" / "gridworlds.md"
PAGE_SCRIPT = Path(__file__).resolve().parent / "viewer_page.js"  # the viewer's script in a stand-in DOM


@pytest.fixture(scope="module")
def env():
    return sj.make("harvest_open", num_agents=2, episode="fixed", episode_length=5)


@pytest.fixture(scope="module")
def frames(env):
    return sj.viz.rollout_frames(env, KEY, NUM_STEPS)


@pytest.fixture(scope="module")
def viewer(env):
    return Viewer.from_rollout(env, KEY, NUM_STEPS)  # the compiled rollout of `frames`


@pytest.fixture(scope="module")
def page(viewer):
    return viewer.html()


@pytest.fixture(scope="module")
def ipd_viewer():
    """The table view of 6 rounds of a 3-round iterated prisoner's dilemma (two episodes)."""
    return Viewer.from_rollout(sj.make("ipd", num_rounds=3), KEY, 6)


@pytest.fixture(scope="module")
def reset(env):
    return jax.jit(env.reset)


@pytest.fixture(scope="module")
def render(env):
    return jax.jit(env.render)


@pytest.fixture(scope="module")
def state(reset):
    return reset(jax.random.key(3))[1]


def cell(image: np.ndarray, row: int, col: int) -> np.ndarray:
    """The ``(8, 8, 3)`` pixels of cell ``(row, col)``."""
    s = R.SPRITE
    return image[row * s:(row + 1) * s, col * s:(col + 1) * s]


# ------------------------------------------------------------------------------ rollout
def test_viz_is_a_subpackage():
    import socialjax.viz

    assert sj.viz is socialjax.viz
    assert callable(sj.viz.rollout_frames) and callable(sj.viz.save_gif)


def test_frames_shape_and_dtype(env, frames):
    h, w = env.map.shape
    assert isinstance(frames, np.ndarray)
    assert frames.shape == (NUM_STEPS + 1, 8 * h, 8 * w, 3) == (9, 144, 192, 3)
    assert frames.dtype == np.uint8


def test_frames_change_and_are_reproducible(env, frames):
    changed = [not np.array_equal(frames[t], frames[0]) for t in range(1, len(frames))]
    assert any(changed), "random agents never moved in 8 steps"
    np.testing.assert_array_equal(sj.viz.rollout_frames(env, KEY, NUM_STEPS), frames)
    assert not np.array_equal(sj.viz.rollout_frames(env, 7, NUM_STEPS), frames)  # int seed


def test_first_frame_is_the_reset_state(reset, render, frames):
    key_reset, _ = jax.random.split(KEY)
    _, state0 = reset(key_reset)
    np.testing.assert_array_equal(np.asarray(render(state0)), frames[0])


def test_rollout_rejects_envs_without_render_and_bad_steps(env):
    with pytest.raises(TypeError, match="render"):
        sj.viz.rollout_frames(sj.make("ipd", num_rounds=3), KEY, 3)
    with pytest.raises(ValueError, match="num_steps"):
        sj.viz.rollout_frames(env, KEY, -1)
    with pytest.raises(TypeError, match="policy"):
        sj.viz.rollout_frames(env, KEY, 3, policy="random")


def test_wrapped_env_renders_its_inner_state(env, state, render):
    wrapped = sj.EpisodeStats(env)
    _, wstate = jax.jit(wrapped.reset)(jax.random.key(3))
    assert sj.viz.can_render(wrapped)
    np.testing.assert_array_equal(jax.jit(lambda s: video._render(wrapped, s))(wstate), render(state))


# ------------------------------------------------------------------------------ sprites
def test_atlas_maps_each_code_to_its_colour():
    codes = jnp.asarray(sorted(R.COLOURS), jnp.uint8)[None, :]  # (1, K)
    image = np.asarray(R.codes_to_rgb(codes, R.sprite_atlas(2)))
    assert image.shape == (8, 8 * codes.shape[1], 3)
    for k, code in enumerate(sorted(R.COLOURS)):
        tile = cell(image, 0, k)
        if code == C.APPLE:  # a red disc on grass
            colours = {tuple(p) for p in tile.reshape(-1, 3)}
            assert R.COLOURS[C.APPLE] in colours and R.COLOURS[C.APPLE_CELL] in colours
        if code in R.SPRITES:
            assert (tile == R.SPRITES[code]).all(), C.CODE_NAMES[code]
        else:
            assert (tile == R.COLOURS[code]).all(), C.CODE_NAMES[code]


def test_a_game_object_gets_a_code_of_its_own_block_only(monkeypatch):
    monkeypatch.setattr(C, "CODE_NAMES", dict(C.CODE_NAMES))
    monkeypatch.setattr(R, "COLOURS", dict(R.COLOURS))
    monkeypatch.setattr(R, "SPRITES", dict(R.SPRITES))
    block = C.CODE_BLOCKS["coins"]
    free = next(c for c in block if c not in C.CODE_NAMES)
    picture = np.full((8, 8, 3), 7, np.uint8)
    assert R.define_object("coins", free, "test coin", (1, 2, 3), picture) == free
    assert R.define_object("coins", free, "test coin", (1, 2, 3), picture) == free  # the same again is fine
    assert (R.sprite_atlas(1)[free] == 7).all() and R.COLOURS[free] == (1, 2, 3)
    with pytest.raises(ValueError, match="already 'test coin'"):
        R.define_object("coins", free, "another", (0, 0, 0))
    with pytest.raises(ValueError, match="outside block 'coins'"):
        R.define_object("coins", C.AGENT_BASE, "too far", (0, 0, 0))
    with pytest.raises(ValueError, match="unknown code block"):
        R.define_object("chess", free, "pawn", (0, 0, 0))
    with pytest.raises(ValueError, match=r"must be \(8, 8, 3\)"):
        R.define_object("coins", free, "test coin", (1, 2, 3), np.zeros((4, 4, 3), np.uint8))
    blocks = sorted(C.CODE_BLOCKS.values(), key=lambda r: r.start)  # disjoint, between the terrain and the agents
    assert blocks[0].start > max(c for c in C.CODE_NAMES if c < blocks[0].start) and blocks[-1].stop <= C.AGENT_BASE
    assert all(a.stop <= b.start for a, b in zip(blocks, blocks[1:]))


def test_render_draws_walls_apples_and_agents(state, render, frames):
    image = np.asarray(render(state))
    cells = np.asarray(state.cells)
    assert (cell(frames[0], 0, 0) == R.COLOURS[C.WALL]).all()  # the top-left corner is wall
    for code in (C.WALL, C.FLOOR):
        r, c = np.argwhere(cells == code)[0]
        assert (cell(image, r, c) == R.COLOURS[code]).all()
    r, c = np.argwhere(cells == C.APPLE)[0]
    np.testing.assert_array_equal(cell(image, r, c), R.sprite_atlas(2)[C.APPLE])
    for j, ((r, c), h) in enumerate(zip(np.asarray(state.pos), np.asarray(state.heading))):
        tile = cell(image, r, c)
        colour = np.asarray(R.AGENT_COLOURS[j], np.uint8)
        assert (tile[3:5, 3:5] == colour).all()  # body centre
        centre_of_band = {0: (1, 4), 1: (4, 6), 2: (6, 4), 3: (4, 1)}[int(h)]
        assert (tile[centre_of_band] < colour).all()  # the darker band faces the heading


def test_render_is_vmappable(env, reset, render):
    keys = jax.random.split(jax.random.key(3), 3)
    _, states = jax.jit(jax.vmap(reset))(keys)
    images = np.asarray(jax.jit(jax.vmap(env.render))(states))
    h, w = env.map.shape
    assert images.shape == (3, 8 * h, 8 * w, 3) and images.dtype == np.uint8
    for i in (0, 2):
        one = jax.tree_util.tree_map(lambda x: x[i], states)
        np.testing.assert_array_equal(images[i], render(one))
    assert not np.array_equal(images[1], images[2])  # agents spawn at random


# ------------------------------------------------------------------------------ export
def distinct_frames(t=4, h=5, w=7):
    frames = np.zeros((t, h, w, 3), np.uint8)
    for i in range(t):
        frames[i, :, :] = (40 * i, 200 - 30 * i, 100)
        frames[i, i % h, i % w] = (255, 255, 255)
    return frames


def test_save_gif_reopens_with_frames_size_and_timing(tmp_path):
    frames = distinct_frames()
    path = sj.viz.save_gif(frames, tmp_path / "a.gif", fps=5, scale=3)
    with Image.open(path) as im:
        assert im.n_frames == 4 and im.size == (7 * 3, 5 * 3)
        assert im.info["loop"] == 0
        for t in range(4):
            im.seek(t)
            assert im.info["duration"] == 200
            np.testing.assert_array_equal(np.asarray(im.convert("RGB")), sj.viz.upscale(frames[t], 3))


def test_save_gif_of_a_rollout_keeps_its_length(tmp_path, frames):
    path = sj.viz.save_gif(frames, tmp_path / "r.gif", fps=10)
    with Image.open(path) as im:
        assert im.size == (frames.shape[2], frames.shape[1])
        durations = []
        for t in range(im.n_frames):  # identical consecutive frames are merged by Pillow
            im.seek(t)
            durations.append(im.info["duration"])
        assert im.n_frames <= len(frames) and sum(durations) == 100 * len(frames)
        im.seek(0)
        np.testing.assert_array_equal(np.asarray(im.convert("RGB")), frames[0])  # palette is exact


@pytest.mark.parametrize(
    "frames, kwargs, error",
    [
        (np.zeros((2, 4, 4, 3), np.float32), {}, TypeError),
        (np.zeros((4, 4, 3), np.uint8), {}, ValueError),
        (np.zeros((0, 4, 4, 3), np.uint8), {}, ValueError),
        (np.zeros((2, 4, 4, 3), np.uint8), {"scale": 0}, ValueError),
        (np.zeros((2, 4, 4, 3), np.uint8), {"scale": 1.5}, ValueError),
        (np.zeros((2, 4, 4, 3), np.uint8), {"fps": 0}, ValueError),
        (np.zeros((2, 4, 4, 3), np.uint8), {"fps": 1e6}, ValueError),  # GIF durations are in 10 ms units
        (np.zeros((2, 4, 4, 3), np.uint8), {"scale": 1000}, ValueError),
    ],
)
def test_save_gif_rejects_bad_input(tmp_path, frames, kwargs, error):
    with pytest.raises(error):
        sj.viz.save_gif(frames, tmp_path / "bad.gif", **kwargs)
    assert not (tmp_path / "bad.gif").exists()


def test_save_video_picks_format_by_extension(tmp_path):
    with pytest.raises(ValueError, match="unsupported video extension '.avi'"):
        sj.viz.save_video(distinct_frames(), tmp_path / "a.avi")
    assert sj.viz.save_video(distinct_frames(), tmp_path / "a.GIF").exists()


def test_save_mp4_without_imageio_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "imageio", None)  # import imageio now fails
    monkeypatch.setitem(sys.modules, "imageio.v2", None)
    with pytest.raises(ImportError, match=r"socialjax\[video\]"):
        sj.viz.save_mp4(distinct_frames(), tmp_path / "a.mp4")


@pytest.mark.filterwarnings("ignore:os.fork")  # imageio-ffmpeg runs ffmpeg in a subprocess
def test_save_mp4_writes_a_video(tmp_path):
    imageio = pytest.importorskip("imageio.v2")
    pytest.importorskip("imageio_ffmpeg")
    path = sj.viz.save_mp4(distinct_frames(h=5, w=7), tmp_path / "a.mp4", fps=5)
    video_frames = imageio.mimread(path)
    assert len(video_frames) == 4 and video_frames[0].shape == (6, 8, 3)  # padded to even sizes


def test_animate_returns_a_jupyter_player(frames):
    html = sj.viz.animate(frames[:3], fps=5)
    text = html._repr_html_() if hasattr(html, "_repr_html_") else html.data
    assert "<script" in text and "animation" in text.lower()
    with pytest.raises(ValueError):
        sj.viz.animate(frames[0])


# ------------------------------------------------------------------------------ viewer
def small_viewer(**changes) -> Viewer:
    """3 steps of 2 players on 2x3 px frames: rewards with a fraction, an episode end at step 2."""
    fields = dict(frames=distinct_frames(t=4, h=2, w=3), rewards=[[1, 0], [2, 0.25], [0.5, 0]],
                  actions=[[0, 1], [2, 0], [1, 1]], dones=[False, True, False],
                  events={"zaps": [[0, 1], [0, 0], [1, 0]]}, action_names=("stay", "move"), title="<small>")
    return Viewer(**{**fields, **changes})


def png(text: str) -> np.ndarray:
    with Image.open(io.BytesIO(base64.b64decode(text))) as image:
        return np.asarray(image.convert("RGB"))


def test_the_viewer_shows_the_real_run(env, viewer, frames):
    """One compiled rollout: the frames of rollout_frames, and the rewards, actions, dones
    and events of socialjax.rollout.rollout with the same key."""
    traj = jax.jit(lambda key: sj.rollout(env, key, NUM_STEPS))(KEY)
    np.testing.assert_array_equal(viewer.frames, frames)
    compiled = video._rollout._cache_size()
    np.testing.assert_array_equal(Viewer.from_rollout(env, KEY, NUM_STEPS).rewards, viewer.rewards)
    assert video._rollout._cache_size() == compiled  # the compiled call of rollout_frames, not a second one
    np.testing.assert_array_equal(viewer.rewards, traj.reward)
    np.testing.assert_array_equal(viewer.actions, traj.actions)
    np.testing.assert_array_equal(viewer.dones, traj.done)
    assert viewer.dones.tolist() == [False] * 4 + [True] + [False] * 3  # 5-step episodes
    assert list(viewer.events) == list(env.event_keys)  # in the environment's order
    for name, counts in viewer.events.items():
        np.testing.assert_array_equal(counts, traj.info[name])
    assert viewer.events["zaps_fired"].any(), "no zap in 8 random steps: the events are not shown"
    assert viewer.action_names == env.action_names and viewer.players == ("player 0", "player 1")
    assert viewer.title == "harvest_open: 8 steps, random actions" and "8 steps, 2 players" in repr(viewer)
    assert viewer.values == {}  # a grid game's view: the frame, no game-level table


def test_the_colour_key_is_each_players_sprite_colour(env, viewer):
    """Each row's swatch is the colour its player's body is drawn in: the pixel at the
    centre of its cell in the reset frame."""
    key_reset, _ = jax.random.split(KEY)
    state0 = jax.jit(env.reset)(key_reset)[1]
    for j, (r, c) in enumerate(np.asarray(state0.pos)):
        np.testing.assert_array_equal(viewer.frames[0][8 * r + 4, 8 * c + 4], viewer.colours[j])
    assert viewer.colours.shape == (2, 3) and viewer.colours.dtype == np.uint8
    assert not np.array_equal(viewer.colours[0], viewer.colours[1])
    wrapped = sj.EpisodeStats(sj.make("cleanup"))
    np.testing.assert_array_equal(video.player_colours(wrapped), np.asarray(R.AGENT_COLOURS[:7], np.uint8))
    lola = sj.make("coins", variant="lola")  # draws its players' frames in the same colours, without an atlas
    np.testing.assert_array_equal(video.player_colours(lola), np.asarray(R.AGENT_COLOURS[:2], np.uint8))
    [data] = viewer_data(viewer._repr_html_())
    assert data["colours"] == ["#{:02x}{:02x}{:02x}".format(*c) for c in viewer.colours]


def info_shapes(env) -> dict:
    """The shapes of ``env``'s ``info`` of one step, traced only (nothing compiled)."""
    def step(key):
        obs, state = env.reset(key)
        return env.step(key, state, jnp.zeros((env.num_agents,), jnp.int32))[4]

    return {k: getattr(v, "shape", None) for k, v in jax.eval_shape(step, jax.random.key(0)).items()}


def test_grid_games_declare_only_the_events_they_produce():
    """The viewer shows a game's ``event_keys``: each is a per-player entry of its
    ``info``, and none is an event its rules cannot produce (Coins has no zap and no
    clean beam; only the games with a clean beam count cleaned cells; the mushrooms'
    eating is counted by colour, not as apples)."""
    for name in registered_envs():
        env = sj.make(name)
        if not sj.viz.can_render(env):
            continue
        shapes = info_shapes(env)
        assert all(shapes.get(k) == (env.num_agents,) for k in env.event_keys), (name, env.event_keys, shapes)
        assert ("cells_cleaned" in env.event_keys) == (getattr(env, "clean_rays", None) is not None), name
    assert sj.make("coins").event_keys == ("coins_collected", "own_coins_collected", "other_coins_collected",
                                           "coins_lost")
    assert sj.make("harvest_open").event_keys == ("apples_eaten", "zaps_fired", "times_zapped")
    assert "apples_eaten" not in sj.make("mushrooms").event_keys
    assert sj.make("cleanup").event_keys[-1] == "cells_cleaned"
    assert label("coins_collected") == "coins collected" and label("zaps_fired") == "zaps fired"


def test_the_page_holds_every_frame_and_the_numbers(viewer, page):
    [data] = viewer_data(page)
    assert len(data["frames"]) == NUM_STEPS + 1
    for t in (0, 4, NUM_STEPS):
        np.testing.assert_array_equal(png(data["frames"][t]), viewer.frames[t])
    assert data["actions"] == viewer.actions.tolist() and data["dones"] == viewer.dones.tolist()
    np.testing.assert_allclose(data["rewards"], viewer.rewards, atol=1e-6)
    assert data["events"] == {name: counts.tolist() for name, counts in viewer.events.items()}
    assert data["players"] == ["player 0", "player 1"] and data["action_names"] == list(viewer.action_names)
    assert page.count('class="socialjax-viewer"') == 1 and "image-rendering:pixelated" in page


def test_returns_start_again_after_an_episode_end():
    viewer = small_viewer()
    np.testing.assert_array_equal(viewer.returns, [[1, 0], [3, 0.25], [0.5, 0]])
    [data] = viewer_data(viewer._repr_html_())
    assert data["returns"] == [[1, 0], [3, 0.25], [0.5, 0]] and data["events"] == {"zaps": [[0, 1], [0, 0], [1, 0]]}
    assert "<b>&lt;small&gt;</b>" in viewer.html()  # the title is escaped


def test_the_saved_page_stands_alone(viewer, tmp_path):
    path = viewer.save(tmp_path / "viewer.html")
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    assert "http://" not in text and "https://" not in text  # nothing fetched: no URL at all
    assert not re.search(r"""(src|href)\s*=\s*["']?(?!data:)[\w/.]""", text)  # nor a relative one
    assert len(viewer_data(text)[0]["frames"]) == NUM_STEPS + 1


def test_every_rendering_has_its_own_ids(viewer, page):
    pages = [page, viewer.html(), small_viewer()._repr_html_()]
    ids = [re.findall(r'id="([^"]+)"', p) for p in pages]
    assert all(len(i) == 1 for i in ids) and len({i[0] for i in ids}) == 3
    for p, [uid] in zip(pages, ids):
        assert f'document.getElementById("{uid}")' in p


def run_page_script(viewer: Viewer, path: Path) -> list[dict]:
    """What tests/viewer_page.js saw the page of ``viewer`` show, step by step."""
    ran = subprocess.run(["node", str(PAGE_SCRIPT), str(viewer.save(path))], capture_output=True, text=True,
                         timeout=60)
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_page_script_steps_through_the_frames(tmp_path):
    viewer = small_viewer(frames=distinct_frames(t=7, h=2, w=3), rewards=[[1, 0], [2, 0.25], [0.5, 0]] * 2,
                          actions=[[0, 1], [2, 0], [1, 1]] * 2, dones=[False, True, False, False, False, True],
                          events={"zaps_fired": [[0, 1], [0, 0], [1, 0]] * 2}, colours=[[255, 0, 16], [0, 0, 0]])
    start, forward2, slider5, back, playing, end, again, *keys = run_page_script(viewer, tmp_path / "v.html")
    assert start["head"] == ["player", "action", "reward", "episode return", "zaps fired"]  # the game's names
    assert start == {**start, "frame": 0, "step": "step 0 / 6 (reset)", "ended": "",
                     "rows": [["player 0", "", "", "0", "0"], ["player 1", "", "", "0", "0"]]}
    assert start["swatches"] == [["sjv-swatch", "#ff0010"], ["sjv-swatch", "#000000"]]  # the colour key
    assert start["values"] == [] and start["cursor"] is None  # the frame view: no game-level table, no timeline
    # frame 2: step 2's actions (2 = no name: its index), rewards, the episode's return, events; the episode ended
    assert forward2["frame"] == 2 and forward2["step"] == "step 2 / 6" and "episode ended" in forward2["ended"]
    assert forward2["rows"] == [["player 0", "2", "2", "3", "0"], ["player 1", "stay", "0.25", "0.25", "0"]]
    assert slider5["frame"] == 5 and slider5["rows"][1] == ["player 1", "stay", "0.25", "0.25", "0"]
    assert back["frame"] == 4 and back["rows"][0] == ["player 0", "stay", "1", "1.5", "0"]  # 0.5 + 1 since the end
    assert playing["play"] == "pause" and end["frame"] == 6 and end["play"] == "play"
    assert "episode ended" in end["ended"] and again["frame"] == 1  # play at the end starts over
    right, left, space, space2, typed, button, end_key, home = keys
    assert (right["frame"], right["play"], right["taken"]) == (2, "play", True)  # a key stops play and steps
    assert (left["frame"], left["taken"]) == (1, True)
    assert (space["frame"], space["play"], space2["frame"], space2["play"]) == (2, "pause", 2, "play")
    assert (typed["frame"], typed["taken"], button["play"], button["taken"]) == (2, False, "play", False)
    assert (end_key["frame"], home["frame"]) == (6, 0)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_page_script_of_the_table_view(ipd_viewer, tmp_path):
    """A game without frames: the timeline's cursor and the game-level values follow
    the step; vector and float actions are written out."""
    start, forward2, *_ = run_page_script(ipd_viewer, tmp_path / "ipd.html")
    assert start["frame"] is None and start["values"] == [["round", ""]] and forward2["values"] == [["round", "2"]]
    [data] = viewer_data(ipd_viewer.html())
    assert start["cursor"] == data["timeline"]["x0"] and forward2["cursor"] == data["timeline"]["x0"] + 2 * data[
        "timeline"]["dx"]
    assert forward2["head"] == ["player", "action", "reward", "episode return", "cooperated", "executed", "flipped",
                                "intended"]
    assert forward2["rows"][0][:4] == ["player 0", str(ipd_viewer.actions[1, 0]), f"{ipd_viewer.rewards[1, 0]:g}",
                                       f"{ipd_viewer.returns[1, 0]:g}"]
    assert [s[1] for s in start["swatches"]] == ["#{:02x}{:02x}{:02x}".format(*c) for c in R.AGENT_COLOURS[:2]]
    vectors = Viewer(None, rewards=[[0.5, 1]], actions=[[[0, 3], [2, 1]]], dones=[True])
    floats = Viewer(None, rewards=[[0.5, 1]], actions=[[0.25, 1.5]], dones=[True])  # a continuous action
    assert run_page_script(vectors, tmp_path / "v.html")[1]["rows"] == [["player 0", "0 3", "0.5", "0.5"],
                                                                         ["player 1", "2 1", "1", "1"]]
    assert [r[1] for r in run_page_script(floats, tmp_path / "f.html")[1]["rows"]] == ["0.25", "1.5"]


def test_viewer_errors(env, monkeypatch):
    for steps in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="num_steps must be a positive int"):
            Viewer.from_rollout(env, KEY, steps)
    with pytest.raises(ValueError, match=r"rewards must have shape \(T, N\) = \(3, N\) for 3 steps, got \(2, 2\)"):
        small_viewer(rewards=[[1, 0], [2, 0]])
    with pytest.raises(ValueError, match=r"actions must have shape \(T, N\) = \(3, 2\) \(or \(T, N, K\)"):
        small_viewer(actions=[[0], [1], [2]])
    with pytest.raises(TypeError, match="actions must be numbers"):
        small_viewer(actions=np.full((3, 2), "up"))
    with pytest.raises(ValueError, match=r"colours must be \(N, 3\) = \(2, 3\)"):
        small_viewer(colours=[[0, 0, 300], [0, 0, 0]])
    with pytest.raises(ValueError, match=r"values\['stock'\] must have shape \(T,\) = \(3,\)"):
        small_viewer(values={"stock": [1.0, 2.0]})
    with pytest.raises(ValueError, match="at least one step"):
        Viewer(None, rewards=np.zeros((0, 2)), actions=np.zeros((0, 2), int), dones=[])
    with pytest.raises(ValueError, match=r"dones must have shape \(T,\) = \(3,\)"):
        small_viewer(dones=[False, True])
    with pytest.raises(ValueError, match=r"events\['zaps'\] must have shape"):
        small_viewer(events={"zaps": [0, 1, 0]})
    with pytest.raises(ValueError, match="rewards must be finite"):
        small_viewer(rewards=[[1, 0], [np.nan, 0], [0, 0]])
    with pytest.raises(ValueError, match="players must name the 2 players, got 1"):
        small_viewer(players=("alone",))
    with pytest.raises(ValueError, match="at least one step"):
        small_viewer(frames=distinct_frames(t=1), rewards=np.zeros((0, 2)), actions=np.zeros((0, 2), int), dones=[],
                     events={})
    with pytest.raises(ValueError, match="scale"):
        small_viewer(scale=0)
    monkeypatch.setattr(viewer_module, "MAX_HTML_BYTES", 200)  # each 2x3 frame is about 100 bytes of base64 PNG
    with pytest.raises(ValueError, match=r"would embed .* \(4 frames of 3x2 px\), more than .*: use fewer steps"):
        small_viewer().html()


def test_a_game_without_frames_gets_the_table_view(ipd_viewer):
    """A game that does not render: per step each player's action, reward and every
    per-player info quantity (the declared events first), the game-level ones, and a
    timeline of each player's return in its colour; the same rollout as record_steps."""
    ipd = sj.make("ipd", num_rounds=3)
    traj = jax.jit(lambda key: sj.rollout(ipd, key, 6))(KEY)
    assert ipd_viewer.frames is None and "table view" in repr(ipd_viewer)
    np.testing.assert_array_equal(ipd_viewer.rewards, traj.reward)
    np.testing.assert_array_equal(ipd_viewer.actions, traj.actions)
    assert ipd_viewer.dones.tolist() == [False, False, True] * 2
    assert list(ipd_viewer.events) == ["cooperated", "executed", "flipped", "intended"]  # event_keys first
    np.testing.assert_array_equal(ipd_viewer.events["cooperated"], traj.info["cooperated"])
    assert list(ipd_viewer.values) == ["round"] and ipd_viewer.values["round"].tolist() == [1, 2, 3] * 2
    np.testing.assert_array_equal(ipd_viewer.colours, np.asarray(R.AGENT_COLOURS[:2], np.uint8))
    page = ipd_viewer.html()
    [data] = viewer_data(page)
    assert data["frames"] == [] and data["values"] == {"round": [1, 2, 3, 1, 2, 3]} and "<img" not in page
    assert page.count("<polyline") == 2 and page.count('stroke-dasharray="2 3"') == 2  # a line each; 2 episode ends
    assert 'class="sjv-future"' in page and 'class="sjv-cursor"' in page and data["timeline"]["dx"] > 0
    assert "http://" not in page and 'tabindex="0"' in page


def test_the_table_view_of_vector_and_continuous_actions():
    """Punishment assigns a vector of points per player, the donor game donates a
    fraction; the table view writes both out. More players than colours: no colour key,
    and the timeline shows the players' mean return."""
    viewer = Viewer(None, rewards=np.ones((2, 13)), actions=np.zeros((2, 13, 4), np.int32), dones=[False, True],
                    values={"stock": [10.5, 3.25]}, events={"contributed": np.ones((2, 13), int)})
    page = viewer._repr_html_()
    assert page.count("<polyline") == 1 and "mean episode return of the 13 players" in page
    assert viewer_data(page)[0]["actions"][0][0] == [0, 0, 0, 0] and viewer_data(page)[0]["colours"] is None
    donor = Viewer.from_rollout(sj.make("donor_game"), KEY, 2)
    assert donor.actions.dtype == np.float32 and donor.colours is not None and "is_donor" in donor.events
    played = Viewer.from_playback(sj.train.Playback(row=np.arange(12), rewards=donor.rewards, actions=donor.actions,
                                                    dones=donor.dones, frames=None, events=donor.events,
                                                    values=donor.values), sj.make("donor_game"))
    assert played.frames is None and set(played.values) == {"game", "game_over"}  # a trained population's table


@pytest.mark.slow
def test_every_registered_game_has_a_viewer():
    """Every registered environment: the frame view if it renders, else the table view;
    each page holds the steps it was given and its colour key."""
    for name in registered_envs():
        env = sj.make(name)
        viewer = Viewer.from_rollout(env, KEY, 2)
        [data] = viewer_data(viewer._repr_html_())
        assert (viewer.frames is None) != sj.viz.can_render(env), name
        assert len(data["rewards"]) == 2 and len(data["frames"]) == (3 if viewer.frames is not None else 0), name
        assert set(env.event_keys) <= set(viewer.events), name  # every declared event is shown
        assert (data["colours"] is None) == (viewer.frames is None and env.num_agents > len(R.AGENT_COLOURS)), name


def test_the_layout_is_fixed_at_load(viewer, page):
    """Fixed column widths (from the labels, not the numbers), tabular numbers, and the
    frame column as wide as the frame: nothing in the page depends on the numbers shown."""
    widths = [int(w) for w in re.findall(r'<col style="width:(\d+)px">', page)]
    assert len(widths) == 4 + len(viewer.events) and f'<table style="width:{sum(widths)}px">' in page
    assert "table-layout:fixed" in page and "tabular-nums" in page and ".sjv-play{width:4.5em}" in page
    w = viewer.frames.shape[2] * viewer.scale
    assert f'class="sjv-view" style="width:{max(w, viewer_module.VIEW_MIN_PX)}px"' in page
    assert 'name="viewport"' in viewer.html()  # phones lay it out at their own width


def test_a_playback_without_frames_is_refused(env):
    playback = sj.train.Playback(row=np.arange(2), rewards=np.zeros((3, 2)), actions=np.zeros((3, 2), int),
                                 dones=np.zeros(3, bool), frames=None)
    with pytest.raises(ValueError, match="render=True"):
        Viewer.from_playback(playback, env)


def test_a_playback_is_labelled_by_seat_and_member(env):
    small = small_viewer()
    playback = sj.train.Playback(row=np.array([1, 2]), rewards=small.rewards, actions=small.actions, dones=small.dones,
                                 frames=small.frames, events=small.events, members=("learner 1", "tft"))
    shown = Viewer.from_playback(playback, env)
    assert shown.players == ("seat 0 (learner 1)", "seat 1 (tft)") and shown.action_names == env.action_names
    assert shown.title == "harvest_open: trained population, 3 steps" and list(shown.events) == ["zaps"]


# ------------------------------------------------------------------------------ cli
def test_cli_render_writes_the_table_view_of_a_game_without_frames(tmp_path, capsys):
    out = tmp_path / "pgg.html"
    code = cli.main(["render", "--env", "public_goods_punishment", "--steps", "4", "--out", str(out), "--policy",
                     "noop"])
    assert code == 0
    assert "a table viewer of 4 steps (4 steps of public_goods_punishment, noop policy" in capsys.readouterr().out
    [data] = viewer_data(out.read_text(encoding="utf-8"))
    assert data["frames"] == [] and len(data["rewards"]) == 4 and "period" in data["values"]
    assert data["actions"][0] == [[0] * 4] * 4  # no-op: a vector of no punishment points per player


def test_cli_render_writes_a_gif(tmp_path, capsys):
    out = tmp_path / "sub" / "harvest.gif"
    code = cli.main(["render", "--env", "harvest_open", "--steps", "3", "--out", str(out), "--scale", "2",
                     "--fps", "4", "--policy", "noop", "--option", "num_agents=2", "--option", "episode=fixed",
                     "--option", "episode_length=5"])
    assert code == 0
    printed = capsys.readouterr().out
    assert str(out) in printed and "4 frames" in printed and "384x288" in printed
    with Image.open(out) as im:
        assert im.size == (384, 288) and im.n_frames <= 4


def test_cli_render_writes_the_viewer(tmp_path, capsys):
    out = tmp_path / "harvest.html"
    code = cli.main(["render", "--env", "harvest_open", "--steps", "3", "--out", str(out), "--scale", "3",
                     "--option", "num_agents=2", "--option", "episode=fixed", "--option", "episode_length=5"])
    assert code == 0
    assert "a viewer of 4 frames" in capsys.readouterr().out
    text = out.read_text(encoding="utf-8")
    [data] = viewer_data(text)
    assert len(data["frames"]) == 4 and len(data["rewards"]) == 3
    assert list(data["events"]) == list(sj.make("harvest_open").event_keys) == ["apples_eaten", "zaps_fired",
                                                                               "times_zapped"]
    assert 'width="576" height="432"' in text and "harvest_open: 3 steps, random policy, seed 0" in text


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--env", "no_such_env", "--out", "x.gif"], "unknown environment 'no_such_env'"),
        (["--env", "ipd", "--out", "x.gif"], "has no rendering (it is not a grid game): write --out FILE.html"),
        (["--env", "harvest_open", "--out", "x.gif", "--steps", "0"], "expected a positive integer"),
        (["--env", "harvest_open", "--out", "x.gif", "--steps", "-5"], "expected a positive integer"),
        (["--env", "harvest_open", "--out", "x.avi"], "unsupported extension '.avi'"),
        (["--env", "harvest_open", "--out", "x"], "unsupported extension"),
        (["--env", "harvest_open", "--out", "x.gif", "--fps", "0"], "expected a positive number"),
        (["--env", "harvest_open", "--out", "x.gif", "--fps", "1e6"], "expected a number in [0.01, 100]"),
        (["--env", "harvest_open", "--out", "x.gif", "--scale", "1000"], "expected an integer in [1, 32]"),
        # refused before the rollout: 10**7 frames of 192x144 px (harvest_open at scale 1) are 776 GiB
        (["--env", "harvest_open", "--out", "x.gif", "--scale", "1", "--steps", "10000000"], "more than the 2 GiB"),
        (["--env", "harvest_open", "--out", "x.gif", "--option", "bogus=1"], "unknown option"),
        (["--env", "harvest_open", "--out", "x.gif", "--option", "novalue"], "expected KEY=VALUE"),
        (["--out", "x.gif"], "--env"),
    ],
)
def test_cli_render_errors_exit_2(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        cli.main(["render", *argv])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing written


def test_cli_render_mp4_without_imageio_exits_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "imageio", None)
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)
    with pytest.raises(SystemExit) as exc:
        cli.main(["render", "--env", "harvest_open", "--out", str(tmp_path / "x.mp4")])
    assert exc.value.code == 2
    assert "socialjax[video]" in capsys.readouterr().err


# ------------------------------------------------------------------------------ docs
def test_docs_colour_legend_matches_the_sprites():
    legend = sj.viz.colour_legend()
    assert DOCS.read_text().count(legend) == 1, "regenerate the table with sj.viz.colour_legend()"
    for code, rgb in R.COLOURS.items():
        assert f"| {code} | {C.CODE_NAMES[code]}" in legend and str(tuple(rgb)) in legend


def test_an_agent_is_drawn_over_the_cell_it_stands_on():
    env = sj.make("harvest_open", num_agents=2, episode="fixed", episode_length=5)
    _, state = env.reset(jax.random.key(0))
    r, c = (int(v) for v in env.map.points("apple_cell")[0])
    state = state.replace(pos=state.pos.at[0].set(jnp.array([r, c])), cells=state.cells.at[r, c].set(C.APPLE))
    tile = np.asarray(env.render(state))[8 * r : 8 * r + 8, 8 * c : 8 * c + 8]
    apple = R.sprite_atlas(2)[C.APPLE]
    np.testing.assert_array_equal(tile[0], apple[0])  # the apple shows around the body
    np.testing.assert_array_equal(tile[4, 4], R.AGENT_COLOURS[0])
