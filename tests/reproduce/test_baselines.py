"""baselines at small scale: the five learners in both games train, are evaluated, and the
verdict follows from the evaluation's collective returns; the criterion on made-up numbers."""

import numpy as np
import pytest
from small_runs import check_verdict, quoted, reproduction_fixture

from socialjax.reproduce import get_entry
from socialjax.reproduce.baselines import ALGOS, GAMES, PLAYED, TEAM

baselines = reproduction_fixture("baselines", optimise=False)  # ten compilations: compiling dominates


@pytest.mark.slow
def test_small_scale_trains_and_evaluates_every_learner_in_both_games(baselines):
    rep, out = baselines
    check_verdict(rep)
    names = [c.name for c in rep.entry.conditions_at("small")]
    assert names == [f"{game}/{algo}" for game in GAMES for algo in ALGOS]
    for name in names:
        played = rep.finals[(name, PLAYED)]
        assert played.shape == (rep.seeds,) and np.isfinite(played).all(), (name, played)
        assert (out / name / "summary.txt").exists()
    for game in GAMES:
        for algo in TEAM:
            assert quoted(rep, (f"{game}/{algo}", PLAYED)) in rep.reason


def test_the_criterion_compares_each_learner_with_ippo_in_each_game():
    entry = get_entry("baselines")
    seeds = np.arange(3.0)
    finals = {(f"{game}/{algo}", PLAYED): seeds + (0.0 if algo == "ippo" else 100.0)
              for game in GAMES for algo in ALGOS}
    assert entry.criterion(finals)[0] == "reproduced"
    finals[("harvest/vdn", PLAYED)] = seeds - 100.0
    verdict, reason = entry.criterion(finals)
    assert verdict == "partly" and "harvest/vdn" in reason
    below = {key: (seeds - 100.0 if key[0].split("/")[1] != "ippo" else seeds) for key in finals}
    assert entry.criterion(below)[0] == "not reproduced"
