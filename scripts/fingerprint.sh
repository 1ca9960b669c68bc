#!/usr/bin/env bash
# Digests of a few presets' results and of every reproduction entry's small scale, to
# check that a refactor changed no bits:
#
#   scripts/fingerprint.sh OUTDIR > before.txt   # on the old tree
#   scripts/fingerprint.sh OUTDIR > after.txt    # on the new one; then diff the two
#   scripts/fingerprint.sh OUTDIR --reproduce-only   # only the entries
#
# Run it from the root of the tree to fingerprint (it runs that tree's code: python -m).
#
# Each preset trains briefly through `socialjax train`; a line gives the sha256 of every
# array of its metrics.npz (names and bytes, sorted by name) and of its checkpoint. Each
# entry runs `socialjax reproduce NAME --scale small`; a line gives the sha256 of its
# values (every seed's value of every row and quantity of reproduction.json, sorted by
# key, as float64 bytes) and its verdict.
set -euo pipefail
OUT=${1:?usage: scripts/fingerprint.sh OUTDIR [--reproduce-only]}
rm -rf "$OUT" && mkdir -p "$OUT"
PRESETS=("ipd-ppo --updates 3 --seeds 2" "ipd-mixed --updates 3 --seeds 2" "harvest-ippo-small --updates 2 --seeds 2"
         "coins-ippo-small --updates 2 --seeds 1" "cleanup-shared-dqn --updates 2 --seeds 1"
         "donor-evolution --generations 3 --seeds 2")
if [[ "${2:-}" == "--reproduce-only" ]]; then PRESETS=(); fi
for spec in "${PRESETS[@]}"; do
  name=${spec%% *}
  # shellcheck disable=SC2086
  python -m socialjax.cli train $spec --out "$OUT/$name" > "$OUT/$name.log" 2>&1 || { echo "$name FAILED (see $OUT/$name.log)"; continue; }
  python - "$OUT/$name" <<'PY'
import hashlib
import pathlib
import sys

import numpy as np

folder = pathlib.Path(sys.argv[1])
metrics = np.load(folder / "metrics.npz")
digest = hashlib.sha256()
for name in sorted(metrics.files):
    digest.update(name.encode())
    digest.update(np.ascontiguousarray(metrics[name]).tobytes())
checkpoint = folder / "checkpoint.msgpack"
saved = hashlib.sha256(checkpoint.read_bytes()).hexdigest()[:16] if checkpoint.exists() else "-"
print(folder.name, "metrics", digest.hexdigest()[:16], "checkpoint", saved, len(metrics.files), "arrays")
PY
done
for name in $(python -m socialjax.cli reproduce --list | awk '{print $1}'); do
  python -m socialjax.cli reproduce "$name" --scale small --quiet --out "$OUT/rep-$name" > "$OUT/rep-$name.log" 2>&1 \
    || { echo "$name FAILED (see $OUT/rep-$name.log)"; continue; }
  python - "$OUT/rep-$name" <<'PY'
import hashlib
import json
import pathlib
import sys

import numpy as np

folder = pathlib.Path(sys.argv[1])
record = json.loads((folder / "reproduction.json").read_text())
digest = hashlib.sha256()
for key in sorted(record["finals"]):
    digest.update(key.encode())
    digest.update(np.asarray([np.nan if v is None else v for v in record["finals"][key]], np.float64).tobytes())
print(record["entry"], "values", digest.hexdigest()[:16], len(record["finals"]), "keys", record["verdict"])
PY
done
