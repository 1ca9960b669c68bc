"""socialjax reproduce, without training: the criteria, the grouping of conditions into
one run, the entries' declarations and the command's errors. Each entry's small-scale
run has its own test file beside this one."""

import dataclasses
import json

import numpy as np
import pytest
from support import TINY_IPD, run_stopped_at, two_run_entry

import socialjax as sj
from socialjax import cli
from socialjax.reproduce import ENTRIES, core, get_entry
from socialjax.reproduce.core import (
    Analysis,
    Condition,
    Entry,
    Measure,
    Reference,
    combined_verdict,
    final_values,
    grid_index,
    group_plans,
    interval,
    measure_curve,
    merged_config,
    ordered_verdict,
    reproduce,
    separated,
    sign_verdict,
)
from socialjax.reproduce.schelling import compositions, diagram
from socialjax.reproduce.timings import Timings
from socialjax.train import TrainConfig, store
from socialjax.train.models import model_spec
from socialjax.train.runner import run_module


def test_final_values_average_the_last_fifth_and_skip_updates_without_an_episode():
    curve = np.array([[0, 0, 0, 0, 0, 0, 0, 0, 4.0, 6.0],
                      [0, 0, 0, 0, 0, 0, 0, 0, np.nan, 2.0],
                      [np.nan] * 10])
    np.testing.assert_array_equal(final_values(curve), [5.0, 2.0, np.nan])


def test_a_measure_reads_its_metric_as_a_share_a_total_or_a_change():
    """A measure of per-member metrics ``(G=1, S, U, P)``: averaged over members, summed
    with ``total``, as a share of another metric (NaN where that is 0), divided by its
    normaliser of the env; its value over the last or first fifth, or their difference."""
    cooperated = np.zeros((1, 2, 5, 3))
    played = np.zeros((1, 2, 5, 3))
    cooperated[0, 0, :, 0], played[0, 0, :, :] = [0, 1, 2, 3, 4], 2.0  # seed 0: 0..4 of 6 rounds
    metrics = {"events/cooperated": cooperated, "events/played": played}
    share = Measure("c", "events/cooperated", "share", denominator="events/played")
    np.testing.assert_allclose(measure_curve(metrics, share)[0], np.arange(5) / 6.0)
    assert np.isnan(measure_curve(metrics, share)[1]).all()  # seed 1 played nothing
    total = Measure("t", "events/played", "total", total=True, normaliser=lambda env: env.num_agents)
    np.testing.assert_allclose(measure_curve(metrics, total, sj.make("ipd"))[0], 3.0)  # 3 x 2 / 2 players
    mean = Measure("m", "events/played", "mean")
    np.testing.assert_allclose(measure_curve(metrics, mean)[0], 2.0)
    curve = measure_curve(metrics, share)
    np.testing.assert_allclose(final_values(curve, "change")[0], 4 / 6.0)
    assert np.isnan(final_values(curve, "change")[1])
    with pytest.raises(ValueError, match="window"):
        Measure("x", "m", "x", window="middle")


def test_interval_is_the_mean_inside_a_bootstrap_band():
    mean, low, high = interval(np.array([1.0, 2.0, 3.0, np.nan]))
    assert mean == 2.0 and 1.0 <= low < 2.0 < high <= 3.0
    assert np.isnan(interval(np.array([np.nan]))[0])


@pytest.mark.parametrize("higher, lower, expected", [
    ([10.0, 11.0, 12.0], [1.0, 2.0, 3.0], "reproduced"),
    ([3.0, 9.0, 6.0], [1.0, 7.0, 4.0], "partly"),
    ([1.0, 2.0, 3.0], [10.0, 11.0, 12.0], "not reproduced"),
])
def test_the_verdict_follows_from_the_intervals(higher, lower, expected):
    finals = {("a", "x"): np.array(higher), ("b", "x"): np.array(lower)}
    verdict, reason = ordered_verdict(finals, ("a", "x"), ("b", "x"), "x")
    assert verdict == expected and "a " in reason
    assert separated(np.array(higher), np.array([np.nan])) == "no"


