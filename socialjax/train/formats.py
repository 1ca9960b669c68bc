"""The files of a population run's results folder, and of an unfinished run's
checkpoint, as written by :mod:`socialjax.train.results`: their names, the run
description (``config.json`` / ``resume/run.json``: :func:`run_meta`) and the readers
that turn a damaged file into a :class:`~socialjax.train.store.ResultError` naming it.
:mod:`socialjax.train.results` and :mod:`socialjax.train.tables` both read through
these.

Format version (:data:`FORMAT_VERSION`, 2). A finished run (``OUT/checkpoint.msgpack``)
and an unfinished one (``OUT/resume/checkpoint.msgpack``) store their state in one
format: a msgpack map ``{"format_version": 2, "state": {name: array}}`` (an unfinished
run adds ``"metrics": {name: array}``), written with
``flax.serialization.msgpack_serialize`` (no pickle; every array's dtype, shape and
bytes as they were). Each array of the state is stored under its path in the state's
pytree (:func:`state_name`: ``learners/params/params/Dense_0/kernel``; a random key as
its key data, ``.../key/__key_data__``), and is read back by that name, so adding,
renaming or reordering a field of a state class gives a message naming the arrays that
differ, never a silent mix. The run description (``config.json`` of a result,
``resume/run.json`` of a checkpoint) carries ``format_version`` too. Folders written
before version 2 (the state as numbered leaves ``state/00000 ...`` in
``resume/state.npz``, or a ``config.json`` of version 1) are refused with one line
naming both versions (:func:`check_version`).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import flax.serialization
import jax
import numpy as np

from socialjax.core.registry import make
from socialjax.train import store
from socialjax.train.config import TrainConfig
from socialjax.train.devices import as_key_data
from socialjax.train.spec import JobSpec, json_default  # noqa: F401 (json_default re-exported)

METRICS_FILE = "metrics.npz"
CONFIG_FILE = "config.json"
CHECKPOINT_FILE = "checkpoint.msgpack"
CURVES_FILE = "curves.png"
SUMMARY_FILE = "summary.txt"
VALUES_FILE = "values.npz"  # a model run's values (socialjax.train.models)
OUTPUT_FILES = (METRICS_FILE, CONFIG_FILE, CHECKPOINT_FILE, CURVES_FILE, SUMMARY_FILE, store.MANIFEST)
FORMAT_VERSION = 2  # 2: states stored by path name, one format for results and checkpoints (1: leaf order)
KIND = "population"
STATE_FILE = CHECKPOINT_FILE  # an unfinished run's checkpoint: resume/checkpoint.msgpack and resume/run.json
RUN_FILE = "run.json"


def population_spec(config: TrainConfig, env_name: str, env_options: dict, seeds, base_seed: int = 0,
                    preset: str | None = None) -> JobSpec:
    """The :class:`~socialjax.train.spec.JobSpec` of a population run."""
    return JobSpec(KIND, env_name, dict(env_options), config_to_dict(config), tuple(int(s) for s in seeds),
                   int(base_seed), preset)


def run_meta(spec: JobSpec) -> dict:
    """What rebuilds a run, ``config.json`` and an unfinished run's ``resume/run.json``:
    the format version and the job's spec (:meth:`~socialjax.train.spec.JobSpec.to_json`),
    with a population's swept hyperparameters (``sweep``)."""
    meta = {"format_version": FORMAT_VERSION, **spec.to_json()}
    if spec.kind == KIND:
        meta["sweep"] = sorted(config_from_dict(dict(spec.config)).sweep_axes())
    return meta


def read_spec(where: Path, meta: dict) -> JobSpec:
    """The spec of a run description read from ``where``; a
    :class:`~socialjax.train.store.ResultError` naming it when it is not one."""
    try:
        return JobSpec.from_json(meta)
    except (ValueError, TypeError) as err:
        raise store.ResultError(f"{where} does not describe a run: {err}") from None


def config_to_dict(config: TrainConfig) -> dict[str, Any]:
    """The config's fields as JSON-ready values (tuples and arrays become lists)."""
    return {f.name: _plain(getattr(config, f.name)) for f in dataclasses.fields(config)}


def config_from_dict(fields: dict[str, Any]) -> TrainConfig:
    """Inverse of :func:`config_to_dict` (lists become tuples)."""
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(fields) - known)
    if unknown:
        raise ValueError(f"the saved config has fields this version of TrainConfig does not know: {unknown}")
    return TrainConfig(**{k: _tuples(v) for k, v in fields.items()})


def _plain(v):
    if isinstance(v, (tuple, list)):
        return [_plain(x) for x in v]
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    return v


def _tuples(v):
    return tuple(_tuples(x) for x in v) if isinstance(v, list) else v


def read_json(path: Path) -> dict:
    """A run description (a JSON object)."""
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError, UnicodeDecodeError) as err:
        raise store.ResultError(f"{path} is not readable JSON: {err}") from None
    if not isinstance(meta, dict):
        raise store.ResultError(f"{path} is not a socialjax run description")
    return meta


def check_version(where: Path, meta: dict, what: str) -> None:
    """Refuse a run description (``meta``, of the folder ``where``: a ``what``,
    ``result`` or ``checkpoint``) written in another format version than
    :data:`FORMAT_VERSION`: one line naming both (no ``format_version``: version 1)."""
    version = meta.get("format_version", 1)
    if version != FORMAT_VERSION:
        raise store.ResultError(f"{where} was written by socialjax {what} format {version}; this version reads "
                                f"format {FORMAT_VERSION}: rerun it or use the socialjax version that wrote it")


