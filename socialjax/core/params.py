"""``EnvParams``: the vmappable numbers of an environment.

Every number that does not change an array shape lives in a params dataclass, so a
sweep over it is a ``vmap`` rather than a recompile. Fields are declared with
:func:`param`, which records the valid range so that bad values are rejected with a
clear error before anything is compiled.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np
from flax import struct


def param(default: Any, low: float | None = None, high: float | None = None, doc: str = ""):
    """Declare an ``EnvParams`` field with an optional closed range ``[low, high]``.

    Array defaults are stored through a factory (dataclasses forbid mutable defaults).
    """
    meta = {"bounds": (low, high), "doc": doc}
    if isinstance(default, (int, float, bool)):
        return dataclasses.field(default=default, metadata=meta)
    value = np.asarray(default)
    return dataclasses.field(default_factory=lambda: value.copy(), metadata=meta)


def is_concrete(tree: Any) -> bool:
    """True when no leaf of ``tree`` is a tracer (so its values can be inspected)."""
    return not any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(tree))


@struct.dataclass
class EnvParams:
    """Base class of every environment's params. Subclass with ``@struct.dataclass``."""

    def validate(self) -> "EnvParams":
        """Raise ``ValueError`` naming the field and value if any concrete field is out
        of its declared range (or NaN). Traced fields are skipped. Returns ``self``."""
        for f in dataclasses.fields(self):
            low, high = f.metadata.get("bounds", (None, None))
            value = getattr(self, f.name)
            if isinstance(value, jax.core.Tracer):
                continue
            arr = np.asarray(value, dtype=np.float64)
            if np.any(np.isnan(arr)):
                raise ValueError(f"{type(self).__name__}.{f.name} is NaN: {value!r}")
            if low is not None and np.any(arr < low):
                raise ValueError(
                    f"{type(self).__name__}.{f.name}={_short(value)} is below its minimum {low}"
                )
            if high is not None and np.any(arr > high):
                raise ValueError(
                    f"{type(self).__name__}.{f.name}={_short(value)} is above its maximum {high}"
                )
        self.check()
        return self

    def check(self) -> None:
        """Cross-field checks on concrete values; override in subclasses."""

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]


def _short(value: Any) -> str:
    arr = np.asarray(value)
    return repr(arr.item()) if arr.size == 1 else np.array2string(arr, threshold=8)


# -- static options (constructor arguments): checked once, at make ------------------
def check_int(name: str, value: Any, low: int) -> None:
    """Raise ``ValueError`` unless ``value`` is an int (not a bool) ``>= low``."""
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")


def check_choice(name: str, value: Any, choices: tuple) -> None:
    """Raise ``ValueError`` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


def check_bool(name: str, value: Any) -> None:
    """Raise ``ValueError`` unless ``value`` is a bool."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be a bool, got {value!r}")
