"""Models as jobs of the one runner (socialjax.train.models): a registered model's spec is
checked before anything runs, its result folder reads back with the same values, its
listeners get the series and the values, a signal while it computes stops it at once
with nothing half-written, and a reproduction keeps the model runs it finished. And
``run_spec``, Python's door to the runner: a stopped population resumed to the bits of
a run never stopped, a held folder refused.

The models here are tiny numpy/JAX functions registered under ``test/...`` names."""

from __future__ import annotations

import csv
import os
import signal

import jax
import numpy as np
import pytest
from support import TINY_IPD, run_stopped_at

from socialjax import cli
from socialjax.reproduce import ENTRIES
from socialjax.reproduce.core import Entry, Stopped, model_condition, reproduce, sign_verdict
from socialjax.train import TrainConfig, load_run, results, run_spec, runner, store, tables
from socialjax.train.models import (
    MODEL,
    MODELS,
    Model,
    compute,
    load_model_run,
    model_spec,
    register_model,
)
from socialjax.train.spec import JobSpec
from socialjax.train.tracking import CsvLog, Listeners

CALLS: list[str] = []  # the names of the toy models computed, in order


def _walk(steps: int, scale: float, seeds: int, base_seed: int = 0, row: str = "walk"):
    """A random walk per seed (seed ``s`` from ``key(base_seed + s)``): its end and its
    path, in the table's ``row``."""
    CALLS.append(row)
    keys = jax.vmap(jax.random.key)(np.arange(base_seed, base_seed + seeds))
    path = np.cumsum(np.asarray(jax.vmap(lambda k: jax.random.normal(k, (steps,)))(keys)) * scale, axis=1)
    return {(row, "end"): path[:, -1], (row, "path"): path, (row, "unused"): np.zeros(seeds)}


def _ctrl_c(seeds: int, base_seed: int = 0):
    """Stands for a long computation that Ctrl-C interrupts (the signal sent to this process)."""
    CALLS.append("ctrl-c")
    os.kill(os.getpid(), signal.SIGINT)
    return {("late", "value"): np.ones(seeds)}


WALK = register_model(Model("test/walk", "ipd", _walk, lambda settings: ((settings.get("row", "walk"), "end"),),
                            lambda settings: ((settings.get("row", "walk"), "path"),)))
CTRL_C = register_model(Model("test/ctrl-c", "ipd", _ctrl_c, lambda settings: (("late", "value"),)))
FORGETFUL = register_model(Model("test/forgetful", "ipd", _walk, lambda settings: (("walk", "missing"),)))


def test_a_model_run_is_saved_and_reads_back_with_its_spec_and_values(tmp_path):
    spec = model_spec(WALK.name, {"steps": 6, "scale": 0.5}, seeds=3, base_seed=7)
    assert spec.kind == MODEL.name and JobSpec.from_json(spec.to_json()) == spec
    result, text = runner.execute(spec, runner.Destination(tmp_path / "walk"), Listeners(), progress=False)
    assert result.values[("walk", "path")].shape == (3, 6) and result.values[("walk", "end")].shape == (3,)
    np.testing.assert_array_equal(result.values[("walk", "end")], result.values[("walk", "path")][:, -1])
    assert set(result.values) == {("walk", "end"), ("walk", "path")}  # what the model declares, no more
    again = load_model_run(tmp_path / "walk")
    assert again.spec == spec and again.keys == result.keys and again.series == result.series
    for key, value in result.values.items():
        np.testing.assert_array_equal(again.values[key], value)
    # what `socialjax results DIR` prints is its summary, and --csv writes every value as a row
    assert text == tables.summary(tmp_path / "walk")
    mean = result.values[("walk", "end")].mean()
    assert text.startswith("model test/walk (test/walk): 3 seeds from base seed 7") and f"{mean:.4g} [" in text
    assert cli.main(["results", str(tmp_path / "walk"), "--csv", str(tmp_path / "walk.csv")]) == 0
    rows = _rows(tmp_path / "walk.csv")
    assert len(rows) == 3 + 3 * 6 and rows[0] == {"row": "walk", "quantity": "end", "seed": "0", "step": "",
                                                    "value": repr(float(result.values[("walk", "end")][0]))}
    path = [float(r["value"]) for r in rows if r["quantity"] == "path" and r["seed"] == "2"]
    assert path == result.values[("walk", "path")][2].tolist()
    # the same spec computes the same bits; another base seed other ones
    np.testing.assert_array_equal(compute(spec).values[("walk", "path")], result.values[("walk", "path")])
    other = compute(spec.replace(base_seed=8)).values[("walk", "path")]
    np.testing.assert_array_equal(other[:2], result.values[("walk", "path")][1:])  # seed s is key(base + s)
    with pytest.raises(store.ResultError, match="not a model result"):
        load_model_run(_population_folder(tmp_path))


