"""Training throughput: rollout + learning, in one compiled call.

Three measurements (``--which``, comma-separated):

- ``cleanup``: IPPO on ``cleanup`` with the ``cleanup-ippo-paper`` preset (7 seats,
  independent seating: one PPO learner per seat, CNN on the code observations, lr 5e-4,
  2 epochs), one ``jax.jit(train)`` call of ``--updates`` updates of ``--envs`` games x
  ``--rollout`` steps each. Run it for the paper preset's batch (``--envs 256 --rollout
  1000 --minibatches 500``) and a small batch (``--envs 16 --rollout 128``);
- ``cleanup_cpu``: the Clean Up of the reproduce entries' ``cpu`` scale
  (:mod:`socialjax.reproduce.cleanup_scales`: ``cleanup_ssd`` on its small map, 3 players,
  one shared network, the small CNN, 16 games x 125 steps, 2 epochs x 2 minibatches),
  ``--updates`` updates per call, ``--cpu-seeds`` seeds vmapped in one call (as
  ``socialjax reproduce`` runs them; default 1), ``--set`` overrides applied;
- ``ipd``: a population run of ``--seeds`` seeds on ``ipd`` (a small PPO learner, MLP
  on the one-hot memory-one observation, against a fixed TFT co-player), the same
  per-device ``jit(vmap(train))`` blocks :func:`socialjax.train.run` builds, compiled
  once and timed; plus one end-to-end ``sj.train.run(env, config, seeds=...)`` call
  (a cold compile, without the compilation cache, and the host transfer included) for reference;
- ``loop``: ``--loop-seeds`` runs of the same IPD training as one vmapped call versus a
  Python loop of that many calls of the jitted single-run ``train`` (compiled once);
- ``single``: one Clean Up run (the cleanup batch options) through ``sj.train.run(...,
  seeds=1)`` versus ``jax.jit(make_train(...))`` alone: a lone run must not cost more
  than one run (``run`` once padded it to four);
- ``tracking``: the overhead of experiment tracking: ``sj.train.run`` of the Clean Up of
  ``cleanup_cpu`` (``--cpu-seeds`` seeds, ``--updates`` updates, a progress line per
  update: one compiled call per update, as an interactive run computes) with no
  tracker, then with CSV + TensorBoard + W&B (offline; whichever of them are installed),
  alternated ``--repeats`` times; each run's time is its wall time less its compilation
  (``RunResult.seconds - compile_seconds``; opening the trackers comes before either:
  W&B's runs start in about 0.2 s each, once per run); the same for the IPD population of
  ``--seeds`` seeds (CSV + TensorBoard: beyond W&B's run limit), where the host's work
  per update is largest (a row per run);
- ``cost``: FLOPs and bytes accessed per Clean Up update from XLA's cost analysis of
  the compiled pieces (XLA counts a loop body once, so the update is costed as
  ``rollout_len`` x one rollout step + ``update_epochs`` x one pass of the learner over
  the whole rollout, each compiled on its own at the full batch; nothing is run), with
  the time an H100 would need at its datasheet peaks, a lower bound. One row per
  ``--variants`` entry (``seating/network/conv/precision``).

``--set KEY=VALUE`` (repeatable) overrides the Clean Up config (e.g. ``--set
seating=shared --set network=cnn_sj``) for ``cleanup``, ``single`` and ``cost``.

Method: compile once (trace + lower + compile, reported separately), one untimed
warm-up call (skipped with ``--no-warmup``, for the slow paper batch), then
``--repeats`` timed calls, each ended with ``block_until_ready``; the median is
reported. Steps: ``num_updates x num_envs x rollout_len`` env-steps per run (times the
runs of a batched call), times ``num_agents`` for agent-steps. Evaluation inside
``train`` is switched off (``evaluate=False``) so only rollout + update is timed.

    python scripts/bench_train.py --which cleanup --envs 16 --rollout 128 --updates 4
    python scripts/bench_train.py --which cleanup --envs 256 --rollout 1000 --updates 1 --minibatches 500 \
        --repeats 1 --no-warmup
    python scripts/bench_train.py --which cleanup_cpu --updates 2 --set conv=patch
    python scripts/bench_train.py --which ipd --seeds 1024
    python scripts/bench_train.py --which loop --loop-seeds 32
    python scripts/bench_train.py --which single --envs 16 --rollout 128 --updates 2
    python scripts/bench_train.py --which cost --envs 256 --rollout 1000 --minibatches 500
    python scripts/bench_train.py --which tracking --updates 8 --cpu-seeds 4 --seeds 256 --repeats 3
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from check_io import compiled, timed  # scripts/check_io.py, shared with the accelerator check

import socialjax as sj
from socialjax.agents.networks import resolve_conv
from socialjax.cli.common import config_overrides, key_value
from socialjax.reproduce import cleanup_scales
from socialjax.train import TrainConfig, make_train, run_keys
from socialjax.train import rollout as loop
from socialjax.train.devices import compile_blocks, device_program, lay_out, place_blocks
from socialjax.train.presets import get_preset
from socialjax.train.progress import Progress
from socialjax.train.tracking import TRACKERS

WHICH = ("cleanup", "cleanup_cpu", "learners", "ipd", "loop", "single", "cost", "tracking")
# the learners `--which learners` compares on Clean Up's reproduce cpu scale (one shared network)
LEARNER_ALGOS = ("ppo", "mappo", "irat", "vdn")

# NVIDIA H100 SXM5 datasheet peaks (dense, no sparsity), for the lower bounds of ``cost``
H100_FP32_FLOPS = 67e12
H100_TF32_FLOPS = 495e12
H100_BF16_FLOPS = 990e12
H100_HBM_BYTES = 3.35e12

# cost rows: SocialJax's like-for-like setting (one shared network) and the preset's
# independent learners, with each convolution and precision
COST_VARIANTS = (
    "shared/cnn/patch/float32", "shared/cnn/xla/float32", "shared/cnn/xla/bfloat16",
    "shared/cnn_sj/xla/float32", "shared/cnn_sj/xla/bfloat16", "independent/cnn/xla/float32",
    "independent/cnn/xla/bfloat16",
)
# IPPO on Clean Up: the `cleanup-ippo-paper` preset (7 players, CNN, the published
# baseline's hyperparameters; see socialjax/train/presets.py), with the batch, the
# number of updates and the minibatches set from the command line.
CLEANUP_PRESET = "cleanup-ippo-paper"
# A small PPO learner for the IPD against a fixed TFT co-player (seat 0: the learner,
# seat 1: scripted member 1 = TFT).
IPD_PPO = dict(
    algo="ppo", hidden=32, seating="fixed", seats=(0, 1), scripted=("tft",), lr=2.5e-3, update_epochs=2,
    num_minibatches=2, evaluate=False,
)


def device_name() -> str:
    d = jax.devices()[0]
    return f"{d.platform}:{getattr(d, 'device_kind', '?')} x{len(jax.devices())}"


def batched_program(env, config: TrainConfig, num_runs: int) -> tuple[Callable[[], Any], float]:
    """The program :func:`socialjax.train.run` runs for ``num_runs`` seeds (no sweep):
    a ``jit(vmap(train))`` block per local device, compiled; returns a function that
    dispatches every block, and the compile time."""
    layout = lay_out(num_runs, jax.local_devices())
    if layout.padded != num_runs:
        raise SystemExit(f"--seeds/--loop-seeds must be a multiple of the {len(jax.local_devices())} devices")
    train = make_train(env, config)
    hparams = {k: np.full((num_runs,), v[0], np.float32) for k, v in config.hparam_grid().items()}
    t0 = time.perf_counter()
    inputs = place_blocks(layout, run_keys(np.arange(num_runs)), hparams)
    compiled = compile_blocks(device_program(train, layout.per_device), inputs)
    return (lambda: [fn(*args) for fn, args in zip(compiled, inputs)]), time.perf_counter() - t0


def row(name: str, env, config: TrainConfig, runs: int, times: list[float], comp: float, note: str = "") -> dict:
    env_steps = config.num_updates * config.num_envs * config.rollout_len * runs
    med = statistics.median(times)
    return {
        "name": name,
        "env": env.name,
        "num_agents": env.num_agents,
        "runs": runs,
        "num_envs": config.num_envs,
        "rollout_len": config.rollout_len,
        "num_updates": config.num_updates,
        "update_epochs": config.update_epochs,
        "num_minibatches": config.num_minibatches,
        "env_steps_per_call": env_steps,
        "times_s": times,
        "median_s": med,
        "compile_s": comp,
        "env_steps_per_s": env_steps / med,
        "agent_steps_per_s": env_steps * env.num_agents / med,
        "note": note,
    }


def cleanup_setup(args, **changes):
    preset = get_preset(CLEANUP_PRESET)
    env = preset.make_env()
    overrides = dict(num_envs=args.envs, rollout_len=args.rollout, num_updates=args.updates,
                     num_minibatches=args.minibatches, evaluate=False, log_every=0)
    overrides.update(config_overrides(args.overrides))
    overrides.update(changes)
    return env, preset.make_config(**overrides)


def bench_cleanup_cpu(args) -> list[dict]:
    env = sj.make("cleanup_ssd", **cleanup_scales.CPU_ENV_OPTIONS)
    overrides = dict(cleanup_scales.CPU_IPPO, num_updates=args.updates, log_every=0)
    overrides.update(config_overrides(args.overrides))
    config = TrainConfig().replace(**overrides)
    n = args.cpu_seeds
    if n == 1:
        train = jax.jit(make_train(env, config))
        key = run_keys([0])[0]
        program, comp = compiled(train, key)
        call = lambda: program(key)  # noqa: E731
    else:  # the seeds vmapped, as `socialjax reproduce` runs them
        call, comp = batched_program(env, config, n)
    print(f"cleanup cpu scale x{args.updates} updates, {n} seed(s): compiled in {comp:.1f}s", file=sys.stderr,
          flush=True)
    times = timed(call, args.repeats, not args.no_warmup)
    return [row(f"IPPO cleanup, reproduce cpu scale, {n} seed(s)", env, config, n, times, comp, describe(config))]


def bench_learners(args) -> list[dict]:
    """Each learner of :data:`LEARNER_ALGOS` on Clean Up's reproduce cpu scale (one seed, one
    network shared by the seats, ``--updates`` updates per call; VDN with the DQN learner's
    defaults for its buffer and gradient steps), timed one after another, ``--repeats`` rounds
    alternating the learners so that a change of load touches every one alike."""
    env = sj.make("cleanup_ssd", **cleanup_scales.CPU_ENV_OPTIONS)
    programs = {}
    for algo in LEARNER_ALGOS:
        overrides = dict(cleanup_scales.CPU_IPPO, algo=algo, num_updates=args.updates, log_every=0)
        overrides.update(config_overrides(args.overrides))
        config = TrainConfig().replace(**overrides).without_unread(keep=tuple(config_overrides(args.overrides)))
        train = jax.jit(make_train(env, config))
        key = run_keys([0])[0]
        program, comp = compiled(train, key)
        print(f"{algo}: compiled in {comp:.1f}s", file=sys.stderr, flush=True)
        if not args.no_warmup:
            jax.block_until_ready(program(key))
        programs[algo] = (config, program, key, comp, [])
    for _ in range(args.repeats):
        for config, program, key, _, times in programs.values():
            t0 = time.perf_counter()
            jax.block_until_ready(program(key))
            times.append(time.perf_counter() - t0)
    return [row(f"{algo} cleanup, reproduce cpu scale", env, config, 1, times, comp, describe(config))
            for algo, (config, _, _, comp, times) in programs.items()]


def bench_tracking(args) -> list[dict]:
    """``sj.train.run`` with and without trackers (see the module docstring): a row each."""
    clean = TrainConfig().replace(**dict(cleanup_scales.CPU_IPPO, num_updates=args.updates, log_every=1))
    ipd = ipd_config(args).replace(log_every=1)
    setups = [("Clean Up, reproduce cpu scale", sj.make("cleanup_ssd", **cleanup_scales.CPU_ENV_OPTIONS), clean,
               args.cpu_seeds, [n for n in TRACKERS if _installed(n)]),
              ("IPD population", sj.make("ipd"), ipd, args.seeds, [n for n in ("csv", "tensorboard") if _installed(n)])]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        os.environ.setdefault("WANDB_MODE", "offline")
        os.environ.setdefault("WANDB_SILENT", "true")
        for name, env, config, seeds, names in setups:
            times: dict[tuple, list[float]] = {(): [], tuple(names): []}
            compile_s = []
            for i in range(args.repeats + (0 if args.no_warmup else 1)):
                for log in times:
                    lines = Progress(config.num_updates, stream=io.StringIO(), format_line=lambda step, values: "")
                    result = sj.train.run(env, config, seeds=seeds, progress=lines, log=list(log), log_dir=folder)
                    if i or args.no_warmup:  # the first round warms the caches up
                        times[log].append(result.seconds - result.compile_seconds)
                        compile_s.append(result.compile_seconds)
            base = statistics.median(times[()])
            for log, ts in times.items():
                overhead = f"; {statistics.median(ts) / base - 1:+.1%} against no tracker" if log else ""
                rows.append(row(f"{name}, sj.train.run, trackers: {', '.join(log) or 'none'}", env, config, seeds, ts,
                                statistics.median(compile_s), f"a progress line per update{overhead}"))
    return rows


def _installed(tracker: str) -> bool:
    return tracker == "csv" or importlib.util.find_spec(tracker) is not None


def describe(config: TrainConfig) -> str:
    return (f"{config.seating}, network {config.network}, conv {resolve_conv(config.conv)}, {config.precision}, "
            f"{config.update_epochs} epochs x {config.num_minibatches} minibatches")


def bench_cleanup(args) -> list[dict]:
    env, config = cleanup_setup(args)
    train = jax.jit(make_train(env, config))
    key = run_keys([0])[0]
    program, comp = compiled(train, key)
    print(f"cleanup IPPO {args.envs}x{args.rollout}x{args.updates}: compiled in {comp:.1f}s", file=sys.stderr,
          flush=True)
    times = timed(lambda: program(key), args.repeats, not args.no_warmup)
    return [row("IPPO cleanup", env, config, 1, times, comp, f"preset {CLEANUP_PRESET}, {describe(config)}")]


def bench_single(args) -> list[dict]:
    """``run(seeds=1)`` against ``jit(make_train)`` on the same config and key."""
    env, config = cleanup_setup(args)
    alone = jax.jit(make_train(env, config))
    key = run_keys([0])[0]
    program, comp = compiled(alone, key)
    alone_times = timed(lambda: program(key), args.repeats, not args.no_warmup)
    run_times, run_compile = [], []
    for _ in range(args.repeats):
        result = sj.train.run(env, config, seeds=1, progress=False, compile_cache=False)
        run_times.append(result.seconds - result.compile_seconds)
        run_compile.append(result.compile_seconds)
    a, r = statistics.median(alone_times), statistics.median(run_times)
    print(f"single run: make_train alone {a:.3f}s, run(seeds=1) {r:.3f}s (ratio {r / a:.3f}); "
          f"run computed {result.per_device} run(s) per device", file=sys.stderr, flush=True)
    return [
        row("Clean Up, jit(make_train) alone", env, config, 1, alone_times, comp, describe(config)),
        row("Clean Up, sj.train.run(seeds=1) (compile excluded, results to numpy)", env, config, 1, run_times,
            statistics.median(run_compile), f"{r / a:.3f}x the time of make_train alone; "
            f"{result.per_device} run(s) per device"),
    ]


def update_pieces(train) -> tuple[Callable, Callable]:
    """One update of ``train`` (from :func:`make_train`) cut in two, each a pure function
    of the run's state ``train.init(key)``: ``rollout(state, key) -> (games, rollout,
    stats)``, the ``rollout_len`` steps of every game; ``learn(state, rollout, key) ->
    (learner states, stats)``, GAE (and Advantage Alignment) and the learners' update,
    vmapped over learners. The update also reseats (random seating) and records its
    metrics; those are in neither piece."""
    config, plan, learner = train.config, train.plan, train.learner
    h = {k: np.float32(v) for k, v in config.scalar_hparams().items()}

    def rollout(state, key):
        seated = loop.table(train.env, train.env_params, learner, plan, train.scripted, state.seating)
        return loop.rollout(seated, state.learners, state.games, key, 0.0, config.rollout_len, train.shaping, h)

    def learn(state, ro, key):
        seated = loop.table(train.env, train.env_params, learner, plan, train.scripted, state.seating)
        prep = jax.vmap(learner.prepare)(state.learners, ro)
        if learner.ALIGNS:
            prep = loop.align(prep, ro, seated, state.learners.hparams["gamma"], h["aa_beta"], config.rollout_len)
        keys = jax.random.split(key, plan.num_learners)
        return jax.vmap(learner.update, in_axes=(0, 0, 0, 0, None))(state.learners, ro, prep, keys, 0.0)

    return rollout, learn


def update_cost(env, config: TrainConfig) -> dict:
    """FLOPs and bytes accessed of one update, from XLA's cost analysis of one rollout
    step and of one full pass of the learners over a rollout, each compiled alone at
    the config's batch (see the module docstring)."""
    key = jax.random.key(0)

    def cost(fn, *args):
        c = jax.jit(fn).lower(*args).compile().cost_analysis()
        c = c[0] if isinstance(c, (list, tuple)) else c
        return float(c.get("flops", 0.0)), float(c.get("bytes accessed", 0.0))

    one_step = make_train(env, config.replace(num_updates=1, rollout_len=1, evaluate=False, log_every=0))
    state = jax.eval_shape(one_step.init, key)
    step_flops, step_bytes = cost(update_pieces(one_step)[0], state, key)
    # one pass: one epoch over the whole rollout as one minibatch
    one_pass = make_train(env, config.replace(num_updates=1, update_epochs=1, num_minibatches=1, evaluate=False,
                                              log_every=0))
    rollout, learn = update_pieces(one_pass)
    state = jax.eval_shape(one_pass.init, key)
    _, ro, _ = jax.eval_shape(rollout, state, key)
    pass_flops, pass_bytes = cost(learn, state, ro, key)
    T, epochs = config.rollout_len, config.update_epochs
    samples = T * one_pass.plan.num_envs * one_pass.plan.num_seats
    return {
        "rollout_flops": T * step_flops, "rollout_bytes": T * step_bytes,
        "learn_flops": epochs * pass_flops, "learn_bytes": epochs * pass_bytes,
        "flops": T * step_flops + epochs * pass_flops, "bytes": T * step_bytes + epochs * pass_bytes,
        "samples": samples,
    }


