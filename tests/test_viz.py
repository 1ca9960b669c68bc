"""Rendering for people: rollout frames, the sprite atlas, GIF / MP4 export, the Jupyter
player, the ``socialjax render`` command and the colour legend in the docs.

One small Harvest env and its rollout are module-scoped, so the scan compiles once.
"""

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

NUM_STEPS = 8  # crosses the end of the 5-step episode (auto-reset)
KEY = jax.random.key(0)
DOCS = Path(__file__).resolve().parents[1] / "docs" / "gridworlds.md"


@pytest.fixture(scope="module")
def env():
    return sj.make("harvest_open", num_agents=2, episode="fixed", episode_length=5)


@pytest.fixture(scope="module")
def frames(env):
    return sj.viz.rollout_frames(env, KEY, NUM_STEPS)


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
