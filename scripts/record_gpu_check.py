"""Turn the accelerator check's report (``OUT/gpu_check.json``, which
``scripts/gpu_check.py`` writes) into records of ``measurements/`` and render the
documents again.

    python3 scripts/gpu_check.py --out OUT --commit COMMIT --peer .peer/SocialJax   # on the GPU machine
    python scripts/record_gpu_check.py OUT/gpu_check.json --load "nothing else ran on the machine"
    git add measurements BENCHMARKS.md && git commit

Each part's rows become records of the table of its kind for the report's device (TAG:
``gpu-h200`` for "NVIDIA H200", ``gpu-h100`` for "NVIDIA H100 80GB HBM3"; ``--device``
names the model part, e.g. ``--device h100``):

- ``envs``, ``peer-env``: ``env_throughput.json``, table ``env-TAG`` (one row per game
  and batch size; SocialJax's own ``clean_up`` as a peer row);
- ``train-*``, ``peer-train``: ``training_throughput.json``, table ``train-TAG`` (one
  row per variant: s per update, its rollout and the rest, compile s, peak MiB; "vs
  SocialJax" when the same report holds ``peer-train``'s timed row);
- ``aggregate``, ``aggregate-looped``, ``aggregate-patch``, ``aggregate-peer``:
  ``training_throughput.json``, table ``train-aggregate-TAG`` (one row per seed count
  S, ours and SocialJax's vmapped seeds);
- ``sweep``: ``compile_times.json``, table ``compile-many-seeds`` (the stages' compile
  seconds, the chunk; the wall time and env-steps/s in the row's notes);
- ``determinism``, ``determinism-flag``: ``gpu_determinism.json``, table
  ``determinism-MODEL`` (``determinism-h200``).

Not recorded, and said so: ``profile`` and ``profile-env`` (no table renders a profile
of the training update or of the simulator by kernel: BENCHMARKS.md's ``grid-profile``
is ``scripts/profile_grid.py``'s grid-step phases), ``reproduce-*``
(``measurements/reproductions/`` has no table of the ``gpu`` scale; the part's figure,
table and summary are under ``OUT/reproduce-NAME/``),
``tests`` (no table of the GPU's share of the suite), skipped parts and parts without
rows. A part that failed or ran out of time keeps the rows it finished; their notes say
so. A record already in its family (same values, same provenance) is not added again.

A device without a table of a kind gets one: the columns of the family's latest table
of that kind (``env-gpu-*``, ``train-gpu-*``, ``determinism-*``; the first aggregate
table of a GPU takes ``train-aggregate-cpu``'s columns with ``what``, peak MiB and a
status for rows not timed), its markers placed after that table in BENCHMARKS.md. The
prose around a new table is for a person to write.

Provenance comes from the report: the command, the device (its kind and count), the CPU
count and host, Python, jax and jaxlib, the date (its day) and the commit (``--commit``
names another; "unknown" is recorded as not recorded), per part the batch, the repeats
and which part measured it, each from the call that ran the part (``gpu_check.py`` keeps
them per part). An older report kept the command, date, commit and machine of its last
call only: there a part an earlier call wrote into the same folder (not among the parts
that command runs) is recorded with command, date and commit "not recorded". The
load must be stated (``--load``): the report does not hold it. ``--parts`` records only
the named parts; ``--notes`` adds a remark to every record; ``--dry-run`` prints the
records (one JSON a line) and the tables it would create, writing nothing. A ``--tiny``
report (toy sizes) is refused unless ``--allow-tiny`` (for checking this script: its
numbers measure nothing; its tables end ``-tiny``, its sweep goes to
``compile-many-seeds-TAG``, not among the measured compile times).
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import render_tables
from gpu_check import CALLS, DETERMINISTIC_FLAG
from record_bench import aggregate_values, mib, shaped
from render_tables import END, PROVENANCE_KEYS, add_record, dump_family, family_path, load_family, render

ENV_FAMILY = "benchmarks/env_throughput"
TRAIN_FAMILY = "benchmarks/training_throughput"
SWEEP_FAMILY = "benchmarks/compile_times"
DETERMINISM_FAMILY = "benchmarks/gpu_determinism"
SWEEP_TABLE = "compile-many-seeds"
# the first aggregate table of a GPU: train-aggregate-cpu's columns, with what was run, the
# peak memory, and a status where a row was not timed (SocialJax's seeds that did not fit)
AGGREGATE_ANCHOR = "train-aggregate-cpu"
AGGREGATE_COLUMNS = [
    {"header": "what", "cell": "{what}"},
    {"header": "seeds S", "align": "right", "cell": ["{seeds:d}", "{seeds}"]},
    {"header": "computed", "cell": "{computed}"},
    {"header": "s per update", "align": "right", "cell": ["{s_per_update:.3f}", "{s_per_update}"]},
    {"header": "aggregate env-steps/s", "align": "right", "cell": ["{env_steps_per_s:,}", "{status}"]},
    {"header": "agent-steps/s", "align": "right", "cell": ["{agent_steps_per_s:,}", "{agent_steps_per_s}"]},
    {"header": "compile s (init; update)", "cell": ["{compile_init_s:.1f}; {compile_update_s:.1f}", "{compile_text}"]},
    {"header": "planned MiB", "align": "right", "cell": ["{planned_mib:,}", "{planned_mib}"]},
    {"header": "peak MiB", "align": "right", "cell": ["{peak_mib:,}", "{peak_mib}"]},
]
VENDOR_WORDS = {"nvidia", "amd", "tesla", "geforce", "quadro", "radeon"}
UNMAPPED = {
    "profile": "no table renders a profile of the training update (BENCHMARKS.md's grid-profile is "
               "scripts/profile_grid.py's grid-step phases); its numbers are in OUT/gpu_check.md and the trace in "
               "OUT/profile.json.gz",
    "reproduce": "measurements/reproductions/ has no table of the gpu scale (repro-cpu is the cpu scale, repro-paper "
                 "the published one); its verdict is in OUT/gpu_check.md and its figure, table and summary under "
                 "OUT/{part}/",
    "tests": "no table holds the GPU's share of the tests (its counts and failures are in OUT/gpu_check.md)",
    "profile-env": "no table renders a profile of the simulator by kernel (BENCHMARKS.md's grid-profile is "
                   "scripts/profile_grid.py's grid-step phases on the CPU); its kernels are in OUT/gpu_check.md",
}
PEER = "SocialJax `ippo_cnn_cleanup.py` (the --peer checkout), one shared network"


# ------------------------------------------------------------------------------ the device
def device_names(machine: dict[str, Any], tiny: bool, model: str | None = None) -> tuple[str, str]:
    """The table tag (``gpu-h200``) and the model (``h200``) of the report's device:
    its kind's first word that is not the vendor's, cut at a hyphen, lowercased (with the
    next word when it has no digit: ``rtx-4090``); a tiny report's tag ends ``-tiny``."""
    platform = str(machine.get("platform") or "unknown").lower()
    if model is None:
        words = [w for w in re.split(r"\s+", str(machine.get("device") or "")) if w]
        words = [w for w in words if w.lower() not in VENDOR_WORDS | {platform}]
        pieces = [w.split("-")[0].lower() for w in words]
        model = pieces[0] if pieces else ""
        if model and not any(c.isdigit() for c in model) and len(pieces) > 1:
            model = f"{model}-{pieces[1]}"
    model = re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-")
    tag = f"{platform}-{model}" if model else platform
    if tiny:
        tag, model = f"{tag}-tiny", f"{model or platform}-tiny"
    return tag, model or platform