def state_name(path) -> str:
    """The name of one array of a state: its pytree path (a
    ``jax.tree_util.tree_flatten_with_path`` key path) joined with ``/``:
    ``learners/params/params/Dense_0/kernel``, ``learners/opt_state/mu/...``."""
    parts = []
    for entry in path:
        if isinstance(entry, jax.tree_util.DictKey):
            parts.append(str(entry.key))
        elif isinstance(entry, jax.tree_util.GetAttrKey):
            parts.append(entry.name)
        elif isinstance(entry, jax.tree_util.SequenceKey):
            parts.append(str(entry.idx))
        elif isinstance(entry, jax.tree_util.FlattenedIndexKey):
            parts.append(str(entry.key))
        else:
            parts.append(str(entry).strip(".[]'\""))
    return "/".join(parts)


def state_arrays(tree) -> dict[str, np.ndarray]:
    """Every array of ``tree`` by :func:`state_name`, random keys as their key data."""
    named: dict[str, np.ndarray] = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(jax.tree_util.tree_map(as_key_data, tree))[0]:
        name = state_name(path)
        if name in named:
            raise ValueError(f"two arrays of the state have the name {name!r}")
        named[name] = np.asarray(leaf)
    return named


def state_bytes(state, metrics: dict | None = None) -> bytes:
    """The checkpoint file's bytes: ``state`` (and ``metrics``) by name, with the format version."""
    payload: dict[str, Any] = {"format_version": FORMAT_VERSION, "state": state_arrays(state)}
    if metrics is not None:
        payload["metrics"] = {str(k): np.asarray(v) for k, v in metrics.items()}
    return flax.serialization.msgpack_serialize(payload, in_place=True)


def read_state(path: Path, what: str) -> dict:
    """A checkpoint file written by :func:`state_bytes`: ``{"state": {name: array},
    "metrics": {name: array}}`` (``metrics`` empty for a finished run's).  A damaged
    file, or one of another format version, is a :class:`~socialjax.train.store.ResultError`
    naming it (``what`` says what the file should hold)."""
    try:
        raw = flax.serialization.msgpack_restore(path.read_bytes())
    except Exception as err:  # msgpack raises several types for damaged bytes
        raise store.ResultError(f"{path} does not hold {what}: {type(err).__name__}: {err}") from None
    if isinstance(raw, dict) and raw.get("format_version", 1) != FORMAT_VERSION:  # format 1: the bare state dict
        raise store.ResultError(f"{path} was written by socialjax checkpoint format {raw.get('format_version', 1)}; "
                                f"this version reads format {FORMAT_VERSION}: rerun it or use the socialjax "
                                "version that wrote it")
    if not isinstance(raw, dict) or not isinstance(raw.get("state"), dict) or \
            not isinstance(raw.get("metrics", {}), dict):
        raise store.ResultError(f"{path} does not hold {what} (not a socialjax state file of format "
                                f"{FORMAT_VERSION})")
    for part in ("state", "metrics"):
        for name, x in raw.get(part, {}).items():
            if not isinstance(x, np.ndarray):
                raise store.ResultError(f"{path} does not hold {what}: {part} {name!r} is not an array")
    return {"state": raw["state"], "metrics": raw.get("metrics", {})}


def matched_state(where: Path, named: dict[str, np.ndarray], template, lead: tuple[int, ...], what: str):
    """``named`` (arrays by :func:`state_name`) as the pytree of ``template`` (shapes
    and dtypes of one run's state, keys as key data), each array with the leading axes
    ``lead``: every name of the template present with its shape and dtype, no other;
    otherwise a :class:`~socialjax.train.store.ResultError` naming the arrays (``what``:
    the run the template is of)."""
    paths, treedef = jax.tree_util.tree_flatten_with_path(template)
    want = {state_name(p): w for p, w in paths}
    missing = [n for n in want if n not in named]
    extra = [n for n in named if n not in want]
    if missing or extra:
        parts = ([f"missing {_names(missing)}"] if missing else []) + \
                ([f"not in this version's state: {_names(extra)}"] if extra else [])
        raise store.ResultError(f"{where} does not match the state of {what}: {'; '.join(parts)} "
                                "(written by another version or job?)")
    for name, w in want.items():
        x = named[name]
        need = (*lead, *w.shape)
        if x.shape != need or x.dtype != w.dtype:
            raise store.ResultError(f"{where}: state array {name} is {x.dtype}{list(x.shape)}, {what} needs "
                                    f"{w.dtype}{list(need)}")
    return jax.tree_util.tree_unflatten(treedef, [named[n] for n in want])


def _names(names: list[str], most: int = 6) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def read_npz(path: Path) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` file."""
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except Exception as err:  # zipfile, numpy and OS errors for damaged files
        raise store.ResultError(f"{path} is not a readable .npz file: {type(err).__name__}: {err}") from None


def rebuild(where: Path, spec: JobSpec):
    """The config and environment of a population run's ``spec`` (read from ``where``)."""
    try:
        return config_from_dict(dict(spec.config)), make(spec.env, **spec.env_options)
    except (ValueError, TypeError) as err:
        raise store.ResultError(f"{where}: {err}") from None

