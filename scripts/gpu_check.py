"""The accelerator check: what BENCHMARKS.md and REPRODUCTIONS.md need from a GPU, in
two calls that fit a short spell on a bare machine.

    python scripts/gpu_check.py --out $OUT                  # call 1: about 9 minutes on one H100-class GPU
    python scripts/gpu_check.py --out $OUT --call 2         # call 2: about 5 minutes, the gpu-scale reproductions
    python scripts/gpu_check.py --out $OUT --parts tests --budget 300   # the GPU's share of the tests
    python scripts/gpu_check.py --tiny --out /tmp/check     # the parts at toy sizes, on a CPU, in a few minutes

Each part runs in a process of its own under a deadline and appends each measurement
the moment it has it, so a part that fails or runs out of time keeps what it measured
and leaves the other parts' numbers intact. After every part, ``OUT/gpu_check.json``
(every number, with the device, jax version, commit and date, and per part the command
and machine of the call that ran it) and ``OUT/gpu_check.md``
(the same as markdown tables, ready for BENCHMARKS.md) are rewritten; ``OUT/gpu_check.log``
holds what the parts printed. Call 1 runs, in this order, what has never been measured
on a GPU first:

- ``sweep``: ``socialjax train harvest-ippo-small --seeds 1024 --updates 4``, no flag:
  wall time, compile time per stage, the chunk ``run`` chose, env-steps/s.
- ``aggregate``: Clean Up IPPO at SocialJax's configuration (7 players, 256 games x
  1000-step rollouts, 2 epochs x 500 minibatches, one network shared by the seats, our
  CNN) with S = 1, 8 and 64 seeds in one call, then as many as the device holds
  together (:func:`socialjax.bench.train_sweep`): aggregate env-steps/s, s per update,
  compile s, planned and peak memory.
- ``aggregate-peer`` (only with ``--peer DIR``, a SocialJax checkout): their
  ``ippo_cnn_cleanup`` at the same configuration with S = 1, 2, 4 seeds vmapped in one
  call, as their sweep code does, until one does not fit (``scripts/peer_socialjax.py``).
- ``profile``: one update of one seed (the ``aggregate`` configuration) under
  ``jax.profiler``: device time by kernel and by phase (the ``rollout`` and ``learn``
  name scopes), and the host's share.
- ``envs``: env-steps/s under random actions (:mod:`socialjax.bench`'s program) of
  cleanup, harvest_open, gathering, coins, territory_rooms, ipd and donor_game at 4,096
  and 65,536 games, compile time apart; every game at the smallest size first.

Call 2 (``--call 2``) runs ``reproduce-cleanup-reward`` and ``reproduce-harvest-reward``:
each entry at its ``gpu`` scale: its verdict, table rows and time; its figure, table and
summary under ``OUT/reproduce-NAME/``.

By ``--parts`` only:

- ``train-shared-cnn``, ``train-shared-cnn-bf16``, ``train-shared-cnn_sj``,
  ``train-paper-preset``, ``train-shared-cnn-looped``, ``train-mappo``, ``train-irat``:
  Clean Up at SocialJax's configuration, one seed, one network per variant (our CNN in
  float32 and bfloat16, SocialJax's CNN, the 7-learner preset, the CPU's convolution, the
  other baselines): compile s, seconds per update and its split into the rollout
  (compiled and timed alone) and the rest (learning), env-steps/s, peak memory.
- ``peer-env``, ``peer-train`` (with ``--peer``): their ``clean_up`` at the ``envs``
  batch sizes and their training loop on one seed.
- ``aggregate-looped``, ``aggregate-patch``: the ``aggregate`` configuration at 8 and 64
  seeds with the other convolutions (every member one after another; every member's
  patches batched), beside ``aggregate``'s XLA convolution, to set ``conv="auto"``'s
  strategy on a GPU by measurement.
- ``determinism``: one small CNN training run, four times in each of two processes,
  with and without ``--xla_gpu_deterministic_ops=true``: whether two calls of the same
  program give the same bits, and the largest difference when the runs are computed
  in other chunks.
- ``reproduce-NAME`` for each other entry of ``socialjax reproduce`` with a ``gpu`` scale.
- ``tests``: the test files that compile the env, network and training programs, on
  this backend, with counts and the failures.

``--tiny`` runs the parts at toy sizes (the suite runs it, so the check cannot rot).
docs/testing.md says how to run it on a bare GPU machine.

This process only orchestrates and never imports JAX or socialjax: importing socialjax
creates arrays, which would start the GPU backend here and claim most of the device's
memory (JAX preallocates 75% of it) while the parts' processes need it. The workers
therefore import what they use inside their functions.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import gzip
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
JSON_FILE, MARKDOWN_FILE, LOG_FILE, TRACE_FILE = "gpu_check.json", "gpu_check.md", "gpu_check.log", "profile.json.gz"
MIN_PART_S = 10  # a part is skipped when less time than this is left
MAX_TRACE_BYTES = 15 * 2**20  # the device tool brings back files of up to 16 MiB
TINY_BUDGET_S = 600


@dataclasses.dataclass(frozen=True)
class Part:
    """One part of the check: ``deadline_s`` caps it (``tiny_deadline_s`` with
    ``--tiny``), and so does what is left of the budget when it starts."""

    name: str
    deadline_s: float
    tiny_deadline_s: float = 90.0
    needs_peer: bool = False


# the entries of ``socialjax reproduce`` with a ``gpu`` scale (the gridworlds; a test checks the
# list against the entries, which this process does not import)
GPU_ENTRIES = ("cleanup-reward", "harvest-reward", "inequity-aversion", "schelling", "commons-metrics",
               "gathering-scarcity", "baselines")
REPRODUCE_FILES = ("figure.png", "table.csv", "summary.txt", "reproduction.json")

PARTS = (
    # call 1, in its order: the sweep's compile is what never finished on a GPU (two H200 spells
    # ended "compiling..." at 90 s with grouped convolutions); the aggregate part times 4
    # programs of the paper batch (S = 1, 8, 64, as many as fit), one warm-up and one timed
    # update each; what is left goes to the profile and the environments
    Part("sweep", 130),
    Part("aggregate", 200, tiny_deadline_s=150),
    Part("aggregate-peer", 120, tiny_deadline_s=150, needs_peer=True),
    Part("profile", 50),
    Part("envs", 100),
    # call 2: the gpu scale of the reward entries (each sized for about 6 minutes at one seed's
    # H100 throughput; their runs go together, so faster where many seeds gain)
    Part("reproduce-cleanup-reward", 480),
    Part("reproduce-harvest-reward", 480),
    # by --parts only
    Part("train-shared-cnn", 50),
    Part("train-shared-cnn-bf16", 60),
    Part("train-shared-cnn_sj", 50),
    Part("train-paper-preset", 50),
    Part("train-shared-cnn-looped", 50),  # conv="looped" (the CPU's choice) timed on a GPU
    Part("train-mappo", 60),  # the baselines beside IPPO
    Part("train-irat", 70),
    Part("peer-env", 60, needs_peer=True),
    Part("peer-train", 70, needs_peer=True),
    Part("determinism", 60),
    Part("profile-env", 90),  # the simulator alone: where a Clean Up step's device time goes
    Part("aggregate-looped", 150),
    Part("aggregate-patch", 150),
    *(Part(f"reproduce-{name}", 480) for name in GPU_ENTRIES if name not in ("cleanup-reward", "harvest-reward")),
    Part("tests", 600, tiny_deadline_s=120),
)
PART_NAMES = tuple(p.name for p in PARTS)
# what each call runs without --parts, and its budget: 9 minutes, then 5 (a 15-minute spell,
# the machine's start included; on the first H100 it started in about 30 s)
CALLS = {
    1: (("sweep", "aggregate", "aggregate-peer", "profile", "envs"), 540),
    2: (("reproduce-cleanup-reward", "reproduce-harvest-reward"), 300),
}

# (a) environments and batch sizes
ENVS = ("cleanup", "harvest_open", "gathering", "coins", "territory_rooms", "ipd", "donor_game")
BATCH_SIZES = (4096, 65536)
ENV_STEP_BUDGET = 8_000_000  # env-steps per timed call (T = clip(budget // B, 10, 10000))
PROFILE_ENV_STEPS = 20  # steps of the one traced call of part profile-env (a trace of every kernel of every step)
# (b) SocialJax's IPPO configuration for Clean Up (cooperativex/SocialJax algorithms/IPPO/config/ippo_base.yaml):
# 256 games x 1000 steps, 2 epochs of 500 minibatches; our preset cleanup-ippo-paper holds it
PAPER_PRESET = "cleanup-ippo-paper"
TRAIN_VARIANTS = {
    "train-shared-cnn": dict(seating="shared", network="cnn", precision="float32"),
    "train-shared-cnn-bf16": dict(seating="shared", network="cnn", precision="bfloat16"),
    "train-shared-cnn_sj": dict(seating="shared", network="cnn_sj", precision="float32"),
    "train-paper-preset": {},
    "train-shared-cnn-looped": dict(seating="shared", network="cnn", precision="float32", conv="looped"),
    # the other baselines at the same batch (socialjax.reproduce.baselines' gpu scale)
    "train-mappo": dict(seating="shared", network="cnn", precision="float32", algo="mappo", reward="common"),
    "train-irat": dict(seating="shared", network="cnn", precision="float32", algo="irat"),
}
TIMED_CALLS = 2  # after one untimed call
# (c) the sweep, and the seed counts of the aggregate table (ours; SocialJax's, vmapped as its sweep code does)
SWEEP = dict(preset="harvest-ippo-small", seeds=1024, updates=4)
AGGREGATE_SEEDS = (1, 8, 64)
PEER_SEEDS = (1, 2, 4)
# the other convolutions at the aggregate part's configuration (by --parts), to choose conv="auto"'s
# strategy on a GPU by measurement: XLA's convolution maps up to MAP_MEMBERS members one by one and
# batches more as matrix products over patches; "looped" maps every member; "patch" batches all
AGGREGATE_CONVS = {"aggregate-looped": "looped", "aggregate-patch": "patch"}
AGGREGATE_CONV_SEEDS = (8, 64)
# (e) the tests that compile environment, network and training programs
TEST_PATHS = ("tests/core", "tests/envs", "tests/agents", "tests/train")
# the determinism part: a small CNN run (harvest-ippo-small's network), computed whole and in chunks
DETERMINISM = dict(preset="harvest-ippo-small", seeds=4, updates=2, chunks=(1, 2))
DETERMINISTIC_FLAG = "--xla_gpu_deterministic_ops=true"

# --tiny: the same code paths at toy sizes
TINY_ENVS, TINY_BATCH_SIZES, TINY_ENV_STEP_BUDGET = ("ipd", "cleanup"), (4,), 40
TINY_CLEANUP = dict(num_envs=2, rollout_len=8, num_minibatches=2, hidden=16, channels=4, embed_dim=2)
TINY_SWEEP = dict(preset="ipd-tft", seeds=4, updates=1, flags=("--set", "evaluate=False"))
TINY_AGGREGATE_SEEDS = (1, 2)
TINY_DETERMINISM = dict(preset="ipd-tft", seeds=4, updates=1, chunks=(2,))
TINY_TESTS = ("tests/core/test_spaces.py",)
# at toy sizes a reproduce part runs the same code on the cheapest entry's pipeline check
# (a gridworld's small run takes a minute or more on a 2-core CPU)
TINY_REPRODUCE = dict(entry="punishment", scale="small", seeds=2)


# ------------------------------------------------------------------------------ workers
# Each runs in its own process (``--worker NAME``) and appends rows to ``rows`` as it goes.

def cleanup_config(changes: dict, tiny: bool, **more):
    """``cleanup-ippo-paper`` at SocialJax's batch with ``changes`` (one update, no
    evaluation, no progress lines); toy sizes with ``tiny``."""
    from socialjax.train.presets import get_preset

    preset = get_preset(PAPER_PRESET)
    overrides = dict(num_updates=1, evaluate=False, log_every=0)
    overrides.update(changes, **more)
    if tiny:
        overrides.update(TINY_CLEANUP)
    return preset.make_env(), preset.make_config(**overrides)


def worker_envs(row, tiny: bool, **_):
    import socialjax as sj
    from socialjax.bench import adaptive_steps, bench

    names, sizes = (TINY_ENVS, TINY_BATCH_SIZES) if tiny else (ENVS, BATCH_SIZES)
    budget = TINY_ENV_STEP_BUDGET if tiny else ENV_STEP_BUDGET
    for batch in sizes:  # every game at the smallest size first
        for name in names:
            env = sj.make(name)
            result = bench(env, batch, adaptive_steps(batch, budget), repeats=3, seed=0)
            row({"env": name, **{k: result[k] for k in ("batch", "steps", "num_agents", "compile_s", "times_s",
                                                        "median_s", "env_steps_per_s", "agent_steps_per_s")}})


def worker_train(row, tiny: bool, part: str, **_):
    import jax
    from bench_train import update_pieces
    from check_io import compiled, peak_memory, timed

    from socialjax.agents.networks import resolve_conv
    from socialjax.train import make_train, run_keys
    from socialjax.train.memory import program_bytes

    env, config = cleanup_config(TRAIN_VARIANTS[part], tiny)
    train = make_train(env, config)
    key = run_keys([0])[0]
    state = jax.jit(train.init)(key)
    update = jax.jit(lambda s: train.updates(s, 0, length=1))
    update_program, update_compile = compiled(update, state)
    describe = dict(algo=config.algo, seating=config.seating, network=config.network, conv=resolve_conv(config.conv),
                    precision=config.precision, learners=train.plan.num_learners, num_envs=config.num_envs,
                    rollout_len=config.rollout_len, update_epochs=config.update_epochs,
                    num_minibatches=config.num_minibatches)
    row({"stage": "update compiled", **describe, "compile_s": update_compile,
         "planned_bytes": program_bytes(update_program)})
    update_times = timed(lambda: update_program(state), TIMED_CALLS)
    rollout = jax.jit(update_pieces(train)[0])
    rollout_program, rollout_compile = compiled(rollout, state, key)
    rollout_times = timed(lambda: rollout_program(state, key), TIMED_CALLS)
    update_s, rollout_s = statistics.median(update_times), statistics.median(rollout_times)
    env_steps = config.num_envs * config.rollout_len
    row({"stage": "timed", **describe, "compile_s": update_compile, "rollout_compile_s": rollout_compile,
         "update_times_s": update_times, "rollout_times_s": rollout_times, "seconds_per_update": update_s,
         "rollout_s": rollout_s, "learning_s": update_s - rollout_s, "env_steps_per_s": env_steps / update_s,
         "agent_steps_per_s": env_steps * env.num_agents / update_s, "peak_memory_bytes": peak_memory(),
         "planned_bytes": program_bytes(update_program)})


def worker_sweep(row, tiny: bool, **_):
    from socialjax.cli import main as cli

    spec = TINY_SWEEP if tiny else SWEEP
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result"
        t0 = time.perf_counter()
        code = cli(["train", spec["preset"], "--seeds", str(spec["seeds"]), "--updates", str(spec["updates"]),
                    *spec.get("flags", ()), "--out", str(out)] + ([] if tiny else ["--no-compile-cache"]))
        wall = time.perf_counter() - t0
        meta = json.loads((out / "config.json").read_text())
    config = meta["config"]
    run_s = meta["seconds"] - meta["compile_seconds"]
    env_steps = spec["seeds"] * spec["updates"] * config["num_envs"] * config["rollout_len"]
    row({"command": f"socialjax train {spec['preset']} --seeds {spec['seeds']} --updates {spec['updates']}",
         "exit_code": code, "wall_s": wall, "run_call_s": meta["seconds"], "compile_s": meta["compile_seconds"],
         "compile_times": meta.get("compile_times", {}), "per_device": meta["per_device"], "chunk": meta["chunk"],
         "memory_bytes": meta.get("memory_bytes"), "env_steps": env_steps, "env_steps_per_s": env_steps / run_s,
         "conv": config["conv"]})


def worker_aggregate(row, tiny: bool, part: str, **_):
    from socialjax.bench import train_sweep

    conv = AGGREGATE_CONVS.get(part)
    env, config = cleanup_config(TRAIN_VARIANTS["train-shared-cnn"], tiny, **({"conv": conv} if conv else {}))
    seeds = TINY_AGGREGATE_SEEDS if tiny else AGGREGATE_CONV_SEEDS if conv else AGGREGATE_SEEDS
    train_sweep(env, config, seeds, repeats=1, fit=not tiny and conv is None, report=row)


def worker_determinism(row, tiny: bool, **_):
    import hashlib

    import jax
    import numpy as np

    import socialjax as sj
    from socialjax.train.presets import get_preset

    spec = TINY_DETERMINISM if tiny else DETERMINISM
    preset = get_preset(spec["preset"])
    env = preset.make_env()
    config = preset.make_config(num_updates=spec["updates"], log_every=0, evaluate=False)
    deterministic = DETERMINISTIC_FLAG in os.environ.get("XLA_FLAGS", "")

    def leaves(result):
        tree = (result.metrics, result.states)
        return [np.asarray(x) for x in jax.tree_util.tree_leaves(tree)]

    def digest(result) -> str:
        h = hashlib.sha256()
        for x in leaves(result):
            h.update(np.ascontiguousarray(x).tobytes())
        return h.hexdigest()[:16]

    def max_diff(a, b) -> float:
        worst = 0.0
        for x, y in zip(leaves(a), leaves(b)):
            if np.issubdtype(x.dtype, np.floating):
                both = np.isfinite(x) & np.isfinite(y)
                if both.any():
                    worst = max(worst, float(np.max(np.abs(x[both].astype(np.float64) - y[both]))))
            elif not np.array_equal(x, y):
                worst = math.inf
        return worst

    with tempfile.TemporaryDirectory() as cache:  # the repeat reads the first call's program back
        first = sj.train.run(env, config, seeds=spec["seeds"], progress=False, compile_cache=cache)
        again = sj.train.run(env, config, seeds=spec["seeds"], progress=False, compile_cache=cache)
        row({"deterministic_ops": deterministic, "what": "the same program twice", "seeds": spec["seeds"],
             "preset": spec["preset"], "updates": spec["updates"], "same_bits": digest(first) == digest(again),
             "max_abs_diff": max_diff(first, again), "digest": digest(first)})
        for chunk in spec["chunks"]:
            other = sj.train.run(env, config, seeds=spec["seeds"], progress=False, compile_cache=cache, chunk=chunk)
            row({"deterministic_ops": deterministic, "what": f"chunk={chunk} vs all {spec['seeds']} runs together",
                 "seeds": spec["seeds"], "preset": spec["preset"], "updates": spec["updates"],
                 "same_bits": digest(other) == digest(first), "max_abs_diff": max_diff(first, other)})


def worker_profile(row, tiny: bool, out: str, **_):
    import jax

    from socialjax.train import make_train, run_keys

    env, config = cleanup_config(TRAIN_VARIANTS["train-shared-cnn"], tiny)
    train = make_train(env, config)
    state = jax.jit(train.init)(run_keys([0])[0])
    update = jax.jit(lambda s: train.updates(s, 0, length=1))
    jax.block_until_ready(update(state))  # compiled and warm: the trace holds one update alone
    with tempfile.TemporaryDirectory() as folder:
        t0 = time.perf_counter()
        with jax.profiler.trace(folder, create_perfetto_trace=True):
            jax.block_until_ready(update(state))
        wall = time.perf_counter() - t0
        traces = sorted(Path(folder).rglob("perfetto_trace.json.gz"))
        if not traces:
            raise RuntimeError("jax.profiler wrote no perfetto trace")
        summary = summarise_trace(json.loads(gzip.decompress(traces[0].read_bytes())))
        if traces[0].stat().st_size <= MAX_TRACE_BYTES:
            shutil.copy(traces[0], Path(out) / TRACE_FILE)
    row({"wall_s": wall, "num_envs": config.num_envs, "rollout_len": config.rollout_len, **summary})


def worker_profile_env(row, tiny: bool, **_):
    """One call of the environment benchmark's program (``socialjax.bench.make_run``:
    Clean Up, random play, observations summed) under ``jax.profiler`` at each of
    ``BATCH_SIZES``: device time by kernel."""
    import jax

    import socialjax as sj
    from socialjax.bench import make_run

    env = sj.make(TINY_ENVS[1] if tiny else "cleanup")
    for batch in TINY_BATCH_SIZES if tiny else BATCH_SIZES:
        steps = 10 if tiny else PROFILE_ENV_STEPS
        program = make_run(env, batch, steps).lower(jax.random.key(0)).compile()
        jax.block_until_ready(program(jax.random.key(0)))  # warm: the trace holds one call alone
        with tempfile.TemporaryDirectory() as folder:
            t0 = time.perf_counter()
            with jax.profiler.trace(folder, create_perfetto_trace=True):
                jax.block_until_ready(program(jax.random.key(1)))
            wall = time.perf_counter() - t0
            traces = sorted(Path(folder).rglob("perfetto_trace.json.gz"))
            if not traces:
                raise RuntimeError("jax.profiler wrote no perfetto trace")
            summary = summarise_trace(json.loads(gzip.decompress(traces[0].read_bytes())))
        row({"env": env.name, "batch": batch, "steps": steps, "wall_s": wall,
             "env_steps_per_s_traced": batch * steps / wall, **summary})


def summarise_trace(trace: dict) -> dict:
    """Device time of a perfetto trace: total busy time, the share under each name
    scope of the update (``rollout``, ``learn``; found in the events' arguments, which
    on GPUs name the HLO op the kernel runs), and the 15 costliest kernels."""
    events = trace.get("traceEvents", trace if isinstance(trace, list) else [])
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    devices = {pid for pid, name in names.items() if "/device:" in name and "CPU" not in name}
    kernels = [e for e in events if e.get("ph") == "X" and e.get("pid") in devices]
    by_name: dict[str, list[float]] = {}
    scopes = {"rollout": 0.0, "learn": 0.0, "other": 0.0}
    for e in kernels:
        dur = float(e.get("dur", 0.0)) / 1e6  # microseconds
        by_name.setdefault(e.get("name", "?"), []).append(dur)
        text = json.dumps(e.get("args", {}))  # e.g. the HLO op's name: ".../while/body/rollout/..."
        scope = "rollout" if "rollout/" in text else "learn" if "learn/" in text else "other"
        scopes[scope] += dur
    busy = sum(scopes.values())
    top = sorted(by_name.items(), key=lambda kv: -sum(kv[1]))[:15]
    return {"device_processes": sorted(names[p] for p in devices), "kernel_events": len(kernels),
            "device_busy_s": busy, "scope_s": scopes,
            "top_kernels": [{"name": n, "calls": len(d), "total_s": sum(d)} for n, d in top]}


def worker_reproduce(row, tiny: bool, part: str, out: str, **_):
    from socialjax.reproduce import get_entry, reproduce

    name, scale, seeds = part.removeprefix("reproduce-"), "gpu", None
    if tiny:
        name, scale, seeds = TINY_REPRODUCE["entry"], TINY_REPRODUCE["scale"], TINY_REPRODUCE["seeds"]
    folder = Path(tempfile.mkdtemp(prefix="reproduce-")) / name  # the runs' folders stay here
    rep = reproduce(get_entry(name), scale, seeds, out=folder)
    keep = Path(out) / part
    keep.mkdir(parents=True, exist_ok=True)
    for file in REPRODUCE_FILES:
        shutil.copy(folder / file, keep / file)
    row({"entry": name, "scale": scale, "seeds": rep.seeds, "seconds": rep.timings.total,
         "timings": rep.timings.to_json(), "verdict": rep.verdict, "reason": rep.reason, "rows": rep.rows})


WORKERS: dict[str, Callable] = {
    "envs": worker_envs, "train-shared-cnn": worker_train, "train-shared-cnn-bf16": worker_train,
    "train-shared-cnn_sj": worker_train, "train-paper-preset": worker_train, "train-shared-cnn-looped": worker_train,
    "train-mappo": worker_train, "train-irat": worker_train,
    "sweep": worker_sweep, "aggregate": worker_aggregate, "aggregate-looped": worker_aggregate,
    "aggregate-patch": worker_aggregate,
    "determinism": worker_determinism, "profile": worker_profile, "profile-env": worker_profile_env,
    **{f"reproduce-{name}": worker_reproduce for name in GPU_ENTRIES},
}


# ------------------------------------------------------------------------- orchestration
def machine(commit: str | None) -> dict[str, Any]:
    """What the rows were measured on, asked of a separate process (this one never
    imports JAX, so that it cannot hold the device)."""
    probe = ("import json, platform, os, jax, jaxlib; d = jax.devices()[0]; "
             "print(json.dumps({'device': getattr(d, 'device_kind', d.platform), 'platform': d.platform, "
             "'device_count': len(jax.devices()), 'jax': jax.__version__, 'jaxlib': jaxlib.__version__, "
             "'python': platform.python_version(), 'cpus': os.cpu_count()}))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    info = json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else {"error": out.stderr[-2000:]}
    info["date"] = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    info["commit"] = commit or git_commit()
    info["host"] = platform.platform()
    return info


def git_commit() -> str:
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    if head.returncode:
        return "unknown (no git here: pass --commit)"
    return head.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout.strip() else "")


def part_command(part: Part, args, rows: Path, deadline: float) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of one part's process."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    if part.needs_peer:
        env["PYTHONPATH"] = os.pathsep.join(p for p in env["PYTHONPATH"].split(os.pathsep)
                                            if p and not (Path(p) / "socialjax" / "train").is_dir())
        tiny = args.tiny
        common = [sys.executable, str(HERE / "peer_socialjax.py"), "--peer", str(args.peer), "--rows", str(rows)]
        if part.name == "peer-env":
            sizes = TINY_BATCH_SIZES if tiny else BATCH_SIZES
            budget = TINY_ENV_STEP_BUDGET if tiny else ENV_STEP_BUDGET
            return common + ["--what", "env", "--batch-sizes", ",".join(map(str, sizes)), "--budget", str(budget)], env
        sizes = (["--envs", str(TINY_CLEANUP["num_envs"]), "--rollout", str(TINY_CLEANUP["rollout_len"]),
                  "--minibatches", str(TINY_CLEANUP["num_minibatches"])] if tiny else [])
        if part.name == "aggregate-peer":
            seeds = TINY_AGGREGATE_SEEDS if tiny else PEER_SEEDS
            return common + ["--what", "train", "--repeats", "1", "--seeds", ",".join(map(str, seeds))] + sizes, env
        return common + ["--what", "train", "--repeats", str(TIMED_CALLS)] + sizes, env
    if part.name == "tests":
        paths = TINY_TESTS if args.tiny else TEST_PATHS
        workers = "0" if args.tiny else str(max(1, min(8, (os.cpu_count() or 2) // 2)))
        return [sys.executable, "-m", "pytest", "-n", workers, "-v", "-v", "-p", "no:cacheprovider",
                *paths], env
    if not args.tiny and not part.name.startswith("determinism"):
        # compile times are measured: no persistent cache (read when JAX is imported, before anything compiles);
        # the determinism part makes its own, and the tiny parts share one (only their code paths are checked)
        env["JAX_ENABLE_COMPILATION_CACHE"] = "false"
    if part.name == "determinism-flag":
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + DETERMINISTIC_FLAG).strip()
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", part.name.replace("-flag", ""),
               "--rows", str(rows), "--out", str(args.out), "--deadline", str(deadline)]
    return command + (["--tiny"] if args.tiny else []), env


def run_part(part: Part, args, deadline: float, log) -> dict[str, Any]:
    """Run one part's process under ``deadline`` seconds; its rows, status and time."""
    rows_file = Path(tempfile.mkstemp(prefix=f"gpu-check-{part.name}-", suffix=".jsonl")[1])
    command, env = part_command(part, args, rows_file, deadline)
    log.write(f"\n===== {part.name} (deadline {deadline:.0f} s): {' '.join(command)}\n")
    log.flush()
    t0 = time.perf_counter()
    status, detail = "ok", ""
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    output = []
    try:
        text, _ = proc.communicate(timeout=deadline)
        output.append(text)
        if proc.returncode:
            status, detail = "failed", f"exit code {proc.returncode}"
    except subprocess.TimeoutExpired:
        _kill(proc)
        text, _ = proc.communicate()
        output.append(text or "")
        status, detail = "timed out", f"stopped at its deadline of {deadline:.0f} s"
    seconds = time.perf_counter() - t0
    text = "".join(output)
    log.write(text)
    log.flush()
    rows = [json.loads(line) for line in rows_file.read_text().splitlines() if line.strip()]
    rows_file.unlink()
    result = {"status": status, "seconds": seconds, "deadline_s": deadline, "rows": rows}
    if part.name == "tests":
        result["rows"] = [test_counts(text, status)]
    if status != "ok":
        result["detail"] = detail
        result["output_tail"] = text[-3000:]
    return result


