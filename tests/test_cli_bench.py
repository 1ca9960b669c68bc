"""``socialjax bench``: environment throughput from the command line (socialjax.bench)."""

import json

import jax
import pytest

from socialjax.bench import adaptive_steps, markdown_table
from socialjax.cli import main


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """``socialjax bench`` on ``ipd`` at two batch sizes, 2 timed calls each, raw JSON."""
    path = tmp_path_factory.mktemp("bench") / "out.json"
    assert main(["bench", "--envs", "ipd", "--batch-sizes", "1,8", "--steps", "20", "--repeats", "2",
                 "--json", str(path)]) == 0
    return json.loads(path.read_text())


def test_bench_reports_every_batch_with_consistent_throughput(measured):
    rows = measured["results"]
    assert [(r["env"], r["batch"], r["steps"]) for r in rows] == [("ipd", 1, 20), ("ipd", 8, 20)]
    for r in rows:
        assert len(r["times_s"]) == 2 and r["median_s"] > 0 and r["compile_s"] > 0
        assert r["env_steps_per_s"] == pytest.approx(r["batch"] * r["steps"] / r["median_s"])
        assert r["agent_steps_per_s"] == pytest.approx(2 * r["env_steps_per_s"])  # 2 players
    # the backend the bench ran on is this process's ("cpu" on the CPU)
    assert measured["machine"]["backend"] == jax.default_backend() and measured["args"]["repeats"] == 2


def test_bench_prints_a_markdown_table(measured):
    table = markdown_table(measured["results"]).splitlines()
    assert table[0].startswith("| env |") and len(table) == 2 + len(measured["results"])
    assert table[2].startswith("| ipd | native | 2 | 1 | 20 |")


def test_adaptive_steps_follow_the_budget():
    assert adaptive_steps(1) == 10_000 and adaptive_steps(16384) == 122 and adaptive_steps(10**9) == 10


@pytest.mark.parametrize("argv, message", [
    (["--envs", "nope"], "unknown environment"),
    (["--envs", "ipd", "--batch-sizes", "1,x"], "comma-separated integers"),
    (["--envs", "ipd", "--repeats", "0"], "must be positive"),
    (["--envs", "ipd", "--batch-sizes", "0"], "must be positive"),
])
def test_bad_bench_arguments_are_rejected_before_compiling(argv, message):
    with pytest.raises(SystemExit, match=message):
        main(["bench", *argv])


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """``socialjax bench --train`` on a small ipd-tft at 1 and 3 seeds, 2 timed updates each."""
    path = tmp_path_factory.mktemp("bench-train") / "out.json"
    assert main(["bench", "--train", "ipd-tft", "--seeds", "1,3", "--set", "num_envs=2", "--set", "rollout_len=8",
                 "--repeats", "2", "--json", str(path)]) == 0
    return json.loads(path.read_text())


def test_bench_train_reports_aggregate_throughput_per_seed_count(trained):
    rows = trained["training"]
    assert [r["seeds"] for r in rows] == [1, 3]
    for r in rows:
        assert len(r["times_s"]) == 2 and r["seconds_per_update"] > 0
        assert (r["num_envs"], r["rollout_len"], r["chunk"]) == (2, 8, None)
        assert r["env_steps_per_s"] == pytest.approx(r["seeds"] * 2 * 8 / r["seconds_per_update"])
        assert r["agent_steps_per_s"] == pytest.approx(2 * r["env_steps_per_s"])
        assert set(r["compile_s"]) == {"init", "1 update"} and all(t > 0 for t in r["compile_s"].values())
        assert r["planned_bytes"] > 0
    assert rows[1]["planned_bytes"] > rows[0]["planned_bytes"]  # three runs' state and temporaries


@pytest.mark.parametrize("argv, message", [
    (["--train", "nope"], "not a population preset"),
    (["--train", "donor-evolution"], "not a population preset"),
    (["--train", "ipd-tft", "--envs", "ipd"], "give one of them"),
    (["--train", "ipd-tft", "--seeds", "8,2"], "increasing"),
    (["--train", "ipd-tft", "--seeds", "0"], "seed counts"),
    (["--train", "ipd-tft", "--set", "num_envs=0"], "--set"),
])
def test_bad_bench_train_arguments_are_rejected_before_compiling(argv, message):
    with pytest.raises(SystemExit, match=message):
        main(["bench", *argv])
