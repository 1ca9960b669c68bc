"""scripts/gpu_check.py: the accelerator check runs every part at toy sizes on whatever
backend the suite runs on (so that it is ready, and right, the next time a GPU is
lent), keeps a part's rows when the part fails or runs out of time, and reads pytest's
and the profiler's output correctly. The SocialJax stand-ins and the reading of their
configuration files are checked here too; the peer's own code needs its checkout and is
run by hand (docs/testing.md)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import jax
import pytest
from support import ON_CPU

from socialjax.reproduce import ENTRIES, VERDICTS
from socialjax.train import make_train, run_keys

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"
sys.path.insert(0, str(SCRIPTS))

import gpu_check  # noqa: E402
import peer_socialjax  # noqa: E402

# The training parts differ only in their configuration (worker_train is one code path): two run whole, one
# learner and the 7-learner preset; the others' configurations are built and their programs traced here
# (test_every_training_variant_builds_and_traces), about 3 minutes of CPU less than running them all.
TINY_TRAIN = ("train-shared-cnn", "train-paper-preset")
TRACED_TRAIN = [name for name in gpu_check.TRAIN_VARIANTS if name not in TINY_TRAIN]
# every part of call 1 but the peer's, one reproduce entry (each is the same pipeline check at toy sizes), the
# determinism, training and tests parts
TINY_PARTS = [p.name for p in gpu_check.PARTS
              if not p.needs_peer and (p.name in gpu_check.CALLS[1][0] or p.name in TINY_TRAIN
                                       or p.name in ("determinism", "profile-env", "tests",
                                                     "reproduce-cleanup-reward"))]


@pytest.fixture(scope="module")
def tiny_report(tmp_path_factory):
    """The whole check at toy sizes, once: its exit code, JSON and markdown."""
    out = tmp_path_factory.mktemp("gpu-check")
    proc = subprocess.run([sys.executable, str(SCRIPTS / "gpu_check.py"), "--tiny", "--out", str(out),
                           "--parts", ",".join(TINY_PARTS)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    report = json.loads((out / gpu_check.JSON_FILE).read_text())
    return proc, report, (out / gpu_check.MARKDOWN_FILE).read_text(), out


@pytest.mark.slow
def test_the_tiny_check_runs_every_part(tiny_report):
    proc, report, text, out = tiny_report
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    parts = report["parts"]
    expected = TINY_PARTS[:TINY_PARTS.index("determinism") + 1] + ["determinism-flag"] + \
        TINY_PARTS[TINY_PARTS.index("determinism") + 1:]
    assert list(parts) == expected
    flag = "skipped" if report["machine"]["platform"] != "gpu" else "ok"
    for name, part in parts.items():
        assert part["status"] == (flag if name == "determinism-flag" else "ok"), (name, part)
        assert f"## {name}: {part['status']}" in text
    for key in ("device", "platform", "jax", "commit", "date"):
        assert report["machine"][key], key
    log = (out / gpu_check.LOG_FILE).read_text()
    assert all((f"===== {name} (deadline" in log) == (part["status"] != "skipped") for name, part in parts.items())


@pytest.mark.slow
def test_the_tiny_check_measures_what_the_rows_say(tiny_report):
    _, report, _, out = tiny_report
    parts = report["parts"]
    envs = parts["envs"]["rows"]
    assert [(r["env"], r["batch"]) for r in envs] == [(n, b) for b in gpu_check.TINY_BATCH_SIZES
                                                       for n in gpu_check.TINY_ENVS]
    for r in envs:
        assert r["env_steps_per_s"] == pytest.approx(r["batch"] * r["steps"] / r["median_s"])
        assert r["compile_s"] > 0
    for name in TINY_TRAIN:
        compiled, timed = parts[name]["rows"]
        assert compiled["stage"] == "update compiled" and timed["stage"] == "timed"
        assert timed["learning_s"] == pytest.approx(timed["seconds_per_update"] - timed["rollout_s"])
        assert timed["env_steps_per_s"] == pytest.approx(timed["num_envs"] * timed["rollout_len"]
                                                         / timed["seconds_per_update"])
        assert timed["planned_bytes"] > 0
        assert (timed["peak_memory_bytes"] is None) == ON_CPU
    assert parts["train-paper-preset"]["rows"][1]["learners"] == 7
    assert parts["train-shared-cnn"]["rows"][1]["learners"] == 1
    (sweep,) = parts["sweep"]["rows"]
    assert sweep["exit_code"] == 0 and sweep["per_device"] == gpu_check.TINY_SWEEP["seeds"] and sweep["chunk"] is None
    assert sweep["memory_bytes"] > 0 and list(sweep["compile_times"]) == ["init", "1 update", "finish"]
    aggregate = parts["aggregate"]["rows"]
    assert [r["seeds"] for r in aggregate] == list(gpu_check.TINY_AGGREGATE_SEEDS)
    for r in aggregate:
        assert r["env_steps_per_s"] == pytest.approx(r["seeds"] * r["num_envs"] * r["rollout_len"]
                                                     / r["seconds_per_update"])
        assert r["chunk"] is None and r["planned_bytes"] > 0 and r["num_agents"] == 7
        assert (r["seating"], r["network"]) == ("shared", "cnn")
    repeat, *chunks = parts["determinism"]["rows"]
    assert repeat["what"] == "the same program twice" and len(chunks) == len(gpu_check.TINY_DETERMINISM["chunks"])
    if ON_CPU:  # XLA:CPU computes a program the same way every call
        assert repeat["same_bits"] and repeat["max_abs_diff"] == 0
    assert all(0 <= r["max_abs_diff"] < 1e-2 for r in chunks)
    (profile,) = parts["profile"]["rows"]
    assert profile["wall_s"] > 0 and profile["device_busy_s"] <= profile["wall_s"]
    (env_profile,) = parts["profile-env"]["rows"]
    assert (env_profile["env"], env_profile["batch"]) == ("cleanup", gpu_check.TINY_BATCH_SIZES[0])
    assert env_profile["wall_s"] > 0 and env_profile["device_busy_s"] <= env_profile["wall_s"]
    (rep,) = parts["reproduce-cleanup-reward"]["rows"]
    assert (rep["entry"], rep["scale"], rep["seeds"]) == tuple(gpu_check.TINY_REPRODUCE.values())
    assert rep["verdict"] in VERDICTS and len(rep["rows"]) == len(ENTRIES[rep["entry"]].keys("small"))
    assert sorted(p.name for p in (out / "reproduce-cleanup-reward").iterdir()) == sorted(gpu_check.REPRODUCE_FILES)
    (tests,) = parts["tests"]["rows"]
    assert tests["complete"] and tests["counts"].get("passed", 0) > 0 and tests["failures"] == []


@pytest.mark.slow
@pytest.mark.parametrize("name", TRACED_TRAIN)
def test_every_training_variant_builds_and_traces(name):
    """The training parts not run above: the variant's configuration at toy sizes is
    valid, and its first state and one update trace (shapes only, nothing compiled),
    with what the part reports of it."""
    env, config = gpu_check.cleanup_config(gpu_check.TRAIN_VARIANTS[name], tiny=True)
    train = make_train(env, config)
    state = jax.eval_shape(train.init, run_keys([0])[0])
    after = jax.eval_shape(lambda s: train.updates(s, 0, length=1), state)
    assert jax.tree_util.tree_structure(after[0]) == jax.tree_util.tree_structure(state)
    expected = {**gpu_check.TRAIN_VARIANTS[name]}
    expected.pop("reward", None)
    assert {k: getattr(config, k) for k in expected} == expected


def _fake_part(code: str):
    """``part_command`` replaced: the part's process runs ``code`` with ``ROWS`` its rows file."""
    def command(part, args, rows, deadline):
        return [sys.executable, "-c", f"ROWS = {str(rows)!r}\n" + code], {}
    return command


