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
import jax.numpy as jnp
import numpy as np
from flax import struct


def param(default: Any, low: float | None = None, high: float | None = None, doc: str = ""):
    """Declare an ``EnvParams`` field with an optional closed range ``[low, high]``.

    A bool default makes a bool field: it takes the spellings of :func:`parse_bool`
    (or arrays of 0 and 1). Array defaults are stored through a factory (dataclasses
    forbid mutable defaults).
    """
    meta = {"bounds": (low, high), "doc": doc, "bool": isinstance(default, bool)}
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

    def validate(self, batched: bool = False) -> EnvParams:
        """Raise ``ValueError`` naming the field and value if any concrete field is not
        a finite number (NaN, infinite, a string), is out of its declared range, or is a
        bool field holding anything but a bool, 0 or 1. Traced fields are skipped.
        ``batched=True``: every field carries a leading sweep axis (params built with
        ``jax.vmap(lambda v: params.replace(...))(values)``, the README's sweep); the
        ranges are checked elementwise and the cross-field checks on each set.

        Returns the params, with bool fields given as Python values (``"false"``,
        ``0``, ...) replaced by bools (see :func:`parse_bool`)."""
        cls = type(self).__name__
        parsed = {}
        for f in dataclasses.fields(self):
            low, high = f.metadata.get("bounds", (None, None))
            value = getattr(self, f.name)
            if isinstance(value, jax.core.Tracer):
                continue
            name = f"{cls}.{f.name}"
            if f.metadata.get("bool"):
                if isinstance(value, (str, int, np.bool_, np.integer)) and not isinstance(value, bool):
                    parsed[f.name] = parse_bool(name, value)
                elif not isinstance(value, bool):
                    _check_bool_array(name, value)
                continue
            check_number(name, value, low, high)
        params = self.replace(**parsed) if parsed else self
        if not batched:
            params.check()
            return params
        sizes = {np.shape(leaf)[0] if np.ndim(leaf) else None for leaf in jax.tree_util.tree_leaves(params)}
        if len(sizes) != 1 or None in sizes:
            raise ValueError(f"{cls}.validate(batched=True) needs every field with the same leading sweep axis; "
                             f"got leading sizes {sorted(map(str, sizes))}")
        for i in range(sizes.pop()):
            jax.tree_util.tree_map(lambda leaf, i=i: leaf[i], params).check()
        return params

    def check(self) -> None:
        """Cross-field checks on concrete values; override in subclasses."""

    def field_rules(self) -> dict[str, tuple[jax.Array, str]]:
        """Each field's range check as arrays, traced or not: ``{name: (ok, rule)}``,
        ``ok`` elementwise (finite and within the declared bounds; a bool field 0 or 1)
        and ``rule`` the words of the check. What :meth:`invalid` and
        :func:`socialjax.core.checked.checked` compute inside a program."""
        rules = {}
        for f in dataclasses.fields(self):
            value = jnp.asarray(getattr(self, f.name))
            if f.metadata.get("bool"):
                rules[f.name] = ((value == 0) | (value == 1), "a bool (0 or 1)")
                continue
            low, high = f.metadata.get("bounds", (None, None))
            ok = jnp.isfinite(value) if jnp.issubdtype(value.dtype, jnp.inexact) else jnp.ones(value.shape, bool)
            if low is not None:
                ok &= value >= low
            if high is not None:
                ok &= value <= high
            rules[f.name] = (ok, f"finite and in [{'-inf' if low is None else low}, {'inf' if high is None else high}]")
        return rules

    def invalid(self) -> jax.Array:
        """``() bool``: some field is NaN, infinite, out of its declared range, or a bool
        field other than 0 or 1. Computed in the program, so it also sees params traced
        inside a ``jit`` or ``vmap`` of your own, which the host cannot check; every
        ``step`` reports it as ``info["invalid_params"]``."""
        oks = [jnp.all(ok) for ok, _ in self.field_rules().values()]
        return ~jnp.all(jnp.stack(oks)) if oks else jnp.zeros((), bool)

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]


