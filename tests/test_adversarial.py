"""The adversarial suite: generated input at and outside every declared range.

What is drawn for is read from the code, so that an option added later is drawn for
too: every registered environment (``sj.registered_envs()``) with every field of its
params dataclass and every argument of its constructor (the static options of
``sj.make``), every ``TrainConfig`` field (directly and as ``--set FIELD=VALUE``), and
every flag of every command of ``socialjax.cli.build_parser()``, every field of a
run's ``JobSpec`` (made directly and read back from JSON), and the listeners that
follow a run (members that fail in any call, with any exception). The values: the
declared bounds and just beyond them, zero, negatives, huge numbers (``1e39`` overflows
float32, ``2**31`` int32), NaN and infinities, other types (strings, ``None``, lists,
dicts, bytes, bools, complex numbers), other shapes and dtypes, empty and unicode
strings, and paths: relative, absolute, inside an existing result, a file where a
folder is expected.

Each input must either work, giving values that are finite, within the declared range
and equal to what was given, or fail fast: a ``ValueError``/``TypeError`` (on the
command line a usage error, status 2, or a failure of the operating system, status 1)
whose message is one line and names what is wrong, before anything is compiled. An
existing result is never changed, a refused output folder is never created, and no
hidden temporary is left behind.

The fast tier draws ``FAST_EXAMPLES`` inputs per property; the slow tier draws
``SLOW_FACTOR`` times as many and trains a few tiny jobs with drawn settings that
passed validation. The numbers are in docs/testing.md, "The adversarial suite".
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import hashlib
import importlib
import inspect
import io
import json
import os
import tempfile
import time
import warnings
from pathlib import Path

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import socialjax as sj
from socialjax import cli
from socialjax.core.environment import Environment
from socialjax.core.params import parse_bool
from socialjax.core.registry import env_class
from socialjax.reproduce import ENTRIES
from socialjax.train import compilation, make_train, store
from socialjax.train.config import TrainConfig
from socialjax.train.listeners import Listeners, RunSet
from socialjax.train.presets import PRESETS, get_preset
from socialjax.train.spec import JOB_KINDS, JobSpec
from socialjax.viz import video

# the modules whose work the CLI inputs stop at (socialjax.train.run is also a function's name)
run_module = importlib.import_module("socialjax.train.run")
evolution_module = importlib.import_module("socialjax.train.cultural_evolution")
bench_module = importlib.import_module("socialjax.bench")

# ------------------------------------------------------------------------ budgets
FAST_EXAMPLES = {
    "env_params": 600,
    "env_options": 500,
    "train_config": 500,
    "set_flag": 300,
    "cli_flags": 300,
    "job_spec": 300,
    "listeners": 150,
}
SLOW_FACTOR = 10  # the slow tier draws ten times as many inputs per property
END_TO_END_EXAMPLES = 8  # tiny training jobs with drawn settings (slow tier)
SECONDS_PER_INPUT = 5.0  # failing fast: no input may take longer than this to be accepted or refused
COMMON = dict(deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])
TIERS = [pytest.param(1, id="fast"), pytest.param(SLOW_FACTOR, id="slow", marks=pytest.mark.slow)]

# -------------------------------------------------------------- what is drawn for
ENV_NAMES = tuple(sj.registered_envs())


def constructor_arguments(name: str) -> list[inspect.Parameter]:
    """The static options of environment ``name``: its constructor's arguments, as
    ``sj.make`` reads them."""
    parameters = inspect.signature(env_class(name).__init__).parameters.values()
    return [p for p in parameters if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


PARAM_FIELDS = tuple((name, f) for name in ENV_NAMES for f in dataclasses.fields(env_class(name).params_cls))
STATIC_OPTIONS = tuple((name, p) for name in ENV_NAMES for p in constructor_arguments(name))
CONFIG_FIELDS = tuple(dataclasses.fields(TrainConfig))
PARSER = cli.build_parser()
COMMAND_PARSERS = {name: sub for action in PARSER._actions if isinstance(action, argparse._SubParsersAction)
                   for name, sub in action.choices.items()}
CLI_FLAGS = tuple((command, action) for command, sub in COMMAND_PARSERS.items() for action in sub._actions
                  if not isinstance(action, argparse._HelpAction))

# Each command's arguments that reach its work when nothing else is given: the flag under
# test is added to these (or replaces the positional it is). RESULT is a trained result.
BASE_ARGV = {
    "envs": [],
    "train": ["ipd-ppo", "--quiet"],
    "evaluate": ["RESULT"],
    "render": ["--env", "gathering", "--out", "video.gif"],
    "results": ["RESULT"],
    "reproduce": [next(iter(ENTRIES)), "--quiet"],
    "cache": [],
    "bench": [],
}

# ------------------------------------------------------------------------- values
NAN, INF = float("nan"), float("inf")
INT32_MAX = 2**31 - 1
EDGE_NUMBERS = (0, -0.0, 1, -1, 2, 3, 0.5, -0.5, 2.5, 3.0, 1e-300, -1e-300, 1e-7, 3.4028235e38, 1e39, -1e39, 1e308,
                INT32_MAX, INT32_MAX + 1, -INT32_MAX - 2, 2**53 + 1, 2**63, -(2**63) - 1, 10**30, 10**400,
                NAN, INF, -INF)
WRONG_TYPES = ("", " ", "1", "0.5", "nan", "true", "é☃ ünïcødé", "../x", None, [], (), {}, {"a": 1}, {1, 2}, b"1",
               complex(1, 1), object(), [1, 2], [[1, 2], [3]], ["a", "b"], np.array([]), np.zeros((2, 3)),
               np.array(["a"]), np.array([1.0], dtype=object), np.array(1 + 1j), np.datetime64("2026-01-01"),
               np.timedelta64(3, "s"), np.float16(0.5), np.int8(3), np.uint64(2**63), np.bool_(True), True, False,
               NAN, INF, 10**30, -1)
BOOL_SPELLINGS = (True, False, 0, 1, "true", "FALSE", "Yes", "no", "1", "0", np.bool_(False), np.int64(1))
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs")), max_size=24)  # no control characters:
# a newline in a path or value is printed as it is (test_a_newline_in_an_argument_stays_on_one_line)


def near(bound) -> list:
    """``bound`` and the numbers just inside and outside it."""
    if bound is None:
        return []
    out = [bound, float(np.nextafter(bound, -INF)), float(np.nextafter(bound, INF)), bound - 1, bound + 1,
           bound - 0.5, bound + 0.5]
    if float(bound).is_integer():
        out += [int(bound), int(bound) - 1, int(bound) + 1]
    return out


def numbers(low=None, high=None) -> st.SearchStrategy:
    """Numbers at and beyond ``[low, high]``, and anywhere."""
    edges = st.sampled_from(EDGE_NUMBERS + tuple(near(low)) + tuple(near(high)))
    anywhere = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2**70), 2**70),
                         st.integers(-3, 50))
    inside = [st.floats(min_value=low, max_value=high)] if low is not None and high is not None else []
    return st.one_of(edges, anywhere, *inside)


def as_dtype(value, dtype):
    """``value`` as a numpy scalar of ``dtype`` (``value`` itself when it does not convert)."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return np.asarray(value).astype(dtype)[()]
    except (TypeError, ValueError, OverflowError):
        return value