@pytest.mark.parametrize("cleanup_gap, harvest_gap, expected", [
    (10.0, 10.0, "reproduced"), (10.0, -10.0, "partly"), (0.5, 0.5, "partly"), (-10.0, -10.0, "not reproduced"),
])
def test_inequity_aversion_needs_both_games_for_reproduced(cleanup_gap, harvest_gap, expected):
    base = np.array([0.0, 1.0, 2.0])
    finals = {(f"{game}/{form}", "collective_return"): base for game in ("cleanup", "harvest")
              for form in ("selfish", "advantageous", "disadvantageous")}
    finals[("cleanup/advantageous", "collective_return")] = base + cleanup_gap
    finals[("harvest/disadvantageous", "collective_return")] = base + harvest_gap
    verdict, reason = get_entry("inequity-aversion").criterion(finals)
    assert verdict == expected and "Cleanup" in reason and "Harvest" in reason


def test_every_entry_is_complete_and_its_configs_are_valid():
    assert set(ENTRIES) == {"cleanup-reward", "harvest-reward", "inequity-aversion", "gathering-scarcity",
                            "commons-metrics", "schelling", "norms", "weis-incontext", "donor-evolution",
                            "punishment", "punishment-learners", "commons-institutions", "lattice-collapse",
                            "partner-punishment", "baselines"}
    for entry in ENTRIES.values():
        assert {"small", "cpu", "paper"} <= set(entry.scales), entry.name  # cpu: the command's default
        keys = set(entry.keys("paper"))
        assert set(entry.keys("small")) <= keys and (entry.conditions_at("small") or entry.analysis), entry.name
        for ref in entry.references:
            assert (ref.condition, ref.measure) in keys, (entry.name, ref)
            assert ref.source and ref.how, (entry.name, ref)
        for cond in entry.conditions:
            for scale in cond.scales:
                sj.make(cond.env[scale], **dict(cond.env_options[scale]))
                if cond.kind == "model":  # its settings are ones its model takes, all of them given
                    model, settings = cond.model(scale)
                    model.settings_of(model_spec(model.name, settings, 2))
                    continue
                config = TrainConfig().replace(**dict(cond.config[scale]))
                config.validate()
                assert not config.unread(), (entry.name, cond.name, scale, config.unread())
    with pytest.raises(ValueError, match="Did you mean 'cleanup-reward'"):
        get_entry("cleanup-rewards")


def test_list_shows_the_entries(capsys):
    assert cli.main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in ENTRIES)


def test_bad_requests_fail_before_training(capsys, tmp_path):
    for argv, message in ((["reproduce"], "give an experiment"), (["reproduce", "nope"], "unknown experiment"),
                          (["reproduce", "cleanup-reward", "--seeds", "1"], "at least 2"),
                          (["reproduce", "norms", "--seed", "-1"], "expected an integer in [0, 2**31)"),
                          (["reproduce", "norms", "--seed", "1.5"], "expected an integer")):
        with pytest.raises(SystemExit):
            cli.main(argv)
        assert message in capsys.readouterr().err


@pytest.mark.parametrize("values, expected", [
    ([1.0, 2.0, 3.0], "reproduced"), ([-1.0, 2.0, 3.0], "partly"), ([-1.0, -2.0, 0.5], "not reproduced"),
    ([np.nan, np.nan], "not reproduced"),
])
def test_sign_verdict_needs_the_interval_on_the_expected_side(values, expected):
    assert sign_verdict(np.array(values), "x")[0] == expected
    assert sign_verdict(-np.array(values), "x", positive=False)[0] == expected  # the mirror image


def test_combined_verdict():
    r, p, n = ("reproduced", "a"), ("partly", "b"), ("not reproduced", "c")
    assert combined_verdict([r, r]) == ("reproduced", "a; a")
    assert combined_verdict([r, n])[0] == "partly" and combined_verdict([p, n])[0] == "partly"
    assert combined_verdict([n, n])[0] == "not reproduced"


