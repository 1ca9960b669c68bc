"""PettingZoo's own conformance tests over every registered environment (slow tier):
``parallel_api_test``, the AEC ``api_test`` through ``parallel_to_aec``, the seed tests
(two adapters of the same game with the same seed play the same episode) and
``render_test`` (every render mode the adapter lists: ``human``, ``ansi``, and
``rgb_array`` for the grid games).

Each test builds fresh adapters, as PettingZoo's tests do, over one environment object
per game, so that they share its compiled reset, step and render. Episodes are as the
games define them; the tests run at most ``CYCLES`` steps of each.
"""

import pytest

import socialjax as sj

pytest.importorskip("pettingzoo")
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, render_test, seed_test  # noqa: E402
from pettingzoo.utils.conversions import parallel_to_aec  # noqa: E402

from socialjax.core.pettingzoo import PettingZooAdapter  # noqa: E402

CYCLES = 30  # steps of each test's episodes: past the first rounds of every game, short of its end for most

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=sj.registered_envs())
def game(request):
    """A registered game's name and one environment object of it (for every adapter of the module)."""
    return request.param, sj.make(request.param)


def test_pettingzoos_api_seed_and_render_tests_pass(game, capsys):
    name, env = game
    parallel_api_test(PettingZooAdapter(env, seed=0), num_cycles=CYCLES)
    api_test(parallel_to_aec(PettingZooAdapter(env, seed=0)), num_cycles=CYCLES)
    parallel_seed_test(lambda: PettingZooAdapter(env), num_cycles=CYCLES)
    seed_test(lambda: parallel_to_aec(PettingZooAdapter(env)), num_cycles=CYCLES)
    capsys.readouterr()  # what the API tests printed
    render_test(lambda render_mode=None: parallel_to_aec(PettingZooAdapter(env, seed=0, render_mode=render_mode)))
    printed = capsys.readouterr().out.splitlines()  # "human" with no window here: the text line
    assert printed and all(line.startswith(name) for line in printed), printed[:3]
