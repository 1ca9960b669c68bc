"""A results folder as one long table: a row per saved value.

    from socialjax.train.tables import to_frame, write_csv   # or from socialjax.train.results

    df = to_frame("results/ipd-ppo")            # pandas: pip install "socialjax[tables]"
    write_csv("results/ipd-ppo", "ipd-ppo.csv")  # the same rows, csv module and numpy only
    print(summary("results/ipd-ppo"))           # what `socialjax results DIR` prints

Population runs (``socialjax train PRESET``, :func:`~socialjax.train.results.save_run`)
give the columns ``grid_point``, one column per swept hyperparameter (named as it, its
value at the grid point; none without a sweep), ``seed`` (the seed number from
``seeds``, not its index), ``update`` (1-based), ``member``, ``metric`` and ``value``.
Every array of ``metrics.npz`` except ``seeds`` and ``grid/...`` has leading axes
``(G, S)``; its other axes are told apart by its name and ndim, and checked against
config.json and the arrays (``U = num_updates``, ``P = reward_rate.shape[3]`` members,
``L = loss.shape[3]`` learners, or ``P`` less the scripted members without ``loss``):

- the update axis is axis 2 of an array whose name does not start with ``eval/`` and
  that has one (``reward_rate`` ``(G, S, U, P)``, ``efficiency`` ``(G, S, U)``); its
  length must be ``U``. ``eval/...`` arrays, ``nan_update`` and ``nan_member``
  ``(G, S)`` have none: ``update`` is empty (``<NA>``);
- the member axis is the next axis, if any; its length must be ``P`` or ``L``
  (learners are members ``0..L-1``, so a learner index is a member index). Arrays
  without one (``efficiency``, ``halted``, ``nan_update``) leave ``member`` empty;
- further axes go into the metric name: ``eval/crossplay`` ``(G, S, L, L)`` gives
  ``member`` ``i`` (the learner in seat 0) and ``metric`` ``eval/crossplay[j]`` (the
  learner in every other seat).

Values are the saved numbers as floats (booleans 0/1); ``nan_update`` keeps its
0-based update index (-1: no non-finite loss).

Donor-evolution folders (``socialjax train donor-evolution``,
:func:`~socialjax.train.cultural_evolution.run_experiment`) give ``multiplier``,
``seed`` (the index), ``generation`` (1-based), ``metric`` and ``value``, one row per
entry of each ``(M, seeds, generations)`` array.

Model runs (:mod:`socialjax.train.models`, e.g. a reproduction's scripted or tabular
conditions) give ``row``, ``quantity``, ``seed`` (the index), ``step`` (1-based, the
point of a series; empty for a value, one per seed) and ``value``.

In :func:`to_frame`, ``grid_point``, ``seed`` and ``generation`` are ``int64``,
``update`` and ``member`` pandas' nullable ``Int64``; :func:`write_csv` writes the
missing ones as empty fields, floats with ``repr`` (they read back exactly) and
hyperparameters and multipliers, saved as float32, as their shortest decimal (``0.003``
rather than ``0.003000000026077032``), which is also their value in :func:`to_frame`.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from socialjax.train import store
from socialjax.train.formats import (
    CONFIG_FILE,
    METRICS_FILE,
    SUMMARY_FILE,
    VALUES_FILE,
    config_from_dict,
    read_json,
    read_npz,
)
from socialjax.train.reports import format_donor_summary, format_summary

POPULATION = "population"
DONOR_EVOLUTION = "donor-evolution"
MODEL = "model"
INSTALL_HINT = 'pip install "socialjax[tables]"'
NULLABLE = ("update", "member", "step")  # integer columns that are empty for arrays without that axis


def _read(path: str | os.PathLike) -> tuple[str, dict[str, Any], dict[str, np.ndarray]]:
    """``(kind, meta, arrays)`` of a results folder: ``kind`` is ``"population"`` (meta:
    config.json), ``"donor-evolution"`` (meta: ``{}``) or ``"model"`` (meta: config.json,
    arrays: values.npz); ``arrays``: every array of metrics.npz. The one place this
    module reads a folder."""
    path = Path(path)
    kind = store.verify(path).get("kind")
    if kind not in (POPULATION, DONOR_EVOLUTION, MODEL):
        raise store.ResultError(f"{path} holds a {kind} folder, not the results of a run")
    if kind == MODEL:
        return MODEL, read_json(path / CONFIG_FILE), read_npz(path / VALUES_FILE)
    arrays = read_npz(path / METRICS_FILE)
    if kind == DONOR_EVOLUTION:
        if "multipliers" not in arrays:
            raise store.ResultError(f"{path / METRICS_FILE} has no multipliers: not a donor-evolution result")
        return DONOR_EVOLUTION, {}, arrays
    meta = read_json(path / CONFIG_FILE)
    if not isinstance(meta.get("config"), dict) or "seeds" not in arrays or "reward_rate" not in arrays:
        raise store.ResultError(f"{path} is not a population result: {CONFIG_FILE} has no config or "
                                f"{METRICS_FILE} no seeds / reward_rate")
    return POPULATION, meta, arrays


def summary(path: str | os.PathLike) -> str:
    """The one-screen summary of a results folder: summary.txt of a population run
    (rebuilt from metrics.npz and config.json when it is missing) or of a model run, or the per-generation
    table of a donor-evolution run (:func:`~socialjax.train.reports.format_donor_summary`,
    without the wall time, which the folder does not keep)."""
    path = Path(path)
    kind, meta, arrays = _read(path)
    if kind == DONOR_EVOLUTION:
        return _donor_summary(path, arrays)
    if kind == MODEL:  # its summary.txt is in its manifest: verified present
        return (path / SUMMARY_FILE).read_text().rstrip("\n")
    if (path / SUMMARY_FILE).is_file():
        return (path / SUMMARY_FILE).read_text().rstrip("\n")
    metrics = {k: v for k, v in arrays.items() if k != "seeds" and not k.startswith("grid/")}
    grid = {k[len("grid/"):]: v for k, v in arrays.items() if k.startswith("grid/")}
    result = SimpleNamespace(config=config_from_dict(meta["config"]), metrics=metrics, grid=grid,
                             env_name=meta.get("env"), seconds=float(meta.get("seconds", 0.0)),
                             compile_seconds=float(meta.get("compile_seconds", 0.0)),
                             compile_times={k: tuple(v) for k, v in meta.get("compile_times", {}).items()},
                             per_device=meta.get("per_device"), chunk=meta.get("chunk"),
                             nan_runs=list(meta.get("nan_runs", [])))
    text = format_summary(result, env_name=meta.get("env"), env_options=meta.get("env_options"),
                                  preset=meta.get("preset"))
    return f"{text}\n(rebuilt from {path}/{{{METRICS_FILE}, {CONFIG_FILE}}}: no {SUMMARY_FILE})"


def _donor_summary(path: Path, arrays) -> str:
    arrays = dict(arrays)
    mults = arrays.pop("multipliers")
    for name in ("mean_final_resources", "mean_fraction_given"):
        if name not in arrays or arrays[name].ndim != 3 or arrays[name].shape[0] != len(mults):
            raise ValueError(f"{path}: metrics.npz has no ({len(mults)}, seeds, generations) array {name!r}")
    M, S, G = arrays["mean_final_resources"].shape
    text = format_donor_summary({"metrics": arrays, "multipliers": mults, "seconds": float("nan"),
                                 "out_dir": str(path)})
    lines = [line for line in text.splitlines() if line and "including compilation" not in line]
    return "\n".join([f"donor-evolution: {M} multiplier(s) x {S} seeds x {G} generations, from {path}", *lines])


def _short(values: np.ndarray) -> np.ndarray:
    """Float32 values as float64 at their shortest decimal (``float32(0.003)`` -> 0.003)."""
    return np.array([float(str(v)) for v in np.asarray(values).ravel()], np.float64)


def blocks(path: str | os.PathLike) -> tuple[list[str], Iterator[dict[str, np.ndarray | None]]]:
    """``(columns, blocks)``: the table's column names and its rows, one block per
    array, each a dict of equal-length column arrays (``None``: the column is empty for
    the whole block). :func:`to_frame` and :func:`write_csv` both read these."""
    kind, meta, arrays = _read(path)
    if kind == DONOR_EVOLUTION:
        return ["multiplier", "seed", "generation", "metric", "value"], _donor_blocks(Path(path), arrays)
    if kind == MODEL:
        return ["row", "quantity", "seed", "step", "value"], _model_blocks(Path(path), meta, arrays)
    sweep = list(meta.get("sweep", []))
    return ["grid_point", *sweep, "seed", "update", "member", "metric", "value"], \
        _population_blocks(Path(path), meta, arrays, sweep)


def _population_blocks(path: Path, meta, arrays, sweep) -> Iterator[dict]:
    arrays = dict(arrays)
    seeds = arrays.pop("seeds").astype(np.int64)
    grid = {k[len("grid/"):]: arrays.pop(k) for k in list(arrays) if k.startswith("grid/")}
    G, S = arrays["reward_rate"].shape[:2]
    U = int(meta["config"].get("num_updates", arrays["reward_rate"].shape[2]))
    P = arrays["reward_rate"].shape[3]
    L = arrays["loss"].shape[3] if "loss" in arrays else P - len(meta["config"].get("scripted", ()))
    missing = [n for n in sweep if n not in grid or grid[n].shape != (G,)]
    if seeds.shape != (S,) or missing:
        raise ValueError(f"{path}: metrics.npz does not match its {G} grid point(s) x {S} seed(s): "
                         f"seeds {seeds.shape}, swept hyperparameters without (G,) values {missing}")
    coords = {n: _short(grid[n]) for n in sweep}
    for name, a in arrays.items():
        has_u = not name.startswith("eval/") and a.ndim >= 3
        lead = 3 if has_u else 2
        has_m = a.ndim > lead
        bad = a.shape[:2] != (G, S) or (has_u and a.shape[2] != U) or (has_m and a.shape[lead] not in (P, L))
        if bad:
            raise ValueError(f"{path}: metrics.npz array {name!r} has shape {a.shape}; expected ({G}, {S}"
                             f"{', ' + str(U) if has_u else ''}{f', {P} or {L}' if has_m else ''}, ...) "
                             "(grid, seed[, update][, member], ...)")
        extra = a.shape[lead + 1:] if has_m else ()
        names = [name] if not extra else [f"{name}[{','.join(map(str, i))}]" for i in np.ndindex(*extra)]
        shape = (G, S, a.shape[2] if has_u else 1, a.shape[lead] if has_m else 1, len(names))
        g, s, u, m, x = np.indices(shape).reshape(len(shape), -1)
        block = {"grid_point": g.astype(np.int64)}
        block.update({n: coords[n][g] for n in sweep})
        block.update(seed=seeds[s], update=(u + 1).astype(np.int64) if has_u else None,
                     member=m.astype(np.int64) if has_m else None, metric=np.asarray(names, object)[x],
                     value=a.reshape(-1).astype(np.float64))
        yield block


def _donor_blocks(path: Path, arrays) -> Iterator[dict]:
    arrays = dict(arrays)
    mults = _short(arrays.pop("multipliers"))
    for name, a in arrays.items():
        if a.ndim != 3 or a.shape[0] != len(mults):
            raise ValueError(f"{path}: metrics.npz array {name!r} has shape {a.shape}; expected "
                             f"({len(mults)}, seeds, generations)")
        mi, s, gen = np.indices(a.shape).reshape(3, -1)
        yield {"multiplier": mults[mi], "seed": s.astype(np.int64), "generation": (gen + 1).astype(np.int64),
               "metric": np.full(mi.shape, name, object), "value": a.reshape(-1).astype(np.float64)}


def _model_blocks(path: Path, meta, arrays) -> Iterator[dict]:
    keys = [tuple(k) for k in meta.get("keys", []) + meta.get("series", [])]
    if sorted(arrays) != sorted(f"v{i}" for i in range(len(keys))):
        raise ValueError(f"{path}: {VALUES_FILE} does not hold one array per key and series of {CONFIG_FILE}")
    for i, (row, quantity) in enumerate(keys):
        a = np.asarray(arrays[f"v{i}"], np.float64)
        series = a.ndim == 2
        s, x = np.indices(a.shape if series else (*a.shape, 1)).reshape(2, -1)
        yield {"row": np.full(s.shape, row, object), "quantity": np.full(s.shape, quantity, object),
               "seed": s.astype(np.int64), "step": (x + 1).astype(np.int64) if series else None,
               "value": a.reshape(-1)}


def to_frame(path: str | os.PathLike):
    """The results folder ``path`` as a long pandas DataFrame (see the module docstring).
    Needs pandas (``pip install "socialjax[tables]"``)."""
    try:  # pandas is optional ("socialjax[tables]"): imported only when a DataFrame is asked for
        import pandas as pd
    except ImportError:
        raise ImportError(f"to_frame needs pandas: {INSTALL_HINT} (write_csv needs only numpy)") from None
    columns, parts = blocks(path)
    parts = list(parts)
    out = {}
    for c in columns:
        if c in NULLABLE:
            values = [np.zeros(len(p["value"]), np.int64) if p[c] is None else p[c] for p in parts]
            mask = [np.full(len(p["value"]), p[c] is None) for p in parts]
            out[c] = pd.arrays.IntegerArray(_cat(values, np.int64), _cat(mask, bool))
        elif c in ("metric", "row", "quantity"):
            out[c] = pd.Series(_cat([p[c] for p in parts], object), dtype=str)
        else:
            out[c] = _cat([p[c] for p in parts], None)
    return pd.DataFrame(out)


def _cat(arrays: list[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype or np.float64)


def write_csv(path: str | os.PathLike, out: str | os.PathLike) -> int:
    """Write the results folder ``path`` to the CSV file ``out``, the same rows and
    columns as :func:`to_frame` (empty fields where it has ``<NA>``), with the csv module;
    the file is replaced only once it is complete. Returns the number of rows."""
    columns, parts = blocks(path)
    out = Path(out)
    tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
    rows = 0
    try:
        with open(tmp, "w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(columns)
            for p in parts:
                cols = [p[c].tolist() if p[c] is not None else [""] * len(p["value"]) for c in columns]
                writer.writerows(zip(*cols))
                rows += len(p["value"])
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return rows
