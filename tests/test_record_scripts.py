"""The writers of measurements/: ``scripts/record_bench.py`` turns the JSON of
``socialjax bench --train ... --json`` into records of training_throughput.json, and
``scripts/record_gpu_check.py`` the accelerator check's report (``gpu_check.json``) into
records of the families its parts belong to. Each test works in a temporary copy of
measurements/ and the documents, on rows taken from real runs (``socialjax bench
--train harvest-ippo-small --seeds 1,4,16,64 --repeats 2`` on the 2-core CPU, and
``scripts/gpu_check.py --tiny``), and checks the records' values and provenance, that
the documents render current afterwards, and that a file of the other kind or a missing
``--load`` is a clear error. No JAX here."""

import copy
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import record_bench  # noqa: E402
import record_gpu_check  # noqa: E402
import render_tables  # noqa: E402

MACHINE = {"devices": ["cpu:0"], "backend": "cpu", "cpu": "Intel(R) Xeon(R) Processor", "cpu_count": 2,
           "platform": "Linux-6.18.44-fc-v657-x86_64-with-glibc2.36", "python": "3.11.7", "jax": "0.10.2",
           "socialjax": "0.1.0", "load_average_1_5_15min": [1.4267578125, 1.5224609375, 1.29736328125],
           "load_average_end": [1.62060546875, 1.67626953125, 1.4091796875]}
TRAIN_ARGS = {"envs": None, "batch_sizes": "1,64,1024,16384", "steps": None, "budget": 2000000, "repeats": 2,
              "obs_mode": "codes", "seed": 0, "train": "harvest-ippo-small", "seeds": "1,4,16,64", "overrides": [],
              "fit": False, "json": "train.json", "overwrite": False}
SWEEP_ROW = {"env": "harvest_open", "num_agents": 3, "num_envs": 8, "rollout_len": 125, "update_epochs": 2,
             "num_minibatches": 2, "seating": "independent", "network": "auto", "conv": "looped",
             "precision": "float32", "peak_memory_bytes": None, "note": ""}
# the rows of S = 1 and S = 64 of that run (train-aggregate-cpu's records were made from it)
TRAINING = [
    {**SWEEP_ROW, "seeds": 1, "runs": 1, "per_device": 1, "chunk": None,
     "compile_s": {"init": 3.769882182001311, "1 update": 12.057490039998811},
     "times_s": [0.4764112200009549, 0.4888931740006228], "seconds_per_update": 0.4826521970007889,
     "env_steps_per_s": 2071.885316619341, "agent_steps_per_s": 6215.655949858023, "planned_bytes": 56492687},
    {**SWEEP_ROW, "seeds": 64, "runs": 64, "per_device": 64, "chunk": 16,
     "compile_s": {"init": 3.3458984560002136, "1 update": 12.990185759999804},
     "times_s": [33.11453232200074, 32.29633818399998], "seconds_per_update": 32.70543525300036,
     "env_steps_per_s": 1956.8612832978185, "agent_steps_per_s": 5870.583849893455, "planned_bytes": 872373136},
]
TRAIN_FILE = {"machine": MACHINE, "args": TRAIN_ARGS, "training": TRAINING}

# scripts/gpu_check.py --tiny --parts sweep,aggregate,envs,determinism (and train-shared-cnn, profile), rows as written
TINY_MACHINE = {"device": "cpu", "platform": "cpu", "device_count": 1, "jax": "0.10.2", "jaxlib": "0.10.2",
                "python": "3.11.7", "cpus": 2, "date": "2026-11-29 11:02 UTC", "commit": "7e4337c",
                "host": "Linux-6.18.44-fc-v657-x86_64-with-glibc2.36"}
CLEANUP = {"env": "cleanup", "num_agents": 7, "num_envs": 2, "rollout_len": 8, "update_epochs": 2,
           "num_minibatches": 2, "seating": "shared", "network": "cnn", "conv": "looped", "precision": "float32",
           "peak_memory_bytes": None, "note": ""}
