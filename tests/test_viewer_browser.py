"""The viewer in a real browser (slow tier): headless Chromium driven by Playwright.

Saved pages of grid games (Clean Up, Coins) and of games without frames (an iterated
prisoner's dilemma, public goods with punishment, a commons, the donor game) are loaded
at three widths (1280 and 1920 px, and a phone's 390 px). On each: no JavaScript error
or console error; the colour key is the players' colours and the table heads are the
game's own events; play advances the frames (the image, or the timeline's cursor) to
the end while nothing on the page moves or resizes and the page never scrolls
sideways; step forward and back move one step; pause stops; space, the left and right
arrows do the same from the keyboard, and keys typed into the fps box stay there. A
screenshot of each page at each width lands in the test's temporary folder.

Needs Debian's ``chromium`` (``apt-get install chromium``; ``playwright install`` cannot
download a browser here) and the ``playwright`` package (``pip install
"socialjax[browser]"``), pointed at it by ``executable_path`` (or ``SOCIALJAX_CHROMIUM``):
without either the test skips and says which is missing.
"""

import os
import shutil

import jax
import numpy as np
import pytest

import socialjax as sj
from socialjax.viz.viewer import Viewer, label

pytestmark = pytest.mark.slow

CHROMIUM = os.environ.get("SOCIALJAX_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
WIDTHS = {"1280": (1280, 800), "1920": (1920, 1080), "phone": (390, 844)}
STEPS = 12
SCALE = 2  # the command line's default: Clean Up's frame is 480 px wide
# where the players' table sits, by game and width, from load to the end of play (Clean Up at 1280 px once jumped
# from beside the frame to below it when play started)
PLACES = {("cleanup", "1280"): "beside", ("cleanup", "1920"): "beside", ("cleanup", "phone"): "below",
          ("ipd", "1920"): "beside", ("ipd", "phone"): "below"}
# game -> its make options: grid games (the frame view) and games without frames (the table view)
GAMES = {
    "cleanup": {},
    "coins": {},
    "ipd": {"num_rounds": 5},  # episode ends inside the 12 steps
    "public_goods_punishment": {},  # a vector of punishment points per player
    "commons": {},  # the stock, quota ... of each round
    "donor_game": {},  # continuous donations, 12 players
}

# Samples the viewer's layout every animation frame while it plays to the end: the boxes
# of the viewer, its frame column, its table and its table's box, and whether the page is
# wider than the window; and the steps and frames (image or timeline cursor) shown.
PLAY_TO_THE_END = """async () => {
  const root = document.querySelector(".socialjax-viewer"), q = (s) => root.querySelector(s);
  const box = (e) => { const r = e.getBoundingClientRect(); return [r.x, r.y, r.width, r.height].join(","); };
  const shown = () => (q(".sjv-frame") ? q(".sjv-frame").src.length + ":" + q(".sjv-frame").src.slice(-40)
                                        : q(".sjv-cursor").getAttribute("x1"));
  const layouts = new Set(), steps = new Set(), frames = new Set();
  const look = () => {
    layouts.add([root, q(".sjv-view"), q(".sjv-side"), q(".sjv-side table")].map(box).join(" ")
                + " wider:" + (document.documentElement.scrollWidth > window.innerWidth));
    steps.add(q(".sjv-step").textContent); frames.add(shown());
  };
  look();  // before play starts
  q(".sjv-fps").value = "30";
  q(".sjv-play").click();
  for (let i = 0; i < 2000 && q(".sjv-play").textContent === "pause"; i++) {
    look();
    await new Promise((resolve) => requestAnimationFrame(resolve));
  }
  look();
  return {layouts: [...layouts], steps: [...steps], frames: frames.size, last: q(".sjv-step").textContent};
}"""


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """The saved viewer pages, by game: ``(path, viewer)``."""
    folder = tmp_path_factory.mktemp("viewer_pages")
    out = {}
    for game, options in GAMES.items():
        viewer = Viewer.from_rollout(sj.make(game, **options), jax.random.key(1), STEPS, scale=SCALE)
        out[game] = (viewer.save(folder / f"{game}.html"), viewer)
    return out


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("no Chromium to run the viewer in: apt-get install chromium (Debian), or set SOCIALJAX_CHROMIUM "
                    "to a Chromium binary")
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason='the playwright package is not installed: pip install "socialjax[browser]"')
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