WRITE_ROW = "import json\nopen(ROWS, 'a').write(json.dumps({'n': 1}) + '\\n')\n"


def test_a_part_past_its_deadline_is_stopped_and_keeps_its_rows(monkeypatch, tmp_path):
    monkeypatch.setattr(gpu_check, "part_command", _fake_part(WRITE_ROW + "print('working', flush=True)\n"
                                                              "import time; time.sleep(60)\n"))
    with open(tmp_path / "log", "w") as log:
        result = gpu_check.run_part(gpu_check.PARTS[0], None, 2.0, log)
    assert result["status"] == "timed out" and result["rows"] == [{"n": 1}]
    assert result["seconds"] < 30
    assert "working" in (tmp_path / "log").read_text()


def test_a_failing_part_is_reported_and_the_others_still_run(monkeypatch, tmp_path):
    def command(part, args, rows, deadline):
        fail = "raise SystemExit('broken on purpose')\n" if part.name == "envs" else ""
        return _fake_part(WRITE_ROW + fail)(part, args, rows, deadline)

    monkeypatch.setattr(gpu_check, "part_command", command)
    assert gpu_check.main(["--out", str(tmp_path), "--parts", "envs,sweep", "--commit", "abc123"]) == 1
    report = json.loads((tmp_path / gpu_check.JSON_FILE).read_text())
    assert report["parts"]["envs"]["status"] == "failed" and report["parts"]["envs"]["rows"] == [{"n": 1}]
    assert "broken on purpose" in report["parts"]["envs"]["output_tail"]
    assert report["parts"]["sweep"]["status"] == "ok" and report["machine"]["commit"] == "abc123"
    # a second call updates the same report: its parts replace theirs, the others stay
    monkeypatch.setattr(gpu_check, "part_command", _fake_part(WRITE_ROW))
    assert gpu_check.main(["--out", str(tmp_path), "--parts", "envs", "--commit", "abc123"]) == 0
    report = json.loads((tmp_path / gpu_check.JSON_FILE).read_text())
    assert report["parts"]["envs"]["status"] == "ok" and report["parts"]["sweep"]["status"] == "ok"