TRAIN_DESCRIBE = {"algo": "ppo", "seating": "shared", "network": "cnn", "conv": "looped", "precision": "float32",
                  "learners": 1, "num_envs": 2, "rollout_len": 8, "update_epochs": 2, "num_minibatches": 2}
PEER_TRAIN = {"what": "train", "reward": "common", "num_envs": 2, "rollout_len": 8, "num_updates": 1,
              "update_epochs": 2, "num_minibatches": 2}
PEER_NAME = "SocialJax IPPO (ippo_cnn_cleanup.py, one shared network)"


def ok(rows, seconds=10.0, deadline=90.0):
    return {"status": "ok", "seconds": seconds, "deadline_s": deadline, "rows": rows}


PARTS = {
    "sweep": ok([{"command": "socialjax train ipd-tft --seeds 4 --updates 1", "exit_code": 0,
                  "wall_s": 13.814932082001178, "run_call_s": 13.124335831998906, "compile_s": 12.998473674000707,
                  "compile_times": {"init": [2.863572442998702], "1 update": [9.477872039999056],
                                    "finish": [0.050358154003333766]},
                  "per_device": 4, "chunk": None, "memory_bytes": 2623976, "env_steps": 6400,
                  "env_steps_per_s": 50849.27909858, "conv": "auto"}]),
    "aggregate": ok([
        {**CLEANUP, "seeds": 1, "runs": 1, "per_device": 1, "chunk": None,
         "compile_s": {"init": 4.6382916329966974, "1 update": 14.981359500998224}, "times_s": [0.04293373800464906],
         "seconds_per_update": 0.04293373800464906, "env_steps_per_s": 372.66729485020494,
         "agent_steps_per_s": 2608.6710639514345, "planned_bytes": 2262195},
        {**CLEANUP, "seeds": 2, "runs": 2, "per_device": 2, "chunk": None,
         "compile_s": {"init": 8.035929296995164, "1 update": 27.325554619004834}, "times_s": [0.03474901099980343],
         "seconds_per_update": 0.03474901099980343, "env_steps_per_s": 920.8895182709234,
         "agent_steps_per_s": 6446.2266278964635, "planned_bytes": 3126058}], 60.0, 150.0),
    # --tiny --peer .peer/SocialJax --parts aggregate-peer,peer-train: S = 2 was compiled, not timed, at the deadline
    "aggregate-peer": {"status": "timed out", "seconds": 90.09, "deadline_s": 90.0,
                       "detail": "stopped at its deadline of 90 s", "rows": [
                           {**PEER_TRAIN, "seeds": 1, "stage": "compiled", "compile_s": 22.93469216700032},
                           {**PEER_TRAIN, "seeds": 1, "name": PEER_NAME,
                            "compile_s": 22.93469216700032, "times_s": [1.4487045689993465],
                            "median_s": 1.4487045689993465, "seconds_per_update": 1.4487045689993465,
                            "env_steps_per_s": 11.044349788343366, "agent_steps_per_s": 77.31044851840356,
                            "peak_memory_bytes": None},
                           {**PEER_TRAIN, "seeds": 2, "stage": "compiled", "compile_s": 19.071056163999856}]},
    "profile": ok([{"wall_s": 1.1404476370007615, "num_envs": 2, "rollout_len": 8, "device_processes": [],
                    "kernel_events": 0, "device_busy_s": 0.0, "scope_s": {"rollout": 0.0, "learn": 0.0, "other": 0.0},
                    "top_kernels": []}]),
    "envs": ok([
        {"env": "ipd", "batch": 4, "steps": 10, "num_agents": 2, "compile_s": 2.0872838889990817,
         "times_s": [0.002013329998590052, 0.00022018299932824448, 0.0001771280003595166],
         "median_s": 0.00022018299932824448, "env_steps_per_s": 181667.06840235557,
         "agent_steps_per_s": 363334.13680471113},
        {"env": "cleanup", "batch": 4, "steps": 10, "num_agents": 7, "compile_s": 12.865792229000363,
         "times_s": [0.002746411999396514, 0.001351134000287857, 0.001160136998805683],
         "median_s": 0.001351134000287857, "env_steps_per_s": 29604.7616235533,
         "agent_steps_per_s": 207233.3313648731}]),
    "train-shared-cnn": ok([
        {"stage": "update compiled", **TRAIN_DESCRIBE, "compile_s": 3.2785436089980067, "planned_bytes": 2262251},
        {"stage": "timed", **TRAIN_DESCRIBE, "compile_s": 3.2785436089980067, "rollout_compile_s": 14.142345735002891,
         "update_times_s": [0.019422156001382973, 0.026473305995750707],
         "rollout_times_s": [0.010259742994094267, 0.01732180199905997], "seconds_per_update": 0.02294773099856684,
         "rollout_s": 0.01379077249657712, "learning_s": 0.00915695850198972, "env_steps_per_s": 697.2366898060314,
         "agent_steps_per_s": 4880.65682864222, "peak_memory_bytes": None, "planned_bytes": 2262251}]),
    "peer-train": ok([
        {**PEER_TRAIN, "seeds": 1, "stage": "compiled", "compile_s": 21.563681749000352},
        {**PEER_TRAIN, "seeds": 1, "name": PEER_NAME,
         "compile_s": 21.563681749000352, "times_s": [1.4851040049998119, 1.5242104399994787],
         "median_s": 1.5046572224996453, "seconds_per_update": 1.5046572224996453,
         "env_steps_per_s": 10.63365114708295, "agent_steps_per_s": 74.43555802958066, "peak_memory_bytes": None}]),
    "determinism": ok([
        {"deterministic_ops": False, "what": "the same program twice", "seeds": 4, "preset": "ipd-tft", "updates": 1,
         "same_bits": True, "max_abs_diff": 0.0, "digest": "fdd5dcef4e41e476"},
        {"deterministic_ops": False, "what": "chunk=2 vs all 4 runs together", "seeds": 4, "preset": "ipd-tft",
         "updates": 1, "same_bits": False, "max_abs_diff": 3.814697265625e-06}]),
    "determinism-flag": {"status": "skipped", "seconds": 0.0, "deadline_s": 0.0, "rows": [],
                         "detail": "the flag is XLA's for GPUs; on this backend the other determinism rows hold"},
    "reproduce-cleanup-reward": ok([{"entry": "punishment", "scale": "small", "seeds": 2, "seconds": 30.0,
                                     "verdict": "reproduced", "reason": "", "rows": []}]),
}
EVERY_PART = ",".join(PARTS)
TINY = {"command": f"python scripts/gpu_check.py --tiny --out /tmp/gc-tiny --parts {EVERY_PART}",
        "machine": TINY_MACHINE, "budget_s": 600, "parts": PARTS, "seconds": 125.7}


