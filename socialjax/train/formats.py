"""The files of a population run's results folder, and of an unfinished run's
checkpoint, as written by :mod:`socialjax.train.results`: their names, the run
description (``config.json`` / ``resume/run.json``: :func:`run_meta`) and the readers
that turn a damaged file into a :class:`~socialjax.train.store.ResultError` naming it.
:mod:`socialjax.train.results` and :mod:`socialjax.train.tables` both read through
these.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np

from socialjax.core.registry import make
from socialjax.train import store
from socialjax.train.config import TrainConfig

METRICS_FILE = "metrics.npz"
CONFIG_FILE = "config.json"
CHECKPOINT_FILE = "checkpoint.msgpack"
CURVES_FILE = "curves.png"
SUMMARY_FILE = "summary.txt"
OUTPUT_FILES = (METRICS_FILE, CONFIG_FILE, CHECKPOINT_FILE, CURVES_FILE, SUMMARY_FILE, store.MANIFEST)
FORMAT_VERSION = 1
KIND = "population"
STATE_FILE = "state.npz"  # an unfinished run's checkpoint: resume/state.npz and resume/run.json
RUN_FILE = "run.json"


def run_meta(config: TrainConfig, env_name: str, env_options: dict, preset: str | None, seeds, base_seed: int) -> dict:
    """What rebuilds a run: the environment, the config, the seeds (``config.json``, and
    an unfinished run's ``resume/run.json``)."""
    return {
        "format_version": FORMAT_VERSION,
        "job": KIND,
        "preset": preset,
        "env": env_name,
        "env_options": dict(env_options),
        "config": config_to_dict(config),
        "seeds": [int(s) for s in seeds],
        "base_seed": int(base_seed),
        "sweep": sorted(config.sweep_axes()),
    }


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


def json_default(v):
    """``json.dumps(default=...)`` for numpy values and tuples."""
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, tuple):
        return list(v)
    raise TypeError(f"cannot write {type(v).__name__} {v!r} to JSON")


def read_json(path: Path) -> dict:
    """A run description (a JSON object)."""
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError, UnicodeDecodeError) as err:
        raise store.ResultError(f"{path} is not readable JSON: {err}") from None
    if not isinstance(meta, dict):
        raise store.ResultError(f"{path} is not a socialjax run description")
    return meta


def read_npz(path: Path) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` file."""
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except Exception as err:  # zipfile, numpy and OS errors for damaged files
        raise store.ResultError(f"{path} is not a readable .npz file: {type(err).__name__}: {err}") from None


def saved_env_options(meta: dict) -> dict:
    """The environment's options of a run description (lists become tuples)."""
    return {k: _tuples(v) for k, v in meta.get("env_options", {}).items()}


def rebuild(where: Path, meta: dict):
    """The config and environment a run description names."""
    try:
        config = config_from_dict(meta["config"])
        env = make(meta["env"], **saved_env_options(meta))
    except KeyError as err:
        raise store.ResultError(f"{where} does not describe a run: no {err}") from None
    except (ValueError, TypeError) as err:
        raise store.ResultError(f"{where}: {err}") from None
    return config, env