def tables_for(kind: str, tag: str, model: str, tiny: bool = False) -> tuple[str, str, str]:
    """The family, the table for this device, and the prefix of the tables whose
    columns a new one copies (a tiny report's sweep goes to a table of its own, not
    among the measured compile times)."""
    return {"env": (ENV_FAMILY, f"env-{tag}", "env-gpu-"),
            "train": (TRAIN_FAMILY, f"train-{tag}", "train-gpu-"),
            "aggregate": (TRAIN_FAMILY, f"train-aggregate-{tag}", "train-aggregate-gpu-"),
            "sweep": (SWEEP_FAMILY, f"{SWEEP_TABLE}-{tag}" if tiny else SWEEP_TABLE, SWEEP_TABLE),
            "determinism": (DETERMINISM_FAMILY, f"determinism-{model}", "determinism-")}[kind]


def part_kind(name: str) -> str | None:
    """The kind of table a part's rows go to; ``None`` for a part no table holds."""
    if name in ("envs", "peer-env"):
        return "env"
    if name.startswith("train-") or name == "peer-train":
        return "train"
    if name.startswith("aggregate"):
        return "aggregate"
    if name == "sweep":
        return "sweep"
    if name.startswith("determinism"):
        return "determinism"
    return None


def unmapped_reason(name: str) -> str:
    if name.startswith("reproduce-"):
        return UNMAPPED["reproduce"].format(part=name)
    return UNMAPPED.get(name, "a part this script does not know")


