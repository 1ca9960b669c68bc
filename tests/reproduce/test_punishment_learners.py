"""punishment-learners: the learners' discrete punishment action by hand, the criterion on
made-up values, and (slow tier) the README's first command, the small scale, on seeds it
was not sized on: contributions collapse without punishment and are sustained with it."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from small_runs import check_verdict, optimised

from socialjax import make
from socialjax.envs.institutions.public_goods import ENDOWMENT
from socialjax.reproduce import reproduce
from socialjax.reproduce.punishment_learners import (
    PER_PERIOD,
    PUNISHMENT_LEARNERS,
    TENTHS,
    over_training,
    row_name,
)
from socialjax.train import TrainConfig


def test_learners_pick_a_standard_and_members_below_it_are_punished():
    env = make("public_goods_standard_punishment", num_agents=4)
    assert env.action_space().n == ENDOWMENT + 1
    _, _, view = env.membership(jnp.arange(4, dtype=jnp.int32))
    contrib = jnp.asarray([0, 5, 20, 9], jnp.int32)
    split = jax.jit(env.split_action)
    contribution, _ = split(contrib, jnp.zeros(4, jnp.int32), view)
    assert contribution.tolist() == [0, 5, 20, 9]
    _, points = split(jnp.asarray([0, 20, 6, 14]), contrib, view)
    points = np.asarray(points)
    # member 1 (standard 20) sees 20, 9, 0 after it: shortfalls 0, 11, 20 -> 0, 4, 7 points
    assert points[1].tolist() == [0, 4, 7]
    assert points[0].tolist() == [0, 0, 0]  # standard 0: nobody is punished
    assert points[2].tolist() == [0, 2, 0]  # standard 6 sees 9, 0, 5: only the 0 falls short (by 6)
    assert points[3].tolist() == [5, 3, 0]  # standard 14 sees 0, 5, 20
    with pytest.raises(ValueError, match="punishment must be True"):
        make("public_goods", num_agents=4, punish_by="standard")
    with pytest.raises(ValueError, match="punish_by"):
        make("public_goods_punishment", punish_by="standards")


def test_a_standard_is_played_through_the_game_s_steps():
    """The punishment stage's points reach their targets and cost the punisher, as the
    game's own points would: 2002 design, 1 per point given, 3 per point received."""
    env = make("public_goods_standard_punishment", num_agents=4)
    key = jax.random.key(0)
    _, state = env.reset(key)
    state = state.replace(order=jnp.arange(4, dtype=jnp.int32))
    _, state, _, _, _ = env.step(key, state, jnp.asarray([0, 5, 20, 9]))
    _, _, reward, _, info = env.step(key, state, jnp.asarray([0, 20, 6, 14]))
    assert info["points_assigned"].tolist() == [0, 11, 2, 8]
    assert info["points_received"].tolist() == [14, 3, 0, 4]
    np.testing.assert_allclose(reward, -np.asarray([0 + 3 * 14, 11 + 3 * 3, 2 + 0, 8 + 3 * 4]))


def test_the_sizes_and_games_are_the_ones_documented():
    small = PUNISHMENT_LEARNERS.condition("stranger/with")
    env = make(small.env["small"], **small.env_options["small"])
    assert env.num_agents == 8 and env.matching == "stranger" and env.punish_by == "standard"
    config = TrainConfig().replace(**small.config["small"])
    assert (config.num_updates, config.num_envs, config.rollout_len) == (80, 8, env.episode_length)
    assert config.seating == "independent"
    partner = PUNISHMENT_LEARNERS.condition("partner/without")
    assert partner.scales == ("cpu", "paper") and partner.config["cpu"]["num_updates"] == 100
    assert make(partner.env["cpu"], **partner.env_options["cpu"]).episode_length == partner.config["cpu"]["rollout_len"]
    assert PUNISHMENT_LEARNERS.scales == ("small", "cpu", "paper")
    assert {row for row, _ in PUNISHMENT_LEARNERS.keys("small")} == {"stranger/without", "stranger/with"}
    curve = np.arange(20.0)[None].repeat(2, axis=0)
    assert over_training(curve).shape == (2, TENTHS) and over_training(curve)[0, 0] == 0.5


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
    with optimised():  # mostly execution
        rep = reproduce(PUNISHMENT_LEARNERS, "small", base_seed=2000, out=tmp_path / "r", progress=False)
    check_verdict(rep)
    assert rep.verdict == "reproduced", rep.reason
    for punish in (False, True):
        row = row_name("stranger", punish)
        assert rep.curves[(row, "end")].shape == (8, 80)
        assert rep.curves[(row, PER_PERIOD)].shape == (8, 10)
        assert ((rep.curves[(row, PER_PERIOD)] >= 0) & (rep.curves[(row, PER_PERIOD)] <= 1)).all()
    np.testing.assert_array_equal(rep.finals[(row_name("stranger", False), "points")], 0.0)  # nobody can punish
    assert (tmp_path / "r" / "figure.png").stat().st_size > 10_000