def gpu(report: dict, device: str = "NVIDIA H200") -> dict:
    """The tiny report's rows as if a GPU had measured them (without --tiny), for the tables' names."""
    report = copy.deepcopy(report)
    report["command"] = f"python3 scripts/gpu_check.py --out OUT --commit abc1234 --parts {EVERY_PART}"
    report["machine"].update(device=device, platform="gpu", cpus=16, commit="abc1234")
    return report


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A copy of measurements/ and the documents the scripts write to, in place of the repository's."""
    shutil.copytree(ROOT / "measurements", tmp_path / "measurements")
    for document in render_tables.DOCUMENTS:
        (tmp_path / document).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / document, tmp_path / document)
    monkeypatch.setattr(render_tables, "ROOT", tmp_path)
    monkeypatch.setattr(render_tables, "MEASUREMENTS", tmp_path / "measurements")
    return tmp_path


def family(tree: Path, name: str) -> dict:
    return json.loads((tree / "measurements" / "benchmarks" / f"{name}.json").read_text())


def write(tmp_path: Path, name: str, data: dict, day: str = "2026-11-29") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    stamp = __import__("datetime").datetime.fromisoformat(f"{day}T12:00:00").timestamp()
    os.utime(path, (stamp, stamp))
    return path


# ------------------------------------------------------------------ socialjax bench --train
def test_a_train_file_becomes_the_aggregate_records_it_was_recorded_as(tree, tmp_path):
    """The --train file's rows give the values train-aggregate-cpu holds for that run, with the
    provenance the file says (the command rebuilt from its flags, the seed counts, the repeats,
    the load at the start) and the stated load; written, the documents render current."""
    path = write(tmp_path, "train.json", TRAIN_FILE)
    made = record_bench.train_records(TRAIN_FILE, path, "train-aggregate-cpu", "quiet", commit="abc1234")
    recorded = {r["seeds"]: r for r in family(tree, "training_throughput")["records"]
                if r["table"] == "train-aggregate-cpu"}
    shown = ("seeds", "computed", "s_per_update", "env_steps_per_s", "agent_steps_per_s", "compile_init_s",
             "compile_update_s", "planned_mib")
    for record in made:
        assert {k: record[k] for k in shown} == {k: recorded[record["seeds"]][k] for k in shown}
    assert made[1]["computed"] == "16 at a time" and made[1]["planned_mib"] == 832
    provenance = made[0]["provenance"]
    assert provenance["command"] == "socialjax bench --train harvest-ippo-small --seeds 1,4,16,64 --repeats 2 " \
                                    "--json train.json"
    assert provenance["batch_sizes"] == [1, 64] and provenance["commit"] == "abc1234"
    assert provenance["date"] == "2026-11-29" and provenance["device"].startswith("cpu")
    assert provenance["repeats"] == "the init and one update compiled, one untimed update, 2 timed; median"
    assert provenance["load"].startswith("quiet; load average at the start [1.42")
    assert set(provenance) == set(render_tables.PROVENANCE_KEYS)

    before = len(family(tree, "training_throughput")["records"])
    assert record_bench.main([str(path), "--table", "train-aggregate-cpu", "--load", "quiet",
                              "--commit", "abc1234"]) == 0
    after = family(tree, "training_throughput")["records"]
    assert len(after) == before + 2 and after[-2:] == made
    assert render_tables.render(check=True) == []
    assert "| 64 | 16 at a time | 32.705 | 1,957 | 5,871 | 3.3; 13.0 | 832 |" in (tree / "BENCHMARKS.md").read_text()