def new_table(tables: dict[str, Any], kind: str, name: str, prefix: str, device: str,
              parts: list[str]) -> tuple[dict[str, Any], str]:
    """The spec of a device's first table of ``kind`` and the table after whose markers
    its own go: the columns of the family's latest table named ``prefix*``."""
    like = [n for n in tables if n.startswith(prefix) and n != name]
    if like:
        anchor, columns = like[-1], copy.deepcopy(tables[like[-1]]["columns"])
    elif kind == "aggregate" and AGGREGATE_ANCHOR in tables:
        anchor, columns = AGGREGATE_ANCHOR, copy.deepcopy(AGGREGATE_COLUMNS)
    else:
        raise ValueError(f"no table {prefix}* to copy the columns of {name!r} from")
    intro = f"On {device} (the accelerator check's {', '.join(f'`{p}`' for p in parts)}):"
    return {"document": tables[anchor]["document"], "intro": intro, "columns": columns}, anchor


# ---------------------------------------------------------------------- rows -> values
Made = list[tuple[dict[str, Any], dict[str, Any]]]  # (the values a row shows, its provenance's batch/repeats/notes)


def _round(x: float | None, digits: int | None = None):
    return None if x is None else round(x, digits) if digits is not None else round(x)


def env_values(name: str, part: dict, report: dict) -> Made:
    rows = [r for r in part["rows"] if name == "envs" or r.get("what") == "env"]
    repeats = sorted({len(r["times_s"]) for r in rows})
    about = {"batch_sizes": sorted({r["batch"] for r in rows}),
             "repeats": f"median of {' or '.join(map(str, repeats))} calls, compile apart",
             "notes": "`socialjax.bench.bench`, random actions, the check's `envs` part" if name == "envs" else
             "SocialJax's own `clean_up` (the --peer checkout), random actions, the check's `peer-env` part"}
    return [({"peer": None if name == "envs" else "SocialJax", "env": r["env"].removeprefix("SocialJax "),
              "agents": r["num_agents"], "batch": r["batch"], "steps": r["steps"],
              "env_steps_per_s": round(r["env_steps_per_s"]), "agent_steps_per_s": round(r["agent_steps_per_s"]),
              "median_call_s": round(r["median_s"], 3), "min_call_s": round(min(r["times_s"]), 3),
              "max_call_s": round(max(r["times_s"]), 3), "compile_s": round(r["compile_s"], 1)}, about)
            for r in rows]


def _peer_timed(report: dict) -> dict | None:
    """peer-train's timed row of the same report (SocialJax's training of one seed)."""
    part = report["parts"].get("peer-train") or {}
    return next((r for r in part.get("rows", []) if r.get("what") == "train" and "median_s" in r), None)


def _not_timed(part: dict, compile_s: float | None) -> str:
    why = f"the part {part['status']}" + (f": {part['detail']}" if part.get("detail") else "")
    compiled = f"compiled in {compile_s:.1f} s; " if compile_s is not None else ""
    return f"not timed ({compiled}{why})"


TRAIN_EMPTY = {"env_steps_per_s": None, "agent_steps_per_s": None, "s_per_update": None, "rollout_s": None,
               "learning_s": None, "compile_update_s": None, "compile_rollout_s": None, "peak_mib": None,
               "planned_mib": None, "vs_socialjax": None, "vs_socialjax_text": None, "status": None}


