"""What stopping within one update costs: a run computed one update per compiled call
(what :func:`socialjax.train.run` does in the main thread, where Ctrl-C and SIGTERM are
caught) against the same run as one compiled call (what it does in another thread, where
no signal can be caught). Same config, same seeds, same bits (checked); run time apart
from compile time, median of ``--repeats`` runs of each, alternated.

    python scripts/bench_calls.py --preset ipd-ppo --updates 100 --seeds 8 --repeats 5
    python scripts/bench_calls.py --preset harvest-ippo-small --updates 8 --seeds 2 --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import threading

import numpy as np

from socialjax.train.presets import get_preset
from socialjax.train.run import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="ipd-ppo")
    parser.add_argument("--updates", type=int, default=100)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    preset = get_preset(args.preset)
    config, env = preset.make_config(num_updates=args.updates), preset.make_env()
    results = {"one update per call (main thread)": [], "one call (another thread)": []}
    last = {}

    def once(name):
        r = run(env, config, seeds=args.seeds, progress=False, compile_cache=False)
        results[name].append(r.seconds - r.compile_seconds)
        last[name] = r

    for _ in range(args.repeats):
        once("one update per call (main thread)")
        worker = threading.Thread(target=once, args=("one call (another thread)",))
        worker.start()
        worker.join()
    a, b = (last[k].metrics for k in results)
    same = all(np.array_equal(a[k], b[k], equal_nan=True) for k in a)
    steps = args.updates * config.num_envs * config.rollout_len * args.seeds
    print(f"{args.preset}: {args.updates} updates x {config.num_envs} games x {config.rollout_len} steps x "
          f"{args.seeds} seeds; same bits: {same}")
    for name, times in results.items():
        med = statistics.median(times)
        print(f"  {name:36s} median {med:.3f} s  ({steps / med:,.0f} env-steps/s)  runs: "
              + ", ".join(f"{t:.3f}" for t in times))


if __name__ == "__main__":
    main()
