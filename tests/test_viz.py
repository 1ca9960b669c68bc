"""Rendering for people: rollout frames, the sprite atlas, GIF / MP4 export, the Jupyter
player, the interactive viewer (its page's script run in node when node is installed),
the ``socialjax render`` command and the colour legend in the docs.

One small Harvest env and its rollout are module-scoped, so the scan compiles once.
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
from socialjax.envs.grid import constants as C
from socialjax.envs.grid import render as R
from socialjax.viz import video
from socialjax.viz import viewer as viewer_module
from socialjax.viz.viewer import Viewer, viewer_data

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


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_page_script_steps_through_the_frames(tmp_path):
    viewer = small_viewer(frames=distinct_frames(t=7, h=2, w=3), rewards=[[1, 0], [2, 0.25], [0.5, 0]] * 2,
                          actions=[[0, 1], [2, 0], [1, 1]] * 2, dones=[False, True, False, False, False, True],
                          events={"zaps": [[0, 1], [0, 0], [1, 0]] * 2})
    ran = subprocess.run(["node", str(PAGE_SCRIPT), str(viewer.save(tmp_path / "v.html"))], capture_output=True,
                         text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    start, forward2, slider5, back, playing, end, again = json.loads(ran.stdout)
    assert start["head"] == ["player", "action", "reward", "episode return", "zaps"]
    assert start == {**start, "frame": 0, "step": "step 0 / 6 (reset)", "ended": "",
                     "rows": [["player 0", "", "", "0", "0"], ["player 1", "", "", "0", "0"]]}
    # frame 2: step 2's actions (2 = no name: its index), rewards, the episode's return, events; the episode ended
    assert forward2["frame"] == 2 and forward2["step"] == "step 2 / 6" and "episode ended" in forward2["ended"]
    assert forward2["rows"] == [["player 0", "2", "2", "3", "0"], ["player 1", "stay", "0.25", "0.25", "0"]]
    assert slider5["frame"] == 5 and slider5["rows"][1] == ["player 1", "stay", "0.25", "0.25", "0"]
    assert back["frame"] == 4 and back["rows"][0] == ["player 0", "stay", "1", "1.5", "0"]  # 0.5 + 1 since the end
    assert playing["play"] == "pause" and end["frame"] == 6 and end["play"] == "play"
    assert "episode ended" in end["ended"] and again["frame"] == 1  # play at the end starts over


def test_viewer_errors(env, monkeypatch):
    with pytest.raises(TypeError, match="only the grid games render"):
        Viewer.from_rollout(sj.make("ipd", num_rounds=3), KEY, 3)
    for steps in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="num_steps must be a positive int"):
            Viewer.from_rollout(env, KEY, steps)
    with pytest.raises(ValueError, match=r"rewards must have shape \(T, N\) = \(3, N\) for 4 frames, got \(2, 2\)"):
        small_viewer(rewards=[[1, 0], [2, 0]])
    with pytest.raises(ValueError, match=r"actions must have shape \(T, N\) = \(3, 2\)"):
        small_viewer(actions=[[0], [1], [2]])
    with pytest.raises(TypeError, match="actions must be integer"):
        small_viewer(actions=np.zeros((3, 2)))
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
    assert list(data["events"]) == list(sj.make("harvest_open").event_keys)
    assert 'width="576" height="432"' in text and "harvest_open: 3 steps, random policy, seed 0" in text


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--env", "no_such_env", "--out", "x.gif"], "unknown environment 'no_such_env'"),
        (["--env", "ipd", "--out", "x.gif"], "has no rendering"),
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