def as_jax(value):
    """``value`` as a JAX array (``value`` itself when it does not convert)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return jax.numpy.asarray(value)
    except (TypeError, ValueError, OverflowError):
        return value


def carried(number: st.SearchStrategy) -> st.SearchStrategy:
    """A number as Python gives it, as a numpy scalar of several dtypes, as a 0-d numpy
    array or as a JAX array."""
    return st.one_of(number, st.tuples(number, st.sampled_from(
        [np.float32, np.float64, np.float16, np.int32, np.int64, np.uint8, np.bool_, np.complex64])).map(
        lambda pair: as_dtype(*pair)), number.map(lambda v: np.asarray(v) if not isinstance(v, int) or
                                                  abs(v) < 2**63 else v), number.map(as_jax))


def param_values(default: np.ndarray, low, high, is_bool: bool) -> st.SearchStrategy:
    """Values for a params field whose default is ``default``."""
    scalar = carried(numbers(low, high))
    if is_bool:
        scalar = st.one_of(scalar, st.sampled_from(BOOL_SPELLINGS))
    shape = default.shape
    wrong_shapes = st.one_of(scalar.map(lambda v: [v, v]), scalar.map(lambda v: np.full(shape + (2,), v, object)),
                             st.integers(0, 3).map(lambda n: np.zeros((n,) * (len(shape) + 1))))
    if not shape:
        return st.one_of(scalar, wrong_shapes, st.sampled_from(WRONG_TYPES))
    filled = numbers(low, high).map(lambda v: np.full(shape, v, object if isinstance(v, int) else np.float64))
    one_odd = st.tuples(numbers(low, high), st.integers(0, default.size - 1)).map(
        lambda pair: _with_one(default, *pair))
    anything = hnp.arrays(np.float64, shape, elements=st.floats(allow_nan=True, allow_infinity=True))
    arrays = st.one_of(filled, one_odd, anything)
    return st.one_of(arrays, arrays.map(lambda a: a.tolist()), wrong_shapes, st.sampled_from(WRONG_TYPES))


def _with_one(default: np.ndarray, value, index: int) -> np.ndarray:
    out = default.astype(object).ravel()
    out[index] = value
    return out.reshape(default.shape)


def kinds_of(annotation) -> set[str]:
    """The types an annotation names (``"int | None"`` -> ``{"int", "None"}``)."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return {part.strip().split("[")[0] for part in text.split("|")} if text else set()


def option_values(parameter: inspect.Parameter) -> st.SearchStrategy:
    """Values for a static option, from its annotation and default."""
    kinds = kinds_of(parameter.annotation) | kinds_of(type(parameter.default).__name__)
    pools = [st.sampled_from(WRONG_TYPES)]
    if parameter.default is not inspect.Parameter.empty:
        pools.append(st.just(parameter.default))
    if "int" in kinds or "float" in kinds:
        pools += [st.sampled_from((-2**31 - 1, -1, 0, 1, 2, 3, 4, 7, 10, 40, 41, 255, 256, 2**20, 2**20 + 1, 46340,
                                   46341, INT32_MAX, INT32_MAX + 1, 10**30, 2.5, 3.0, NAN, INF, np.int64(3),
                                   np.int32(2), np.uint64(2**63), np.float32(4.0), True)),
                  st.integers(-5, 60)]
    if "bool" in kinds:
        pools.append(st.sampled_from(BOOL_SPELLINGS + ("maybe", 2, 0.5)))
    if "str" in kinds:
        pools += [TEXT, st.sampled_from(("", " ", "é☃", "../x", "x" * 1000, "RANDOM", "none", "None"))]
        if isinstance(parameter.default, str):
            pools.append(st.sampled_from((parameter.default.upper(), parameter.default + " ", " " + parameter.default)))
    if "tuple" in kinds or "list" in kinds:
        element = st.one_of(st.integers(-2, 20), st.sampled_from((INT32_MAX + 1, 2.5, "a", None, True)))
        pools += [st.lists(element, max_size=4), st.lists(element, max_size=4).map(tuple),
                  st.lists(st.integers(0, 12), min_size=3, max_size=3).map(tuple)]
    return st.one_of(pools)


def config_values(field: dataclasses.Field) -> st.SearchStrategy:
    """Values for a ``TrainConfig`` field, from its type, its declared range and its default."""
    kinds = kinds_of(str(field.type))
    low, high = field.metadata.get("bounds", (None, None))
    default = field.default if field.default is not dataclasses.MISSING else field.default_factory()
    pools = [st.sampled_from(WRONG_TYPES), st.just(default)]
    if "bounds" in field.metadata:  # a hyperparameter: a number, or a list of them (a sweep)
        pools += [carried(numbers(low, high)), st.lists(numbers(low, high), max_size=3),
                  st.lists(numbers(low, high), max_size=3).map(tuple), numbers(low, high).map(lambda v: [[v]])]
    if "int" in kinds or "float" in kinds:
        pools += [numbers(0, 1), st.sampled_from((1, 2, 4, 7, 64, INT32_MAX, INT32_MAX + 1, np.int64(2)))]
    if "bool" in kinds:
        pools.append(st.sampled_from(BOOL_SPELLINGS + ("maybe", 2, 0.5)))
    if "str" in kinds or isinstance(default, str):
        pools += [TEXT, st.sampled_from(("", "é☃", "PPO", " ppo", "none", "individual", "common", "shared"))]
    if "tuple" in kinds:
        element = st.one_of(st.integers(-2, 9), numbers(), TEXT, st.sampled_from(("lr", "tft", "alld", "gamma")))
        pools += [st.lists(element, max_size=4).map(tuple), st.lists(element, max_size=4)]
    if "None" in kinds:
        pools.append(st.none())
    return st.one_of(pools)


# ---------------------------------------------------------------------- checks
class WorkStarted(Exception):
    """Raised where a command would start its work (compile, train, play, measure):
    every check of its arguments has passed."""


def assert_fails_well(err: BaseException, *names: str) -> None:
    """``err`` is a ``ValueError``/``TypeError`` whose message is one line and names
    one of ``names``."""
    assert isinstance(err, (ValueError, TypeError)), f"{type(err).__name__}: {err}"
    text = str(err)
    assert text and "\n" not in text, f"not one line: {text!r}"
    assert any(name in text for name in names), f"names none of {names}: {text!r}"


@contextlib.contextmanager
def strict_numerics():
    """Numpy's overflow and conversion warnings as errors, so that none passes silently."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # numpy's overflow, invalid value and ComplexWarning
        yield


def timed(call):
    """``call()`` and its time, which must stay under :data:`SECONDS_PER_INPUT`."""
    start = time.perf_counter()
    try:
        return call()
    finally:
        elapsed = time.perf_counter() - start
        assert elapsed < SECONDS_PER_INPUT, f"took {elapsed:.1f} s to accept or refuse"


@functools.cache
def built(name: str) -> Environment:
    return sj.make(name)


@functools.cache
def ipd() -> Environment:
    return sj.make("ipd", num_rounds=4)


def run_tier(prop, examples: int) -> None:
    settings(max_examples=examples, **COMMON)(given(st.data())(prop))()


# ------------------------------------------------------------ environment params
def check_env_param(data) -> None:
    name, field = data.draw(st.sampled_from(PARAM_FIELDS), label="field")
    env = built(name)
    default = np.asarray(getattr(env.default_params, field.name))
    low, high = field.metadata.get("bounds", (None, None))
    is_bool = bool(field.metadata.get("bool"))
    value = data.draw(param_values(default, low, high, is_bool), label="value")
    through_make = data.draw(st.booleans(), label="through sj.make")
    try:
        with strict_numerics():
            changed = timed(lambda: sj.make(name, **{field.name: value}) if through_make
                            else env.with_params(**{field.name: value}))
    except Exception as err:  # any type but ValueError/TypeError fails in assert_fails_well
        assert_fails_well(err, field.name)
        return
    stored = np.asarray(getattr(changed.default_params, field.name))
    assert stored.shape == default.shape and stored.dtype == default.dtype, (stored, default)
    if is_bool:
        expected = parse_bool(field.name, value) if isinstance(value, (str, bool, int, np.bool_, np.integer)) \
            else np.asarray(value).astype(bool)
        np.testing.assert_array_equal(stored, np.broadcast_to(expected, stored.shape))
        return
    assert np.all(np.isfinite(stored.astype(np.float64))), stored
    if low is not None:
        assert np.all(stored >= np.asarray(low).astype(stored.dtype)), (stored, low)
    if high is not None:
        assert np.all(stored <= np.asarray(high).astype(stored.dtype)), (stored, high)
    given_value = np.asarray(value, np.float64).astype(stored.dtype)
    np.testing.assert_array_equal(stored, np.broadcast_to(given_value, stored.shape))
    np.testing.assert_array_equal(np.asarray(getattr(env.default_params, field.name)), default)  # the original kept


@pytest.mark.parametrize("factor", TIERS)
def test_every_params_field_of_every_environment(factor):
    """Each params field, at and beyond its declared range, as every type, shape and
    dtype: stored finite, in range, in its default's dtype and equal to the value given,
    or a one-line error naming the field."""
    run_tier(check_env_param, FAST_EXAMPLES["env_params"] * factor)


# ------------------------------------------------------------ environment options
def check_env_option(data) -> None:
    name, parameter = data.draw(st.sampled_from(STATIC_OPTIONS), label="option")
    value = data.draw(option_values(parameter), label="value")
    try:
        with strict_numerics():
            env = timed(lambda: sj.make(name, **{parameter.name: value}))
    except Exception as err:
        assert_fails_well(err, parameter.name)
        return
    assert isinstance(env, Environment) and isinstance(env.num_agents, int) and 1 <= env.num_agents <= INT32_MAX
    env.default_params.validate()


@pytest.mark.parametrize("factor", TIERS)
def test_every_static_option_of_every_environment(factor):
    """Each constructor option of ``sj.make`` (ints, bools, strings, tuples, maps) drawn
    out of range, of another type, empty or unicode: an environment whose params are
    valid, or a one-line error naming the option. Nothing is compiled."""
    run_tier(check_env_option, FAST_EXAMPLES["env_options"] * factor)


# ----------------------------------------------------------------- TrainConfig
def check_config_field(data) -> None:
    field = data.draw(st.sampled_from(CONFIG_FIELDS), label="field")
    value = data.draw(config_values(field), label="value")
    try:
        with strict_numerics():
            config = TrainConfig().replace(**{field.name: value})
            config.validate()
            timed(lambda: make_train(ipd(), config))  # the population against the game: nothing compiled
    except Exception as err:
        assert_fails_well(err, field.name)
        return
    grid = config.hparam_grid()
    assert all(np.all(np.isfinite(v)) and v.dtype == np.float32 for v in grid.values()), grid


@pytest.mark.parametrize("factor", TIERS)
def test_every_train_config_field(factor):
    """Each ``TrainConfig`` field, drawn as above: ``replace``, ``validate`` and
    ``make_train`` on a two-player game accept it with finite float32 hyperparameters,
    or raise a one-line error naming the field."""
    run_tier(check_config_field, FAST_EXAMPLES["train_config"] * factor)


def spellings(value) -> list[str]:
    """How ``value`` can be written after ``--set FIELD=`` (on one line: see
    test_a_newline_in_an_argument_stays_on_one_line)."""
    out = [str(value)]
    with contextlib.suppress(Exception):
        out.append(repr(value))
    return [text for text in out if text.isprintable()] or ["0"]


def check_set_flag(data) -> None:
    field = data.draw(st.sampled_from(CONFIG_FIELDS), label="field")
    value = data.draw(config_values(field), label="value")
    text = data.draw(st.one_of(st.sampled_from(spellings(value)), TEXT), label="spelling")
    args = PARSER.parse_args(["train", "ipd-ppo", "--set", f"{field.name}={text}"])
    preset = get_preset(args.preset)
    try:
        with strict_numerics():
            config = preset.make_config(**cli.config_overrides(args.overrides))
            timed(lambda: make_train(ipd(), config))
    except Exception as err:
        assert_fails_well(err, field.name)


@pytest.mark.parametrize("factor", TIERS)
def test_every_train_config_field_on_the_command_line(factor):
    """``--set FIELD=VALUE`` for each field, the value written as Python writes it or as
    any text: the preset's config builds, or a one-line error names the field."""
    run_tier(check_set_flag, FAST_EXAMPLES["set_flag"] * factor)


# ------------------------------------------------------------------- CLI flags
@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A tiny trained result (``socialjax train ipd-ppo``), which the CLI inputs point at
    and which must stay as it is."""
    out = tmp_path_factory.mktemp("adversarial") / "result"
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(["train", "ipd-ppo", "--updates", "1", "--seeds", "1", "--quiet", "--out", str(out),
                         *tiny_settings()])
    assert code == 0
    store.verify(out)
    return out


def tiny_settings() -> list[str]:
    return [arg for pair in (("--set", "num_envs=2"), ("--set", "rollout_len=4"), ("--set", "hidden=8"),
                             ("--set", "num_minibatches=1"), ("--set", "update_epochs=1"),
                             ("--set", "evaluate=false")) for arg in pair]


NUMERIC_TEXT = ("-1", "0", "1", "2", "3", "-0", "2147483647", "2147483648", "-2147483649", "99999999999999999999",
                "9223372036854775808", "1e3", "1.5", "0.5", "-0.5", "nan", "NaN", "inf", "-inf", "1e39", "", " ", " 3",
                "٣", "0x10", "1_000", "+4", "1,2", "1,,2", ",", "0,0", "-1,0", "1,2,3", "0,1,0,1", "2,inf")
PATH_TOKENS = ("RESULT", "RESULT/sub", "RESULT/summary.txt", "RESULT/video.gif", "RESULT/video.html",
               "RESULT/table.csv", "RESULT/bench.json", "RESULT/resume", "FILE", "FILE/x", "EMPTY", "FOREIGN",
               "missing", "missing/deeper/x", "../x", ".", "..", "/", "out", "out.gif", "out.mp4", "out.html",
               "out.csv", "out.json", "out.txt", "ünïcødé ☃", "x" * 300, "a b", "-x", "--", "=")


def flag_values(command: str, action: argparse.Action) -> st.SearchStrategy:
    """Argument strings for ``action`` (one of ``command``'s)."""
    pools = [st.sampled_from(NUMERIC_TEXT), st.sampled_from(PATH_TOKENS), TEXT]
    if action.choices:
        pools.append(st.sampled_from([str(c) for c in action.choices]))
    if action.dest == "preset":
        pools.append(st.sampled_from(list(PRESETS)))
    if action.dest == "name" and command == "reproduce":
        pools.append(st.sampled_from(list(ENTRIES)))
    if action.dest in ("envs",):
        pools.append(st.sampled_from(ENV_NAMES + ("ipd,ipd", "ipd,", ",ipd", "IPD")))
    if action.type is not None and getattr(action.type, "__name__", "") == "key_value":
        keys = [f.name for f in CONFIG_FIELDS] + sorted({p.name for _, p in STATIC_OPTIONS}) + sorted(
            {f.name for _, f in PARAM_FIELDS})
        key = st.one_of(st.sampled_from(keys), TEXT)
        value = st.one_of(st.sampled_from(NUMERIC_TEXT), TEXT, st.sampled_from(("[1, 2]", "['a']", "[", "None",
                                                                                   "True", "false", "{}", "(1,")))
        pools.append(st.tuples(key, value).map("=".join))
    return st.one_of(pools)


def placed(text: str, work: Path, result: Path) -> str:
    """A path token as a path of this example's folder (other text as it is)."""
    head, _, rest = text.partition("/")
    roots = {"RESULT": result, "FILE": work / "file.txt", "EMPTY": work / "empty", "FOREIGN": work / "foreign"}
    if head not in roots:
        return text
    return str(roots[head] / rest) if rest else str(roots[head])


def tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (hidden ones too) with its SHA-256."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def leftovers(folder: Path) -> list[str]:
    """Hidden temporaries an interrupted write leaves (``.NAME.tmp-*``, ``.NAME.old-*``)."""
    return [str(p) for p in folder.rglob(".*") if ".tmp-" in p.name or ".old-" in p.name]


def work_sentinels(mp: pytest.MonkeyPatch) -> None:
    """Each command's work raises :class:`WorkStarted` where it would begin."""
    def start(*args, **kwargs):
        raise WorkStarted

    mp.setattr(run_module, "run_job", start)  # train a population: after run()'s own checks
    mp.setattr(evolution_module, "run_job", start)  # donor-evolution: after run_experiment's checks
    mp.setattr(cli.evaluate, "play", start)
    mp.setattr(cli.render, "play", start)
    mp.setattr(video, "rollout_frames", start)
    mp.setattr(video, "record_rollout", start)  # `render --out x.html`: the viewer's rollout (frames)
    mp.setattr(video, "record_steps", start)  # and a game without frames (the table view)
    mp.setattr(cli.reproduce, "reproduce", start)
    mp.setattr(bench_module, "measure", start)
    mp.setattr(compilation, "clear_cache", start)  # the test run's own compilation cache stays
    mp.setattr(jax.distributed, "initialize", start)
    variable = compilation.CACHE_VARIABLE  # --no-compile-cache sets it: restored after the example
    original = os.environ.get(variable)
    mp.setenv(variable, "0" if original is None else original)
    if original is None:
        mp.delenv(variable)


def argv_for(command: str, action: argparse.Action, text: str | None, inline: bool) -> list[str]:
    base = list(BASE_ARGV[command])
    if not action.option_strings:  # a positional: it replaces the base's
        positionals = [a for a in COMMAND_PARSERS[command]._actions if not a.option_strings
                       and not isinstance(a, argparse._HelpAction)]
        index = positionals.index(action)
        if index < len(base) and not base[index].startswith("-"):
            base[index] = text
        else:
            base.insert(index, text)
        return [command, *base]
    flag = action.option_strings[-1]
    if text is None:
        return [command, *base, flag]
    return [command, *base, f"{flag}={text}"] if inline else [command, *base, flag, text]


def check_cli_flag(data, result: Path) -> None:
    command, action = data.draw(st.sampled_from(CLI_FLAGS), label="flag")
    if action.nargs == 0:  # a switch: alone, or given a value it does not take (--overwrite=yes)
        text, inline = data.draw(st.one_of(st.none(), TEXT), label="argument"), True
    else:
        text = data.draw(flag_values(command, action), label="argument")
        inline = data.draw(st.booleans(), label="--flag=value")
    before = tree(result)
    with tempfile.TemporaryDirectory() as root:
        work = Path(root) / "a" / "b"
        work.mkdir(parents=True)
        (work / "file.txt").write_text("a file, not a folder\n")
        (work / "empty").mkdir()
        (work / "foreign").mkdir()
        (work / "foreign" / "notes.txt").write_text("a user's notes\n")
        placed_text = None if text is None else placed(text, work, result)
        argv = [placed(arg, work, result) for arg in argv_for(command, action, placed_text, inline)]
        before_work = tree(Path(root))
        outputs = output_paths(command, argv, work)
        existed = {path: os.path.exists(path) for path in outputs}  # False for a name too long
        stderr = io.StringIO()
        outcome = None
        with pytest.MonkeyPatch.context() as mp, contextlib.chdir(work), contextlib.redirect_stderr(stderr), \
                contextlib.redirect_stdout(io.StringIO()):
            work_sentinels(mp)
            try:
                outcome = timed(lambda: cli.main(argv))
            except WorkStarted:
                outcome = "work"
            except SystemExit as stop:
                outcome = stop.code
        message = stderr.getvalue()
        check_outcome(command, action, placed_text, outcome, message, argv, work)
        if outcome == "work":  # nothing written yet: no file changed, no output folder made
            assert tree(Path(root)) == before_work, f"{argv}: files changed before the work started"
            assert all(os.path.exists(path) == existed[path] for path in outputs), f"{argv}: an output was made"
        assert not leftovers(Path(root)), leftovers(Path(root))
    assert not leftovers(result.parent)
    assert tree(result) == before, "the existing result changed"
    store.verify(result)


def check_outcome(command, action, text, outcome, message: str, argv: list[str], work: Path) -> None:
    """A run that reached its work or finished, or a usage error (status 2) whose one
    ``error:`` line names the flag or its value (as given, or as the path it resolves
    to), or an operating-system failure (status 1) on one line."""
    if outcome in ("work", 0):
        return
    lines = [line for line in message.splitlines() if line.strip()]
    names = [*action.option_strings, action.dest, action.dest.replace("_", "-"), action.metavar or ""]
    if text is not None:
        names += [repr(text), os.path.normpath(text), os.path.realpath(work / text)]
    if text and text.strip():
        names += [text.strip(), text.strip().partition("=")[0]]
    if outcome == 2:
        errors = [line for line in lines if ": error: " in line]
        assert len(errors) == 1 and lines[-1] == errors[0], f"{argv}: not one error line: {message!r}"
        assert all(line.startswith(("usage:", " ")) for line in lines[:-1]), f"{argv}: {message!r}"
        assert any(name in errors[0] for name in names if name), f"{argv}: names none of {names}: {errors[0]!r}"
        return
    if outcome == 1:  # an operating-system failure: one line, no usage
        assert len(lines) == 1 and "cannot" in lines[0], f"{argv}: {message!r}"
        return
    if command == "bench" and isinstance(outcome, str):  # socialjax/cli/bench.py: "A bad argument exits with its
        assert "\n" not in outcome.strip(), f"{argv}: {outcome!r}"  # message (status 1)"
        assert any(name in outcome for name in names if name), f"{argv}: names none of {names}: {outcome!r}"
        return
    raise AssertionError(f"{argv}: exit {outcome!r}: {message!r}")


def output_paths(command: str, argv: list[str], work: Path) -> list[Path]:
    """The output folders and files ``argv`` names (the defaults' parents included)."""
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            args = PARSER.parse_args(argv)
    except SystemExit:
        return []
    named = [getattr(args, dest, None) for dest in ("out", "csv", "json")]
    if command == "train" and args.out is None and args.preset:
        named.append(f"results/{args.preset}")  # its default
    return [work / path for path in named if isinstance(path, str) and path]


@pytest.mark.parametrize("factor", TIERS)
def test_every_flag_of_every_command(factor, trained):
    """Each flag (and positional) of each command with drawn argument strings, the
    command's work replaced by a sentinel: it reaches its work with nothing written yet,
    finishes, or stops with one error line naming the flag or its value; the existing
    result it may point at is unchanged and verifies, and no temporary is left."""
    run_tier(lambda data: check_cli_flag(data, trained), FAST_EXAMPLES["cli_flags"] * factor)


def test_every_command_has_a_base():
    """A new command needs arguments that reach its work (BASE_ARGV) to be drawn for."""
    assert set(BASE_ARGV) == set(COMMAND_PARSERS)


def test_the_bases_reach_the_work_or_finish(trained, tmp_path, monkeypatch):
    """The base arguments alone pass every check: a flag's refusal is the flag's."""
    monkeypatch.chdir(tmp_path)
    for command, base in BASE_ARGV.items():
        argv = [command, *[placed(arg, tmp_path, trained) for arg in base]]
        with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(io.StringIO()):
            work_sentinels(mp)
            try:
                code = cli.main(argv)
            except WorkStarted:
                code = 0
        assert code == 0, argv


# -------------------------------------------------------------- regressions
# ------------------------------------------------------------------- a run's spec
SPEC_FIELDS = {
    "kind": st.one_of(st.sampled_from(JOB_KINDS), st.sampled_from(WRONG_TYPES), TEXT),
    "env": st.one_of(st.sampled_from(ENV_NAMES), st.sampled_from(WRONG_TYPES), TEXT),
    "env_options": st.one_of(st.just({}), st.dictionaries(TEXT, st.one_of(st.sampled_from(EDGE_NUMBERS), TEXT),
                                                          max_size=3),
                             st.sampled_from(WRONG_TYPES), st.just({"x": float("nan")}), st.just({1: 2}),
                             st.just({"f": np.float32(0.5), "a": np.arange(3)}), st.just({"o": object()})),
    "config": st.one_of(st.just({"lr": 0.001, "seats": (0, 1)}), st.sampled_from(WRONG_TYPES),
                        st.dictionaries(TEXT, st.one_of(st.sampled_from(EDGE_NUMBERS), TEXT), max_size=3),
                        st.just({"lr": float("inf")}), st.just({"f": lambda: 1})),
    "seeds": st.one_of(st.lists(st.integers(-3, 2**40), max_size=4).map(tuple), st.sampled_from(WRONG_TYPES),
                       st.just(np.arange(3)), st.just((True, False)), st.just((1.0, 2.0)), st.just((0, 0))),
    "base_seed": st.one_of(st.integers(-2, 2**32), st.sampled_from(EDGE_NUMBERS), st.sampled_from(WRONG_TYPES),
                           st.just(np.int64(7))),
    "preset": st.one_of(st.none(), TEXT, st.sampled_from(WRONG_TYPES)),
}


def check_job_spec(data) -> None:
    values = {name: data.draw(strategy, label=name) for name, strategy in SPEC_FIELDS.items()}
    as_json = data.draw(st.booleans(), label="from JSON")
    try:
        spec = timed(lambda: JobSpec.from_json({"job": values["kind"], **{k: v for k, v in values.items()
                                                                            if k != "kind"}})
                     if as_json else JobSpec(**values))
    except Exception as err:
        assert_fails_well(err, "job", "spec")
        return
    # made: a known kind, a name, distinct non-negative seeds, JSON settings; and it round-trips
    assert spec.kind in JOB_KINDS and isinstance(spec.env, str) and spec.env
    assert all(isinstance(x, int) and x >= 0 for x in spec.seeds) and len(set(spec.seeds)) == len(spec.seeds)
    assert 0 <= spec.base_seed < 2**31
    back = JobSpec.from_json(json.loads(json.dumps(spec.to_json(), allow_nan=False)))
    assert back == spec and back.same_settings(spec)


@pytest.mark.parametrize("factor", TIERS)
def test_every_field_of_a_job_spec(factor):
    """A run's spec from every kind of value in every field, made directly or read back
    from JSON: made, with ints for seeds and JSON values for settings, and equal to
    itself after a round trip through JSON; or a one-line error about the job."""
    run_tier(check_job_spec, FAST_EXAMPLES["job_spec"] * factor)


# -------------------------------------------------------------------- listeners
LISTENER_CALLS = ("open", "log", "summary", "artifact", "close")
FAILURES = (OSError(28, "No space left on device"), RuntimeError("CsvLog is not open"), ValueError("bad mode"),
            ImportError("No module named 'wandb'"), ConnectionError("no server"), TypeError("x"), KeyError("k"),
            PermissionError(13, "Permission denied"), ZeroDivisionError("zero"))


class Member:
    """A listener that records its calls and raises ``failure`` in the call ``where``
    (after ``after`` good calls of it)."""

    def __init__(self, name: str, where: str | None = None, failure: Exception | None = None, after: int = 0):
        self.listener_name, self.where, self.failure, self.after = name, where, failure, after
        self.calls: list[str] = []

    def _call(self, what: str) -> None:
        self.calls.append(what)
        if what == self.where and self.calls.count(what) > self.after:
            raise self.failure

    def open(self, runs):
        self._call("open")

    def log(self, update, values):
        self._call("log")

    def summary(self, values):
        self._call("summary")

    def artifact(self, path):
        self._call("artifact")

    def close(self):
        self._call("close")


def check_listeners(data) -> None:
    members = [Member(f"member {i}", data.draw(st.sampled_from((None,) + LISTENER_CALLS), label="fails in"),
                      data.draw(st.sampled_from(FAILURES), label="failure"),
                      data.draw(st.integers(0, 2), label="good calls first"))
               for i in range(data.draw(st.integers(1, 4), label="members"))]
    good = Member("the good one")
    stream = io.StringIO()
    listeners = Listeners([*members, good], stream=stream)
    updates = data.draw(st.integers(0, 4), label="updates")
    listeners.open(RunSet("x", {"lr": np.asarray([0.1])}, np.arange(2), updates, {}))
    for u in range(updates):
        listeners.log(u, {"reward": np.zeros((2, 1))})
    listeners.summary({"reward": np.zeros(2)})
    listeners.artifact(Path("figure.png"))
    listeners.close()  # no call above raised
    assert good.calls == ["open"] + ["log"] * updates + ["summary", "artifact", "close"]
    failed = [m for m in members if m.calls.count(m.where) > m.after]
    assert len(listeners.failures) == len(failed), (listeners.failures, [(m.where, m.calls) for m in members])
    assert all("\n" not in line for line in listeners.failures), listeners.failures
    for m in failed:  # one line each, in the order they failed
        assert sum(line.startswith(m.listener_name + " ") for line in listeners.failures) == 1, listeners.failures
        at = [i for i, call in enumerate(m.calls) if call == m.where][m.after]
        assert m.calls[at + 1:] == ([] if m.where == "close" else ["close"]), (m.where, m.calls)  # closed, then no more
    assert len(stream.getvalue().splitlines()) == len(failed)


@pytest.mark.parametrize("factor", TIERS)
def test_listeners_survive_any_member_failing_anywhere(factor):
    """Members that raise any exception in any call, after any number of good calls:
    no call of the listeners raises, a member that behaves gets every call in order, each
    failure is one line naming its member, and a failed member is called no more (but
    closed)."""
    run_tier(check_listeners, FAST_EXAMPLES["listeners"] * factor)


@pytest.mark.parametrize("name, changes, match", [
    ("gathering", dict(zap_cooldown=2.5), r"GatheringParams\.zap_cooldown must be a whole number"),
    ("ipd", dict(noise=True), r"MatrixParams\.noise must be a number"),
    ("ipd", dict(noise=complex(0.1, 0.5)), r"MatrixParams\.noise must be a number"),
    ("ipd", dict(payoffs=[[1, 2], [3]]), r"MatrixParams\.payoffs must be a number or a regular"),
    ("ipd", dict(payoffs=np.full((2, 2, 2), np.nan)), r"MatrixParams\.payoffs is NaN: \[\[\[nan nan\] \[nan nan\]\]"),
    ("cleanup", dict(zap_cooldown=2**70), r"zap_cooldown=1\.18.*e\+21 does not fit int32"),
    ("cleanup", dict(zap_cost=-(2**63) - 1), None),
    ("lattice_pd", dict(reward=[5, 5]), r"LatticePDParams\.reward must have shape \(\)"),
    ("gathering", dict(n_apple=np.full((2, 2), 2.5)), r"n_apple=array\(\[\[2\.5, 2\.5\], \[2\.5, 2\.5\]\]\) must be"),
])
def test_params_found_wrong_by_the_suite_are_refused_on_one_line(name, changes, match):
    """Found by the suite: a fractional value for an integer field (accepted, then a
    trace-time error in the rollout's scan), a bool or a complex number for a float
    (stored as such), a ragged list (numpy's own error, naming nothing), an array's
    message spread over several lines, an int beyond numpy's range (called not a number, or
    an OverflowError for a float field, where it is a float and passes: ``match=None``), a
    wrong shape reaching a cross-field check ("only 0-dimensional arrays can be converted")."""
    if match is None:
        env = sj.make(name, **changes)
        assert float(getattr(env.default_params, *changes)) == float(*changes.values())
        return
    with pytest.raises(ValueError, match=match) as err:
        sj.make(name, **changes)
    assert "\n" not in str(err.value)


def test_a_whole_float_for_an_integer_field_is_stored_as_its_integer():
    """``zap_cooldown=3.0`` is stored as the int32 3 (and ``zap_cost=2`` as the float32
    2.0), so the rollout's scan keeps its dtypes (it was a trace-time error)."""
    from socialjax.rollout import rollout

    env = sj.make("gathering", zap_cooldown=3.0, zap_cost=2, n_apple=np.int8(4))
    params = env.default_params
    assert params.zap_cooldown.dtype == np.int32 and int(params.zap_cooldown) == 3
    assert params.zap_cost.dtype == np.float32 and float(params.zap_cost) == 2.0
    assert params.n_apple.dtype == np.int32 and int(params.n_apple) == 4
    jax.eval_shape(lambda k: rollout(env, k, 3), jax.random.key(0))  # traced, not compiled
    with pytest.raises(ValueError, match=r"GatheringParams\.zap_cooldown must be a whole number"):
        env.reset(jax.random.key(0), params.replace(zap_cooldown=2.5))  # params given to reset: the same rule


@pytest.mark.parametrize("name, options, match", [
    ("cleanup", dict(ascii_map=5), r"ascii_map must be a string or None, got 5"),
    ("cleanup", dict(ascii_map=""), r"ascii_map"),
    ("cleanup", dict(view=(9, 1)), r"view must be three ints"),
    ("cleanup", dict(view=5), r"view must be a tuple or list"),
    ("cleanup", dict(num_agents=1000), r"num_agents=1000: grid games encode agents"),
    ("cleanup", dict(episode_length=True), r"episode_length must be an int"),
    ("ipd", dict(game=["a"]), r"game must be a string"),
    ("commons", dict(preset=np.array([1, 2])), r"preset must be a string"),
    ("commons", dict(num_agents=10**30), r"num_agents=10+ does not fit int32"),
    ("coins", dict(width=10**6), r"width must be an int in \[4, 255\]"),
    ("gathering", dict(num_agents=INT32_MAX), r"num_agents=2147483647: grid games"),
    ("nplayer_matrix", dict(num_agents=INT32_MAX), r"num_agents=2147483647 is above the N-player game's limit"),
    ("public_goods", dict(max_points=INT32_MAX), r"max_points=2147483647 is above the limit"),
    ("lattice_pd", dict(size=INT32_MAX), r"size must be an int in \[3, 46340\]"),
    ("ipd", dict(num_rounds=np.timedelta64(3, "s")), r"num_rounds must be an int"),
])
def test_options_found_wrong_by_the_suite_fail_fast_naming_the_option(name, options, match):
    """Found by the suite: options of the wrong type reached the constructors (an
    AttributeError, numpy's 'truth value of an array', 'unhashable type', 'not enough
    values to unpack'), messages that did not name the option, and huge values that
    built tables of 2**31 entries (20 s and more) or raised OverflowError."""
    start = time.perf_counter()
    with pytest.raises(ValueError, match=match) as err:
        sj.make(name, **options)
    assert "\n" not in str(err.value) and time.perf_counter() - start < 1.0


@pytest.mark.parametrize("changes, match", [
    (dict(lr=1e39), r"lr=1e\+39 overflows float32"),
    (dict(lr=""), r"lr must be a number"),
    (dict(gamma=None), r"gamma must be a number"),
    (dict(algo=np.array([1, 2])), r"algo must be one of"),
    (dict(num_learners="é"), r"num_learners must be None or a positive int"),
    (dict(scripted=float("nan")), r"scripted must be a list of names"),
    (dict(background=(1, 2)), r"background must be a list of names"),
    (dict(num_envs=2**31), r"num_envs=2147483648 does not fit int32"),
    (dict(select_frac=10**400), r"select_frac must be in \(0, 1\]"),
    (dict(num_envs=INT32_MAX), r"num_envs=2147483647 games of 2 seats"),
    (dict(num_minibatches=3), r"do not split into num_minibatches=3 minibatches"),
    (dict(background=("nobody",)), r"background: unknown scripted member 'nobody'"),
    (dict(select_frac=np.timedelta64(3, "s")), r"select_frac must be in"),
    (dict(hidden=np.zeros((2, 3))), r"hidden must be a positive int, got array\(\[\[0\., 0\., 0\.\], \[0\."),
])
def test_train_settings_found_wrong_by_the_suite_are_refused(changes, match):
    """Found by the suite: a hyperparameter of 1e39 passed (inf in float32, with a numpy
    warning), strings and None raised numpy's 'could not convert string to float',
    an array for a choice numpy's 'truth value', population fields of any type passed
    validation, an int beyond float64 raised a TypeError, and num_envs=2**31-1 tried to
    allocate 32 GiB for the seating."""
    with pytest.raises(ValueError, match=match) as err, strict_numerics():
        make_train(ipd(), TrainConfig(num_envs=2, rollout_len=4).replace(**changes))
    assert "\n" not in str(err.value)


def test_a_numpy_int_setting_is_kept_as_a_python_int():
    """``num_minibatches=np.int8(2)`` is the int 2: sizes computed from it do not wrap
    (``np.int8(3)`` raised an OverflowError in the minibatch arithmetic)."""
    config = TrainConfig(num_envs=2, rollout_len=4, num_minibatches=np.int8(2))
    assert type(config.num_minibatches) is int and config.num_minibatches == 2
    make_train(ipd(), config)


# ---------------------------------------------------------- found by the suite in the command line
@pytest.mark.parametrize("command", ["train", "evaluate", "render"])
def test_a_seed_beyond_int64_is_a_usage_error(command, trained, tmp_path, monkeypatch, capsys):
    """(train reached its work, where run_keys raised an OverflowError after "compiling...")"""
    monkeypatch.chdir(tmp_path)
    argv = {"train": ["train", "ipd-ppo", "--quiet"], "evaluate": ["evaluate", str(trained)],
            "render": ["render", "--env", "gathering", "--out", "v.gif"]}
    with pytest.MonkeyPatch.context() as mp:
        work_sentinels(mp)
        with pytest.raises(SystemExit) as stop:
            cli.main([*argv[command], "--seed", str(2**64)])
    assert stop.value.code == 2 and "--seed" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["results", "a\nb"], ["train", "ipd-ppo", "--set", "scripted=a\nb"]])
