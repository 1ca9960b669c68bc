"""What a reproduction is, as data: an :class:`Entry` (a published experiment: its
conditions at each scale, what is measured, the published values with their sources,
and the criterion that turns numbers into a verdict), its parts (:class:`Condition`,
:class:`Measure`, :class:`Analysis`, :class:`Reference`), the :class:`Reproduction` it
gives, and the rules that turn measured runs into values and verdicts
(:func:`measure_curve`, :func:`final_values`, :func:`interval`, :func:`separated`, the
``*_verdict`` helpers). :mod:`socialjax.reproduce.core` runs an entry;
:mod:`socialjax.reproduce.report` writes what it found.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jax
import numpy as np

from socialjax.reproduce.timings import Timings
from socialjax.train.models import MODELS, Model
from socialjax.viz.plots import mean_ci95

# The sizes an entry can run at: ``small``, a check that the pipeline runs (a minute or
# less on a 2-core CPU; what the fast test tier runs); ``cpu``, sized so that the published
# direction can emerge in at most 10 minutes on a 2-core CPU (the default of ``socialjax
# reproduce``); ``gpu``, at most 6 minutes on one H100-class GPU (gridworld entries);
# ``paper``, the published configuration. An entry declares the scales it has by its
# ``seeds`` (one count per scale).
SCALES = ("small", "cpu", "gpu", "paper")
DEFAULT_SCALE = "cpu"
VERDICTS = ("reproduced", "partly", "not reproduced")
KIND = "reproduction"
FINAL_SHARE = 0.2  # a run's value of a measure: its mean over the last (or first) 20% of updates
WINDOWS = ("end", "start", "change")
CONDITION_KINDS = ("population", "model")


@dataclasses.dataclass(frozen=True)
class Condition:
    """One arm of the experiment, per scale: a population trained on
    ``sj.make(env[scale], **env_options[scale])`` with ``TrainConfig(**config[scale])``
    (``kind="population"``), or a run of a registered model (``kind="model"``, made by
    :func:`model_condition`: ``config[scale]`` is ``{"model": NAME, **settings}``,
    :mod:`socialjax.train.models`), whose values fill rows of their own; run at the
    ``scales`` listed, by default every scale ``config`` has (an arm too costly for the
    CPU is given ``paper``, and perhaps ``gpu``, only)."""

    name: str
    env: Mapping[str, str]  # scale -> registered env name
    env_options: Mapping[str, Mapping[str, Any]]  # scale -> options
    config: Mapping[str, Mapping[str, Any]]  # scale -> TrainConfig fields, or a model's name and settings
    scales: tuple[str, ...] = ()
    kind: str = "population"

    def __post_init__(self):
        if not self.scales:
            object.__setattr__(self, "scales", tuple(s for s in SCALES if s in self.config))
        unknown = set(self.scales) - set(SCALES)
        if unknown:
            raise ValueError(f"{self.name}: unknown scales {sorted(unknown)}; the scales are {SCALES}")
        if self.kind not in CONDITION_KINDS:
            raise ValueError(f"{self.name}: kind must be one of {CONDITION_KINDS}, got {self.kind!r}")

    def model(self, scale: str) -> tuple[Model, dict[str, Any]]:
        """A model condition's model and its settings at ``scale``."""
        config = dict(self.config[scale])
        return MODELS[config.pop("model")], config


def model_condition(name: str, model: str, settings: Mapping[str, Mapping[str, Any]]) -> Condition:
    """A condition computed by the registered model ``model`` (registered before) with
    ``settings[scale]`` at each scale it has."""
    env = MODELS[model].env
    return Condition(name, env={s: env for s in settings}, env_options={s: {} for s in settings},
                     config={s: {"model": model, **dict(v)} for s, v in settings.items()}, kind="model")