def check_number(name: str, value: Any, low: float | None = None, high: float | None = None) -> None:
    """Raise ``ValueError`` naming ``name`` and the value unless ``value`` (a number or
    an array of numbers) is finite and within ``[low, high]`` (``None``: unbounded). A
    traced value is skipped. The one range check of env params, hyperparameters
    (:mod:`socialjax.agents.hparams`) and reward-shaping arguments."""
    if not is_concrete(value):
        return
    arr = _numbers(name, value)
    if np.any(np.isnan(arr)):
        raise ValueError(f"{name} is NaN: {_short(value)}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}={_short(value)} is not finite")
    if low is not None and np.any(arr < low):
        raise ValueError(f"{name}={_short(value)} is below its minimum {low}")
    if high is not None and np.any(arr > high):
        raise ValueError(f"{name}={_short(value)} is above its maximum {high}")


def _short(value: Any) -> str:
    """``value`` for an error message, on one line (an array of any shape included)."""
    arr = np.asarray(value)
    if arr.size == 1:
        return repr(arr.item())
    if arr.ndim == 1 and arr.size <= 8 and arr.dtype.kind in "biuf":
        return "[" + ", ".join(str(x) for x in arr) + "]"  # numpy scalars print at their own precision
    return " ".join(np.array2string(arr, threshold=8).split())


def _numbers(name: str, value: Any) -> np.ndarray:
    """``value`` as a float64 array; ``ValueError`` for anything that is not a real
    number or an array of them (a string, None, a bool where a number is meant, a
    complex number). A Python int too large for numpy becomes its float (so that the
    range and storage checks name it)."""
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return np.asarray(float(value))
        except OverflowError:
            return np.asarray(np.inf if value > 0 else -np.inf)
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):  # a ragged list
        arr = None
    if arr is not None and arr.dtype.kind in "iuf":
        return arr.astype(np.float64)
    raise ValueError(f"{name} must be a number or an array of numbers, got {brief(value)}")


def brief(value: Any) -> str:
    """``repr(value)`` for an error message: on one line (an array's rows joined),
    cut to 80 characters."""
    text = " ".join(repr(value).split())
    return text if len(text) <= 80 else text[:77] + "..."


def _check_bool_array(name: str, value: Any) -> None:
    arr = np.asarray(value)
    if arr.dtype.kind not in "biu" or not np.all((arr == 0) | (arr == 1)):
        raise ValueError(f"{name} must be a bool ({BOOL_SPELLINGS}) or an array of bools, got {_short(value)}")


# -- static options (constructor arguments): checked once, at make ------------------
_TRUE = ("true", "1", "yes")
_FALSE = ("false", "0", "no")
BOOL_SPELLINGS = "True/False, or the strings true/false, 1/0, yes/no in any case, or the ints 1/0"


def parse_bool(name: str, value: Any) -> bool:
    """``value`` as a bool: a bool, the ints 0 and 1, or one of the strings
    true/false, 1/0, yes/no in any case; anything else is a ``ValueError`` naming
    ``name`` and the accepted spellings. The one parser of every bool option (``sj.make``,
    bool params fields, ``TrainConfig``, the command line)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = value.lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    raise ValueError(f"{name} must be a bool ({BOOL_SPELLINGS}), got {brief(value)}")


def check_int(name: str, value: Any, low: int) -> None:
    """Raise ``ValueError`` unless ``value`` is an int (not a bool) ``>= low``."""
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {brief(value)}")


def check_choice(name: str, value: Any, choices: tuple) -> None:
    """Raise ``ValueError`` unless ``value`` is one of ``choices``."""
    if isinstance(value, (np.ndarray, jax.Array)) or value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {brief(value)}")


def check_bool(name: str, value: Any) -> bool:
    """``parse_bool(name, value)``: the bool, or a ``ValueError`` naming ``name``."""
    return parse_bool(name, value)