def train_values(name: str, part: dict, report: dict) -> Made:
    rows = part["rows"]
    if name == "peer-train":
        first = rows[0]
        about = {"batch_sizes": f"{first['num_envs']} games x {first['rollout_len']} steps, "
                                f"{first['update_epochs']} epochs x {first['num_minibatches']} minibatches, one seed",
                 "notes": "SocialJax's own training loop, jitted whole (the check's `peer-train` part)"}
        timed = _peer_timed(report)
        if timed is None:
            oom = next((r for r in rows if r.get("stage") == "out of memory"), None)
            status = f"out of memory: {oom['error']}" if oom else _not_timed(part, first.get("compile_s"))
            return [({**TRAIN_EMPTY, "what": f"{PEER}, {first['reward']} reward", "status": status},
                     {**about, "repeats": None})]
        return [({**TRAIN_EMPTY, "what": f"{PEER}, {timed['reward']} reward", "vs_socialjax_text": "1x",
                  "env_steps_per_s": round(timed["env_steps_per_s"]),
                  "agent_steps_per_s": round(timed["agent_steps_per_s"]),
                  "s_per_update": round(timed["seconds_per_update"], 3),
                  "compile_update_s": round(timed["compile_s"], 1), "peak_mib": mib(timed["peak_memory_bytes"])},
                 {**about, "repeats": f"median of {len(timed['times_s'])} timed calls after one untimed, "
                                      f"{timed['num_updates']} update(s) a call"})]
    timed = next((r for r in rows if r.get("stage") == "timed"), None)
    r = timed or rows[0]
    what = (f"ours, {r.get('algo', 'ppo')} / {r['seating']} / `{r['network']}` / {r['conv']} conv / {r['precision']}, "
            f"{r['learners']} learner(s)")
    about = {"batch_sizes": f"{r['num_envs']} games x {r['rollout_len']} steps, {r['update_epochs']} epochs x "
                            f"{r['num_minibatches']} minibatches, one seed",
             "notes": f"the check's `{name}` part"}
    if timed is None:
        return [({**TRAIN_EMPTY, "what": what, "status": _not_timed(part, r.get("compile_s")),
                  "planned_mib": mib(r.get("planned_bytes"))}, {**about, "repeats": None})]
    peer = _peer_timed(report)
    return [({**TRAIN_EMPTY, "what": what, "env_steps_per_s": round(r["env_steps_per_s"]),
              "agent_steps_per_s": round(r["agent_steps_per_s"]), "s_per_update": round(r["seconds_per_update"], 3),
              "rollout_s": round(r["rollout_s"], 3), "learning_s": round(r["learning_s"], 3),
              "compile_update_s": round(r["compile_s"], 1), "compile_rollout_s": round(r["rollout_compile_s"], 1),
              "peak_mib": mib(r["peak_memory_bytes"]), "planned_mib": mib(r.get("planned_bytes")),
              "vs_socialjax": None if peer is None else round(r["env_steps_per_s"] / peer["env_steps_per_s"], 2)},
             {**about, "repeats": f"median of {len(r['update_times_s'])} timed updates after one untimed call; the "
                                  "rollout compiled and timed alone"})]


def aggregate_rows(name: str, part: dict, report: dict) -> Made:
    rows = part["rows"]
    if name != "aggregate-peer":
        first = rows[0]
        about = {"batch_sizes": [r["seeds"] for r in rows],
                 "repeats": f"the init and one update compiled, one untimed update, "
                            f"{' or '.join(map(str, sorted({len(r['times_s']) for r in rows})))} timed; median",
                 "notes": f"the check's `{name}` part (`socialjax.bench.train_sweep`): {first['num_envs']} games x "
                          f"{first['rollout_len']} steps, {first['update_epochs']} epochs x "
                          f"{first['num_minibatches']} minibatches a run"}
        return [(aggregate_values(r), about) for r in rows]
    seeds = list(dict.fromkeys(r["seeds"] for r in rows))
    first = rows[0]
    about = {"batch_sizes": seeds, "repeats": None,
             "notes": f"SocialJax's own training loop with S seeds vmapped in one call, as its sweep code does (the "
                      f"check's `aggregate-peer` part): {first['num_envs']} games x {first['rollout_len']} steps, "
                      f"{first['update_epochs']} epochs x {first['num_minibatches']} minibatches a run"}
    made = []
    for s in seeds:
        mine = [r for r in rows if r["seeds"] == s]
        timed = next((r for r in mine if "median_s" in r), None)
        oom = next((r for r in mine if r.get("stage") == "out of memory"), None)
        values = {"what": f"{PEER}, {first['reward']} reward", "seeds": s, "computed": "vmapped",
                  "s_per_update": None, "env_steps_per_s": None, "agent_steps_per_s": None, "status": None,
                  "compile_init_s": None, "compile_update_s": None, "compile_text": None, "planned_mib": None,
                  "peak_mib": None}
        if timed is not None:
            values.update(s_per_update=round(timed["seconds_per_update"], 3),
                          env_steps_per_s=round(timed["env_steps_per_s"]),
                          agent_steps_per_s=round(timed["agent_steps_per_s"]),
                          compile_text=f"{timed['compile_s']:.1f} (the whole program)",
                          peak_mib=mib(timed["peak_memory_bytes"]))
            about_s = {**about, "repeats": f"median of {len(timed['times_s'])} timed call(s) after one untimed, "
                                           f"{timed['num_updates']} update(s) a call"}
        else:
            compiled = next((r["compile_s"] for r in mine if r.get("stage") == "compiled"), None)
            values.update(status=f"out of memory: {oom['error']}" if oom else _not_timed(part, compiled),
                          peak_mib=mib(oom.get("peak_memory_bytes")) if oom else None)
            about_s = about
        made.append((values, about_s))
    return made