def bench_cost(args) -> list[dict]:
    rows = []
    for variant in args.variants.split(","):
        seating, network, conv, precision = variant.split("/")
        env, config = cleanup_setup(args, seating=seating, network=network, conv=conv, precision=precision)
        t0 = time.perf_counter()
        c = update_cost(env, config)
        peak = H100_BF16_FLOPS if precision == "bfloat16" else H100_TF32_FLOPS
        bound = max(c["flops"] / peak, c["bytes"] / H100_HBM_BYTES)
        print(f"cost {variant}: {c['flops'] / 1e12:.2f} TFLOP, {c['bytes'] / 1e9:.1f} GB per update "
              f"({time.perf_counter() - t0:.0f}s to compile the pieces)", file=sys.stderr, flush=True)
        rows.append({"variant": variant, "env": env.name, "num_envs": config.num_envs,
                     "rollout_len": config.rollout_len, "update_epochs": config.update_epochs, **c,
                     "h100_fp32_s": c["flops"] / H100_FP32_FLOPS, "h100_bound_s": bound,
                     "h100_bound_env_steps_per_s": config.num_envs * config.rollout_len / bound})
    return rows


def cost_markdown(rows: list[dict]) -> list[str]:
    lines = ["", "| seating/network/conv/precision | batch (envs x steps) | epochs | rollout TFLOP | learn TFLOP | "
             "total TFLOP | GB accessed | FLOP/sample | H100 s at FP32 peak | H100 lower bound s | "
             "H100 bound env-steps/s |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['variant']} | {r['num_envs']} x {r['rollout_len']} | {r['update_epochs']} | "
                     f"{r['rollout_flops'] / 1e12:.3f} | {r['learn_flops'] / 1e12:.3f} | {r['flops'] / 1e12:.3f} | "
                     f"{r['bytes'] / 1e9:.1f} | {r['flops'] / r['samples']:,.0f} | {r['h100_fp32_s']:.3f} | "
                     f"{r['h100_bound_s']:.3f} | {r['h100_bound_env_steps_per_s']:,.0f} |")
    return lines