@dataclasses.dataclass(frozen=True)
class Measure:
    """A quantity of a run: ``metric`` of the training metrics (``(U,)`` or ``(U, P)``,
    averaged over members ``members`` when given, or summed with ``total``), as a share
    of ``denominator`` (another metric, taken the same way; NaN in an update where it is
    0) when given, divided by ``normaliser(env)`` when given (e.g. the most an episode
    can hold, for a fraction); its value the mean over the last (``window="end"``) or
    the first (``"start"``) :data:`FINAL_SHARE` of updates, or the last minus the first
    (``"change"``)."""

    name: str
    metric: str
    label: str
    members: slice | None = None  # for (U, P) metrics: the members taken (default all)
    window: str = "end"
    normaliser: Callable[[Any], float] | None = None  # the condition's env -> the divisor
    denominator: str | None = None  # a metric: the measure is metric / denominator per update
    total: bool = False  # (U, P) metrics summed over the members instead of averaged

    def __post_init__(self):
        if self.window not in WINDOWS:
            raise ValueError(f"{self.name}: window must be one of {WINDOWS}, got {self.window!r}")


@dataclasses.dataclass(frozen=True)
class Analysis:
    """What an entry measures on the trained populations after training (e.g. playing
    learners of two conditions together). ``keys[scale]`` are the ``(row, quantity)``
    pairs it returns at that scale, declared so that references can be checked without
    running; ``compute(runs, scale, seeds, base_seed)`` gets ``{condition: (RunResult,
    env, TrainConfig)}`` and returns ``{key: (S,) values}``, its randomness drawn from
    the seed numbers ``base_seed .. base_seed + seeds - 1`` or from
    :func:`stream_key` (so ``--seed`` gives it a new seed set too). ``series[scale]`` are further keys
    whose values are ``(S, X)`` sequences (e.g. one value per generation): they go to
    :attr:`Reproduction.curves` for the figure, not to the table."""

    keys: Mapping[str, tuple[tuple[str, str], ...]]
    compute: Callable[[dict, str, int], dict[tuple[str, str], np.ndarray]]
    series: Mapping[str, tuple[tuple[str, str], ...]] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Reference:
    """A published value: ``value`` of ``measure`` in ``condition`` (``None`` for a
    qualitative finding stated in ``note``), its ``source`` (paper, section, figure or
    table) and ``how`` it was read (``"text"``, ``"table"``, ``"figure, approximate"``)."""

    condition: str
    measure: str
    value: float | None
    source: str
    how: str
    note: str = ""


@dataclasses.dataclass(frozen=True)
class Entry:
    """A published experiment. ``criterion(finals)`` gets ``{(condition, measure):
    (S,) final values}`` and returns ``(verdict, reason)`` with the verdict one of
    :data:`VERDICTS`; ``criterion_text`` states it for the reader. ``plot(rep, path)``,
    when given, draws the entry's figure in place of :func:`~socialjax.reproduce.report.plot_reproduction`."""

    name: str
    title: str
    citation: str
    conditions: tuple[Condition, ...]
    measures: tuple[Measure, ...]
    references: tuple[Reference, ...]
    criterion: Callable[[dict[tuple[str, str], np.ndarray]], tuple[str, str]]
    criterion_text: str
    seeds: Mapping[str, int] = dataclasses.field(default_factory=lambda: {"small": 2, "paper": 3})
    notes: str = ""
    analysis: Analysis | None = None
    plot: Callable[[Reproduction, Path], None] | None = None

    @property
    def scales(self) -> tuple[str, ...]:
        """The scales the entry runs at (those it has a seed count for), in
        :data:`SCALES` order."""
        return tuple(s for s in SCALES if s in self.seeds)

    def conditions_at(self, scale: str) -> tuple[Condition, ...]:
        return tuple(c for c in self.conditions if scale in c.scales)

    def trained_at(self, scale: str) -> tuple[Condition, ...]:
        """The conditions that train a population at ``scale`` (measured by :attr:`measures`)."""
        return tuple(c for c in self.conditions_at(scale) if c.kind == "population")

    def computed_at(self, scale: str) -> tuple[Condition, ...]:
        """The conditions that run a model at ``scale`` (their values are rows of their own)."""
        return tuple(c for c in self.conditions_at(scale) if c.kind == "model")

    def keys(self, scale: str) -> list[tuple[str, str]]:
        """Every ``(row, quantity)`` the entry reports at ``scale``: each trained
        condition's measures, then the models' values, then the analysis's keys."""
        return [(c.name, m.name) for c in self.trained_at(scale) for m in self.measures] + self.values_keys(scale)

    def values_keys(self, scale: str) -> list[tuple[str, str]]:
        """The keys of the values computed rather than measured over training: the
        models' and the analysis's."""
        keys = [k for c in self.computed_at(scale) for k in _model_keys(c, scale, "keys")]
        return keys + list(self.analysis.keys[scale] if self.analysis is not None else ())

    def series(self, scale: str) -> list[tuple[str, str]]:
        """The keys of the ``(S, X)`` sequences at ``scale`` (the models' and the analysis's)."""
        keys = [k for c in self.computed_at(scale) for k in _model_keys(c, scale, "series")]
        return keys + list(self.analysis.series.get(scale, ()) if self.analysis is not None else ())

    def condition(self, name: str) -> Condition:
        for c in self.conditions:
            if c.name == name:
                return c
        raise KeyError(name)


