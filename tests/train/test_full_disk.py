"""A filesystem that fills up, for real: a small tmpfs (in a private mount namespace, so
the test needs no privileges where the system lets users make one), filled to leave a
little less room each time than ``socialjax train`` needs, so that its writes fail one
after another: the first checkpoint, a later one (the new checkpoint is written beside
the old before it replaces it), the result's files (metrics, checkpoint, figure,
summary CSV) and JAX's compilation cache. Every failure must be one line naming the
path, the cause and what to do, with no traceback; what was saved before must be whole
(a checkpoint that ``--resume`` finishes once there is room, or nothing); a run that fits
must give a whole result. Slow tier: a dozen runs of the command."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

TRAIN = ["-m", "socialjax.cli", "train", "ipd-ppo", "--seeds", "2", "--updates", "3", "--checkpoint-every", "1",
         "--set", "num_envs=4", "--set", "rollout_len=10", "--set", "hidden=8", "--set", "update_epochs=1",
         "--set", "num_minibatches=1", "--set", "evaluate=False", "--quiet"]
PAGE = 4096

DRIVER = """
import json, os, shutil, subprocess, sys
from pathlib import Path
from socialjax.train import store

mp, cache, plan = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
train = json.loads(sys.argv[4])
env = {**os.environ, "JAX_PLATFORMS": "cpu", "SOCIALJAX_COMPILATION_CACHE": cache}


def free() -> int:
    st = os.statvfs(mp)
    return st.f_bavail * st.f_frsize


def leave(room: int) -> None:
    (mp / "fill").unlink(missing_ok=True)
    size = max(free() - room, 0)
    with open(mp / "fill", "wb") as fh:
        fh.truncate(0)
        fh.write(b"\\0" * size)  # written, not sparse: tmpfs counts written pages


def run(args, **kw):
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, env={**env, **kw})
    return {"code": done.returncode, "err": done.stderr}


reports = []
for case in plan:
    for p in mp.iterdir():
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    out = mp / "run"
    leave(case["room"])
    report = {"case": case, "train": run(train + ["--out", str(out)], **case.get("env", {}))}
    report["state"] = store.folder_state(out)
    if report["state"] == "unfinished":
        report["checkpoint_ok"] = bool(store.verify(out / "resume", kind="checkpoint"))
    (mp / "fill").unlink(missing_ok=True)  # room again: what was saved must finish or be whole
    if report["state"] in ("unfinished", "replacing"):
        report["resume"] = run(["-m", "socialjax.cli", "train", "--resume", str(out), "--quiet"])
        report["state_after"] = store.folder_state(out)
    if store.folder_state(out) == "result":
        report["result_ok"] = bool(store.verify(out, kind="population"))
        report["result_bytes"] = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
        if case.get("csv"):
            leave(0)
            report["csv"] = run(["-m", "socialjax.cli", "results", str(out), "--csv", str(mp / "table.csv")])
            report["csv_left"] = (mp / "table.csv").exists()
    reports.append(report)
print(json.dumps(reports))
"""


@pytest.fixture(scope="module")
def tmpfs(tmp_path_factory):
    """``inside(cmd)``: ``cmd`` run with a fresh 16 MiB tmpfs at the returned path."""
    mp = tmp_path_factory.mktemp("disk") / "mp"
    mp.mkdir()
    mount = f"mount -t tmpfs -o size=16m tmpfs {mp}"
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", mount], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {probe.stderr.strip()}")
    return mp, lambda cmd: ["unshare", "-rm", "sh", "-c", f'{mount} && exec "$@"', "sh", *cmd]


def drive(tmpfs, cache, plan):
    mp, inside = tmpfs
    done = subprocess.run(inside([sys.executable, "-c", DRIVER, str(mp), str(cache), json.dumps(plan),
                                  json.dumps(TRAIN)]), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


def test_every_write_of_a_run_failing_on_a_full_disk(tmpfs, tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    roomy = drive(tmpfs, cache, [{"room": 8 << 20}])[0]  # how much a run writes
    assert roomy["train"]["code"] == 0 and roomy["result_ok"], roomy
    need = roomy["result_bytes"]
    rooms = sorted({(need * k // 8) // PAGE * PAGE for k in range(0, 25, 2)})  # 0 .. 3 results' worth
    plan = [{"room": r, "csv": r == rooms[-1]} for r in rooms]
    plan.append({"room": 0, "env": {"SOCIALJAX_COMPILATION_CACHE": str(tmpfs[0] / "cache")}})  # the cache too
    reports = drive(tmpfs, cache, plan)
    failed_at = set()
    for rep in reports:
        code, err = rep["train"]["code"], rep["train"]["err"]
        assert code in (0, 1), rep
        if code == 1:
            line = one_line(err)
            assert "No space left on device; the disk is full" in line, line
            assert str(tmpfs[0]) in line  # the path
            failed_at.add(line.split("cannot write the ")[1].split(" ")[0])
            if rep["state"] == "unfinished":
                assert rep["checkpoint_ok"] and "is intact: continue with `socialjax train --resume" in line
                assert rep["resume"]["code"] == 0 and rep["state_after"] == "result", rep
            else:
                assert rep["state"] in ("missing", "empty") and "nothing was saved" in line, rep
        else:
            assert rep["state"] == "result" and rep["result_ok"], rep
        if "csv" in rep:
            assert rep["csv"]["code"] == 1 and not rep["csv_left"], rep
            assert "No space left on device" in one_line(rep["csv"]["err"])
    assert failed_at == {"checkpoint", "result"}, [(r["case"]["room"], r["train"]) for r in reports]
    cache_case = reports[-1]["train"]
    assert cache_case["code"] == 1  # no room for its checkpoint either, but the cache failure is one line, not a stop
    said = [line for line in cache_case["err"].splitlines() if "compilation cache" in line]
    assert len(said) <= 1, cache_case["err"]
