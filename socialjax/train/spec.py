"""A run as one value: :class:`JobSpec`, what is saved, resumed, reloaded and reproduced.

    spec = JobSpec("population", "ipd", {"num_rounds": 10}, config_to_dict(config), seeds=(0, 1, 2))
    JobSpec.from_json(json.loads(json.dumps(spec.to_json()))) == spec      # True

A spec names the job's kind (:data:`JOB_KINDS`), the environment by its registered name
with its options (``sj.make(spec.env, **spec.env_options)``; a variant an experiment
needs is a registered name of its own), the kind's settings as JSON values (a
population: the :class:`~socialjax.train.TrainConfig` fields; donor evolution: the
:class:`~socialjax.train.cultural_evolution.DonorEvolutionConfig` fields and its
``multipliers``), the seeds and the base seed (each run's key is
``fold_in(key(base_seed), seed)``), and the preset it came from, if any. A result
folder's ``config.json`` and a checkpoint's ``resume/run.json`` hold it as their top-level
keys (``job``, ``env``, ``env_options``, ``config``, ``seeds``, ``base_seed``,
``preset``), beside bookkeeping of their own; :func:`JobSpec.from_json` reads it back
from either. Lists and tuples are one thing in a spec: settings are compared as the
JSON they are saved as (:meth:`JobSpec.same_settings`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

JOB_KINDS = ("population", "donor-evolution", "model")
SPEC_KEYS = ("job", "env", "env_options", "config", "seeds", "base_seed", "preset")


@dataclasses.dataclass(frozen=True)
class JobSpec:
    """One job: ``kind``, ``env`` and ``env_options``, ``config`` (the kind's settings,
    JSON values), ``seeds``, ``base_seed`` and ``preset`` (see the module docstring).
    Checked when made: a known kind, a name, options and settings that JSON can hold,
    distinct non-negative int seeds."""

    kind: str
    env: str
    env_options: Mapping[str, Any]
    config: Mapping[str, Any]
    seeds: tuple[int, ...]
    base_seed: int = 0
    preset: str | None = None

    def __post_init__(self):
        if not isinstance(self.kind, str) or self.kind not in JOB_KINDS:
            raise ValueError(f"a job's kind must be one of {JOB_KINDS}, got {_shown(self.kind)}")
        if not isinstance(self.env, str) or not self.env:
            raise ValueError(f"a job's env must be a registered environment's name, got {_shown(self.env)}")
        listed = (isinstance(self.seeds, Sequence) and not isinstance(self.seeds, (str, bytes))) \
            or (isinstance(self.seeds, np.ndarray) and self.seeds.ndim == 1)
        seeds = list(self.seeds) if listed else None
        if seeds is None or not seeds or not all(_is_int(s) and s >= 0 for s in seeds) \
                or len(set(int(s) for s in seeds)) != len(seeds):
            raise ValueError("a job's seeds must be distinct non-negative ints, at least one; "
                             f"got {_shown(self.seeds)}")
        if not _is_int(self.base_seed) or not 0 <= self.base_seed < 2**31:
            raise ValueError(f"a job's base_seed must be an int in [0, 2**31), got {_shown(self.base_seed)}")
        if self.preset is not None and not isinstance(self.preset, str):
            raise ValueError(f"a job's preset must be a name or None, got {_shown(self.preset)}")
        object.__setattr__(self, "seeds", tuple(int(s) for s in seeds))
        object.__setattr__(self, "base_seed", int(self.base_seed))
        object.__setattr__(self, "env_options", _tuples(_json("env_options", self.env_options)))
        object.__setattr__(self, "config", _tuples(_json("config", self.config)))

    def to_json(self) -> dict[str, Any]:
        """The spec as JSON values (lists for tuples), under :data:`SPEC_KEYS`."""
        return {"job": self.kind, "preset": self.preset, "env": self.env, "env_options": _lists(self.env_options),
                "config": _lists(self.config), "seeds": list(self.seeds), "base_seed": self.base_seed}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> JobSpec:
        """The spec of a run description (``config.json``, ``run.json`` or
        :meth:`to_json`'s dict); ``ValueError`` naming what is missing or wrong."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a job spec is a JSON object, got {type(data).__name__}")
        missing = [k for k in ("job", "env", "config", "seeds") if k not in data]
        if missing:
            raise ValueError(f"not a job spec: no {', '.join(missing)}")
        seeds = data["seeds"]
        return cls(data["job"], data["env"], {} if data.get("env_options") is None else data["env_options"],
                   data["config"], tuple(seeds) if isinstance(seeds, list) else seeds, data.get("base_seed", 0),
                   data.get("preset"))

    def replace(self, **changes: Any) -> JobSpec:
        return dataclasses.replace(self, **changes)

    def same_settings(self, other: JobSpec) -> bool:
        """Whether ``other`` describes the same runs (its JSON is this one's)."""
        return json.dumps(self.to_json(), sort_keys=True) == json.dumps(other.to_json(), sort_keys=True)

    @property
    def label(self) -> str:
        """What the job is called in lines and log folders: its preset, else its env."""
        return self.preset or self.env


def _shown(value: Any) -> str:
    """``repr(value)`` on one line, at most 80 characters (an error message's value)."""
    text = " ".join(repr(value).split())
    return text if len(text) <= 80 else text[:77] + "..."


def _is_int(x: Any) -> bool:
    """An int or a numpy integer, not a bool (nor a ``timedelta64``, which numpy counts
    among its integers)."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_, np.timedelta64))


def _json(what: str, value: Any) -> dict[str, Any]:
    """``value`` (a mapping) with numpy values as Python ones; ``ValueError`` naming the
    entry JSON cannot hold."""
    if not isinstance(value, Mapping):
        raise ValueError(f"a job's {what} must be a mapping of names to values, got {type(value).__name__}")
    out = {}
    for key, v in value.items():
        if not isinstance(key, str):
            raise ValueError(f"a job's {what} has a key that is not a name: {_shown(key)}")
        try:
            out[key] = json.loads(json.dumps(v, default=json_default, allow_nan=False))
        except (TypeError, ValueError) as err:
            raise ValueError(f"a job's {what}[{_shown(key)}] = {_shown(v)} cannot be saved as JSON ({err})") from None
    return out


def json_default(v):
    """``json.dumps(default=...)`` for numpy values and tuples."""
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, tuple):
        return list(v)
    raise TypeError(f"cannot write {type(v).__name__} {_shown(v)} to JSON")


def _tuples(v: Any) -> Any:
    """Lists as tuples, recursively (one spelling of a sequence in a spec)."""
    if isinstance(v, dict):
        return {k: _tuples(x) for k, x in v.items()}
    return tuple(_tuples(x) for x in v) if isinstance(v, (list, tuple)) else v


def _lists(v: Any) -> Any:
    if isinstance(v, Mapping):
        return {k: _lists(x) for k, x in v.items()}
    return [_lists(x) for x in v] if isinstance(v, (list, tuple)) else v