def sweep_values(name: str, part: dict, report: dict) -> Made:
    made = []
    for r in part["rows"]:
        words = r["command"].split()
        preset = words[2] if len(words) > 2 else None
        seeds = int(words[words.index("--seeds") + 1]) if "--seeds" in words else None
        stages = r.get("compile_times") or {}
        updates = [t for k, ts in stages.items() if k not in ("init", "finish") for t in ts]
        stage_s = {k: round(sum(ts), 1) for k, ts in stages.items() if k in ("init", "finish")}
        note = (f"the check's `sweep` part: `{r['command']}` (exit code {r['exit_code']}): {r['wall_s']:.1f} s wall, "
                f"{r['run_call_s']:.1f} s in the run's call, {r['env_steps_per_s']:,.0f} env-steps/s after its "
                f"compile, {r['per_device']} runs per device, {mib(r.get('memory_bytes'))} MiB planned; conv as the "
                "preset sets it; one run, so no 4-seed ratio")
        made.append(({"preset": preset, "conv": r.get("conv"), "seeds": seeds,
                      "chunk": "all" if r["chunk"] is None else str(r["chunk"]),
                      "update_programs": max((len(ts) for ts in stages.values()), default=None),
                      "init_s": stage_s.get("init"), "update_s": round(sum(updates), 1) if updates else None,
                      "finish_s": stage_s.get("finish"), "compile_s": round(r["compile_s"], 1), "vs_4_seeds": None},
                     {"batch_sizes": [seeds], "repeats": "one run", "notes": note}))
    return made


def determinism_values(name: str, part: dict, report: dict) -> Made:
    made = []
    for r in part["rows"]:
        diff = r["max_abs_diff"]
        made.append(({"deterministic_ops": f"on (`{DETERMINISTIC_FLAG}`)" if r["deterministic_ops"] else "off",
                      "comparison": r["what"], "same_bits": "yes" if r["same_bits"] else "no",
                      "largest_difference": diff if math.isfinite(diff) else "integers differ"},
                     {"batch_sizes": f"{r['preset']}'s network, {r['seeds']} seeds, {r['updates']} update(s)",
                      "repeats": None, "notes": f"the check's `{name}` part"}))
    return made


VALUES: dict[str, Callable[[str, dict, dict], Made]] = {
    "env": env_values, "train": train_values, "aggregate": aggregate_rows, "sweep": sweep_values,
    "determinism": determinism_values}


