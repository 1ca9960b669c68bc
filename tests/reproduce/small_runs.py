"""Running ``socialjax reproduce`` entries at small scale inside the suite.

Each entry's test file trains the entry once (a module fixture) and checks its numbers.
These runs spend most of their time executing training, not compiling it, so they
compile with XLA's optimisations on (the suite turns them mostly off to save compile
time elsewhere; tests/conftest.py): measured on the 2-core CPU, commons-metrics took 52 s
with them off and 39 s with them on. Entries whose small run is mostly compilation are
the other way round and run without them (``optimise=False``).
"""

from __future__ import annotations

import contextlib
import dataclasses

import jax
import numpy as np
import pytest

from socialjax.reproduce import VERDICTS, get_entry, reproduce
from socialjax.train.models import load_model_run


@contextlib.contextmanager
def optimised():
    before = jax.config.read("jax_disable_most_optimizations")
    jax.config.update("jax_disable_most_optimizations", False)
    try:
        yield
    finally:
        jax.config.update("jax_disable_most_optimizations", before)


def small_reproduction(name: str, tmp_path_factory, optimise: bool = True, **kwargs):
    """``(Reproduction, folder)`` of entry ``name`` at small scale with its default seeds,
    compiled with XLA's optimisations on (``optimise``) or as the rest of the suite is."""
    out = tmp_path_factory.mktemp("rep") / name
    with optimised() if optimise else contextlib.nullcontext():
        rep = reproduce(get_entry(name), "small", out=out, progress=False, **kwargs)
    return rep, out


def reproduction_fixture(name: str, optimise: bool = True):
    """A module fixture giving ``(Reproduction, folder)`` of entry ``name`` at small
    scale: ``harvest = reproduction_fixture("harvest-reward")`` in a test file. An entry
    whose small run is mostly compilation passes ``optimise=False`` (CPU seconds alone on
    the 2-core machine, optimised vs not: weis-incontext 48 vs 26, harvest-reward 69 vs
    42, gathering-scarcity 66 vs 45, schelling 108 vs 99, donor-evolution 13 vs 6;
    inequity-aversion 73 vs 94 and commons-institutions 10 vs 37 stay optimised)."""

    @pytest.fixture(scope="module")
    def fixture(tmp_path_factory):
        return small_reproduction(name, tmp_path_factory, optimise)

    return fixture


def check_verdict(rep) -> None:
    """The verdict is the entry's criterion applied to the finals, and the table shows
    those finals: a row per reported key, its value the mean over the seeds."""
    assert rep.verdict in VERDICTS
    assert rep.entry.criterion(rep.finals) == (rep.verdict, rep.reason)
    table = {(r["condition"], r["measure"]): r for r in rep.rows}
    assert set(table) == set(rep.entry.keys(rep.scale)) <= set(rep.finals)
    for key, row in table.items():
        values = rep.finals[key]
        assert values.shape == (rep.seeds,)
        if np.isfinite(values).any():
            assert row["ours"] == pytest.approx(np.nanmean(values))
        assert row["seeds"] == rep.seeds


def check_model_runs(rep, out) -> None:
    """The reproduction's folder holds each model condition's run as a model result
    (``OUT/<condition>/``), saved with its settings and the very values of the table and
    the figure; no population was trained for the entry at this scale."""
    computed = rep.entry.computed_at(rep.scale)
    assert computed and not rep.entry.trained_at(rep.scale)
    assert sorted(p.parent.name for p in out.glob("*/config.json")) == sorted(c.name for c in computed)
    for cond in computed:
        saved = load_model_run(out / cond.name)
        model, settings = cond.model(rep.scale)
        assert saved.spec.config == {"model": model.name, **settings} and saved.spec.seeds == tuple(range(rep.seeds))
        assert saved.keys == model.keys(settings) and saved.series == model.series(settings)
        for key in saved.keys:
            np.testing.assert_array_equal(saved.values[key], rep.finals[key])
        for key in saved.series:
            np.testing.assert_array_equal(saved.values[key], rep.curves[key])


def quoted(rep, key) -> str:
    """How the reason quotes the mean of ``key`` (3 significant digits)."""
    return f"{np.nanmean(rep.finals[key]):.3g}"


def shortened(entry, scale: str, num_updates: int):
    """``entry`` with each condition's ``scale`` config cut to ``num_updates`` updates (the
    conditions run at other scales only left as they are)."""
    def cut(c):
        return dataclasses.replace(c, config={**c.config, scale: dict(c.config[scale], num_updates=num_updates)})

    conditions = tuple(cut(c) if scale in c.config else c for c in entry.conditions)
    return dataclasses.replace(entry, conditions=conditions)
