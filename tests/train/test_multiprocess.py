"""``sj.train.run`` and ``socialjax train`` over several processes (``jax.distributed``).

Two local CPU processes, one device each, join through a coordinator on 127.0.0.1 (a
free port, bound to loopback only) and run the same call; JAX's CPU collectives (gloo,
the default) gather the results. They are compared, bit for bit, with one process that
fakes two CPU devices: the same blocks of 4 runs per device, so the same compiled
program on every device. The CLI pair checks that process 0 alone writes the results.

Every process is a subprocess with a deadline; all are killed if one hangs.
"""

import contextlib
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from support import with_devices
from train_configs import IPD_ROUNDS, IPD_TFT, IPD_TFT_SEEDS

import socialjax as sj
from socialjax import cli
from socialjax.train.devices import lay_out
from socialjax.train.results import OUTPUT_FILES, load_run

DEADLINE = 300  # seconds for a group of processes; compiling takes ~10 s each on an idle core
LOG_EVERY = 25  # IPD_TFT has 50 updates: progress lines at updates 25 and 50

# argv: process id, number of processes (1: no jax.distributed), port, config, output .npz
WORKER = textwrap.dedent(
    """
    import sys
    import jax
    pid, n, port = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    if n > 1:
        jax.distributed.initialize(coordinator_address=f"127.0.0.1:{{port}}", num_processes=n, process_id=pid,
                                   coordinator_bind_address=f"127.0.0.1:{{port}}", initialization_timeout=120)
    import numpy as np
    import socialjax as sj
    from socialjax.train import TrainConfig

    assert len(jax.devices()) == 2 and len(jax.local_devices()) == 2 // n, jax.devices()
    config = eval(sys.argv[4], {{"TrainConfig": TrainConfig}})
    env = sj.make("ipd", num_rounds={rounds})
    result = sj.train.run(env, config, seeds={seeds})  # devices: jax.devices(), of every process
    out = {{f"metric|{{k}}": v for k, v in result.metrics.items()}}
    out.update({{f"state|{{i}}": np.asarray(x) for i, x in enumerate(jax.tree_util.tree_leaves(result.states))}})
    out["seeds"], out["nan_runs"] = result.seeds, np.asarray(len(result.nan_runs))
    np.savez(sys.argv[5], **out)
    """
).format(rounds=IPD_ROUNDS, seeds=IPD_TFT_SEEDS)

# socialjax train in 2 processes: tiny (2 updates of 4 games), one learner against TFT
CLI_ARGS = ["train", "ipd-tft", "--seeds", "2", "--out", "results", "--set", "num_updates=2", "--set", "num_envs=4",
            "--set", "update_epochs=1", "--set", "num_minibatches=1", "--set", "hidden=8", "--set", "evaluate=False"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def base_env(devices: int) -> dict[str, str]:
    """The environment of a subprocess: CPU, ``devices`` CPU devices, this checkout's
    socialjax first on the path, no proxy (loopback only; a proxy can hang gRPC)."""
    root = str(Path(sj.__file__).resolve().parents[1])
    env = {k: v for k, v in os.environ.items() if "_proxy" not in k.lower()}
    env.update(JAX_PLATFORMS="cpu", XLA_FLAGS=with_devices(devices),
               PYTHONPATH=os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])]))
    return env


def launch(jobs: list[dict], tmp: Path) -> list[tuple[str, str]]:
    """Start every job (``argv``, ``env``, ``cwd``) at once and wait for all; on the
    deadline or a failure kill them all. Returns ``(stdout, stderr)`` per job."""
    procs, logs = [], []
    with contextlib.ExitStack() as files:
        for i, job in enumerate(jobs):
            out = files.enter_context(open(tmp / f"job{i}.out", "w+"))
            err = files.enter_context(open(tmp / f"job{i}.err", "w+"))
            logs.append((out, err))
            procs.append(subprocess.Popen(job["argv"], env=job["env"], cwd=job.get("cwd"), stdout=out, stderr=err,
                                          text=True))
        deadline = time.monotonic() + DEADLINE
        try:
            while any(p.poll() is None for p in procs):
                if time.monotonic() > deadline or any(p.returncode not in (None, 0) for p in procs):
                    break
                time.sleep(0.2)
        finally:
            for p in procs:  # only ours, by handle
                if p.poll() is None:
                    p.kill()
                    p.wait()
        texts = []
        for out, err in logs:
            out.seek(0), err.seek(0)
            texts.append((out.read(), err.read()))
    for i, (p, (_, err)) in enumerate(zip(procs, texts)):
        assert p.returncode == 0, f"job {i} exited with {p.returncode}:\n{err[-3000:]}"
    return texts