def _kill(proc: subprocess.Popen) -> None:
    """Stop a part's process and everything it started (its own session)."""
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


TEST_LINE = re.compile(r"(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\s+(\S+::\S+)|(\S+::\S+)\s+(PASSED|FAILED|ERROR|"
                       r"SKIPPED|XFAIL|XPASS)")


def test_counts(text: str, status: str) -> dict[str, Any]:
    """Pass/fail counts and the failures' names from pytest's verbose output (read line by
    line, so a run stopped at its deadline still counts what finished)."""
    counts: dict[str, int] = {}
    failed = []
    for line in text.splitlines():
        m = TEST_LINE.search(line)
        if not m:
            continue
        outcome, name = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
        counts[outcome.lower()] = counts.get(outcome.lower(), 0) + 1
        if outcome in ("FAILED", "ERROR"):
            failed.append(name)
    return {"complete": status != "timed out", "counts": counts, "failures": sorted(set(failed))}


def plan_parts(args) -> list[Part]:
    """The parts to run, in :data:`PARTS`' order: ``--parts``, or the call's."""
    chosen = args.parts.split(",") if args.parts else list(CALLS[args.call][0])
    unknown = sorted(set(chosen) - set(PART_NAMES))
    if unknown:
        raise SystemExit(f"--parts: unknown {unknown}; the parts are {', '.join(PART_NAMES)}")
    parts = []
    for p in PARTS:
        if p.name not in chosen:
            continue
        if p.needs_peer and args.peer is None:
            if args.parts:
                raise SystemExit(f"--parts {p.name} needs --peer DIR (a SocialJax checkout)")
            continue
        if p.name == "determinism":  # once as it is, once with XLA's deterministic GPU ops
            parts += [p, dataclasses.replace(p, name="determinism-flag")]
            continue
        parts.append(p)
    return parts