def ipd_config(args) -> TrainConfig:
    return TrainConfig(**IPD_PPO).replace(
        num_envs=args.ipd_envs, rollout_len=args.ipd_rollout, num_updates=args.ipd_updates
    )


def bench_ipd(args) -> list[dict]:
    env = sj.make("ipd")
    config = ipd_config(args)
    call, comp = batched_program(env, config, args.seeds)
    print(f"ipd population {args.seeds} seeds: compiled in {comp:.1f}s", file=sys.stderr, flush=True)
    times = timed(call, args.repeats, not args.no_warmup)
    out = [row("IPD population (vmapped seeds)", env, config, args.seeds, times, comp, "PPO vs TFT")]
    # end to end, the way a user calls it the first time: compile (no cache) + run + results to numpy
    t0 = time.perf_counter()
    result = sj.train.run(env, config, seeds=args.seeds, progress=False, compile_cache=False)
    wall = time.perf_counter() - t0
    run_compile = getattr(result, "compile_seconds", float("nan"))
    out.append(row("IPD population, sj.train.run end to end (1 call, compile incl.)", env, config, args.seeds,
                   [wall], run_compile, f"run() reports {result.seconds:.2f}s, {run_compile:.1f}s of it compiling"))
    return out


def bench_loop(args) -> list[dict]:
    env = sj.make("ipd")
    config = ipd_config(args)
    n = args.loop_seeds
    vm_call, vm_comp = batched_program(env, config, n)
    vm_times = timed(vm_call, args.repeats, not args.no_warmup)

    single = jax.jit(make_train(env, config))
    keys = run_keys(np.arange(n))
    one_compiled, one_comp = compiled(single, keys[0])
    key_list = [keys[i] for i in range(n)]

    def loop():
        return [one_compiled(k) for k in key_list]  # async dispatch; blocked on at the end

    loop_times = timed(loop, args.repeats, not args.no_warmup)
    vm, lp = statistics.median(vm_times), statistics.median(loop_times)
    print(
        f"loop vs vmap ({n} runs): vmapped {vm:.3f}s (+{vm_comp:.1f}s compile), "
        f"python loop {lp:.3f}s (+{one_comp:.1f}s compile); speed-up {lp / vm:.1f}x compile excluded, "
        f"{(lp + one_comp) / (vm + vm_comp):.1f}x included",
        file=sys.stderr, flush=True,
    )
    return [
        row(f"IPD {n} seeds, one vmapped call", env, config, n, vm_times, vm_comp, ""),
        row(f"IPD {n} seeds, Python loop of {n} jitted single-run calls", env, config, n, loop_times, one_comp,
            f"speed-up of vmap: {lp / vm:.1f}x compile excluded, "
            f"{(lp + one_comp) / (vm + vm_comp):.1f}x compile included"),
    ]


