"""gathering-scarcity at small scale: beam counts within what the rules allow, and a
verdict that follows from them."""

import pytest
from small_runs import check_verdict, quoted, reproduction_fixture

gathering = reproduction_fixture("gathering-scarcity", optimise=False)  # compilation dominates


@pytest.mark.slow
def test_beams_apples_and_peace_are_within_the_rules_and_judged(gathering):
    rep, _ = gathering
    check_verdict(rep)
    for cond in ("abundant", "scarce"):
        assert quoted(rep, (cond, "beams")) in rep.reason
        beams, apples, peace = (rep.finals[(cond, m)] for m in ("beams", "apples", "peace"))
        # two players, 250-step episodes: at most one beam and one apple per player per step
        assert ((beams >= 0) & (beams <= 2 * 250)).all() and ((apples >= 0) & (apples <= 2 * 250)).all()
        assert ((peace >= 0) & (peace <= 2)).all()