def save(out: Path, report: dict) -> None:
    """Rewrite the JSON and the markdown (each atomically)."""
    for name, text in ((JSON_FILE, json.dumps(report, indent=2)), (MARKDOWN_FILE, markdown(report))):
        tmp = out / f".{name}.tmp"
        tmp.write_text(text + "\n")
        os.replace(tmp, out / name)


def markdown(report: dict) -> str:
    m = report["machine"]
    head = (f"GPU check on {m.get('device', '?')} ({m.get('platform', '?')}, {m.get('device_count', '?')} device(s)), "
            f"jax {m.get('jax', '?')}, Python {m.get('python', '?')}, {m.get('cpus', '?')} CPUs; commit "
            f"{m.get('commit')}; {m.get('date')}. Command: `{report['command']}`")
    lines = ["# GPU check", "", head]
    for name, part in report["parts"].items():
        lines += ["", f"## {name}: {part['status']} ({part['seconds']:.0f} s of {part['deadline_s']:.0f})"]
        if part.get("detail"):
            lines.append(part["detail"])
        try:
            lines += TABLES.get(name.replace("-flag", ""), _table_generic)(part["rows"])
        except (KeyError, TypeError, ValueError):  # rows of another shape (an older report, a broken part)
            lines += _table_generic(part["rows"])
    return "\n".join(lines)