def test_unknown_parts_and_a_peer_part_without_a_peer_are_refused(tmp_path):
    with pytest.raises(SystemExit, match="unknown"):
        gpu_check.main(["--out", str(tmp_path), "--parts", "envs,warp-drive"])
    with pytest.raises(SystemExit, match="needs --peer"):
        gpu_check.main(["--out", str(tmp_path), "--parts", "peer-train"])
    with pytest.raises(SystemExit, match="not a SocialJax checkout"):
        gpu_check.main(["--out", str(tmp_path), "--peer", str(tmp_path)])


def test_test_counts_read_pytest_verbose_lines_even_from_a_stopped_run():
    text = "\n".join([
        "[gw0] [ 10%] PASSED tests/core/test_spaces.py::test_box",
        "[gw1] [ 20%] FAILED tests/envs/test_cleanup.py::test_river[7]",
        "tests/train/test_run.py::test_one SKIPPED (CPU backend only)",
        "tests/train/test_run.py::test_two ERROR",
        "tests/core/test_spaces.py::test_discrete PASSED",
        "collected 5 items",
    ])
    counts = gpu_check.test_counts(text, "timed out")
    assert counts == {"complete": False, "counts": {"passed": 2, "failed": 1, "skipped": 1, "error": 1},
                      "failures": ["tests/envs/test_cleanup.py::test_river[7]", "tests/train/test_run.py::test_two"]}