def test_a_train_file_with_overrides_and_other_stage_names(tmp_path):
    """--set and --fit are in the rebuilt command; a row whose stages are not named init and
    '1 update' shows every stage's seconds as text, nothing made up."""
    data = copy.deepcopy(TRAIN_FILE)
    data["args"].update(overrides=[["seating", "shared"]], fit=True)
    data["training"][0]["compile_s"] = {"init": 3.0, "2 updates": 20.0}
    path = write(tmp_path, "train.json", data)
    made = record_bench.train_records(data, path, "train-aggregate-cpu", "quiet")
    assert "--set seating=shared --fit --json train.json" in made[0]["provenance"]["command"]
    assert (made[0]["compile_init_s"], made[0]["compile_update_s"], made[0]["compile_text"]) == (
        3.0, None, "init 3.0; 2 updates 20.0")
    column = next(c for c in render_tables.load_family(render_tables.family_path("training_throughput"))["tables"][
        "train-aggregate-cpu"]["columns"] if c["header"].startswith("compile"))
    assert render_tables.render_cell(column, made[0]) == "init 3.0; 2 updates 20.0"


def test_record_bench_refuses_the_other_kind_and_a_missing_load(tree, tmp_path, capsys):
    """A gpu_check report, a --train file for an environments table or a table of other
    columns, --envs on a --train file and no --load are errors that say what is wrong,
    and nothing is written."""
    train = write(tmp_path, "train.json", TRAIN_FILE)
    report = write(tmp_path, "gpu_check.json", TINY)
    before = (tree / "measurements" / "benchmarks" / "training_throughput.json").read_text()
    for argv, message in (
            ([str(report), "--table", "train-aggregate-cpu", "--load", "q"], "record_gpu_check.py"),
            ([str(train), "--table", "env-matrix-cpu", "--load", "q"], "not a table of training_throughput.json"),
            ([str(train), "--table", "train-cpu", "--load", "q"], "column 'measurement'"),
            ([str(train), "--table", "train-aggregate-cpu", "--load", "q", "--envs", "ipd"], "not environments"),
            ([str(train), "--table", "train-aggregate-cpu"], "required: --load")):
        with pytest.raises(SystemExit) as stop:
            record_bench.main(argv)
        assert stop.value.code == 2 and message in capsys.readouterr().err, argv
    with pytest.raises(ValueError, match="not the JSON of `socialjax bench --train`"):
        record_bench.train_records({"results": []}, train, "train-aggregate-cpu", "q")
    with pytest.raises(ValueError, match="over environments"):
        record_bench.records(TRAIN_FILE, train, "env-matrix-cpu", "q")
    assert (tree / "measurements" / "benchmarks" / "training_throughput.json").read_text() == before


