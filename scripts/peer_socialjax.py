"""SocialJax's own Clean Up, timed the way ``scripts/gpu_check.py`` times ours, so that
every ratio is measured in one run on one machine (the check's ``peer-env`` and
``peer-train`` parts and ``scripts/peer_ratio.py`` start this script; it is not meant to
be run by hand).

It runs in a process of its own with SocialJax's checkout (cooperativex/SocialJax,
9df972d) first on the path: that package is also called ``socialjax``. Stand-ins for
the imports the timing does not use come from ``scripts/peer_stubs``.

- ``--what env``: their ``clean_up`` or ``harvest_common_open`` (``--env``; 7 players,
  ``cnn=True``, individual rewards) under uniformly random actions: one jitted
  ``lax.scan`` of T steps of a vmap over B games, observations and rewards summed
  inside the loop (as :mod:`socialjax.bench` does for ours); compile time apart, then
  the median of ``--repeats`` calls.
- ``--what train``: their ``algorithms/IPPO/ippo_cnn_cleanup.py`` ``make_train`` on
  their configuration files (``ippo_base.yaml``, ``ippo_cnn_cleanup.yaml``,
  ``reward/<--reward>.yaml``) with the batch set from the command line, jitted whole,
  ``--updates`` updates per call; for each seed count S of ``--seeds``, S seeds vmapped
  in one call as their own sweep code does it (``jax.jit(jax.vmap(make_train(config)))``
  over ``jax.random.split(key, S)``, their ``NUM_SEEDS``), until one does not fit the
  device (a row says so).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def load_config(peer: Path, reward: str, overrides: dict) -> dict:
    """Their hydra composition by hand: the base file, the Clean Up file, the reward file."""
    import yaml

    folder = peer / "algorithms" / "IPPO" / "config"
    config: dict = {}
    for name in ("ippo_base.yaml", "ippo_cnn_cleanup.yaml", f"reward/{reward}.yaml"):
        part = yaml.safe_load((folder / name).read_text()) or {}
        part.pop("defaults", None)
        for key, value in part.items():
            if isinstance(value, dict) and isinstance(config.get(key), dict):
                config[key] = {**config[key], **value}
            else:
                config[key] = value
    config.update(overrides)
    return {k: _number(v) for k, v in config.items()}


def _number(value):
    """OmegaConf reads ``2.5e6`` as a float where PyYAML leaves a string (YAML 1.1 wants a dot and a sign)."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def bench_env(args, row) -> None:
    import jax
    import jax.numpy as jnp
    from check_io import compiled, timed

    import socialjax

    env = socialjax.make(args.env, num_agents=7, num_inner_steps=1000, cnn=True, jit=True, shared_rewards=False)
    n, actions_n = env.num_agents, env.action_space().n
    for batch in args.batch_sizes:
        steps = max(10, min(10_000, args.budget // batch))

        def run(key, batch=batch, steps=steps):
            key_reset, key_run = jax.random.split(key)
            _, state = jax.vmap(env.reset)(jax.random.split(key_reset, batch))

            def body(carry, key):
                state, checksum = carry
                key_act, key_step = jax.random.split(key)
                acts = jax.random.randint(key_act, (n, batch), 0, actions_n)
                obs, state, reward, done, info = jax.vmap(env.step)(jax.random.split(key_step, batch), state,
                                                                    list(acts))
                total = sum(jnp.sum(jnp.asarray(x, jnp.float32)) for x in jax.tree_util.tree_leaves((obs, reward)))
                return (state, checksum + total), None

            (_, checksum), _ = jax.lax.scan(body, (state, jnp.float32(0)), jax.random.split(key_run, steps))
            return checksum

        key = jax.random.key(0)
        program, compile_s = compiled(jax.jit(run), key)
        times = timed(lambda: program(key), args.repeats)
        med = statistics.median(times)
        row({"what": "env", "env": f"SocialJax {args.env}", "num_agents": n, "batch": batch, "steps": steps,
             "compile_s": compile_s, "times_s": times, "median_s": med, "env_steps_per_s": batch * steps / med,
             "agent_steps_per_s": batch * steps * n / med})


def bench_train(args, row) -> None:
    import jax
    from check_io import compiled, peak_memory, timed

    overrides = {"NUM_ENVS": args.envs, "NUM_STEPS": args.rollout, "NUM_MINIBATCHES": args.minibatches,
                 "TOTAL_TIMESTEPS": args.envs * args.rollout * args.updates}
    config = load_config(args.peer, args.reward, overrides)
    sys.path.insert(0, str(args.peer))
    from algorithms.IPPO.ippo_cnn_cleanup import make_train

    key = jax.random.PRNGKey(int(config.get("SEED", 30)))  # their code splits raw uint32 keys
    for seeds in args.seeds:
        keys = jax.random.split(key, seeds)
        train = jax.jit(jax.vmap(make_train(dict(config))))
        describe = {"what": "train", "seeds": seeds, "reward": args.reward, "num_envs": args.envs,
                    "rollout_len": args.rollout, "num_updates": args.updates, "update_epochs": config["UPDATE_EPOCHS"],
                    "num_minibatches": args.minibatches}
        try:
            program, compile_s = compiled(train, keys)
            row({**describe, "stage": "compiled", "compile_s": compile_s})
            times = timed(lambda program=program, keys=keys: program(keys), args.repeats)
        except Exception as err:  # XLA's out-of-memory error (its type moves between jax versions)
            if "RESOURCE_EXHAUSTED" not in str(err) and "out of memory" not in str(err).lower():
                raise
            row({**describe, "stage": "out of memory", "error": str(err).splitlines()[0][:200],
                 "peak_memory_bytes": peak_memory()})
            return
        med = statistics.median(times)
        env_steps = seeds * args.envs * args.rollout * args.updates
        row({**describe, "name": "SocialJax IPPO (ippo_cnn_cleanup.py, one shared network)", "compile_s": compile_s,
             "times_s": times, "median_s": med, "seconds_per_update": med / args.updates,
             "env_steps_per_s": env_steps / med, "agent_steps_per_s": env_steps * 7 / med,
             "peak_memory_bytes": peak_memory()})


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--peer", type=Path, required=True, help="SocialJax checkout (cooperativex/SocialJax)")
    p.add_argument("--what", choices=("env", "train"), required=True)
    p.add_argument("--rows", required=True, help="JSON-lines file the measurements are appended to")
    p.add_argument("--env", choices=("clean_up", "harvest_common_open"), default="clean_up", help="env: their game")
    p.add_argument("--batch-sizes", type=lambda s: [int(x) for x in s.split(",")], default=[4096])
    p.add_argument("--budget", type=int, default=2_000_000, help="env: env-steps per timed call")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--envs", type=int, default=256)
    p.add_argument("--rollout", type=int, default=1000)
    p.add_argument("--minibatches", type=int, default=500)
    p.add_argument("--updates", type=int, default=1)
    p.add_argument("--reward", choices=("common", "individual"), default="common")
    p.add_argument("--seeds", type=lambda s: [int(x) for x in s.split(",")], default=[1],
                   help="train: seed counts vmapped in one call, in increasing order (default 1)")
    args = p.parse_args(argv)
    args.peer = args.peer.resolve()
    if not (args.peer / "socialjax" / "environments" / "cleanup").is_dir():
        raise SystemExit(f"--peer {args.peer}: not a SocialJax checkout (no socialjax/environments/cleanup)")
    sys.path[:0] = [str(args.peer), str(HERE / "peer_stubs")]
    import socialjax

    if Path(socialjax.__file__).resolve().parents[1] != args.peer:
        raise SystemExit(f"imported socialjax from {socialjax.__file__}, not from the peer's checkout {args.peer}; "
                         "remove this repository from PYTHONPATH for the peer's process")
    from check_io import append_row

    row = lambda r: append_row(args.rows, r)  # noqa: E731
    (bench_env if args.what == "env" else bench_train)(args, row)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    sys.exit(main())