def load(path: Path) -> dict:
    with np.load(path) as data:
        return {k: data[k] for k in data.files}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``IPD_TFT`` (2 learning rates x 4 seeds = 8 runs) with progress every 25 updates,
    run three ways at once: processes 0 and 1 of a jax.distributed pair, one device and
    4 runs each, and one process with 2 fake devices, 4 runs each. ``{"mp0", "mp1",
    "single"}`` -> ``(saved arrays, stderr)``."""
    tmp = tmp_path_factory.mktemp("multiprocess")
    port, config = str(free_port()), repr(IPD_TFT.replace(log_every=LOG_EVERY))
    names = ["mp0", "mp1", "single"]
    jobs = [{"argv": [sys.executable, "-c", WORKER, str(pid), str(n), port, config, str(tmp / f"{name}.npz")],
             "env": base_env(2 // n)} for name, pid, n in (("mp0", 0, 2), ("mp1", 1, 2), ("single", 0, 1))]
    texts = launch(jobs, tmp)
    return {name: (load(tmp / f"{name}.npz"), err) for name, (_, err) in zip(names, texts)}


@pytest.mark.slow
def test_two_processes_give_the_bits_of_one_process_with_as_many_devices(runs):
    """Every process of the pair returns the full result (the 4 runs of the other process
    gathered, the NaN-halted lr 1e30 runs among them), and its metrics and trained
    states equal, bit for bit, those of one process with 2 devices."""
    single, _ = runs["single"]
    assert int(single["nan_runs"]) == IPD_TFT_SEEDS  # lr 1e30 halts every seed: the gathered half
    assert single["metric|reward_rate"].shape[:2] == (2, IPD_TFT_SEEDS)
    for name in ("mp0", "mp1"):
        got, _ = runs[name]
        assert got.keys() == single.keys()
        for k in single:
            np.testing.assert_array_equal(got[k], single[k], err_msg=f"{name}: {k}")
    rate = single["metric|reward_rate"][0]  # distinct seeds differ, so the comparison can fail
    assert not np.array_equal(rate[0], rate[1])


@pytest.mark.slow
def test_only_process_0_prints_progress(runs):
    """Progress lines (updates 25 and 50) come from process 0 alone."""
    lines = lambda err: [line for line in err.splitlines() if f"/{IPD_TFT.num_updates}]" in line]  # noqa: E731
    assert len(lines(runs["mp0"][1])) == IPD_TFT.num_updates // LOG_EVERY
    assert lines(runs["mp1"][1]) == []


@pytest.mark.slow
def test_socialjax_train_over_two_processes_writes_the_results_once(tmp_path):
    """``socialjax train ... --coordinator 127.0.0.1:PORT --num-processes 2
    --process-id I``, each process in its own folder with ``--out results``: process 0
    writes every output file (its 2 seeds gathered from both processes) and the summary;
    process 1 writes and prints nothing."""
    port = free_port()
    jobs = []
    for pid in range(2):
        cwd = tmp_path / f"p{pid}"
        cwd.mkdir()
        env = {**base_env(1), "JAX_COORDINATOR_BIND_ADDRESS": f"127.0.0.1:{port}"}  # loopback only
        jobs.append({"argv": [sys.executable, "-m", "socialjax.cli", *CLI_ARGS, "--coordinator", f"127.0.0.1:{port}",
                              "--num-processes", "2", "--process-id", str(pid)], "env": env, "cwd": cwd})
    (out0, _), (out1, err1) = launch(jobs, tmp_path)
    assert sorted(p.name for p in (tmp_path / "p0" / "results").iterdir()) == sorted(OUTPUT_FILES)
    assert not (tmp_path / "p1" / "results").exists()
    assert "2 cpu device(s) in 2 processes" in out0 and "wrote results/" in out0
    assert [line for line in out1.splitlines() if not line.startswith("[Gloo]")] == []  # gloo's own line
    assert "ipd-tft [" not in err1
    loaded = load_run(tmp_path / "p0" / "results")
    np.testing.assert_array_equal(loaded.seeds, [0, 1])
    assert loaded.metrics["reward_rate"].shape[:3] == (1, 2, 2)
    assert np.isfinite(loaded.metrics["reward_rate"]).all()


class _Device:
    """Stands in for a ``jax.Device``: an id and a process."""

    def __init__(self, i, process=0):
        self.id, self.process_index = i, process


@pytest.mark.parametrize("processes, match", [
    ([1, 1], "none of this process's devices"),        # this process (0) would compute nothing
    ([0, 0, 1], "as many devices of each"),            # unequal blocks cannot be gathered
])
def test_device_lists_that_a_process_cannot_run_or_gather_are_rejected(processes, match):
    with pytest.raises(ValueError, match=match):
        lay_out(8, [_Device(i, p) for i, p in enumerate(processes)])


@pytest.mark.parametrize("argv, message", [
    (["--coordinator", "127.0.0.1:1234"], "missing --num-processes, --process-id"),
    (["--coordinator", "127.0.0.1", "--num-processes", "2", "--process-id", "0"], "expected HOST:PORT"),
    (["--coordinator", "127.0.0.1:1234", "--num-processes", "2", "--process-id", "2"], "--process-id must be in 0..1"),
])
def test_bad_process_flags_are_rejected_before_jax_starts(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["train", "ipd-tft", *argv])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_donor_evolution_refuses_several_processes(capsys):
    with pytest.raises(SystemExit):
        cli.main(["train", "donor-evolution", "--coordinator", "127.0.0.1:1234", "--num-processes", "2",
                  "--process-id", "0"])
    assert "donor-evolution runs in one process" in capsys.readouterr().err