def _rows(path) -> list[dict]:
    return list(csv.DictReader(path.read_text().splitlines()))


def _population_folder(tmp_path):
    folder = tmp_path / "other"
    store.write_folder(folder, lambda tmp: (tmp / "x.txt").write_text("x"), kind="population")
    return folder


@pytest.mark.parametrize("change, message", [
    (dict(config={"model": "test/walk", "steps": 3}), r"missing \['scale'\]"),
    (dict(config={"model": "test/walk", "steps": 3, "scale": 1.0, "stride": 2}), r"not \['stride'\]"),
    (dict(config={"model": "test/walk", "steps": 3, "scale": 1.0, "seeds": 2}), r"not \['seeds'\]"),
    (dict(config={"model": "test/none", "steps": 3}), "registered model"),
    (dict(env="coins"), "plays ipd"),
    (dict(env_options={"num_rounds": 5}), "no env_options"),
    (dict(seeds=(1, 2)), r"seeds are 0 \.\. n-1"),
])
def test_a_bad_model_spec_is_refused_before_anything_runs(change, message):
    spec = model_spec(WALK.name, {"steps": 3, "scale": 1.0}, seeds=2).replace(**change)
    CALLS.clear()
    with pytest.raises(ValueError, match=message):
        compute(spec)
    assert CALLS == []


def test_a_model_that_does_not_return_what_it_declares_is_an_error():
    with pytest.raises(ValueError, match=r"did not return \[\('walk', 'missing'\)\]"):
        compute(model_spec(FORGETFUL.name, {"steps": 2, "scale": 1.0}, seeds=2))


def test_listeners_get_the_series_as_curves_and_the_values_as_the_summary(tmp_path):
    log = CsvLog(tmp_path / "csv")
    result = compute(model_spec(WALK.name, {"steps": 4, "scale": 1.0}, seeds=2), trackers=Listeners([log]))
    log.close()
    assert result.listener_failures == []
    rows = _rows(tmp_path / "csv" / "metrics.csv")
    assert [(r["seed"], r["update"]) for r in rows] == [(s, u) for s in "01" for u in "1234"]
    path = np.array([[float(r["walk/path"]) for r in rows if r["seed"] == s] for s in "01"])
    np.testing.assert_allclose(path, result.values[("walk", "path")], rtol=1e-6)
    summary = _rows(tmp_path / "csv" / "summary.csv")
    np.testing.assert_allclose([float(r["walk/end"]) for r in summary], result.values[("walk", "end")], rtol=1e-6)


def test_a_signal_while_a_model_computes_stops_at_once_and_writes_nothing(tmp_path):
    spec = model_spec(CTRL_C.name, {}, seeds=2)
    with pytest.raises(runner.Stopped, match="stopped at once; nothing was saved") as stop:
        runner.execute(spec, runner.Destination(tmp_path / "out"), Listeners(), progress=False)
    assert stop.value.at_once and not (tmp_path / "out").exists()


def _two_models_entry(second: str, settings: dict) -> Entry:
    """An entry of two model conditions: the walk, then ``second``."""
    walk = model_condition("walk", WALK.name, {"small": {"steps": 5, "scale": 1.0}})
    other = model_condition("other", second, {"small": settings})
    return Entry(name="toy-models", title="t", citation="c", conditions=(walk, other), measures=(), references=(),
                 criterion=lambda f: sign_verdict(f[("walk", "end")] + 100.0, "end"), criterion_text="-",
                 seeds={"small": 2})


