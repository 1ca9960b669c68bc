"""Environment throughput under random actions: the same program as ``socialjax bench``
(:mod:`socialjax.cli.bench`), kept here so that the commands in BENCHMARKS.md keep working.

    python scripts/bench_envs.py --envs ipd,stag_hunt --batch-sizes 1,64 --json out.json
"""

import sys

from socialjax.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