def _f(x, digits=0) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return f"{x:,.{digits}f}"


def _mib(x) -> str:
    return "n/a" if x is None else f"{x / 2**20:,.0f}"


def _table_envs(rows):
    out = ["", "| env | N | games B | steps T | env-steps/s | agent-steps/s | median call s | compile s |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['env']} | {r['num_agents']} | {r['batch']:,} | {r['steps']} | {_f(r['env_steps_per_s'])} | "
                   f"{_f(r['agent_steps_per_s'])} | {r['median_s']:.3f} | {r['compile_s']:.1f} |")
    return out


def _table_train(rows):
    out = ["", "| algo / seating / network / conv / precision | learners | games x steps | epochs x minibatches | "
           "env-steps/s | s per update | rollout s | rest (learning) s | compile s (update; rollout) | "
           "peak memory MiB | planned MiB |", "|---|---:|---|---|---:|---:|---:|---:|---|---:|---:|"]
    timed = [r for r in rows if r.get("stage") == "timed"]
    for r in timed or rows[:1]:  # the update compiled but not timed: its compile time alone
        what = (f"| {r.get('algo', 'ppo')} / {r['seating']} / {r['network']} / {r['conv']} / {r['precision']} | "
                f"{r['learners']} | "
                f"{r['num_envs']} x {r['rollout_len']} | {r['update_epochs']} x {r['num_minibatches']} | ")
        if r.get("stage") != "timed":
            out.append(what + f"not timed | | | | {r['compile_s']:.1f} | | {_mib(r.get('planned_bytes'))} |")
            continue
        out.append(what + f"{_f(r['env_steps_per_s'])} | {r['seconds_per_update']:.3f} | {r['rollout_s']:.3f} | "
                   f"{r['learning_s']:.3f} | {r['compile_s']:.1f}; {r['rollout_compile_s']:.1f} | "
                   f"{_mib(r['peak_memory_bytes'])} | {_mib(r['planned_bytes'])} |")
    return out


