"""baselines at small scale: the five learners in both games train, are evaluated, and the
verdict follows from the evaluation's collective returns; the criterion on made-up numbers."""

import dataclasses

import numpy as np
import pytest
from small_runs import check_verdict, optimised, quoted

from socialjax.reproduce import get_entry, reproduce
from socialjax.reproduce.baselines import ALGOS, GAMES, PLAYED, TEAM


@pytest.fixture(scope="module")
def baselines(tmp_path_factory):
    """The entry's small scale in Clean Up: its five learners trained and evaluated (five
    compilations, optimised: the file took 120 s against 136-141 s compiled as the rest
    of the suite, alone on the quiet 2-core machine, 2026-11-29). Each learner
    also trains on Commons Harvest, and every other grid game, in
    tests/train/test_new_learners.py."""
    entry = get_entry("baselines")
    keys = tuple((f"cleanup/{algo}", PLAYED) for algo in ALGOS)
    entry = dataclasses.replace(entry, conditions=tuple(c for c in entry.conditions if c.name.startswith("cleanup/")),
                                analysis=dataclasses.replace(entry.analysis, keys={"small": keys}))
    out = tmp_path_factory.mktemp("rep") / "baselines"
    with optimised():
        return reproduce(entry, "small", out=out, progress=False), out


@pytest.mark.slow
def test_small_scale_trains_and_evaluates_every_learner(baselines):
    rep, out = baselines
    check_verdict(rep)
    names = [c.name for c in rep.entry.conditions_at("small")]
    assert names == [f"cleanup/{algo}" for algo in ALGOS]
    for name in names:
        played = rep.finals[(name, PLAYED)]
        assert played.shape == (rep.seeds,) and np.isfinite(played).all(), (name, played)
        assert (out / name / "summary.txt").exists()
    for algo in TEAM:
        assert quoted(rep, (f"cleanup/{algo}", PLAYED)) in rep.reason


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