# ---------------------------------------------------------------------------- provenance
def command_parts(command: str) -> set[str] | None:
    """The parts the report's command ran (``--parts`` or its ``--call``); ``None`` when
    the command cannot be read."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    flags = {}
    for i, w in enumerate(words):
        if w.startswith("--") and "=" in w:
            flags[w.split("=", 1)[0]] = w.split("=", 1)[1]
        elif w.startswith("--") and i + 1 < len(words):
            flags[w] = words[i + 1]
    if "--parts" in flags:
        parts = set(flags["--parts"].split(","))
    else:
        try:
            parts = set(CALLS[int(flags.get("--call", 1))][0])
        except (KeyError, ValueError):
            return None
    return parts | ({"determinism-flag"} if "determinism" in parts else set())


def provenance(report: dict, name: str, part: dict, about: dict, load: str, commit: str | None,
               notes: str | None) -> dict[str, Any]:
    own = part.get("provenance")  # the call that ran the part (reports since gpu_check kept it per part)
    m = (own or report).get("machine") or {}
    command = (own or report).get("command")
    ran = command_parts(command or "")
    earlier = own is None and ran is not None and name not in ran
    count = m.get("device_count")
    machine = ", ".join(x for x in (
        (f"{m['device']}" + (f" x {count}" if count and count > 1 else "")) if m.get("device") else None,
        f"{m['cpus']} CPUs" if m.get("cpus") else None, m.get("host")) if x) or None
    commit = commit or (None if earlier else m.get("commit"))
    if commit and str(commit).startswith("unknown"):
        commit = None
    said = [about.get("notes")]
    if part["status"] != "ok":
        said.append(f"the part {part['status']}" + (f" ({part['detail']})" if part.get("detail") else "")
                    + ": the rows it finished")
    if earlier:
        said.append("written by an earlier call into the same folder: the report keeps the last call's command, "
                    "date, commit and machine only (the machine here is the last call's)")
    said.append(notes)
    values = {"command": None if earlier else command, "machine": machine,
            "device": f"{m['platform']} ({count} device(s): {m.get('device')})" if m.get("platform") else None,
            "software": ", ".join(f"{k} {m[k.lower()]}" for k in ("Python", "jax", "jaxlib") if m.get(k.lower()))
            or None,
            "date": None if earlier or not m.get("date") else str(m["date"])[:10], "commit": commit,
            "batch_sizes": about.get("batch_sizes"), "repeats": about.get("repeats"), "load": load,
            "notes": "; ".join(s for s in said if s) or None}
    return {k: values[k] for k in PROVENANCE_KEYS}


# --------------------------------------------------------------------------------- the plan
def plan(report: dict, load: str, *, parts: list[str] | None = None, commit: str | None = None,
         notes: str | None = None, device: str | None = None, allow_tiny: bool = False) -> dict[str, Any]:
    """What recording ``report`` does: ``records`` ``[(part, family, record)]``,
    ``tables`` ``{(family, name): (spec, anchor)}`` to create, ``skipped`` ``[(part,
    why)]`` and ``duplicates`` (records already in their family). ``ValueError`` for a
    file that is not the check's report, a tiny report without ``allow_tiny``, or
    ``parts`` it does not hold."""
    if not isinstance(report, dict) or "parts" not in report or "machine" not in report:
        kind = "`socialjax bench`'s JSON (record it with scripts/record_bench.py)" if isinstance(report, dict) and (
            "results" in report or "training" in report) else "another file"
        raise ValueError(f"not the report of scripts/gpu_check.py (no 'parts' and 'machine'): {kind}")
    if not load.strip():
        raise ValueError("--load: say what else ran while it measured")
    tiny = "--tiny" in (report.get("command") or "").split()
    if tiny and not allow_tiny:
        raise ValueError("a --tiny report: toy sizes, numbers that measure nothing (--allow-tiny records it anyway, "
                         "to check this script)")
    names = list(report["parts"])
    if parts is not None:
        unknown = [p for p in parts if p not in report["parts"]]
        if unknown:
            raise ValueError(f"--parts: the report has no part {unknown}; its parts: {names}")
        names = [p for p in names if p in parts]
    tag, model = device_names(report["machine"], tiny, device)
    label = report["machine"].get("device") or tag
    out: dict[str, Any] = {"records": [], "tables": {}, "skipped": [], "duplicates": []}
    families: dict[str, dict] = {}
    by_table: dict[tuple[str, str], list[str]] = {}
    for name in names:
        kind = part_kind(name)
        if kind is not None and report["parts"][name].get("rows"):
            by_table.setdefault(tables_for(kind, tag, model, tiny)[:2], []).append(name)
    for name in names:
        part = report["parts"][name]
        kind = part_kind(name)
        if kind is None:
            out["skipped"].append((name, unmapped_reason(name)))
            continue
        if not part.get("rows"):
            out["skipped"].append((name, f"no rows (the part {part.get('status')}"
                                         + (f": {part['detail']}" if part.get("detail") else "") + ")"))
            continue
        family, table, prefix = tables_for(kind, tag, model, tiny)
        data = families.setdefault(family, load_family(family_path(family)))
        if table not in data["tables"]:
            if (family, table) not in out["tables"]:
                out["tables"][(family, table)] = new_table(data["tables"], kind, table, prefix, label,
                                                           by_table[(family, table)])
            spec = out["tables"][(family, table)][0]
        else:
            spec = data["tables"][table]
        for values, about in VALUES[kind](name, part, report):
            record = shaped(spec, table, values, provenance(report, name, part, about, load, commit, notes))
            if record in data["records"]:
                out["duplicates"].append((name, family, record))
            else:
                out["records"].append((name, family, record))
    return out


def create_table(family: str, name: str, spec: dict[str, Any], anchor: str) -> None:
    """Add table ``name`` to ``family``'s file and its markers to its document, after
    ``anchor``'s end marker (kept where markers for it are already there)."""
    path = family_path(family)
    data = load_family(path)
    data["tables"][name] = spec
    path.write_text(dump_family(data))
    document = render_tables.ROOT / spec["document"]
    text = document.read_text()
    if f"<!-- table:{name} start -->" in text:
        return
    end = END.format(name=anchor)
    at = text.index(end) + len(end)
    document.write_text(text[:at] + f"\n\n<!-- table:{name} start -->\n<!-- table:{name} end -->" + text[at:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("json", type=Path, help="the report scripts/gpu_check.py wrote (OUT/gpu_check.json)")
    parser.add_argument("--load", required=True, help="what else ran on the machine while it measured")
    parser.add_argument("--parts", default=None, help="comma-separated: only these parts' rows")
    parser.add_argument("--device", default=None, help="the device's model in table names (default: from its "
                        "kind, e.g. h200 for 'NVIDIA H200')")
    parser.add_argument("--commit", default=None, help="the commit measured (default: the report's)")
    parser.add_argument("--notes", default=None, help="a remark added to every record's notes")
    parser.add_argument("--allow-tiny", action="store_true", help="record a --tiny report (to check this script)")
    parser.add_argument("--dry-run", action="store_true", help="print the records and new tables, write nothing")
    args = parser.parse_args(argv)
    try:
        report = json.loads(args.json.read_text())
        done = plan(report, args.load, parts=args.parts.split(",") if args.parts else None, commit=args.commit,
                    notes=args.notes, device=args.device, allow_tiny=args.allow_tiny)
    except (OSError, ValueError, KeyError, TypeError) as err:
        parser.error(f"{args.json}: {err!s}" if not isinstance(err, KeyError) else f"{args.json}: no {err} in a row")
    verb = "would create" if args.dry_run else "created"
    for (family, name), (spec, anchor) in done["tables"].items():
        print(f"table {name}: {verb} in measurements/{family}.json (the columns of "
              f"{anchor if anchor != AGGREGATE_ANCHOR else 'train-aggregate-cpu, with what, peak MiB and status'}), "
              f"its markers after {anchor}'s in {spec['document']}", file=sys.stderr)
        if not args.dry_run:
            create_table(family, name, spec, anchor)
    counts: dict[tuple[str, str, str], int] = {}
    for name, family, record in done["records"]:
        counts[(name, family, record["table"])] = counts.get((name, family, record["table"]), 0) + 1
        if args.dry_run:
            print(json.dumps(record))
        else:
            add_record(family, record, render_documents=False)
    for (name, family, table), n in counts.items():
        print(f"{name}: {n} record(s) {'to' if args.dry_run else 'in'} measurements/{family}.json, table {table}",
              file=sys.stderr)
    for name, family, record in done["duplicates"]:
        print(f"{name}: already in measurements/{family}.json, table {record['table']}: not added again",
              file=sys.stderr)
    for name, why in done["skipped"]:
        print(f"{name}: not recorded: {why}", file=sys.stderr)
    if not done["records"]:
        print("nothing to record", file=sys.stderr)
        return 1
    if not args.dry_run:
        render()
        print(f"recorded {len(done['records'])} row(s); the documents rendered", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