def test_a_stopped_reproduction_keeps_its_model_runs_and_a_rerun_reads_them_back(tmp_path):
    out = tmp_path / "rep"
    CALLS.clear()
    with pytest.raises(Stopped, match="stopped during other") as stop:
        reproduce(_two_models_entry(CTRL_C.name, {}), "small", out=out, progress=False)
    assert "the 1 run(s) finished are kept" in str(stop.value) and CALLS == ["walk", "ctrl-c"]
    assert store.folder_state(out / store.RESUME_DIR / "walk") == "result"
    # the same command once the second model no longer stops: the walk is read back, not computed again
    entry = _two_models_entry(WALK.name, {"steps": 3, "scale": 2.0, "row": "other"})
    CALLS.clear()
    rep = reproduce(entry, "small", out=out, progress=False, log=["csv"], log_dir=tmp_path / "runs")
    assert CALLS == ["other"]  # the second condition alone
    fresh = reproduce(entry, "small", progress=False)
    for key in fresh.finals:
        np.testing.assert_array_equal(rep.finals[key], fresh.finals[key])
    assert load_model_run(out / "walk").spec.config == {"model": WALK.name, "steps": 5, "scale": 1.0}
    # --log streamed both runs, the one read back too
    logged = sorted(p.parent.parent.name for p in (tmp_path / "runs").rglob("csv/summary.csv"))
    assert logged == ["other", "walk"]


def test_every_registered_model_is_a_name_its_entry_uses():
    used = {cond.config[s]["model"] for e in ENTRIES.values() for cond in e.conditions if cond.kind == "model"
            for s in cond.scales}
    assert {name for name in MODELS if not name.startswith("test/")} == used


# ------------------------------------------------------------- run_spec: Python's door
def _tiny_population(seeds: int = 2) -> JobSpec:
    return results.population_spec(TrainConfig().replace(**{**TINY_IPD, "num_updates": 3}), "ipd", {"num_rounds": 5},
                                   list(range(seeds)), 0, None)


def test_run_spec_keeps_a_stopped_population_and_resume_gives_the_bits_of_a_run_never_stopped(tmp_path,
                                                                                               monkeypatch):
    spec, out = _tiny_population(), tmp_path / "ipd"
    whole, text = run_spec(spec, progress=False)  # in memory: nothing written
    assert text == "" and not out.exists()
    with monkeypatch.context() as mp:
        mp.setattr(runner.run_module, "run", run_stopped_at(runner.run_module.run, [], 1))
        with pytest.raises(runner.Stopped, match="stopped after update 1 of 3"):
            run_spec(spec, out, progress=False)
    assert store.folder_state(out) == "unfinished"
    with pytest.raises(ValueError, match="other settings"):
        run_spec(spec.replace(base_seed=5), out, resume=True, progress=False)
    resumed, text = run_spec(spec, out, resume=True, progress=False)
    assert "ipd" in text and store.folder_state(out) == "result"
    for name, value in whole.metrics.items():
        np.testing.assert_array_equal(resumed.metrics[name], value, err_msg=name)
    assert load_run(out).spec == spec
    with pytest.raises(store.OutputError, match="--overwrite"):
        run_spec(spec, out, progress=False)  # a finished result is replaced only with overwrite


def test_run_spec_refuses_what_it_cannot_do_before_anything_runs(tmp_path):
    spec = model_spec(WALK.name, {"steps": 2, "scale": 1.0}, seeds=2)
    for kwargs in (dict(resume=True), dict(checkpoint_every=2), dict(overwrite=True)):
        with pytest.raises(ValueError, match="need an output folder"):
            run_spec(spec, **kwargs)
    with store.claim(tmp_path / "held"), pytest.raises(store.OutputError):
        run_spec(spec, tmp_path / "held", progress=False)  # another job holds the folder
    CALLS.clear()
    result, _ = run_spec(spec, tmp_path / "walk", progress=False, log=["csv"], log_dir=tmp_path / "runs")
    assert CALLS == ["walk"] and load_model_run(tmp_path / "walk").values.keys() == result.values.keys()
    assert len(list((tmp_path / "runs").rglob("csv/summary.csv"))) == 1
    with pytest.raises(store.ResultError, match="no unfinished run"):
        run_spec(spec, tmp_path / "walk", resume=True, progress=False)  # a model keeps no checkpoint