# -------------------------------------------------------------------------- gpu_check.json
def test_device_names():
    names = record_gpu_check.device_names
    assert names({"device": "NVIDIA H200", "platform": "gpu"}, False) == ("gpu-h200", "h200")
    assert names({"device": "NVIDIA H100 80GB HBM3", "platform": "gpu"}, False) == ("gpu-h100", "h100")
    assert names({"device": "NVIDIA A100-SXM4-80GB", "platform": "gpu"}, False) == ("gpu-a100", "a100")
    assert names({"device": "NVIDIA GeForce RTX 4090", "platform": "gpu"}, False) == ("gpu-rtx-4090", "rtx-4090")
    assert names({"device": "cpu", "platform": "cpu"}, True) == ("cpu-tiny", "cpu-tiny")
    assert names({"device": "NVIDIA H100 80GB HBM3", "platform": "gpu"}, False, "h100-sxm") == (
        "gpu-h100-sxm", "h100-sxm")


def test_a_gpu_report_goes_to_the_devices_tables(tree, tmp_path, capsys):
    """An H200 report: envs to env-gpu-h200, determinism to determinism-h200, the sweep to
    compile-many-seeds, the train part to train-gpu-h200 with its ratio to peer-train, and
    the aggregate parts to a new train-aggregate-gpu-h200 (train-aggregate-cpu's columns
    with what and peak MiB, markers after it); profile, tests and reproduce-* said not
    recorded; provenance from the report; run again, nothing is added twice."""
    path = write(tmp_path, "gpu_check.json", gpu(TINY))
    assert record_gpu_check.main([str(path), "--load", "nothing else ran"]) == 0
    err = capsys.readouterr().err
    assert "table train-aggregate-gpu-h200: created" in err
    assert "profile: not recorded: no table renders a profile" in err
    assert "reproduce-cleanup-reward: not recorded: measurements/reproductions/ has no table of the gpu scale" in err
    assert "determinism-flag: not recorded: no rows (the part skipped" in err
    assert render_tables.render(check=True) == []

    def added(name, table):
        return [r for r in family(tree, name)["records"] if r["table"] == table and
                r["provenance"]["load"] == "nothing else ran"]

    envs = added("env_throughput", "env-gpu-h200")
    assert [(r["env"], r["agents"], r["batch"], r["steps"], r["env_steps_per_s"], r["median_call_s"], r["compile_s"])
            for r in envs] == [("ipd", 2, 4, 10, 181667, 0.0, 2.1), ("cleanup", 7, 4, 10, 29605, 0.001, 12.9)]
    provenance = envs[0]["provenance"]
    assert provenance["command"] == gpu(TINY)["command"] and provenance["date"] == "2026-11-29"
    assert provenance["commit"] == "abc1234" and provenance["device"] == "gpu (1 device(s): NVIDIA H200)"
    assert provenance["software"] == "Python 3.11.7, jax 0.10.2, jaxlib 0.10.2"
    assert provenance["machine"].startswith("NVIDIA H200, 16 CPUs") and provenance["batch_sizes"] == [4]
    assert provenance["repeats"] == "median of 3 calls, compile apart"

    ours, peer = added("training_throughput", "train-gpu-h200")
    assert (ours["env_steps_per_s"], ours["s_per_update"], ours["rollout_s"], ours["learning_s"],
            ours["compile_update_s"], ours["compile_rollout_s"], ours["vs_socialjax"]) == (
        697, 0.023, 0.014, 0.009, 3.3, 14.1, 65.57)
    assert ours["what"] == "ours, ppo / shared / `cnn` / looped conv / float32, 1 learner(s)"
    assert (peer["env_steps_per_s"], peer["vs_socialjax_text"], peer["compile_update_s"]) == (11, "1x", 21.6)

    aggregate = added("training_throughput", "train-aggregate-gpu-h200")
    assert [(r["seeds"], r["computed"], r["env_steps_per_s"], r["compile_init_s"], r["planned_mib"], r["status"])
            for r in aggregate] == [(1, "all together", 373, 4.6, 2, None), (2, "all together", 921, 8.0, 3, None),
                                    (1, "vmapped", 11, None, None, None),
                                    (2, "vmapped", None, None, None, "not timed (compiled in 19.1 s; the part timed "
                                                                     "out: stopped at its deadline of 90 s)")]
    assert "the part timed out (stopped at its deadline of 90 s): the rows it finished" in \
        aggregate[3]["provenance"]["notes"]
    spec = family(tree, "training_throughput")["tables"]["train-aggregate-gpu-h200"]
    assert [c["header"] for c in spec["columns"]][:2] == ["what", "seeds S"] and spec["intro"].startswith(
        "On NVIDIA H200")
    text = (tree / "BENCHMARKS.md").read_text()
    assert text.index("<!-- table:train-aggregate-cpu end -->") < text.index(
        "<!-- table:train-aggregate-gpu-h200 start -->")

    sweep = added("compile_times", "compile-many-seeds")
    assert [(r["preset"], r["seeds"], r["chunk"], r["update_programs"], r["init_s"], r["update_s"], r["finish_s"],
             r["compile_s"], r["vs_4_seeds"]) for r in sweep] == [("ipd-tft", 4, "all", 1, 2.9, 9.5, 0.1, 13.0, None)]
    assert "13.8 s wall" in sweep[0]["provenance"]["notes"]

    determinism = added("gpu_determinism", "determinism-h200")
    assert [(r["deterministic_ops"], r["comparison"], r["same_bits"], r["largest_difference"]) for r in determinism] \
        == [("off", "the same program twice", "yes", 0.0),
            ("off", "chunk=2 vs all 4 runs together", "no", 3.814697265625e-06)]

    files = {name: (tree / "measurements" / "benchmarks" / f"{name}.json").read_text()
             for name in ("env_throughput", "training_throughput", "compile_times", "gpu_determinism")}
    assert record_gpu_check.main([str(path), "--load", "nothing else ran"]) == 1
    assert "already in" in capsys.readouterr().err
    assert files == {name: (tree / "measurements" / "benchmarks" / f"{name}.json").read_text() for name in files}