def markdown(rows: list[dict], command: str, device: str, load: tuple) -> str:
    lines = [
        f"command: `{command}`",
        f"device: {device}; load average at start (1, 5, 15 min): {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}",
        "",
        "| measurement | env | N | runs | envs x rollout x updates | epochs x minibatches | env-steps/s | "
        "agent-steps/s | median call s | min-max s | compile s | note |",
        "|---|---|---:|---:|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['env']} | {r['num_agents']} | {r['runs']} | "
            f"{r['num_envs']} x {r['rollout_len']} x {r['num_updates']} | "
            f"{r['update_epochs']} x {r['num_minibatches']} | "
            f"{r['env_steps_per_s']:,.0f} | {r['agent_steps_per_s']:,.0f} | {r['median_s']:.3f} | "
            f"{min(r['times_s']):.3f}-{max(r['times_s']):.3f} | {r['compile_s']:.1f} | {r['note']} |"
        )
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--which", default=",".join(WHICH), help=f"comma-separated, from {WHICH}")
    p.add_argument("--envs", type=int, default=16, help="cleanup: games per update (paper: 256)")
    p.add_argument("--rollout", type=int, default=128, help="cleanup: rollout length (paper: 1000)")
    p.add_argument("--updates", type=int, default=4, help="cleanup: updates per call")
    p.add_argument("--minibatches", type=int, default=4, help="cleanup: PPO minibatches per epoch")
    p.add_argument("--set", dest="overrides", type=key_value, action="append", default=[], metavar="KEY=VALUE",
                   help="cleanup/single/cost: override a TrainConfig field (as `socialjax train --set`)")
    p.add_argument("--variants", default=",".join(COST_VARIANTS),
                   help="cost: comma-separated seating/network/conv/precision entries")
    p.add_argument("--seeds", type=int, default=1024, help="ipd: seeds in the population run")
    p.add_argument("--cpu-seeds", type=int, default=1, help="cleanup_cpu: seeds in one vmapped call")
    p.add_argument("--loop-seeds", type=int, default=32, help="loop: runs, vmapped vs one by one")
    p.add_argument("--ipd-envs", type=int, default=16, help="ipd/loop: games per update per run")
    p.add_argument("--ipd-rollout", type=int, default=100, help="ipd/loop: rollout length (one 100-round game)")
    p.add_argument("--ipd-updates", type=int, default=20, help="ipd/loop: updates per run")
    p.add_argument("--repeats", type=int, default=3, help="timed calls (median reported)")
    p.add_argument("--no-warmup", action="store_true", help="skip the untimed warm-up call")
    p.add_argument("--json", default=None, metavar="PATH", help="write the raw results here")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    which = args.which.split(",")
    bad = sorted(set(which) - set(WHICH))
    if bad:
        raise SystemExit(f"--which: unknown {bad}; choose from {WHICH}")
    if args.repeats < 1:
        raise SystemExit("--repeats must be >= 1")
    command = "python scripts/bench_train.py " + " ".join(sys.argv[1:] if argv is None else argv)
    load = os.getloadavg()
    device = device_name()
    print(f"jax {jax.__version__}, devices {jax.devices()}, {os.cpu_count()} CPUs, load {load}", file=sys.stderr)
    rows: list[dict] = []
    costs: list[dict] = []
    for w in which:
        if w == "cost":
            costs += bench_cost(args)
            continue
        bench = {"cleanup": bench_cleanup, "cleanup_cpu": bench_cleanup_cpu, "ipd": bench_ipd, "loop": bench_loop,
                 "single": bench_single, "learners": bench_learners, "tracking": bench_tracking}
        rows += bench[w](args)
    end_load = os.getloadavg()
    print(markdown(rows, command, device, load) if rows else f"command: `{command}`\ndevice: {device}")
    if costs:
        print("\n".join(cost_markdown(costs)))
    print(f"\nload average at end (1, 5, 15 min): {end_load[0]:.2f}, {end_load[1]:.2f}, {end_load[2]:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": command, "device": device, "load_start": load, "load_end": end_load,
                       "jax": jax.__version__, "rows": rows, "costs": costs}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
