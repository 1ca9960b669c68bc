"""punishment-learners: the learners' discrete punishment action by hand, the criterion on
made-up values, and (slow tier) the README's first command, the small scale, on seeds it
was not sized on: contributions collapse without punishment and are sustained with it."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from small_runs import check_verdict

from socialjax import make
from socialjax.envs.institutions.public_goods import ENDOWMENT, PublicGoodsState
from socialjax.reproduce import reproduce
from socialjax.reproduce.punishment_learners import (
    OVER_TRAINING,
    PER_PERIOD,
    PUNISHMENT_LEARNERS,
    SIZES,
    StandardPunishment,
    learner_config,
    learner_env,
    row_name,
)


def test_learners_pick_a_standard_and_members_below_it_are_punished():
    env = StandardPunishment(make("public_goods", num_agents=4, punishment=True))
    assert env.action_space().n == ENDOWMENT + 1
    state = PublicGoodsState(order=jnp.arange(4, dtype=jnp.int32), period=jnp.zeros((), jnp.int32),
                             stage=jnp.zeros((), jnp.int32), contrib=jnp.zeros(4, jnp.int32),
                             last_contrib=jnp.zeros((4, 4), jnp.int32), last_received=jnp.zeros((4, 3), jnp.int32))
    game_actions = jax.jit(env.game_actions)
    contribute = np.asarray(game_actions(state, jnp.asarray([0, 5, 20, 9])))
    assert contribute.tolist() == [[0, 0, 0, 0], [5, 0, 0, 0], [20, 0, 0, 0], [9, 0, 0, 0]]
    state = state.replace(stage=jnp.ones((), jnp.int32), contrib=jnp.asarray([0, 5, 20, 9], jnp.int32))
    points = np.asarray(game_actions(state, jnp.asarray([0, 20, 6, 14])))[:, 1:]
    # member 1 (standard 20) sees 20, 9, 0 after it: shortfalls 0, 11, 20 -> 0, 4, 7 points
    assert points[1].tolist() == [0, 4, 7]
    assert points[0].tolist() == [0, 0, 0]  # standard 0: nobody is punished
    assert points[2].tolist() == [0, 2, 0]  # standard 6 sees 9, 0, 5: only the 0 falls short (by 6)
    assert points[3].tolist() == [5, 3, 0]  # standard 14 sees 0, 5, 20
    with pytest.raises(ValueError, match="with punishment"):
        StandardPunishment(make("public_goods", num_agents=4))


def test_the_sizes_and_games_are_the_ones_documented():
    small = learner_env("stranger", True, SIZES["small"].players)
    assert small.unwrapped.num_agents == 8 and small.unwrapped.matching == "stranger"
    config = learner_config(small, "small")
    assert (config.num_updates, config.num_envs, config.rollout_len) == (80, 8, small.episode_length)
    assert config.seating == "independent"
    assert learner_config(learner_env("partner", False), "cpu").num_updates == 100
    assert PUNISHMENT_LEARNERS.scales == ("small", "cpu", "paper")
    assert {row for row, _ in PUNISHMENT_LEARNERS.keys("small")} == {"stranger/without", "stranger/with"}


@pytest.mark.parametrize("without_end, with_end, partner_with, expected", [
    (0.05, 0.7, None, "reproduced"),   # falls without, higher with
    (0.45, 0.7, None, "partly"),       # no fall without punishment
    (0.05, 0.7, 0.6, "partly"),        # both matchings: partner below stranger
    (0.05, 0.7, 0.8, "reproduced"),
])
def test_the_criterion_reads_the_fall_the_gap_and_the_matching(without_end, with_end, partner_with, expected):
    rng = np.random.default_rng(0)
    finals = {}

    def put(matching, start, end):
        for punish, (s, e) in ((False, (start, end[0])), (True, (0.5, end[1]))):
            row = row_name(matching, punish)
            finals[(row, "start")] = s + rng.normal(0, 0.01, 4)
            finals[(row, "end")] = e + rng.normal(0, 0.01, 4)
            finals[(row, "change")] = finals[(row, "end")] - finals[(row, "start")]

    put("stranger", 0.45, (without_end, with_end))
    if partner_with is not None:
        put("partner", 0.45, (without_end, partner_with))
    assert PUNISHMENT_LEARNERS.criterion(finals)[0] == expected


# ---------------------------------------------------------------------- slow: the science
@pytest.mark.slow
def test_the_readme_first_command_reproduces_on_seeds_it_was_not_sized_on(tmp_path):
    """The small scale (the README's first command) on base seed 2000: without punishment the
    contribution falls, with punishment it ends higher, both separated over 8 seeds; the
    figure and the series are written."""
    rep = reproduce(PUNISHMENT_LEARNERS, "small", base_seed=2000, out=tmp_path / "r", progress=False)
    check_verdict(rep)
    assert rep.verdict == "reproduced", rep.reason
    for punish in (False, True):
        row = row_name("stranger", punish)
        assert rep.curves[(row, OVER_TRAINING)].shape == (8, 10)
        assert rep.curves[(row, PER_PERIOD)].shape == (8, 10)
        assert ((rep.curves[(row, PER_PERIOD)] >= 0) & (rep.curves[(row, PER_PERIOD)] <= 1)).all()
    np.testing.assert_array_equal(rep.finals[(row_name("stranger", False), "points")], 0.0)  # nobody can punish
    assert (tmp_path / "r" / "figure.png").stat().st_size > 10_000
