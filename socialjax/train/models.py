"""Models: jobs that compute without socialjax's learners, run by the one runner::

    MODELS["punishment/sessions"].compute(settings, seeds=4, base_seed=0)  # {(row, quantity): (4,) or (4, X)}
    execute(JobSpec("model", "public_goods", {}, {"model": "punishment/sessions", **settings}, (0, 1, 2, 3)), ...)

Scripted populations, tabular learners, evolutionary dynamics and the other programs a
published experiment needs besides trained populations are each a :class:`Model`,
registered by name (:func:`register_model`, done by the module that defines it, e.g. an
entry of :mod:`socialjax.reproduce`). A model is a function of its settings, the number
of seeds and the base seed that returns named values per seed: ``{(row, quantity):
(S,)}`` (what a table shows: :meth:`Model.keys`) and ``{(row, quantity): (S, X)}``
sequences (what a figure draws: :meth:`Model.series`); one model run may fill several
rows of a table (e.g. the conditions it computes in one compiled call). Seed ``s`` of a
run is seed number ``s``, ``0 .. S - 1`` (the spec's seeds), drawn from the base seed as
the model states.

As a job (:data:`MODEL`, kind ``"model"``): the spec names the model in its config
(``{"model": NAME, **settings}``) and the game the model plays as its env (the model's
:attr:`Model.env`; the model makes the variants it needs itself, so a spec's
``env_options`` must be empty); settings the model does not take are an error naming
them, before anything is compiled. The run is one computation without segments: a first
Ctrl-C or SIGTERM stops it at once (nothing is lost but the run under way, which is
seconds to a few minutes). Its result folder (kind ``"model"``) holds ``values.npz``
(one array per value, in the order of ``config.json``'s ``keys`` and ``series``),
``config.json`` (the spec, the keys, the seconds) and ``summary.txt`` (each value's mean
and 95% interval over seeds: what ``socialjax results DIR`` prints; ``--csv`` gives
every value as a row, :mod:`socialjax.train.tables`); :func:`load_model_run` reads it
back. Listeners get the series as curves (one step per point of the sequence) and the
values as each seed's summary.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from socialjax.train import store
from socialjax.train.devices import wait
from socialjax.train.formats import CONFIG_FILE, SUMMARY_FILE, VALUES_FILE, read_json, read_npz
from socialjax.train.listeners import Listeners, RunSet
from socialjax.train.runner import JobKind, register_kind
from socialjax.train.spec import JobSpec
from socialjax.viz.plots import mean_ci95

Key = tuple[str, str]  # (row, quantity)


def _no_series(settings: Mapping[str, Any]) -> tuple[Key, ...]:
    return ()


@dataclasses.dataclass(frozen=True)
class Model:
    """A computation of named values per seed: ``compute(settings, seeds, base_seed)``
    returns ``{key: (seeds,) or (seeds, X)}`` with every key of ``keys(settings)`` (one
    value per seed) and of ``series(settings)`` (a sequence per seed); ``env`` is the
    registered game it plays (documentation and the spec's env); ``defaults`` are its
    settings when a spec leaves them out (none by default: every setting named)."""

    name: str
    env: str
    compute: Callable[..., Mapping[Key, Any]]
    keys: Callable[[Mapping[str, Any]], tuple[Key, ...]]
    series: Callable[[Mapping[str, Any]], tuple[Key, ...]] = _no_series

    def settings_of(self, spec: JobSpec) -> dict[str, Any]:
        """The settings of ``spec`` (its config without ``model``), checked: the spec's
        env is the model's, with no options, and every setting is one the model's
        ``compute`` takes (``ValueError`` naming what is wrong)."""
        if spec.env != self.env or spec.env_options:
            raise ValueError(f"the model {self.name} plays {self.env} as it sets it up itself: a spec of it names "
                             f"env {self.env!r} with no env_options, got {spec.env!r} with {dict(spec.env_options)}")
        settings = {k: v for k, v in spec.config.items() if k != "model"}
        takes = inspect.signature(self.compute).parameters
        unknown = sorted((set(settings) - set(takes)) | ({"seeds", "base_seed"} & set(settings)))
        missing = sorted(k for k, p in takes.items() if k not in ("seeds", "base_seed") and k not in settings
                         and p.default is inspect.Parameter.empty)
        if unknown or missing:
            raise ValueError(f"the model {self.name} takes the settings {sorted(set(takes) - {'seeds', 'base_seed'})}"
                             + (f"; not {unknown}" if unknown else "") + (f"; missing {missing}" if missing else ""))
        return settings


MODELS: dict[str, Model] = {}


def register_model(model: Model) -> Model:
    """Make ``model`` the one run by specs whose config names ``model.name``."""
    MODELS[model.name] = model
    return model


def model_of(spec: JobSpec) -> Model:
    name = spec.config.get("model")
    if name not in MODELS:
        raise ValueError(f"a model job names a registered model in its config's 'model', got {name!r} "
                         f"(registered: {sorted(MODELS)}; a model is registered by the module that defines it)")
    return MODELS[name]


def model_spec(name: str, settings: Mapping[str, Any], seeds: int, base_seed: int = 0,
               label: str | None = None) -> JobSpec:
    """The spec of a run of the model ``name`` with ``settings`` over seeds ``0 ..
    seeds - 1`` from ``base_seed``; ``label`` names it in lines and log folders (by
    default the model's name)."""
    model = MODELS[name]
    return JobSpec("model", model.env, {}, {"model": name, **settings}, tuple(range(seeds)), base_seed,
                   label or name)


@dataclasses.dataclass
class ModelRun:
    """A model run's result: its ``spec``, ``values`` (``{key: (S,) or (S, X)}``, float64),
    which of them are ``keys`` (one value per seed) and ``series`` (a sequence per seed),
    the ``seconds`` it took and the lines of the listeners that failed."""

    spec: JobSpec
    values: dict[Key, np.ndarray]
    keys: tuple[Key, ...]
    series: tuple[Key, ...]
    seconds: float
    listener_failures: list[str] = dataclasses.field(default_factory=list)


def compute(spec: JobSpec, *, progress: bool = False, label: str | None = None,
            trackers: Listeners | None = None, **engine) -> ModelRun:
    """Run the model of ``spec`` (the runner's ``train`` of :data:`MODEL`; the engine's
    other arguments, segments and checkpoints, do not apply to one computation). Checks
    the settings first; waits for the result so that a signal stops it at once; returns
    the values the model declares, as float64, after checking it returned each."""
    model = model_of(spec)
    settings = model.settings_of(spec)
    if spec.seeds != tuple(range(len(spec.seeds))):
        raise ValueError(f"a model run's seeds are 0 .. n-1, got {list(spec.seeds)}")
    keys, series = tuple(model.keys(settings)), tuple(model.series(settings))
    label = label or spec.label
    named = f"[{label}]" + (f" {model.name}:" if model.name != label else "")
    if progress:
        print(f"{named} {len(spec.seeds)} seeds, computing...", flush=True)
    start = time.perf_counter()
    out = dict(model.compute(**settings, seeds=len(spec.seeds), base_seed=spec.base_seed))
    wait(out)
    missing = set(keys + series) - set(out)
    if missing:
        raise ValueError(f"the model {model.name} did not return {sorted(missing)}")
    values = {k: np.asarray(out[k], np.float64) for k in keys + series}
    result = ModelRun(spec, values, keys, series, time.perf_counter() - start)
    if progress:
        print(f"{named} done in {result.seconds:.1f} s", flush=True)
    if trackers is not None:
        result.listener_failures = stream(result, trackers, label)
    return result


def stream(result: ModelRun, listeners: Listeners, label: str = "") -> list[str]:
    """Hand a model run to ``listeners``: opened with its seeds, each series as curves
    (one call per sequence length, its points as steps 1 .. X), the values as each
    seed's summary (names ``row/quantity``). Returns the lines of the listeners that
    failed."""
    failed = len(listeners.failures)
    lengths = sorted({result.values[k].shape[1] for k in result.series})
    listeners.open(RunSet(label or result.spec.label, {}, np.asarray(result.spec.seeds), max(lengths, default=1),
                          result.spec.to_json()))
    for length in lengths:
        listeners.log(0, {_name(k): result.values[k] for k in result.series if result.values[k].shape[1] == length})
    listeners.summary({_name(k): result.values[k] for k in result.keys})
    return listeners.failures[failed:]


def _name(key: Key) -> str:
    return f"{key[0]}/{key[1]}"


def write(result: ModelRun, spec: JobSpec, out: Path, overwrite: bool) -> str:
    """The result folder of a model run (see the module docstring); its summary text."""
    order = result.keys + result.series
    text = summary_text(result)

    def fill(folder: Path) -> None:
        np.savez(folder / VALUES_FILE, **{f"v{i}": result.values[k] for i, k in enumerate(order)})
        meta = {**spec.to_json(), "keys": [list(k) for k in result.keys], "series": [list(k) for k in result.series],
                "seconds": result.seconds}
        (folder / CONFIG_FILE).write_text(json.dumps(meta, indent=2) + "\n")
        (folder / SUMMARY_FILE).write_text(text + "\n")

    store.write_folder(out, fill, kind="model", overwrite=overwrite, info={"model": spec.config["model"]})
    return text


def summary_text(result: ModelRun) -> str:
    """A model run's values as a table: each one's mean and 95% interval over its seeds."""
    spec = result.spec
    lines = [f"model {spec.config['model']} ({spec.label}): {len(spec.seeds)} seeds from base seed "
             f"{spec.base_seed}, {result.seconds:.1f} s; {len(result.series)} series beside the values below"]
    width = max([8] + [len(f"{row} | {quantity}") for row, quantity in result.keys])
    lines.append(f"{'value':{width}s}  {'mean [95% CI over seeds]':>32s}")
    for row, quantity in result.keys:
        values = result.values[(row, quantity)]
        finite = values[np.isfinite(values)]
        if finite.size == 0:
            shown = "undefined"
        else:
            mean, low, high = mean_ci95(finite)
            shown = f"{mean:.4g} [{low:.4g}, {high:.4g}]"
        lines.append(f"{row + ' | ' + quantity:{width}s}  {shown:>32s}")
    return "\n".join(lines)


def load_model_run(path: str | Path) -> ModelRun:
    """A model run's result folder read back (checked against its manifest;
    :class:`~socialjax.train.store.ResultError` when it is not one or is damaged)."""
    folder = Path(path)
    store.verify(folder, kind="model")
    meta, arrays = read_json(folder / CONFIG_FILE), read_npz(folder / VALUES_FILE)
    keys = tuple(tuple(k) for k in meta["keys"])
    series = tuple(tuple(k) for k in meta["series"])
    values = {k: arrays[f"v{i}"] for i, k in enumerate(keys + series)}
    return ModelRun(JobSpec.from_json(meta), values, keys, series, float(meta["seconds"]))


MODEL = register_kind(JobKind(name="model", unit="model run", num_updates=lambda spec: 1, train=compute, write=write,
                              figure=None))
