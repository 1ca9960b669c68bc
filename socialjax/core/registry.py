"""``make(name, **options)``: build a registered environment by name.

Options are split by name: those the environment's constructor accepts are static
choices (they may change array shapes and trigger a new compile); those naming a field
of its params dataclass set the default params (vmappable numbers). Anything else is an
error that lists what is valid. A bool option or field takes True/False and the strings
true/false, 1/0, yes/no in any case (``"false"`` from a command line is False), and
nothing else (:func:`socialjax.core.params.parse_bool`). A static option is checked
against its constructor's annotation before the environment is built: an ``int`` option
takes an int (numpy's too, not a bool nor a float) that fits int32, a ``str`` option a
string, a ``tuple`` option a tuple or list, and ``None`` only where the annotation
admits it; the environment checks the value itself (its range, its choices).
"""

from __future__ import annotations

import difflib
import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from socialjax.core.environment import Environment
from socialjax.core.params import brief, parse_bool


@dataclass(frozen=True)
class _Entry:
    name: str
    target: str  # "module:attribute", imported lazily
    defaults: tuple[tuple[str, Any], ...]
    description: str


_REGISTRY: dict[str, _Entry] = {}


def register(name: str, target: str, description: str = "", **defaults: Any) -> None:
    """Register ``target`` ("package.module:Class") under ``name``. ``defaults`` are
    options applied before the user's (a preset)."""
    if name in _REGISTRY:
        raise ValueError(f"environment {name!r} is already registered")
    _REGISTRY[name] = _Entry(name, target, tuple(defaults.items()), description)


def registered_envs() -> list[str]:
    """Names accepted by :func:`make`, sorted."""
    return sorted(_REGISTRY)


def describe_envs() -> dict[str, str]:
    """``{name: one-line description}`` for every registered environment."""
    return {n: _REGISTRY[n].description for n in registered_envs()}


def is_registered(name: str) -> bool:
    """Whether ``name`` is a registered environment."""
    return name in _REGISTRY


def env_target(name: str) -> str:
    """The ``"module:attribute"`` registered as ``name`` (``KeyError`` if it is not)."""
    return _REGISTRY[name].target


def env_class(name: str) -> Callable[..., Environment]:
    """The environment class registered as ``name``, imported but not built
    (``KeyError`` if it is not registered)."""
    return _load(env_target(name))


def load_all() -> None:
    """Import the module of every registered environment (their import defines the
    games' cell codes and colours, e.g. for the colour legend)."""
    for entry in _REGISTRY.values():
        importlib.import_module(entry.target.split(":")[0])


def _load(target: str) -> Callable[..., Environment]:
    module, attr = target.split(":")
    return getattr(importlib.import_module(module), attr)


def make(name: str, **options: Any) -> Environment:
    """Build the environment registered as ``name``.

    >>> env = make("ipd", num_rounds=100, noise=0.05)   # static option, then a param
    """
    if not isinstance(name, str) or name not in _REGISTRY:
        close = difflib.get_close_matches(str(name), _REGISTRY, n=3)
        hint = f" Did you mean {close}?" if close else ""
        raise ValueError(
            f"unknown environment {name!r}.{hint} Registered: {registered_envs()}"
        )
    entry = _REGISTRY[name]
    cls = _load(entry.target)
    merged = dict(entry.defaults)
    merged.update(options)

    sig = inspect.signature(cls.__init__)
    static_names = [p for p in sig.parameters if p != "self"]
    param_names = cls.params_cls.field_names()
    static = {k: _static(sig.parameters[k], v) for k, v in merged.items() if k in static_names}
    dynamic = {k: v for k, v in merged.items() if k in param_names and k not in static}
    unknown = sorted(set(merged) - set(static) - set(dynamic))
    if unknown:
        raise ValueError(
            f"{name}: unknown option(s) {unknown}. Static options: {static_names}; "
            f"params: {param_names}"
        )
    env = cls(**static)
    env.name = name
    if dynamic:
        env = env.with_params(**dynamic)
    else:
        env.default_params  # validate the defaults eagerly
    return env


INT32_MAX = 2**31 - 1
# the types a static option's annotation may name, and how a value of each is accepted
_KINDS = {
    "int": ("an int", lambda v: isinstance(v, (int, np.integer))
            and not isinstance(v, (bool, np.bool_, np.timedelta64))),  # numpy's timedelta64 is an integer type
    "str": ("a string", lambda v: isinstance(v, str)),
    "tuple": ("a tuple or list", lambda v: isinstance(v, (tuple, list))),
}


def _static(parameter: inspect.Parameter, value: Any) -> Any:
    """A constructor argument checked against its annotation: ``bool`` goes through
    :func:`parse_bool` (``"false"`` is False); ``int``, ``str``, ``tuple`` and ``X | None``
    take a value of that type (an int that fits int32, the dtype the environment
    computes in; a list for a tuple), else a ``ValueError`` naming the option.
    Unannotated arguments and other annotations pass unchanged."""
    name, kinds = parameter.name, _annotation_kinds(parameter.annotation)
    if kinds is None:
        return value
    if value is None and "None" in kinds:
        return None
    if "bool" in kinds:
        return parse_bool(name, value)
    for kind in kinds:
        if kind != "None" and _KINDS[kind][1](value):
            if kind == "int":
                value = int(value)
                if abs(value) > INT32_MAX:
                    raise ValueError(f"{name}={value} does not fit int32 (at most {INT32_MAX} in magnitude)")
            return tuple(value) if kind == "tuple" else value
    wanted = " or ".join("None" if kind == "None" else _KINDS[kind][0] for kind in kinds)
    raise ValueError(f"{name} must be {wanted}, got {brief(value)}")


def _annotation_kinds(annotation: Any) -> tuple[str, ...] | None:
    """``"int | None"`` -> ``("int", "None")``; ``None`` for an annotation this module
    does not check (missing, or naming another type)."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", None)
    if not text:
        return None
    kinds = tuple(part.strip().split("[")[0] for part in text.split("|"))
    if not all(kind in _KINDS or kind in ("bool", "None") for kind in kinds):
        return None
    return kinds


def unknown_name(kind: str, name, names) -> ValueError:
    """``ValueError`` for a ``name`` not among ``names`` (an environment, a preset, an
    experiment), with the closest name when one is close and the full list."""
    close = difflib.get_close_matches(str(name), list(names), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return ValueError(f"unknown {kind} {name!r}.{hint} {kind.capitalize()}s: {', '.join(names)}")