def test_conditions_differing_only_in_hyperparameter_values_train_as_one_grid():
    entry = get_entry("inequity-aversion")
    plans = [(c, None, TrainConfig().replace(**dict(c.config["small"]))) for c in entry.conditions]
    groups = group_plans(plans, "small")
    assert [[c.name for c, _, _ in g] for g in groups] == [
        ["cleanup/selfish", "cleanup/advantageous", "cleanup/disadvantageous"],
        ["harvest/selfish", "harvest/advantageous", "harvest/disadvantageous"]]
    merged = merged_config(groups[0])
    assert merged.ia_alpha == [0.0, 5.0] and merged.ia_beta == [0.0, 0.05]
    grid = merged.hparam_grid()
    fake = type("R", (), {"grid": grid})()
    picked = {c.name: grid_index(fake, config) for c, _, config in groups[0]}
    for name, g in picked.items():
        form = {"cleanup/selfish": (0, 0), "cleanup/advantageous": (0, 0.05), "cleanup/disadvantageous": (5, 0)}
        assert (grid["ia_alpha"][g], grid["ia_beta"][g]) == pytest.approx(form[name])
    # different reward forms, env options or a sweep of the condition's own: separate runs
    cleanup = get_entry("cleanup-reward")
    plans = [(c, None, TrainConfig().replace(**dict(c.config["small"]))) for c in cleanup.conditions]
    assert len(group_plans(plans, "small")) == 2
    swept = [(c, None, config.replace(lr=[1e-3, 2e-3], reward="common")) for c, _, config in plans]
    assert len(group_plans(swept, "small")) == 2


def test_a_grid_point_of_a_result_reads_as_its_own_run():
    from socialjax.train import RunResult

    grid = {"lr": np.array([1.0, 2.0, 3.0])}
    result = RunResult(TrainConfig(), "ipd", np.arange(2), grid, {"return": np.arange(12.0).reshape(3, 2, 2)},
                       {"w": np.zeros((3, 2, 4))}, ["grid point 1 (lr=2), seed 0: halted", "grid point 2 (lr=3), x"],
                       1.0)
    one = result.point(1, TrainConfig().replace(lr=2.0))
    assert one.config.lr == 2.0 and one.grid["lr"].tolist() == [2.0] and one.num_runs == 2
    np.testing.assert_array_equal(one.metrics["return"], result.metrics["return"][1:2])
    assert one.states["w"].shape == (1, 2, 4) and one.nan_runs == ["grid point 1 (lr=2), seed 0: halted"]


def test_the_schelling_diagram_reads_each_role_at_each_count_of_other_cooperators():
    rows = compositions(4)
    assert rows.shape == (20, 4) and sorted(set((rows == 0).sum(axis=1))) == [0, 1, 2, 3, 4]
    for k in range(5):  # every seat position holds a cooperator equally often
        block = rows[(rows == 0).sum(axis=1) == k]
        assert ((block == 0).sum(axis=0) == k).all()
    k = (rows == 0).sum(axis=1)
    returns = (10.0 * k[:, None] + 5.0 * (rows == 1))[None]  # a seat earns 10 per cooperator, +5 if defecting
    d = diagram(rows, np.concatenate([returns, 2 * returns]))
    np.testing.assert_allclose(d["cooperator"], [[10, 20, 30, 40], [20, 40, 60, 80]])
    np.testing.assert_allclose(d["defector"], [[5, 15, 25, 35], [10, 30, 50, 70]])


def test_commons_metrics_criterion_reads_each_runs_change():
    entry = get_entry("commons-metrics")
    start = np.array([1.0, 1.1, 0.9])
    finals = {("selfish", f"{m}_{w}"): start for m in ("efficiency", "sustainability") for w in ("start", "end")}
    finals[("selfish", "efficiency_end")] = start + 1.0
    finals[("selfish", "sustainability_end")] = start - 1.0
    assert entry.criterion(finals)[0] == "reproduced"
    finals[("selfish", "sustainability_end")] = start + 1.0
    assert entry.criterion(finals)[0] == "partly"