def test_a_new_device_gets_tables_copied_from_the_latest(tree, tmp_path, capsys):
    """A B200 has no tables: dry-run says which it would create and writes nothing; recorded,
    each copies the columns of the latest GPU table of its kind, markers after it."""
    path = write(tmp_path, "gpu_check.json", gpu(TINY, "NVIDIA B200"))
    documents = {d: (tree / d).read_text() for d in render_tables.DOCUMENTS}
    assert record_gpu_check.main([str(path), "--load", "quiet", "--dry-run", "--parts", "envs,determinism"]) == 0
    out = capsys.readouterr()
    assert "table env-gpu-b200: would create" in out.err and "table determinism-b200: would create" in out.err
    assert len(out.out.splitlines()) == 4  # the records, one JSON a line
    assert documents == {d: (tree / d).read_text() for d in render_tables.DOCUMENTS}
    assert record_gpu_check.main([str(path), "--load", "quiet"]) == 0
    capsys.readouterr()
    for name, table, like in (("env_throughput", "env-gpu-b200", "env-gpu-h200"),
                              ("training_throughput", "train-gpu-b200", "train-gpu-h200"),
                              ("gpu_determinism", "determinism-b200", "determinism-h200")):
        tables = family(tree, name)["tables"]
        assert tables[table]["columns"] == tables[like]["columns"]
        text = (tree / "BENCHMARKS.md").read_text()
        assert text.index(f"<!-- table:{like} end -->") < text.index(f"<!-- table:{table} start -->")
    assert render_tables.render(check=True) == []


