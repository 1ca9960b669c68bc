"""How many times faster our grid games step than SocialJax's, measured so that the ratio
is honest: the same protocol for both, alternated, on a machine whose load is stated.

For each pair of games (ours, theirs) and each of ``--rounds`` rounds, one process times
ours (``socialjax bench``: ``--games`` games x ``--steps`` steps of uniformly random
play in one jitted ``lax.scan`` of a ``vmap``, observations and rewards summed inside the
loop, compile time apart, median of ``--repeats`` calls) and one process times theirs the
same way (``scripts/peer_socialjax.py --what env``, in a process of its own because their
package is also called ``socialjax``). The order alternates between rounds (ours first in
even rounds, theirs first in odd ones), so a change in the machine's load during the run
falls on both. Each round gives a ratio of the two medians; the result is the median of
the rounds' ratios and their range, with the load average before and after.

    python scripts/peer_ratio.py --peer .peer/SocialJax --json ratio.json

Pairs: ``cleanup`` / ``clean_up`` and ``harvest_open`` / ``harvest_common_open``, 7
players each, each side with its own default observation (ours: 11x11 codes; theirs:
``cnn=True`` images). SocialJax's checkout is ``cooperativex/SocialJax``; the timing does
not need their training code's imports (stand-ins in ``scripts/peer_stubs``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PAIRS = {"cleanup": "clean_up", "harvest_open": "harvest_common_open"}


def ours(env: str, games: int, steps: int, repeats: int, folder: Path, pin: list[str]) -> float:
    """Env-steps per second of our ``env`` (median of ``repeats`` calls), in a new process."""
    out = folder / f"ours-{env}.json"
    run([*pin, sys.executable, str(HERE / "bench_envs.py"), "--envs", env, "--batch-sizes", str(games),
         "--budget", str(games * steps), "--repeats", str(repeats), "--json", str(out), "--overwrite"])
    (row,) = json.loads(out.read_text())["results"]
    return float(row["env_steps_per_s"])


def theirs(peer: Path, env: str, games: int, steps: int, repeats: int, folder: Path, pin: list[str]) -> float:
    """Env-steps per second of SocialJax's ``env``, the same way, in a new process."""
    rows = folder / f"theirs-{env}.jsonl"
    rows.unlink(missing_ok=True)
    run([*pin, sys.executable, str(HERE / "peer_socialjax.py"), "--peer", str(peer), "--what", "env", "--env", env,
         "--rows", str(rows), "--batch-sizes", str(games), "--budget", str(games * steps),
         "--repeats", str(repeats)])
    (row,) = [json.loads(line) for line in rows.read_text().splitlines()]
    return float(row["env_steps_per_s"])


def run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--peer", type=Path, required=True, help="SocialJax checkout (cooperativex/SocialJax)")
    p.add_argument("--pairs", default=",".join(PAIRS), help=f"our games, comma-separated (of {', '.join(PAIRS)})")
    p.add_argument("--games", type=int, default=64)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--repeats", type=int, default=5, help="timed calls per process (median)")
    p.add_argument("--rounds", type=int, default=3, help="alternated rounds per pair")
    p.add_argument("--taskset", default=None, metavar="CPUS",
                   help="run every timed process on these CPUs only (Linux taskset -c, e.g. 0: one core, no "
                        "threads competing for it)")
    p.add_argument("--json", type=Path, default=None, help="write every measurement here")
    args = p.parse_args(argv)
    pairs = args.pairs.split(",")
    unknown = sorted(set(pairs) - set(PAIRS))
    if unknown:
        p.error(f"--pairs: unknown {unknown}; choose from {sorted(PAIRS)}")
    pin = ["taskset", "-c", args.taskset] if args.taskset else []
    load_before = os.getloadavg()
    print(f"load average before: {load_before[0]:.2f} (1 min), {load_before[1]:.2f} (5 min); "
          f"{args.games} games x {args.steps} steps, median of {args.repeats} calls, {args.rounds} rounds"
          + (f", every process on CPUs {args.taskset}" if args.taskset else ""))
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for mine in pairs:
            rounds = []
            for r in range(args.rounds):
                order = ("ours", "theirs") if r % 2 == 0 else ("theirs", "ours")
                speed = {}
                for side in order:
                    speed[side] = (ours(mine, args.games, args.steps, args.repeats, folder, pin) if side == "ours"
                                   else theirs(args.peer.resolve(), PAIRS[mine], args.games, args.steps, args.repeats,
                                               folder, pin))
                rounds.append({"round": r, "first": order[0], **speed, "ratio": speed["ours"] / speed["theirs"]})
                print(f"  {mine} round {r} ({order[0]} first): ours {speed['ours']:,.0f}, "
                      f"theirs {speed['theirs']:,.0f} env-steps/s: {rounds[-1]['ratio']:.1f}x", flush=True)
            ratios = [x["ratio"] for x in rounds]
            results.append({"ours": mine, "theirs": PAIRS[mine], "rounds": rounds,
                            "ours_median": statistics.median(x["ours"] for x in rounds),
                            "theirs_median": statistics.median(x["theirs"] for x in rounds),
                            "ratio_median": statistics.median(ratios), "ratio_min": min(ratios),
                            "ratio_max": max(ratios)})
    load_after = os.getloadavg()
    print(f"load average after: {load_after[0]:.2f} (1 min), {load_after[1]:.2f} (5 min)")
    for res in results:
        print(f"{res['ours']} vs SocialJax {res['theirs']}: {res['ratio_median']:.1f}x "
              f"(rounds {res['ratio_min']:.1f}-{res['ratio_max']:.1f}x; ours {res['ours_median']:,.0f}, "
              f"theirs {res['theirs_median']:,.0f} env-steps/s)")
    if args.json:
        args.json.write_text(json.dumps({"games": args.games, "steps": args.steps, "repeats": args.repeats,
                                         "taskset": args.taskset,
                                         "load_before": load_before, "load_after": load_after,
                                         "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