def test_the_profile_summary_splits_device_time_by_name_scope():
    def kernel(name, dur, op):
        return {"ph": "X", "pid": 2, "tid": 1, "name": name, "dur": dur, "args": {"hlo_op": op}}

    trace = {"traceEvents": [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/host:CPU"}},
        {"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "/device:GPU:0"}},
        {"ph": "X", "pid": 1, "tid": 1, "name": "host work", "dur": 9e6, "args": {}},
        kernel("conv_fprop", 3000.0, "jit(f)/while/body/rollout/conv"),
        kernel("conv_fprop", 1000.0, "jit(f)/while/body/rollout/conv"),
        kernel("gemm", 5000.0, "jit(f)/while/body/learn/dot_general"),
        kernel("copy", 500.0, "jit(f)/copy"),
    ]}
    s = gpu_check.summarise_trace(trace)
    assert s["device_processes"] == ["/device:GPU:0"] and s["kernel_events"] == 4
    assert s["scope_s"] == pytest.approx({"rollout": 0.004, "learn": 0.005, "other": 0.0005})
    assert s["device_busy_s"] == pytest.approx(0.0095)
    assert [(k["name"], k["calls"]) for k in s["top_kernels"]] == [("gemm", 1), ("conv_fprop", 2), ("copy", 1)]


def test_the_peer_configuration_is_their_three_files_merged_with_numbers_read_as_numbers(tmp_path):
    folder = tmp_path / "algorithms" / "IPPO" / "config"
    (folder / "reward").mkdir(parents=True)
    (folder / "ippo_base.yaml").write_text('"LR": 0.0005\n"TOTAL_TIMESTEPS": 1e8\n"REW_SHAPING_HORIZON": 2.5e6\n'
                                           '"ENV_KWARGS":\n  "num_inner_steps": 1000\n  "shared_rewards": False\n')
    (folder / "ippo_cnn_cleanup.yaml").write_text('defaults:\n  - ippo_base\n"ENV_NAME": "clean_up"\n'
                                                  '"ENV_KWARGS":\n  "num_agents": 7\n')
    (folder / "reward" / "common.yaml").write_text("ENV_KWARGS:\n  shared_rewards: True\nREWARD: common\n")
    config = peer_socialjax.load_config(tmp_path, "common", {"NUM_ENVS": 2})
    assert config == {"LR": 0.0005, "TOTAL_TIMESTEPS": 1e8, "REW_SHAPING_HORIZON": 2.5e6, "ENV_NAME": "clean_up",
                      "ENV_KWARGS": {"num_inner_steps": 1000, "shared_rewards": True, "num_agents": 7},
                      "REWARD": "common", "NUM_ENVS": 2}
    assert isinstance(config["REW_SHAPING_HORIZON"], float)


def _stand_in(name: str):
    path = SCRIPTS / "peer_stubs" / Path(*name.split(".")).with_suffix(".py")
    if not path.exists():
        path = path.with_suffix("") / "__init__.py"
    spec = importlib.util.spec_from_file_location(f"stand_in_{name.replace('.', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_stand_ins_do_what_the_timed_code_needs_and_refuse_the_rest():
    def f():
        return 1

    assert _stand_in("hydra").main(config_path="config")(f) is f
    assert _stand_in("wandb").log({"loss": 1.0}) is None
    assert _stand_in("omegaconf").OmegaConf.to_container({"a": 1}) == {"a": 1}
    with pytest.raises(NotImplementedError, match="stand-in"):
        _stand_in("safetensors.flax").save_file({}, "x")
    with pytest.raises(NotImplementedError, match="stand-in"):
        _stand_in("gymnax.wrappers.purerl").LogWrapper(None)


def test_the_entries_with_a_gpu_scale_each_have_a_part():
    assert set(gpu_check.GPU_ENTRIES) == {name for name, e in ENTRIES.items() if "gpu" in e.scales}


def test_a_spell_measures_what_was_never_measured_first_in_two_calls_that_fit_it():
    """Call 1 (at most 9 minutes): the 1,024-seed sweep, the aggregate table (ours, then
    SocialJax's), the profile, then the environments; call 2 (at most 5): the gpu scale of
    the two reward entries. Every named part exists, the calls' parts run in that order."""
    (first, budget1), (second, budget2) = gpu_check.CALLS[1], gpu_check.CALLS[2]
    assert first == ("sweep", "aggregate", "aggregate-peer", "profile", "envs") and budget1 <= 540
    assert second == ("reproduce-cleanup-reward", "reproduce-harvest-reward") and budget2 <= 300
    for parts in (first, second):
        order = [gpu_check.PART_NAMES.index(name) for name in parts]
        assert order == sorted(order)
    args = gpu_check.parse_args(["--call", "2"])
    assert [p.name for p in gpu_check.plan_parts(args)] == list(second)
    args = gpu_check.parse_args([])  # no --peer: the peer's part is left out of call 1
    assert [p.name for p in gpu_check.plan_parts(args)] == [n for n in first if n != "aggregate-peer"]


def test_the_aggregate_table_puts_ours_beside_socialjaxs():
    ours = {"seating": "shared", "network": "cnn", "conv": "xla", "precision": "float32", "seeds": 64, "chunk": None,
            "seconds_per_update": 2.0, "env_steps_per_s": 8_192_000.0, "agent_steps_per_s": 57_344_000.0,
            "compile_s": {"init": 3.0, "1 update": 20.0}, "planned_bytes": 2**30, "peak_memory_bytes": 2**31,
            "note": ""}
    peer = {"what": "train", "seeds": 2, "seconds_per_update": 6.0, "env_steps_per_s": 85_333.0,
            "agent_steps_per_s": 597_333.0, "compile_s": 40.0, "peak_memory_bytes": 2**35}
    full = {"what": "train", "seeds": 4, "stage": "out of memory", "error": "RESOURCE_EXHAUSTED: Out of memory",
            "peak_memory_bytes": None}
    rows = gpu_check._table_aggregate([ours, {"what": "train", "stage": "compiled", "seeds": 2}, peer, full])
    assert rows[:2] == ["", rows[1]] and rows[1].startswith("| who |")
    assert len(rows) == 3 + 3  # the peer's "compiled" stage row is folded into its timed row
    assert rows[3].startswith("| ours, shared / cnn / xla / float32 | 64 | all together | 2.000 | 8,192,000 |")
    assert "3.0; 20.0" in rows[3]
    assert rows[4].startswith("| SocialJax `ippo_cnn_cleanup` | 2 | vmapped | 6.000 | 85,333 |")
    assert "out of memory" in rows[5]