def test_an_entry_of_analysis_alone_trains_nothing_and_writes_its_folder(tmp_path):
    """An entry may have no training condition (a model computed from its seeds): the
    analysis gives every value, and the table, verdict and figure come from it."""
    seen = {}

    def compute(runs, scale, seeds, base_seed):
        seen["runs"], seen["base_seed"] = runs, base_seed
        return {("model", "cooperation"): np.linspace(0.6, 0.8, seeds), ("model", "defection"): np.full(seeds, 0.3)}

    keys = (("model", "cooperation"), ("model", "defection"))
    entry = Entry(name="toy", title="a model", citation="nobody", conditions=(), measures=(),
                  references=(Reference("model", "cooperation", 0.7, "a source", "text"),),
                  criterion=lambda f: sign_verdict(f[("model", "cooperation")] - f[("model", "defection")], "gap"),
                  criterion_text="cooperation above defection",
                  analysis=Analysis(keys={"small": keys, "paper": keys}, compute=compute))
    rep = reproduce(entry, "small", 3, out=tmp_path / "toy", progress=False)
    assert seen["runs"] == {} and seen["base_seed"] == 0 and rep.verdict == "reproduced"
    assert [(r["condition"], r["measure"], r["published"]) for r in rep.rows] == [
        ("model", "cooperation", 0.7), ("model", "defection", None)]
    assert rep.rows[0]["ours"] == pytest.approx(0.7) and rep.rows[0]["ours_ci_low"] == pytest.approx(0.6)
    assert (tmp_path / "toy" / "figure.png").stat().st_size > 5_000
    assert "verdict: REPRODUCED" in (tmp_path / "toy" / "summary.txt").read_text()
    other = reproduce(entry, "small", 3, base_seed=1000, out=tmp_path / "toy-1000", progress=False)
    assert seen["base_seed"] == 1000 and other.base_seed == 1000
    assert "3 seeds from 1000" in (tmp_path / "toy-1000" / "summary.txt").read_text()
    for bad in (-1, 2**31, 1.5, True):
        with pytest.raises(ValueError, match="base_seed"):
            reproduce(entry, "small", 3, base_seed=bad, progress=False)
    missing = dataclasses.replace(entry, analysis=Analysis(keys={"small": keys + (("model", "x"),), "paper": keys},
                                                           compute=compute))
    with pytest.raises(ValueError, match="did not return"):
        reproduce(missing, "small", 2, progress=False)
    # a series (one value per generation, say) goes to the curves, not to the table
    series = (("model", "per generation"),)

    def compute_series(runs, scale, seeds, base_seed):
        return {**compute(runs, scale, seeds, base_seed), series[0]: np.arange(seeds * 4.0).reshape(seeds, 4)}

    with_series = dataclasses.replace(entry, analysis=Analysis(keys={"small": keys, "paper": keys},
                                                               compute=compute_series, series={"small": series}))
    rep = reproduce(with_series, "small", 2, progress=False)
    np.testing.assert_array_equal(rep.curves[series[0]], [[0, 1, 2, 3], [4, 5, 6, 7]])
    assert series[0] not in rep.finals and len(rep.rows) == 2
    with pytest.raises(ValueError, match="did not return"):
        reproduce(dataclasses.replace(with_series, analysis=dataclasses.replace(with_series.analysis,
                                                                                compute=compute)), "small", 2,
                  progress=False)


