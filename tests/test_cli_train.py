"""``socialjax train PRESET``, ``socialjax evaluate DIR`` and ``socialjax render
--checkpoint DIR``: presets, overrides, errors before compiling, the files a run writes,
the checkpoint round trip, and playing / rendering a trained population.

Compilation dominates the time here, so one tiny IPD run (a two-point learning-rate
sweep x 2 seeds x 3 updates) is shared by most tests, and one tiny Harvest run by the
rendering test."""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import re
import time
from types import SimpleNamespace

import jax
import numpy as np
import pytest
from PIL import Image

from socialjax import cli
from socialjax.train import population, presets
from socialjax.train import results as results_mod
from socialjax.train.devices import lay_out
from socialjax.train.results import OUTPUT_FILES, load_run
from socialjax.viz.viewer import viewer_data

run_mod = importlib.import_module("socialjax.train.run")  # the module (socialjax.train.run is also a function)

IPD_ARGS = ["train", "ipd-ppo", "--set", "num_updates=3", "--set", "num_envs=4", "--seeds", "2",
            "--set", "lr=[1e-3, 3e-3]"]


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


def cli_error(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    return capsys.readouterr().err


def train_with_spy(argv: list[str]):
    """Run ``socialjax train`` and keep the ``RunResult`` that it saved."""
    kept = {}
    save = results_mod.save_run

    def spy(result, *args, **kwargs):
        kept["result"] = result
        return save(result, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(results_mod, "save_run", spy)
        code, out, err = run_cli(argv)
    return SimpleNamespace(code=code, out=out, err=err, result=kept.get("result"))


@pytest.fixture(scope="module")
def ipd_run(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("cli_train") / "ipd"
    ran = train_with_spy(IPD_ARGS + ["--out", str(out_dir)])
    ran.dir = out_dir
    return ran


@pytest.fixture(scope="module")
def harvest_run(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("cli_train") / "harvest"
    code, out, err = run_cli([
        "train", "harvest-ippo-small", "--env-option", "num_agents=2", "--seeds", "1", "--quiet",
        "--set", "num_updates=1", "--set", "num_envs=1", "--set", "rollout_len=8", "--set", "num_minibatches=1",
        "--set", "update_epochs=1", "--set", "hidden=8", "--set", "channels=4", "--set", "evaluate=False",
        "--out", str(out_dir),
    ])
    assert code == 0, err
    return out_dir


# ----------------------------------------------------------------------------- errors
def test_unknown_preset_names_the_presets(capsys):
    err = cli_error(["train", "ipd_ppo"], capsys)
    assert "unknown preset 'ipd_ppo'" in err and "Did you mean 'ipd-ppo'" in err
    for name in presets.PRESETS:
        assert name in err


@pytest.fixture
def no_compile(monkeypatch):
    """Fail the test if anything gets as far as building or compiling the loop."""

    def refuse(*args, **kwargs):
        raise AssertionError("compiled or built the training loop before reporting the error")

    monkeypatch.setattr(population, "make_train", refuse)
    monkeypatch.setattr(run_mod, "make_train", refuse)
    monkeypatch.setattr(run_mod, "run", refuse)
    monkeypatch.setattr(jax, "jit", refuse)


@pytest.mark.parametrize("argv, message", [
    (["--set", "nonexistent=1"], "TrainConfig has no field(s) ['nonexistent']"),
    (["--set", "num_envs=0"], "num_envs must be a positive int, got 0"),
    (["--set", "lr=[1e-3, -1]"], "lr=[0.001, -1.0] is below its minimum 0.0"),
    (["--set", "lr=fast"], "lr takes a number or a list of numbers"),
    (["--set", "reward=selfish"], "reward must be one of"),
    (["--set", "reward=[common, individual]"], "not a list Python can read; quote each item"),
    (["--set", "reward=['common', 'common', 'common']"], "names 3 forms but the population has 2 learners"),
    (["--set", "ia_alpha=-1"], "ia_alpha=-1 is below its minimum 0.0"),
    (["--set", "algo='sarsa'"], "algo must be one of"),
    (["--set", "scripted=[tft]"], "scripted takes a list"),
    (["--env-option", "num_rounds=0"], "num_rounds must be an int >= 1"),
    (["--env-option", "colour=1"], "unknown option(s) ['colour']"),
    (["--set", "recurrent=maybe"], "--set recurrent must be a bool (True/False"),
    (["--set", "evaluate=2"], "--set evaluate must be a bool (True/False"),
    (["--set", "mutation_std=1e999"], "mutation_std must be a finite number >= 0, got inf"),
    (["--env-option", "observe_round=maybe"], "observe_round must be a bool (True/False"),
    (["--env-option", "noise=1e999"], "MatrixParams.noise=inf is not finite"),
    (["--generations", "3"], "donor-evolution only: --generations"),
    (["--updates", "3", "--set", "num_updates=4"], "give the number of updates once"),
])
def test_bad_overrides_fail_fast_before_compiling(argv, message, capsys, no_compile):
    start = time.perf_counter()
    err = cli_error(["train", "ipd-ppo", *argv], capsys)
    assert message in err
    assert time.perf_counter() - start < 10.0


def test_population_that_cannot_fill_the_seats_fails_before_compiling(capsys, monkeypatch):
    monkeypatch.setattr(run_mod, "run", lambda *a, **k: pytest.fail("reached run()"))
    err = cli_error(["train", "ipd-mixed", "--set", "num_envs=3"], capsys)
    assert "the population cannot fill the seats" in err


def test_donor_evolution_keeps_its_flags(monkeypatch, capsys):
    import socialjax.train.cultural_evolution as ce

    seen = {}
    monkeypatch.setattr(ce, "run_experiment", lambda **kwargs: seen.update(kwargs))
    assert cli.main(["train", "donor-evolution", "--seeds", "8", "--generations", "3", "--multipliers", "2,3",
                     "--schedule", "alternating", "--punishment", "--out", "somewhere", "--quiet"]) == 0
    assert seen.pop("log").members == []  # no --log: a fan-out of no trackers
    assert seen == dict(num_seeds=8, num_generations=3, multipliers=(2.0, 3.0), out_dir="somewhere", seed=0,
                        env_options={"schedule": "alternating", "punishment": True}, verbose=False, overwrite=False,
                        checkpoint_every=None, resume=False)
    assert cli.main(["train", "donor-evolution"]) == 0
    assert seen["num_seeds"] == 256 and seen["num_generations"] == 10 and seen["multipliers"] == (1.5, 2.0, 3.0)
    assert seen["env_options"] == {"schedule": "released", "punishment": False}
    assert "not for donor-evolution: --set" in cli_error(["train", "donor-evolution", "--set", "lr=1"], capsys)


def test_donor_evolution_set_reaches_the_evolution(monkeypatch, capsys):
    """``--set`` takes the evolution's settings (DonorEvolutionConfig fields) and
    ``--env-option`` the donor game's; a key that is neither is refused before compiling."""
    import socialjax.train.cultural_evolution as ce

    seen = {}
    monkeypatch.setattr(ce, "run_experiment", lambda **kwargs: seen.update(kwargs))
    assert cli.main(["train", "donor-evolution", "--set", "mutation_std=0.2", "--set", "num_generations=4",
                     "--env-option", "num_agents=4", "--out", "somewhere", "--quiet"]) == 0
    assert seen["mutation_std"] == 0.2 and seen["num_generations"] == 4
    assert seen["env_options"] == {"schedule": "released", "punishment": False, "num_agents": 4}
    err = cli_error(["train", "donor-evolution", "--set", "lr=1"], capsys)
    assert "--set lr: not for donor-evolution" in err and "survival_fraction" in err
    assert "survival_fraction must be in (0, 1]" in cli_error(
        ["train", "donor-evolution", "--set", "survival_fraction=2"], capsys)
    assert "mutation_std must be a finite number >= 0" in cli_error(
        ["train", "donor-evolution", "--set", "mutation_std=1e999"], capsys)
    assert "strategy_space must be one of ('linear', 'reciprocal', 'sanctioning')" in cli_error(
        ["train", "donor-evolution", "--set", "strategy_space=neural"], capsys)
    assert "init_gift_max must be a number in [0, 1]" in cli_error(
        ["train", "donor-evolution", "--set", "init_gift_max=2"], capsys)
    assert "give the number of generations once" in cli_error(
        ["train", "donor-evolution", "--generations", "3", "--set", "num_generations=3"], capsys)
    assert "--env-option" in cli_error(["train", "donor-evolution", "--env-option", "num_agents=0"], capsys)


def test_donor_evolution_set_takes_effect(tmp_path):
    """With every agent surviving and no mutation (``--set survival_fraction=1.0 --set
    mutation_std=0``), the population never changes: its mean bias is the same in every
    generation, and the settings are saved with the result."""
    assert cli.main(["train", "donor-evolution", "--seeds", "2", "--generations", "3", "--multipliers", "2",
                     "--set", "survival_fraction=1.0", "--set", "mutation_std=0.0", "--env-option", "num_agents=4",
                     "--out", str(tmp_path), "--quiet"]) == 0
    with np.load(tmp_path / "metrics.npz") as data:
        bias = data["mean_bias"]
    assert bias.shape == (1, 2, 3) and np.all(bias == bias[..., :1]) and bias[0, 0, 0] != bias[0, 1, 0]
    meta = json.loads((tmp_path / "config.json").read_text())
    assert meta["job"] == "donor-evolution" and meta["seeds"] == [0, 1]  # the run's spec (socialjax.train.spec)
    assert meta["config"] == {"num_generations": 3, "multipliers": [2.0], "survival_fraction": 1.0,
                              "mutation_std": 0.0}
    assert meta["env_options"]["num_agents"] == 4


def test_presets_build_and_validate():
    for name, preset in presets.PRESETS.items():
        if preset.kind != presets.POPULATION:
            continue
        config = preset.make_config()
        assert config.log_every == max(1, config.num_updates // presets.PROGRESS_LINES), name
        population.make_train(preset.make_env(), config)  # builds the plan and learner: no compile
    paper = presets.get_preset("cleanup-ippo-paper").make_config()
    assert (paper.num_envs, paper.rollout_len, paper.num_updates) == (256, 1000, 390)
    assert paper.num_envs * paper.rollout_len * paper.num_updates <= 1e8 < paper.num_envs * paper.rollout_len * 391
    assert (paper.lr, paper.update_epochs, paper.clip_eps, paper.ent_coef, paper.gamma, paper.gae_lambda) == (
        5e-4, 2, 0.2, 0.01, 0.99, 0.95)


# ------------------------------------------------------------------- a tiny real run
def test_train_writes_every_output(ipd_run):
    assert ipd_run.code == 0, ipd_run.err
    for name in OUTPUT_FILES:
        assert (ipd_run.dir / name).is_file(), name
    result = ipd_run.result
    with np.load(ipd_run.dir / "metrics.npz") as saved:
        assert set(saved.files) == set(result.metrics) | {"grid/" + k for k in result.grid} | {"seeds"}
        for name, value in result.metrics.items():
            np.testing.assert_array_equal(saved[name], value)
        np.testing.assert_array_equal(saved["grid/lr"], np.float32([1e-3, 3e-3]))
        np.testing.assert_array_equal(saved["seeds"], [0, 1])
        assert saved["reward_rate"].shape == (2, 2, 3, 2)  # grid, seed, update, member
        assert saved["eval/crossplay"].shape == (2, 2, 2, 2)
    meta = json.loads((ipd_run.dir / "config.json").read_text())
    assert meta["preset"] == "ipd-ppo" and meta["env"] == "ipd" and meta["env_options"] == {"num_rounds": 100}
    assert meta["config"]["num_updates"] == 3 and meta["config"]["num_envs"] == 4
    assert meta["config"]["lr"] == pytest.approx([1e-3, 3e-3]) and meta["seeds"] == [0, 1]
    with Image.open(ipd_run.dir / "curves.png") as image:
        image.verify()
    with Image.open(ipd_run.dir / "curves.png") as image:
        assert image.format == "PNG" and image.size[0] > 400 and image.size[1] > 200


def test_progress_lines_come_from_the_loop_before_the_summary(ipd_run):
    lines = re.findall(r"^ipd-ppo \[(\d+)/3\] reward/step ([\d.]+)", ipd_run.err, flags=re.M)
    assert [int(step) for step, _ in lines] == [1, 2, 3]
    # the progress values are the runs' mean reward per step at that update
    rr = ipd_run.result.metrics["reward_rate"]  # (G, S, U, P)
    for (step, value) in lines:
        assert float(value) == pytest.approx(np.nanmean(rr[:, :, int(step) - 1]), abs=1e-3)


def test_summary_is_printed_and_saved(ipd_run):
    summary = (ipd_run.dir / "summary.txt").read_text()
    assert summary.strip() in ipd_run.out
    per_device = lay_out(4, jax.devices()).per_device  # 4 on one device (the CPU); fewer on several GPUs
    for text in ("ipd-ppo: ipd (num_rounds=100), PPO, seating independent", "4 run(s) = 2 grid point(s) x 2 seed(s)",
                 f"{per_device} run(s) per device, computed together; the program needs",
                 "env-steps/s", "agent-steps/s", "grid point 0: lr=0.001", "grid point 1: lr=0.003",
                 "learner 0", "learner 1", "efficiency", "equality", "sustainability", "peace",
                 "self-play (diagonal)", "off-diagonal", "non-finite losses: none"):
        assert text in summary, text
    # the first -> last reward rates are the metrics' own numbers
    rr = ipd_run.result.metrics["reward_rate"]
    assert f"{rr[1, :, -1, 0].astype(np.float64).mean():.4g}" in summary


def test_a_run_that_cannot_fit_the_device_is_a_one_line_error(monkeypatch, capsys, tmp_path):
    """``run`` refuses a program bigger than the device (tests/train/test_run.py); the CLI
    passes ``--memory`` on in bytes and reports the refusal in one line, exit code 1,
    writing nothing."""
    seen = {}

    def refuse(*args, **kwargs):
        seen.update(kwargs)
        raise MemoryError("one run of this config needs 2.00 GiB on cpu:0; reduce num_envs")

    monkeypatch.setattr(run_mod, "run", refuse)
    with pytest.raises(SystemExit) as exc:
        cli.main(IPD_ARGS + ["--memory", "0.5", "--out", str(tmp_path / "out")])
    assert exc.value.code == 1
    assert seen["memory"] == 2**29
    assert "socialjax train ipd-ppo: one run of this config needs 2.00 GiB" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_checkpoint_round_trips_bit_for_bit(ipd_run):
    loaded = load_run(ipd_run.dir)
    result = ipd_run.result
    assert loaded.config == result.config
    expected, treedef = jax.tree_util.tree_flatten(result.states)
    got, loaded_treedef = jax.tree_util.tree_flatten(loaded.states)
    assert loaded_treedef == treedef
    for a, b in zip(expected, got):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()
    for name, value in result.metrics.items():
        np.testing.assert_array_equal(loaded.metrics[name], value)
    one = loaded.learners(1, 0)
    assert jax.tree_util.tree_leaves(one.params)[0].shape[0] == 2  # the two learners of run (1, 0)


def test_evaluate_plays_the_trained_population(ipd_run):
    code, out, err = run_cli(["evaluate", str(ipd_run.dir), "--run", "1,1", "--steps", "20"])
    assert code == 0, err
    assert "run (grid point 1 [lr=0.003], seed 1); 20 steps of ipd" in out
    seats = re.findall(r"^\s+(\d)\s+(learner \d)\s+(-?[\d.]+)\s+(-?[\d.]+)$", out, flags=re.M)
    assert [(s, m) for s, m, _, _ in seats] == [("0", "learner 0"), ("1", "learner 1")]
    for _, _, ret, rate in seats:  # IPD payoffs are in [0, 5] per round
        assert 0.0 <= float(ret) <= 100.0 and float(rate) == pytest.approx(float(ret) / 20, abs=1e-3)
    assert "episodes finished: 0" in out  # 20 steps of a 100-round game


def test_evaluate_and_render_reject_bad_checkpoints(ipd_run, tmp_path, capsys):
    assert "holds 2 grid point(s) x 2 seed(s)" in cli_error(["evaluate", str(ipd_run.dir), "--run", "2,0"], capsys)
    assert "is empty: not a results folder" in cli_error(["evaluate", str(tmp_path)], capsys)
    err = cli_error(["evaluate", str(ipd_run.dir), "--row", "0,2"], capsys)
    assert "--row: row refers to members 0..1 (2 learners, 0 scripted), got [0, 2]" in err
    err = cli_error(["render", "--checkpoint", str(ipd_run.dir), "--out", str(tmp_path / "x.gif")], capsys)
    assert "ipd has no rendering" in err
    err = cli_error(["render", "--checkpoint", str(ipd_run.dir), "--env", "cleanup", "--out", str(tmp_path / "x.gif")],
                    capsys)
    assert "--env cannot be combined with --checkpoint" in err


def test_render_checkpoint_writes_a_gif_of_the_trained_population(harvest_run, tmp_path):
    gif = tmp_path / "trained.gif"
    code, out, err = run_cli(["render", "--checkpoint", str(harvest_run), "--out", str(gif), "--steps", "6"])
    assert code == 0, err
    assert "7 frames (6 steps of harvest_open, trained population" in out
    with Image.open(gif) as image:
        assert image.format == "GIF" and image.n_frames == 7


def test_render_checkpoint_writes_the_viewer_of_the_trained_population(harvest_run, tmp_path):
    """``--out FILE.html``: the viewer of the played game, seats labelled by member, with the
    events ``play`` recorded (in Harvest a reward is an apple eaten)."""
    page = tmp_path / "trained.html"
    code, out, err = run_cli(["render", "--checkpoint", str(harvest_run), "--out", str(page), "--steps", "6"])
    assert code == 0, err
    assert "a viewer of 7 frames (6 steps of harvest_open, trained population" in out
    [data] = viewer_data(page.read_text(encoding="utf-8"))
    assert len(data["frames"]) == 7 and data["players"] == ["seat 0 (learner 0)", "seat 1 (learner 1)"]
    assert list(data["events"]) == ["apples_eaten", "zaps_fired", "times_zapped"]
    assert data["events"]["apples_eaten"] == data["rewards"] and len(data["rewards"]) == 6
