"""``make(name, **options)``: build a registered environment by name.

Options are split by name: those the environment's constructor accepts are static
choices (they may change array shapes and trigger a new compile); those naming a field
of its params dataclass set the default params (vmappable numbers). Anything else is an
error that lists what is valid. A bool option or field takes True/False and the strings
true/false, 1/0, yes/no in any case (``"false"`` from a command line is False), and
nothing else (:func:`socialjax.core.params.parse_bool`).
"""

from __future__ import annotations

import difflib
import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from socialjax.core.environment import Environment
from socialjax.core.params import parse_bool


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


def _static(parameter: inspect.Parameter, value: Any) -> Any:
    """A constructor argument annotated ``bool`` goes through :func:`parse_bool`
    (``"false"`` is False); others pass unchanged."""
    if parameter.annotation in (bool, "bool"):
        return parse_bool(parameter.name, value)
    return value


def unknown_name(kind: str, name, names) -> ValueError:
    """``ValueError`` for a ``name`` not among ``names`` (an environment, a preset, an
    experiment), with the closest name when one is close and the full list."""
    close = difflib.get_close_matches(str(name), list(names), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return ValueError(f"unknown {kind} {name!r}.{hint} {kind.capitalize()}s: {', '.join(names)}")
