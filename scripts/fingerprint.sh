#!/usr/bin/env bash
# Digests of a few presets' results, to check that a refactor changed no bits:
#
#   scripts/fingerprint.sh OUTDIR > before.txt   # on the old tree
#   scripts/fingerprint.sh OUTDIR > after.txt    # on the new one; then diff the two
#
# Each preset trains briefly through `socialjax train`; a line gives the sha256 of every
# array of its metrics.npz (names and bytes, sorted by name) and of its checkpoint.
set -euo pipefail
OUT=${1:?usage: scripts/fingerprint.sh OUTDIR}
rm -rf "$OUT" && mkdir -p "$OUT"
PRESETS=("ipd-ppo --updates 3 --seeds 2" "ipd-mixed --updates 3 --seeds 2" "harvest-ippo-small --updates 2 --seeds 2"
         "coins-ippo-small --updates 2 --seeds 1" "cleanup-shared-dqn --updates 2 --seeds 1"
         "donor-evolution --generations 3 --seeds 2")
for spec in "${PRESETS[@]}"; do
  name=${spec%% *}
  # shellcheck disable=SC2086
  socialjax train $spec --out "$OUT/$name" > "$OUT/$name.log" 2>&1 || { echo "$name FAILED (see $OUT/$name.log)"; continue; }
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