# ---------------------------------------------------------------------- a stopped reproduction
def test_a_stopped_reproduction_keeps_its_runs_and_a_rerun_continues_them(tmp_path, monkeypatch):
    """Stopped (Ctrl-C) after the first update of its second run, a reproduction leaves
    its first run saved and the second one's state as a checkpoint, the folder an
    unfinished run; the same call again reads the first back, continues the second from
    its checkpoint, and gives the bits of a reproduction never stopped. Other settings
    are refused there."""
    entry, out = two_run_entry(), tmp_path / "rep"
    whole = reproduce(entry, "small", out=tmp_path / "whole", progress=False)
    real_run, trained = run_module.run, []

    monkeypatch.setattr(run_module, "run", run_stopped_at(real_run, trained, 2))
    with pytest.raises(core.Stopped, match=r"stopped during long: stopped after update 1 of 2: the training state "
                                           r"is saved in .*continue with: the same socialjax reproduce command; "
                                           r"the 1 run\(s\) finished are kept in"):
        reproduce(entry, "small", out=out, progress=False)
    assert store.folder_state(out) == "unfinished" and store.folder_state(out / "resume" / "long") == "unfinished"
    with pytest.raises(store.OutputError, match="other settings .*seeds 2, .*not .*seeds 3"):
        reproduce(entry, "small", 3, out=out, progress=False)
    resumed = []
    monkeypatch.setattr(run_module, "run", lambda env, config, **kw: resumed.append((kw["label"], kw["resume"]))
                        or real_run(env, config, **kw))
    again = reproduce(entry, "small", out=out, progress=False)
    assert [(label, snapshot.updates_done) for label, snapshot in resumed] == [("toy-ipd/long", 1)]  # short read back
    assert store.folder_state(out) == "result" and not (out / store.RESUME_DIR).exists()
    store.verify(out, kind="reproduction")
    for key, values in whole.finals.items():
        np.testing.assert_array_equal(again.finals[key], values, err_msg=str(key))
    # where the time went: both runs trained (2 seeds x 2 updates x 2 games x 5 steps each), the
    # phases inside the total, and the record and summary say so; a run read back adds no env steps
    t = whole.timings
    assert t.env_steps == 2 * (2 * 2 * 2 * 5) and again.timings.env_steps == 2 * 2 * 2 * 5
    assert 0 < t.training.compile_seconds < t.training.seconds
    assert t.training.seconds + t.writing.seconds <= t.total and t.writing.seconds > 0 and t.host_seconds >= 0
    assert t.env_steps_per_second == pytest.approx(t.env_steps / t.total)
    record = json.loads((tmp_path / "whole" / core.RESULT_FILE).read_text())
    assert record["timings"] == t.to_json() and record["seconds"] == pytest.approx(t.total)
    assert Timings.from_json(record["timings"]).to_json() == t.to_json()
    assert t.line() in (tmp_path / "whole" / core.SUMMARY_FILE).read_text()


def test_conditions_trained_as_one_grid_are_read_back_on_a_rerun(tmp_path, monkeypatch):
    """Two conditions that differ only in a hyperparameter train as one grid; stopped in
    the run after it, the same call again reads the grid back instead of training it
    (its saved sweep reads back as a tuple, the rerun's is a list: they are the same)."""
    conditions = tuple(Condition(name, env={"small": "ipd"}, env_options={"small": {"num_rounds": rounds}},
                                 config={"small": {**TINY_IPD, "lr": lr}})
                       for name, rounds, lr in (("slow", 5, 1e-3), ("fast", 5, 3e-3), ("long", 10, 1e-3)))
    entry = dataclasses.replace(two_run_entry(), conditions=conditions)
    real_run, trained = run_module.run, []
    monkeypatch.setattr(run_module, "run", run_stopped_at(real_run, trained, 2))
    with pytest.raises(core.Stopped):
        reproduce(entry, "small", out=tmp_path / "rep", progress=False)
    assert trained == ["toy-ipd/slow, fast", "toy-ipd/long"]
    trained.clear()
    monkeypatch.setattr(run_module, "run", lambda env, config, **kw: trained.append(kw["label"])
                        or real_run(env, config, **kw))
    reproduce(entry, "small", out=tmp_path / "rep", progress=False)
    assert trained == ["toy-ipd/long"]  # the grid was read back


def test_a_stop_without_an_output_folder_says_nothing_is_kept(monkeypatch):
    real_run, trained = core.run, []
    monkeypatch.setattr(core, "run", run_stopped_at(real_run, trained, 1))
    with pytest.raises(core.Stopped, match=r"stopped during short \(update 1 of 2\); nothing is kept without"):
        reproduce(two_run_entry(), "small", progress=False)


def test_the_reproduce_command_stopped_exits_130_saying_how_to_continue(tmp_path, monkeypatch, capsys):
    """Ctrl-C during a run of ``socialjax reproduce`` (the README's first command is one):
    status 130, no traceback, one line naming the run, where its state is and how to
    continue; nothing printed before it under ``--quiet``."""
    entry = two_run_entry()
    monkeypatch.setitem(ENTRIES, entry.name, entry)
    monkeypatch.setattr(run_module, "run", run_stopped_at(run_module.run, [], 1))
    with pytest.raises(SystemExit) as stopped:
        cli.main(["reproduce", entry.name, "--scale", "small", "--out", str(tmp_path / "r"), "--quiet"])
    assert stopped.value.code == 130
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip().splitlines()[-1].startswith(
        f"toy-ipd: stopped during short: stopped after update 1 of 2: the training state is saved in {tmp_path / 'r'}")
    assert err.strip().endswith("continue with: the same socialjax reproduce command")