def open_page(browser, path, size):
    """A page of ``size`` showing ``path``, and the list its console errors and uncaught
    exceptions are collected in."""
    page = browser.new_page(viewport={"width": size[0], "height": size[1]})
    errors = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(path.as_uri())
    return page, errors


def check_the_key_and_heads(page, viewer: Viewer) -> None:
    """The swatch before each player is its colour; the heads are the game's own names."""
    heads = page.eval_on_selector_all(".sjv-head th", "ths => ths.map((th) => th.textContent)")
    assert heads == ["player", "action", "reward", "episode return", *map(label, viewer.events)]
    swatches = page.eval_on_selector_all(
        ".sjv-rows tr td:first-child", "tds => tds.map((td) => getComputedStyle(td, '::before').backgroundColor)")
    assert swatches == [f"rgb({r}, {g}, {b})" for r, g, b in np.asarray(viewer.colours).tolist()]


def place(page) -> str:
    """Where the players' table is: ``"beside"`` the frame (or timeline) or ``"below"`` it."""
    return page.evaluate("""() => {
      const view = document.querySelector(".sjv-view").getBoundingClientRect();
      return document.querySelector(".sjv-side").getBoundingClientRect().left >= view.right ? "beside" : "below";
    }""")


def step_line(page) -> str:
    return page.text_content(".sjv-step")


def check_the_controls(page) -> None:
    """Step forward / back, pause, and the same by keys (not while typing into the fps box)."""
    page.click(".sjv-back")
    assert step_line(page) == f"step {STEPS - 1} / {STEPS}"
    page.click(".sjv-forward")
    assert step_line(page) == f"step {STEPS} / {STEPS}"
    page.keyboard.press("Home")  # the click left the focus on the viewer: its keys work at once
    assert step_line(page) == f"step 0 / {STEPS} (reset)"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowLeft")
    assert step_line(page) == f"step 1 / {STEPS}"
    page.fill(".sjv-fps", "4")
    page.keyboard.press("ArrowRight")  # on the fps box: the box's own keys, no step and no play
    page.keyboard.press("Space")
    assert step_line(page) == f"step 1 / {STEPS}" and page.text_content(".sjv-play") == "play"
    page.fill(".sjv-fps", "4")
    page.click(".sjv-play")  # play at 4 fps
    page.wait_for_function("() => !document.querySelector('.sjv-step').textContent.startsWith('step 1 ')")
    page.click(".sjv-play")  # pause
    paused = step_line(page)
    page.wait_for_timeout(600)
    assert step_line(page) == paused and page.text_content(".sjv-play") == "play"
    page.keyboard.press("Space")  # play again, from the keyboard
    page.wait_for_function(f"() => document.querySelector('.sjv-step').textContent !== {paused!r}")
    page.keyboard.press("Space")  # and pause
    assert page.text_content(".sjv-play") == "play"


@pytest.mark.parametrize("width", list(WIDTHS))
def test_the_viewer_in_a_real_browser(browser, pages, width, tmp_path):
    size = WIDTHS[width]
    for game, (path, viewer) in pages.items():
        page, errors = open_page(browser, path, size)
        check_the_key_and_heads(page, viewer)
        where = place(page)
        assert where == PLACES.get((game, width), where), (game, width, where)
        played = page.evaluate(PLAY_TO_THE_END)
        assert played["last"] == f"step {STEPS} / {STEPS}", (game, played)
        assert len(played["steps"]) >= STEPS // 2 and played["frames"] >= STEPS // 2, (game, played)  # frames advance
        assert len(played["layouts"]) == 1, f"{game} at {width}: the layout moved during play: {played['layouts']}"
        assert "wider:false" in played["layouts"][0], f"{game} at {width}: the page scrolls sideways"
        check_the_controls(page)
        assert place(page) == where, (game, width)
        page.screenshot(path=tmp_path / f"{game}_{width}.png", full_page=True)
        assert not errors, (game, width, errors)
        page.close()
    print(f"screenshots: {tmp_path}")
