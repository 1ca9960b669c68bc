"""Training throughput: rollout + learning, in one compiled call.

Three measurements (``--which``, comma-separated):

- ``cleanup``: IPPO on ``cleanup`` with the ``cleanup-ippo-paper`` preset (7 seats,
  independent seating: one PPO learner per seat, CNN on the code observations, lr 5e-4,
  2 epochs), one ``jax.jit(train)`` call of ``--updates`` updates of ``--envs`` games x
  ``--rollout`` steps each. Run it for the paper preset's batch (``--envs 256 --rollout
  1000 --minibatches 500``) and a small batch (``--envs 16 --rollout 128``);
- ``ipd``: a population run of ``--seeds`` seeds on ``ipd`` (a small PPO learner, MLP
  on the one-hot memory-one observation, against a fixed TFT co-player), the same
  per-device ``jit(vmap(train))`` blocks :func:`socialjax.train.run` builds, compiled
  once and timed; plus one end-to-end ``sj.train.run(env, config, seeds=...)`` call
  (compile and host transfer included) for reference;
- ``loop``: ``--loop-seeds`` runs of the same IPD training as one vmapped call versus a
  Python loop of that many calls of the jitted single-run ``train`` (compiled once).

Method: compile once (trace + lower + compile, reported separately), one untimed
warm-up call (skipped with ``--no-warmup``, for the slow paper batch), then
``--repeats`` timed calls, each ended with ``block_until_ready``; the median is
reported. Steps: ``num_updates x num_envs x rollout_len`` env-steps per run (times the
runs of a batched call), times ``num_agents`` for agent-steps. Evaluation inside
``train`` is switched off (``evaluate=False``) so only rollout + update is timed.

    python scripts/bench_train.py --which cleanup --envs 16 --rollout 128 --updates 4
    python scripts/bench_train.py --which cleanup --envs 256 --rollout 1000 --updates 1 --minibatches 500 --repeats 1 --no-warmup
    python scripts/bench_train.py --which ipd --seeds 1024
    python scripts/bench_train.py --which loop --loop-seeds 32
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any, Callable

import jax
import numpy as np

import socialjax as sj
from socialjax.train import TrainConfig, make_train, run_keys
from socialjax.train.run import compile_blocks, device_program, lay_out
from socialjax.train.presets import get_preset

WHICH = ("cleanup", "ipd", "loop")

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


def timed(fn: Callable[[], Any], repeats: int, warmup: bool) -> list[float]:
    """Wall times of ``repeats`` calls of ``fn`` (each ends with block_until_ready)."""
    if warmup:
        jax.block_until_ready(fn())
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - t0)
    return times


def compile_s(jitted, *args) -> tuple[Any, float]:
    t0 = time.perf_counter()
    compiled = jitted.lower(*args).compile()
    return compiled, time.perf_counter() - t0


def batched_program(env, config: TrainConfig, num_runs: int) -> tuple[Callable[[], Any], float]:
    """The program :func:`socialjax.train.run` runs for ``num_runs`` seeds (no sweep):
    a ``jit(vmap(train))`` block per local device, compiled; returns a function that
    dispatches every block, and the compile time."""
    layout = lay_out(num_runs, jax.local_devices())
    if layout.padded != num_runs:
        raise SystemExit(f"--seeds/--loop-seeds must fill the {len(jax.local_devices())} devices with >= 4 runs each")
    train = make_train(env, config)
    hparams = {k: np.full((num_runs,), v[0], np.float32) for k, v in config.hparam_grid().items()}
    t0 = time.perf_counter()
    compiled, inputs = compile_blocks(device_program(train), layout, run_keys(np.arange(num_runs)), hparams)
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


def bench_cleanup(args) -> list[dict]:
    preset = get_preset(CLEANUP_PRESET)
    env = preset.make_env()
    config = preset.make_config(
        num_envs=args.envs, rollout_len=args.rollout, num_updates=args.updates, num_minibatches=args.minibatches,
        evaluate=False, log_every=0,
    )
    train = jax.jit(make_train(env, config))
    key = run_keys([0])[0]
    compiled, comp = compile_s(train, key)
    print(f"cleanup IPPO {args.envs}x{args.rollout}x{args.updates}: compiled in {comp:.1f}s", file=sys.stderr, flush=True)
    times = timed(lambda: compiled(key), args.repeats, not args.no_warmup)
    return [row("IPPO cleanup", env, config, 1, times, comp,
                f"preset {CLEANUP_PRESET}, {config.update_epochs} epochs x {config.num_minibatches} minibatches")]


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
    # end to end, the way a user calls it: compile + run + results to numpy
    t0 = time.perf_counter()
    result = sj.train.run(env, config, seeds=args.seeds, progress=False)
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
    one_compiled, one_comp = compile_s(single, keys[0])
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
            f"speed-up of vmap: {lp / vm:.1f}x compile excluded, {(lp + one_comp) / (vm + vm_comp):.1f}x compile included"),
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
            f"{r['num_envs']} x {r['rollout_len']} x {r['num_updates']} | {r['update_epochs']} x {r['num_minibatches']} | "
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
    p.add_argument("--seeds", type=int, default=1024, help="ipd: seeds in the population run")
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
    for w in which:
        rows += {"cleanup": bench_cleanup, "ipd": bench_ipd, "loop": bench_loop}[w](args)
    end_load = os.getloadavg()
    print(markdown(rows, command, device, load))
    print(f"\nload average at end (1, 5, 15 min): {end_load[0]:.2f}, {end_load[1]:.2f}, {end_load[2]:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": command, "device": device, "load_start": load, "load_end": end_load,
                       "jax": jax.__version__, "rows": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