def test_a_newline_in_an_argument_stays_on_one_line(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.MonkeyPatch.context() as mp:
        work_sentinels(mp)
        with pytest.raises(SystemExit):
            cli.main(argv)
    assert len([line for line in capsys.readouterr().err.splitlines() if not line.startswith(("usage", " "))]) == 1


@pytest.mark.parametrize("argv", [["train", "ipd-ppo", "--seeds=--"], ["evaluate", "RESULT", "--run=--"],
                                  ["bench", "--batch-sizes=--"]])
def test_flag_equals_double_dash_is_a_usage_error(argv, trained, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.MonkeyPatch.context() as mp:
        work_sentinels(mp)
        with pytest.raises(SystemExit) as stop:
            cli.main([placed(arg, tmp_path, trained) for arg in argv])
    assert stop.value.code == 2


@pytest.mark.slow
def test_a_huge_seed_count_is_refused_before_allocating(tmp_path):
    """Run in a process limited to 12 GiB of address space, where the list of 2**31 - 1
    seeds it used to build is a MemoryError."""
    import subprocess
    import sys

    code = ("import resource, importlib; resource.setrlimit(resource.RLIMIT_AS, (12 * 2**30, 12 * 2**30)); "
            "from socialjax import cli; run = importlib.import_module('socialjax.train.run'); "
            "run.run_job = lambda *a, **k: exit(0); "
            "cli.main(['train', 'ipd-ppo', '--seeds', '2147483647', '--quiet'])")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--seeds" in done.stderr.splitlines()[-1], done.stderr[-500:]


# ------------------------------------------------------------- end to end (slow)
def valid_settings(data) -> tuple[str, str]:
    """A ``--set FIELD=VALUE`` that passes validation on the tiny job, with sizes kept
    small; half the time a hyperparameter, at or near its declared bounds."""
    hyperparameters = [f for f in CONFIG_FIELDS if "bounds" in f.metadata]
    field = data.draw(st.one_of(st.sampled_from(hyperparameters), st.sampled_from(CONFIG_FIELDS)), label="field")
    if str(field.type) in ("int",):
        value = data.draw(st.integers(1, 6), label="value")
    else:
        value = data.draw(config_values(field), label="value")
    text = repr(value.tolist() if isinstance(value, np.ndarray) else value)
    args = PARSER.parse_args(["train", "ipd-ppo", *tiny_settings(), "--set", f"{field.name}={text}"])
    try:
        with strict_numerics():
            config = get_preset("ipd-ppo").make_config(**cli.config_overrides(args.overrides))
            make_train(ipd(), config.replace(num_updates=1))
    except (ValueError, TypeError):
        assume(False)
    return field.name, text


@pytest.mark.slow
def test_tiny_jobs_with_drawn_settings_train_or_fail_on_one_line(tmp_path_factory):
    """Settings drawn as above that pass validation, each in a one-update job of the
    IPD preset: it writes a result whose losses are finite, or reports the learners
    whose loss went non-finite (docs/training.md, "Non-finite losses"), or stops with
    one error line."""
    @settings(max_examples=END_TO_END_EXAMPLES, **COMMON)
    @given(st.data())
    def job(data):
        field, text = valid_settings(data)
        out = tmp_path_factory.mktemp("job") / "result"
        stderr = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(stderr):
            try:
                code = cli.main(["train", "ipd-ppo", "--updates", "1", "--seeds", "1", "--quiet", "--out", str(out),
                                 *tiny_settings(), "--set", f"{field}={text}"])
            except SystemExit as stop:
                code = stop.code
        if code != 0:
            errors = [line for line in stderr.getvalue().splitlines() if ": error: " in line]
            assert code == 2 and len(errors) == 1, stderr.getvalue()
            assert not out.exists()
            return
        store.verify(out)
        metrics = np.load(out / "metrics.npz")
        summary = (out / "summary.txt").read_text()
        finite = all(np.all(np.isfinite(metrics[k])) for k in metrics.files if k.startswith("loss"))
        assert finite or "non-finite loss" in summary, (field, text, summary)

    job()