def _table_peer(rows):
    out = ["", "| SocialJax | batch | env-steps/s | agent-steps/s | median call s | compile s | peak memory MiB |",
           "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        if r.get("what") == "env":
            out.append(f"| {r['env']} (random actions) | {r['batch']:,} games x {r['steps']} steps | "
                       f"{_f(r['env_steps_per_s'])} | {_f(r['agent_steps_per_s'])} | {r['median_s']:.3f} | "
                       f"{r['compile_s']:.1f} | |")
        elif "median_s" in r:
            out.append(f"| {r['name']}, {r['reward']} reward | {r['num_envs']} x {r['rollout_len']}, "
                       f"{r['update_epochs']} x {r['num_minibatches']} | {_f(r['env_steps_per_s'])} | "
                       f"{_f(r['agent_steps_per_s'])} | {r['median_s']:.3f} | {r['compile_s']:.1f} | "
                       f"{_mib(r['peak_memory_bytes'])} |")
    return out


def _table_sweep(rows):
    out = ["", "| command | conv | wall s | compile s (by stage) | runs per device | chunk | env-steps/s | "
               "planned MiB |", "|---|---|---:|---|---:|---|---:|---:|"]
    for r in rows:
        stages = ", ".join(f"{k} {' + '.join(f'{t:.1f}' for t in v)}" for k, v in r.get("compile_times", {}).items())
        out.append(f"| `{r['command']}` | {r.get('conv', '?')} | {r['wall_s']:.1f} | {r['compile_s']:.1f} "
                   f"({stages}) | {r['per_device']} | {r['chunk'] or 'none (all together)'} | "
                   f"{_f(r['env_steps_per_s'])} | {_mib(r['memory_bytes'])} |")
    return out


def _table_aggregate(rows):
    """Ours (socialjax.bench.train_sweep rows) and SocialJax's (peer rows) at S seeds in one call."""
    out = ["", "| who | seeds S in one call | computed | s per update | aggregate env-steps/s | agent-steps/s | "
               "compile s | planned MiB | peak MiB | note |", "|---|---:|---|---:|---:|---:|---|---:|---:|---|"]
    for r in rows:
        if r.get("what") == "train":  # the peer
            if r.get("stage") == "compiled":
                continue
            if r.get("stage") == "out of memory":
                out.append(f"| SocialJax `ippo_cnn_cleanup` | {r['seeds']} | | | out of memory | | | | "
                           f"{_mib(r.get('peak_memory_bytes'))} | {r['error'][:80]} |")
                continue
            out.append(f"| SocialJax `ippo_cnn_cleanup` | {r['seeds']} | vmapped | {r['seconds_per_update']:.3f} | "
                       f"{_f(r['env_steps_per_s'])} | {_f(r['agent_steps_per_s'])} | {r['compile_s']:.1f} | | "
                       f"{_mib(r['peak_memory_bytes'])} | |")
            continue
        together = f"{r['chunk']} at a time" if r["chunk"] else "all together"
        compile_s = "; ".join(f"{t:.1f}" for t in r["compile_s"].values())
        out.append(f"| ours, {r['seating']} / {r['network']} / {r['conv']} / {r['precision']} | {r['seeds']} | "
                   f"{together} | {r['seconds_per_update']:.3f} | {_f(r['env_steps_per_s'])} | "
                   f"{_f(r['agent_steps_per_s'])} | {compile_s} | {_mib(r['planned_bytes'])} | "
                   f"{_mib(r['peak_memory_bytes'])} | {r.get('note', '')} |")
    return out


def _table_determinism(rows):
    out = ["", "| XLA deterministic ops | comparison | preset, seeds, updates | same bits | largest difference |",
           "|---|---|---|---|---:|"]
    for r in rows:
        out.append(f"| {'on' if r['deterministic_ops'] else 'off'} | {r['what']} | {r['preset']}, {r['seeds']}, "
                   f"{r['updates']} | {'yes' if r['same_bits'] else 'no'} | {r['max_abs_diff']:.3g} |")
    return out


def _table_profile(rows):
    out = []
    for r in rows:
        s = r["scope_s"]
        busy = r["device_busy_s"]
        out += ["", f"One update ({r['num_envs']} games x {r['rollout_len']} steps) under the profiler: "
                    f"{r['wall_s']:.3f} s wall, device busy {busy:.3f} s ({r['kernel_events']} kernel events on "
                    f"{', '.join(r['device_processes']) or 'no device track'}); rollout {s['rollout']:.3f} s, learn "
                    f"{s['learn']:.3f} s, other {s['other']:.3f} s; host and gaps {r['wall_s'] - busy:.3f} s.",
                "", "| kernel | calls | total s |", "|---|---:|---:|"]
        out += [f"| `{k['name'][:80]}` | {k['calls']} | {k['total_s']:.4f} |" for k in r["top_kernels"]]
    return out


def _table_profile_env(rows):
    out = []
    for r in rows:
        busy = r["device_busy_s"]
        out += ["", f"{r['env']}, {r['batch']} games x {r['steps']} steps of random play under the profiler: "
                    f"{r['wall_s']:.3f} s wall ({r['env_steps_per_s_traced']:,.0f} env-steps/s traced), device busy "
                    f"{busy:.3f} s in {r['kernel_events']} kernel events.",
                "", "| kernel | calls | total s | share of busy |", "|---|---:|---:|---:|"]
        out += [f"| `{k['name'][:80]}` | {k['calls']} | {k['total_s']:.4f} | {k['total_s'] / max(busy, 1e-12):.0%} |"
                for k in r["top_kernels"]]
    return out


def _table_reproduce(rows):
    out = []
    for r in rows:
        out += ["", f"{r['entry']} at {r['scale']} scale, {r['seeds']} seeds, {r['seconds']:.0f} s: "
                    f"**{r['verdict']}**: {r['reason']}", "",
                "| condition | measure | published | ours [95% CI] |", "|---|---|---:|---:|"]
        for t in r["rows"]:
            published = "-" if t["published"] is None else f"{t['published']:.3g}"
            out.append(f"| {t['condition']} | {t['measure']} | {published} | "
                       f"{t['ours']:.3g} [{t['ours_ci_low']:.3g}, {t['ours_ci_high']:.3g}] |")
    return out


def _table_tests(rows):
    out = []
    for r in rows:
        counts = ", ".join(f"{n} {k}" for k, n in sorted(r["counts"].items())) or "none finished"
        out += ["", f"{'Complete' if r['complete'] else 'Incomplete'}: {counts}."]
        if r["failures"]:
            out += ["Failures:"] + [f"- `{name}`" for name in r["failures"]]
    return out


def _table_generic(rows):
    return ["", "```", *[json.dumps(r) for r in rows], "```"]


TABLES = {"envs": _table_envs, "train-shared-cnn": _table_train, "train-shared-cnn-bf16": _table_train,
          "train-shared-cnn_sj": _table_train, "train-paper-preset": _table_train, "train-mappo": _table_train,
          "train-irat": _table_train, "train-shared-cnn-looped": _table_train, "peer-env": _table_peer,
          "peer-train": _table_peer, "sweep": _table_sweep, "aggregate": _table_aggregate,
          "aggregate-peer": _table_aggregate, "aggregate-looped": _table_aggregate,
          "aggregate-patch": _table_aggregate, "determinism": _table_determinism,
          "profile": _table_profile, "profile-env": _table_profile_env, "tests": _table_tests,
          **{f"reproduce-{name}": _table_reproduce for name in GPU_ENTRIES}}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="parts: " + ", ".join(PART_NAMES))
    p.add_argument("--out", type=Path, default=Path("gpu-check"), help="folder for gpu_check.{json,md,log} "
                   "(a JSON already there is updated: the parts run now replace theirs)")
    p.add_argument("--call", type=int, choices=sorted(CALLS), default=1,
                   help="which call of a spell: " + "; ".join(f"{n}: {', '.join(parts)} ({budget} s)"
                                                              for n, (parts, budget) in CALLS.items()))
    p.add_argument("--parts", default=None, help="comma-separated parts instead of the call's (the peer's parts "
                   "need --peer)")
    p.add_argument("--budget", type=float, default=None,
                   help=f"seconds for the whole check (default: the call's; {TINY_BUDGET_S} with --tiny)")
    p.add_argument("--tiny", action="store_true", help="every part at toy sizes (a CPU runs it in about a minute)")
    p.add_argument("--peer", type=Path, default=None, help="a SocialJax checkout (cooperativex/SocialJax 9df972d) "
                   "to time side by side")
    p.add_argument("--commit", default=None, help="the commit measured (default: git rev-parse HEAD here)")
    p.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    p.add_argument("--rows", help=argparse.SUPPRESS)
    p.add_argument("--deadline", type=float, default=0.0, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.worker:  # one part, in its own process
        from check_io import append_row

        WORKERS[args.worker](lambda r: append_row(args.rows, r), tiny=args.tiny, part=args.worker, out=args.out,
                             deadline=args.deadline)
        return 0
    budget = args.budget or (TINY_BUDGET_S if args.tiny else CALLS[args.call][1])
    if args.peer is not None and not (args.peer / "socialjax" / "environments" / "cleanup").is_dir():
        raise SystemExit(f"--peer {args.peer}: not a SocialJax checkout (no socialjax/environments/cleanup)")
    if args.peer is not None:
        args.peer = args.peer.resolve()
    parts = plan_parts(args)
    args.out = args.out.resolve()
    scratch = tempfile.mkdtemp(prefix="gpu-check-")
    if args.tiny and not os.environ.get("JAX_COMPILATION_CACHE_DIR"):  # the parts share their programs
        os.environ["JAX_COMPILATION_CACHE_DIR"] = os.path.join(scratch, "jax-cache")
        os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    command = "python scripts/gpu_check.py " + " ".join(sys.argv[1:] if argv is None else argv)
    previous = args.out / JSON_FILE
    report = json.loads(previous.read_text()) if previous.exists() else {"parts": {}}
    report.update(command=command, machine=machine(args.commit), budget_s=budget)
    print(f"GPU check: {report['machine'].get('device')} ({report['machine'].get('platform')}), jax "
          f"{report['machine'].get('jax')}, commit {report['machine']['commit']}; {len(parts)} part(s), "
          f"budget {budget:.0f} s; writing {args.out}", flush=True)
    with open(args.out / LOG_FILE, "a") as log:
        for part in parts:
            left = budget - (time.perf_counter() - start)
            deadline = min(part.tiny_deadline_s if args.tiny else part.deadline_s, left)
            skip = f"{left:.0f} s of the budget left" if deadline < MIN_PART_S else None
            if part.name == "determinism-flag" and report["machine"].get("platform") != "gpu":
                skip = "the flag is XLA's for GPUs; on this backend the other determinism rows hold"
            if skip:
                report["parts"][part.name] = {"status": "skipped", "seconds": 0.0, "deadline_s": 0.0, "rows": [],
                                              "detail": skip}
                save(args.out, report)
                print(f"[{time.perf_counter() - start:5.0f} s] {part.name}: skipped ({skip})", flush=True)
                continue
            print(f"[{time.perf_counter() - start:5.0f} s] {part.name} (up to {deadline:.0f} s)...", flush=True)
            result = run_part(part, args, deadline, log)
            result["provenance"] = {"command": command, "machine": report["machine"]}  # this call's, kept per part
            report["parts"][part.name] = result
            save(args.out, report)
            print(f"[{time.perf_counter() - start:5.0f} s] {part.name}: {result['status']}, "
                  f"{len(result['rows'])} row(s)" + (f" ({result['detail']})" if result.get("detail") else ""),
                  flush=True)
    shutil.rmtree(scratch, ignore_errors=True)
    report["seconds"] = time.perf_counter() - start
    save(args.out, report)
    print(f"done in {report['seconds']:.0f} s: {args.out / MARKDOWN_FILE}")
    return 0 if all(report["parts"][p.name]["status"] in ("ok", "skipped") for p in parts) else 1


if __name__ == "__main__":
    sys.exit(main())