def test_record_gpu_check_refuses_bad_input(tree, tmp_path, capsys):
    """A tiny report (without --allow-tiny), a `socialjax bench` file, a part the report
    lacks and no --load are errors that say what is wrong; a report of an earlier call's
    part keeps no command, date or commit that the report does not hold for it."""
    tiny = write(tmp_path, "tiny.json", TINY)
    train = write(tmp_path, "train.json", TRAIN_FILE)
    real = write(tmp_path, "gpu_check.json", gpu(TINY))
    for argv, message in (([str(tiny), "--load", "q"], "a --tiny report"),
                          ([str(train), "--load", "q"], "record it with scripts/record_bench.py"),
                          ([str(real), "--load", "q", "--parts", "nope"], "the report has no part ['nope']"),
                          ([str(real), "--load", " "], "say what else ran"),
                          ([str(real)], "required: --load")):
        with pytest.raises(SystemExit) as stop:
            record_gpu_check.main(argv)
        assert stop.value.code == 2 and message in capsys.readouterr().err, argv

    done = record_gpu_check.plan(TINY, "q", parts=["envs", "sweep"], allow_tiny=True)
    assert {table for _, _, r in done["records"] for table in [r["table"]]} == {"env-cpu-tiny",
                                                                                "compile-many-seeds-cpu-tiny"}
    earlier = gpu(TINY)
    earlier["command"] = "python3 scripts/gpu_check.py --out OUT --call 2"  # ran reproduce-* only
    done = record_gpu_check.plan(earlier, "q", parts=["envs"])
    provenance = done["records"][0][2]["provenance"]
    assert (provenance["command"], provenance["date"], provenance["commit"]) == (None, None, None)
    assert "an earlier call into the same folder" in provenance["notes"]
    # a report written since gpu_check keeps each part's call: that call's command, date and commit
    first = gpu(TINY)
    kept = {"command": "python3 scripts/gpu_check.py --out OUT", "machine": dict(first["machine"], commit="f00dcafe")}
    for part in earlier["parts"].values():
        part["provenance"] = kept
    provenance = record_gpu_check.plan(earlier, "q", parts=["envs"])["records"][0][2]["provenance"]
    assert (provenance["command"], provenance["commit"]) == (kept["command"], "f00dcafe")
    assert provenance["date"] is not None and "earlier call" not in (provenance["notes"] or "")