def _model_keys(cond: Condition, scale: str, which: str) -> tuple[tuple[str, str], ...]:
    model, settings = cond.model(scale)
    return tuple(getattr(model, which)(settings))


@dataclasses.dataclass
class Reproduction:
    """What :func:`reproduce` measured: ``finals[(condition, measure)]`` ``(S,)``,
    ``curves[(condition, measure)]`` ``(S, U)`` (and the analysis's ``series``, ``(S,
    X)``), ``steps[condition]`` ``(U,)`` env steps after each update, the verdict and its
    reason, the table rows, and where the wall time went."""

    entry: Entry
    scale: str
    seeds: int
    base_seed: int
    finals: dict[tuple[str, str], np.ndarray]
    curves: dict[tuple[str, str], np.ndarray]
    steps: dict[str, np.ndarray]
    verdict: str
    reason: str
    rows: list[dict[str, Any]]
    timings: Timings


# ------------------------------------------------------------------------------- seeding
def stream_key(stream: int, base_seed: int = 0) -> jax.Array:
    """The key of an analysis's random stream ``stream`` (a number fixed in the entry):
    ``key(stream)`` on the default seed set (``base_seed=0``, the one REPRODUCTIONS.md's
    rows were measured on), folded with ``base_seed`` on any other, so that
    ``--seed S`` draws a seed set disjoint from the default one."""
    key = jax.random.key(stream)
    return key if base_seed == 0 else jax.random.fold_in(key, base_seed)


# ------------------------------------------------------------------------------ measuring
def measure_curve(metrics: Mapping[str, np.ndarray], measure: Measure, env: Any = None) -> np.ndarray:
    """``(S, U)`` curve of ``measure`` from one condition's metrics (leading ``(G=1, S,
    U, ...)``) on ``env`` (the condition's, for the measure's normaliser)."""
    values = _over_members(metrics[measure.metric], measure)
    if measure.denominator is not None:
        whole = _over_members(metrics[measure.denominator], measure)
        values = np.where(whole > 0, values / np.where(whole > 0, whole, 1.0), np.nan)
    if measure.normaliser is not None:
        values = values / float(measure.normaliser(env))
    return values


def _over_members(metric: np.ndarray, measure: Measure) -> np.ndarray:
    """``(S, U)``: a metric ``(G=1, S, U[, P])`` averaged (or, ``total``, summed) over
    the measure's members."""
    values = np.asarray(metric, np.float64)[0]
    if values.ndim == 3:
        values = values[:, :, measure.members if measure.members is not None else slice(None)]
        values = values.sum(axis=2) if measure.total else np.nanmean(values, axis=2)
    return values


def final_values(curve: np.ndarray, window: str = "end") -> np.ndarray:
    """``(S,)``: each run's mean over the last (``window="end"``) or first (``"start"``)
    :data:`FINAL_SHARE` of updates, or the last minus the first (``"change"``); NaN
    updates, where no episode ended, skipped."""
    if window == "change":
        return final_values(curve, "end") - final_values(curve, "start")
    k = max(1, int(round(curve.shape[1] * FINAL_SHARE)))
    last = curve[:, -k:] if window == "end" else curve[:, :k]
    ok = np.isfinite(last)
    return np.where(ok.any(axis=1), np.where(ok, last, 0.0).sum(axis=1) / np.maximum(ok.sum(axis=1), 1), np.nan)


def interval(values: np.ndarray) -> tuple[float, float, float]:
    """Mean and 95% bootstrap interval over seeds (:func:`socialjax.viz.plots.mean_ci95`)."""
    values = np.asarray(values, np.float64)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return float("nan"), float("nan"), float("nan")
    mean, low, high = mean_ci95(values)
    return float(mean), float(low), float(high)


# ------------------------------------------------------------------------------- criteria
def separated(higher: np.ndarray, lower: np.ndarray) -> str:
    """``"clear"`` when the 95% intervals of the two sets of finals do not overlap with
    ``higher`` above, ``"means"`` when only the means are ordered, ``"no"`` otherwise."""
    hi, hi_low, _ = interval(higher)
    lo, _, lo_high = interval(lower)
    if not (np.isfinite(hi) and np.isfinite(lo)):
        return "no"
    if hi_low > lo_high:
        return "clear"
    return "means" if hi > lo else "no"


def ordered_verdict(finals, higher: tuple[str, str], lower: tuple[str, str], what: str) -> tuple[str, str]:
    """Verdict of "``higher`` exceeds ``lower``": reproduced when the intervals are
    separated, partly when only the means are ordered, not reproduced otherwise."""
    how = separated(finals[higher], finals[lower])
    a, b = interval(finals[higher])[0], interval(finals[lower])[0]
    i = 0 if higher[0] != lower[0] else 1  # name the conditions, or the quantities of one row
    text = f"{what}: {higher[i]} {a:.3g} vs {lower[i]} {b:.3g}"
    if how == "clear":
        return "reproduced", text + " (95% intervals over seeds separated)"
    if how == "means":
        return "partly", text + " (means in the expected order, intervals overlap)"
    return "not reproduced", text + " (not in the expected order)"


def sign_verdict(values: np.ndarray, what: str, positive: bool = True) -> tuple[str, str]:
    """Verdict of "``values`` (one per seed) are above zero" (below with ``positive=False``):
    reproduced when the 95% interval excludes zero on that side, partly when only the
    mean does, not reproduced otherwise."""
    mean, low, high = interval(values)
    sign = 1.0 if positive else -1.0
    text = f"{what}: {mean:.3g} [{low:.3g}, {high:.3g}]"
    if not np.isfinite(mean):
        return "not reproduced", text + " (undefined)"
    if sign * low > 0 and sign * high > 0:
        return "reproduced", text + " (95% interval excludes 0)"
    if sign * mean > 0:
        return "partly", text + " (mean on the expected side of 0, interval includes it)"
    return "not reproduced", text + " (mean on the wrong side of 0)"


def combined_verdict(parts: list[tuple[str, str]]) -> tuple[str, str]:
    """Several findings together: reproduced when all are, not reproduced when none is
    even partly, partly otherwise; the reasons joined."""
    verdicts = [v for v, _ in parts]
    if all(v == "reproduced" for v in verdicts):
        verdict = "reproduced"
    elif all(v == "not reproduced" for v in verdicts):
        verdict = "not reproduced"
    else:
        verdict = "partly"
    return verdict, "; ".join(reason for _, reason in parts)


# ------------------------------------------------------------------------------- running
