"""Strict input: one bool parser everywhere, finite numbers, params checked before compiling.

- A bool option (``sj.make`` static options, bool params fields, ``TrainConfig``,
  ``--set``, ``--env-option``, ``render --option``) takes True/False, the ints 0 and 1 and
  the strings true/false, 1/0, yes/no in any case, and nothing else: ``"false"`` is
  False, never a truthy string.
- Params and ``TrainConfig`` floats are finite: NaN and infinities are errors naming
  the field.
- Params given to the library's entry points (``make_train``, ``run``, ``play``,
  ``rollout_frames``, the adapters, the donor evolution) are validated on the host,
  batches and out-of-range values included, before anything is compiled; traced params
  are checked by ``sj.checked(env)`` with checkify.
"""

from __future__ import annotations

import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax.experimental import checkify

import socialjax as sj
from socialjax import cli
from socialjax.core.params import parse_bool
from socialjax.envs.donor.env import DonorGame
from socialjax.train import make_train, play
from socialjax.train.config import TrainConfig
from socialjax.train.cultural_evolution import make_donor_evolution, run_experiment
from socialjax.train.presets import get_preset
from socialjax.train.run import run
from socialjax.viz.video import rollout_frames

KEY = jax.random.key(0)
SPELLINGS = {"true", "false", "1", "0", "yes", "no"}
TRUE = ["true", "TRUE", "True", "yes", "Yes", "YES", "1", 1, True, np.bool_(True)]
FALSE = ["false", "FALSE", "False", "no", "No", "NO", "0", 0, False, np.bool_(False)]
REJECTED = ["maybe", "", " true", "on", "t", "2", 2, -1, 0.5, 1.0, None, [True]]
NON_FINITE = [float("nan"), float("inf"), float("-inf")]
TINY = dict(num_envs=2, rollout_len=4, num_updates=1, num_minibatches=1, update_epochs=1, hidden=8,
            evaluate=False)


# --------------------------------------------------------------------------- the parser
@pytest.mark.parametrize("value", TRUE)
def test_true_spellings(value):
    assert parse_bool("flag", value) is True


@pytest.mark.parametrize("value", FALSE)
def test_false_spellings(value):
    assert parse_bool("flag", value) is False


@pytest.mark.parametrize("value", REJECTED)
def test_other_values_are_rejected_naming_the_option_and_the_spellings(value):
    with pytest.raises(ValueError, match=r"my_flag must be a bool \(True/False.*true/false, 1/0, yes/no"):
        parse_bool("my_flag", value)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=6), st.integers(), st.floats(allow_nan=True)))
def test_only_the_spellings_parse(value):
    ok = (isinstance(value, str) and value.lower() in SPELLINGS) or (
        isinstance(value, int) and value in (0, 1))
    if ok:
        assert parse_bool("x", value) is (str(value).lower() in ("true", "1", "yes"))
    else:
        with pytest.raises(ValueError, match="x must be a bool"):
            parse_bool("x", value)


# ------------------------------------------------------------------ environment options
@pytest.mark.parametrize("name, option", [
    ("ipd", "observe_round"), ("nplayer_matrix", "observe_round"), ("donor_game", "punishment"),
    ("commons", "monitoring"), ("public_goods", "sequential"), ("partner_punishment", "costly"),
])
@pytest.mark.parametrize("text, expected", [("false", False), ("No", False), ("0", False), ("TRUE", True),
                                            ("yes", True), (1, True)])
def test_make_parses_bool_static_options(name, option, text, expected):
    assert getattr(sj.make(name, **{option: text}), option) is expected


@pytest.mark.parametrize("value", ["maybe", "", 2, 0.5, None])
def test_make_rejects_other_bool_values(value):
    with pytest.raises(ValueError, match=r"observe_round must be a bool .*got"):
        sj.make("ipd", observe_round=value)


def test_false_string_turns_an_option_off():
    env = sj.make("ipd", observe_round="false")
    assert env.observe_round is False
    assert env.observation_space().shape == sj.make("ipd").observation_space().shape
    assert sj.make("donor_game", punishment="false").punishment is False
    assert DonorGame(punishment="false").punishment is False  # the constructor too, not only make


@pytest.mark.parametrize("text, expected", [("false", False), ("No", False), ("1", True), (0, False)])
def test_bool_params_field_parses(text, expected):
    env = sj.make("commons", end_on_collapse=text)
    assert bool(env.default_params.end_on_collapse) is expected
    params = sj.make("commons").default_params.replace(end_on_collapse=text)
    assert params.validate().end_on_collapse is expected
    env.reset(KEY, params)  # the string is parsed on the way in, not handed to JAX


@pytest.mark.parametrize("value", ["maybe", 2, 0.5, jnp.asarray([0.0, 0.5])])
def test_bool_params_field_rejects_other_values(value):
    with pytest.raises(ValueError, match=r"CommonsParams\.end_on_collapse must be a bool"):
        sj.make("commons", end_on_collapse=value)


# ------------------------------------------------------------------------- finiteness
@pytest.mark.parametrize("value", NON_FINITE)
@pytest.mark.parametrize("name, field", [("donor_game", "multiplier"), ("commons", "capacity"), ("ipd", "noise")])
def test_non_finite_params_are_rejected(name, field, value):
    with pytest.raises(ValueError, match=rf"Params\.{field}.*(NaN|not finite)"):
        sj.make(name, **{field: value})
    env = sj.make(name)
    with pytest.raises(ValueError, match=field):
        env.with_params(**{field: value})


def test_non_numbers_in_params_are_rejected():
    with pytest.raises(ValueError, match=r"MatrixParams\.noise must be a number"):
        sj.make("ipd", noise="0.1")


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.sampled_from(NON_FINITE), st.floats(allow_nan=True, allow_infinity=True)))
def test_a_param_is_accepted_exactly_when_finite_and_in_range(multiplier):
    """The multiplier has a minimum (0) and no maximum: infinity is out only for being infinite."""
    params = sj.make("donor_game").default_params.replace(multiplier=multiplier)
    if math.isfinite(multiplier) and multiplier >= 0.0:
        params.validate()
    else:
        with pytest.raises(ValueError, match="DonorParams.multiplier"):
            params.validate()


# ------------------------------------------------------------------------- TrainConfig
@pytest.mark.parametrize("field", ["recurrent", "anneal_lr", "evaluate"])
@pytest.mark.parametrize("text, expected", [("false", False), ("No", False), ("0", False), (0, False),
                                            ("TRUE", True), ("yes", True), (1, True), (True, True)])
def test_train_config_bool_fields_parse(field, text, expected):
    assert getattr(TrainConfig(**{field: text}), field) is expected
    assert getattr(TrainConfig().replace(**{field: text}), field) is expected


@pytest.mark.parametrize("field", ["recurrent", "anneal_lr", "evaluate"])
@pytest.mark.parametrize("value", ["maybe", "", 2, -1, 0.5, None])
def test_train_config_bool_fields_reject_other_values(field, value):
    with pytest.raises(ValueError, match=rf"{field} must be a bool \(True/False"):
        TrainConfig(**{field: value})


@pytest.mark.parametrize("value", NON_FINITE)
@pytest.mark.parametrize("field", ["select_frac", "mutation_std", "learner_fraction", "aa_beta", "lr"])
def test_train_config_floats_must_be_finite(field, value):
    with pytest.raises(ValueError, match=field):
        TrainConfig(**{field: value}).validate()


@pytest.mark.parametrize("perturb", [(0.8, float("inf")), (float("nan"), 1.2), (0.8, "1.2"), (0.8,)])
def test_perturb_must_be_two_finite_positive_factors(perturb):
    with pytest.raises(ValueError, match="perturb must be two finite positive factors"):
        TrainConfig(perturb=perturb).validate()


# ------------------------------------------------------------------------ command line
def preset_config(*argv: str) -> TrainConfig:
    args = cli.build_parser().parse_args(["train", "ipd-ppo", *argv])
    return get_preset(args.preset).make_config(**cli.config_overrides(args.overrides))


def test_set_false_gives_a_non_recurrent_config():
    assert preset_config("--set", "recurrent=true").recurrent is True
    config = preset_config("--set", "recurrent=false", "--set", "evaluate=False", "--set", "anneal_lr=no")
    assert (config.recurrent, config.evaluate, config.anneal_lr) == (False, False, False)
    config = preset_config("--set", "recurrent=1", "--set", "evaluate=NO", "--set", "anneal_lr=0")
    assert (config.recurrent, config.evaluate, config.anneal_lr) == (True, False, False)


@pytest.mark.parametrize("value", ["maybe", "2", "0.5", "None", "''"])
def test_set_rejects_other_bool_values(value):
    with pytest.raises(ValueError, match=r"--set recurrent must be a bool"):
        preset_config("--set", f"recurrent={value}")


def test_env_option_and_render_option_parse_bools():
    args = cli.build_parser().parse_args(["train", "ipd-ppo", "--env-option", "observe_round=false"])
    assert get_preset("ipd-ppo").make_env(**dict(args.env_options)).observe_round is False
    args = cli.build_parser().parse_args(["render", "--env", "cleanup", "--out", "x.gif",
                                          "--option", "dirt_blocks_movement=False"])
    assert sj.make(args.env, **dict(args.option)).dirt_blocks_movement is False


@pytest.mark.parametrize("text", ["nan", "1.5,inf", "-inf,2", "2,NaN"])
def test_multipliers_must_be_finite(text, capsys, monkeypatch):
    import socialjax.train.cultural_evolution as ce

    monkeypatch.setattr(ce, "run_experiment", lambda **kw: pytest.fail("reached run_experiment"))
    with pytest.raises(SystemExit) as exc:
        cli.main(["train", "donor-evolution", f"--multipliers={text}"])
    assert exc.value.code == 2
    assert "expected comma-separated finite numbers" in capsys.readouterr().err


@pytest.mark.parametrize("multipliers, match", [((1.5, float("nan")), "finite"), ((float("inf"),), "finite"),
                                                ((), "non-empty"), ((2.0, -1.0), "below its minimum")])
def test_run_experiment_checks_multipliers_before_compiling(multipliers, match, tmp_path, monkeypatch):
    monkeypatch.setattr(jax, "jit", lambda *a, **k: pytest.fail("compiled before checking the multipliers"))
    with pytest.raises(ValueError, match=match):
        run_experiment(num_seeds=2, num_generations=1, multipliers=multipliers, out_dir=str(tmp_path),
                       verbose=False)


# ------------------------------------------------------- params at the library's entry points
@pytest.fixture(scope="module")
def ipd():
    return sj.make("ipd", num_rounds=4)


BAD_NOISE = {
    "out of range": (jnp.asarray(5.0), "above its maximum"),
    "NaN": (jnp.asarray(float("nan")), "NaN"),
    "batch with an out-of-range value": (jnp.asarray([0.1, 5.0]), "above its maximum"),
    "batch": (jnp.asarray([0.1, 0.2]), r"has shape \(2,\), expected \(\)"),
}


@pytest.fixture
def no_jit(monkeypatch):
    monkeypatch.setattr(jax, "jit", lambda *a, **k: pytest.fail("compiled before checking the params"))


@pytest.mark.parametrize("case", list(BAD_NOISE))
def test_make_train_and_run_check_params_before_compiling(ipd, case, no_jit):
    noise, match = BAD_NOISE[case]
    params = ipd.default_params.replace(noise=noise)
    config = TrainConfig(**TINY)
    with pytest.raises(ValueError, match=match):
        make_train(ipd, config, params=params)
    with pytest.raises(ValueError, match=match):
        run(ipd, config, seeds=1, params=params, progress=False)
    with pytest.raises(ValueError, match=match):  # through a wrapper too
        make_train(sj.EpisodeStats(ipd), config, params=params)


def test_with_params_refuses_a_batch_or_a_list_where_the_param_is_a_number(ipd, no_jit):
    """One set of params per environment: a list is not a per-agent value (sweeps vmap
    over ``params.replace``)."""
    for value in (jnp.asarray([0.1, 0.2]), [0.0, 1.0]):
        with pytest.raises(ValueError, match=r"MatrixParams\.noise must have shape \(\) \(its default's\), got \(2,\)"):
            ipd.with_params(noise=value)
    with pytest.raises(ValueError, match=r"noise must have shape"):
        sj.make("ipd", noise=[0.0, 1.0])


@pytest.mark.parametrize("name, changes, match", [
    ("donor_game", dict(multiplier=1e39), r"DonorParams\.multiplier=1e\+39 overflows float32"),
    ("donor_game", dict(initial_resources=1e39), r"initial_resources=1e\+39 overflows float32"),
    ("ipd", dict(payoffs=[[[1e39, 0.0], [5.0, 1.0]], [[0.0, 5.0], [1.0, 1.0]]]), r"payoffs=.* overflows float32"),
])
def test_params_are_checked_in_the_dtype_they_are_stored_in(name, changes, match):
    """Checked in float64, 1e39 passed and then became inf in float32."""
    with pytest.raises(ValueError, match=match):
        sj.make(name, **changes)


@pytest.mark.parametrize("case", list(BAD_NOISE))
def test_play_checks_params_before_compiling(ipd, case, monkeypatch):
    noise, match = BAD_NOISE[case]
    train = make_train(ipd, TrainConfig(**TINY))  # builds, compiles nothing
    monkeypatch.setattr(jax, "jit", lambda *a, **k: pytest.fail("compiled before checking the params"))
    with pytest.raises(ValueError, match=match):
        play(train, None, KEY, 4, params=ipd.default_params.replace(noise=noise))


@pytest.mark.parametrize("n_apple, match", [(jnp.asarray(0), "below its minimum"),
                                            (jnp.asarray([5, 0]), "below its minimum"),
                                            (jnp.asarray([5, 10]), r"has shape \(2,\)")])
def test_rollout_frames_checks_params_before_compiling(n_apple, match):
    env = sj.make("gathering")
    with pytest.raises(ValueError, match=match):
        rollout_frames(env, KEY, 2, params=env.default_params.replace(n_apple=n_apple))


def test_adapters_and_donor_evolution_check_params(ipd):
    with pytest.raises(ValueError, match="above its maximum"):
        sj.JaxMARLAdapter(ipd, params=ipd.default_params.replace(noise=jnp.asarray([0.1, 5.0])))
    donor = sj.make("donor_game", num_agents=4, games_per_generation=1)
    with pytest.raises(ValueError, match=r"DonorParams\.multiplier.*not finite"):
        make_donor_evolution(donor, params=donor.default_params.replace(multiplier=jnp.inf))


def test_step_with_a_params_batch_checks_it_on_the_host(ipd):
    """Concrete params given to step/reset are validated, arrays included."""
    _, state = ipd.reset(KEY)
    bad = ipd.default_params.replace(noise=jnp.asarray([0.1, 5.0]))
    with pytest.raises(ValueError, match=r"MatrixParams\.noise=\[0\.1, 5\.0\] is above its maximum 1\.0"):
        ipd.step(KEY, state, jnp.zeros(2, jnp.int32), bad)
    with pytest.raises(ValueError, match="above its maximum"):
        ipd.with_params(noise=5.0)


# ---------------------------------------------------------------- traced params: checked
def test_checked_env_raises_on_an_out_of_range_traced_param(ipd):
    env = sj.checked(ipd)
    _, state = env.reset(KEY)
    actions = jnp.zeros(2, jnp.int32)

    def reward(noise):
        return env.step(KEY, state, actions, ipd.default_params.replace(noise=noise))[2]

    chex.assert_shape(jax.vmap(reward)(jnp.asarray([0.0, 0.5])), (2, 2))
    with pytest.raises(ValueError, match=r"ipd: MatrixParams\.noise must be finite and in \[0\.0, 1\.0\], got .*5\."):
        jax.vmap(reward)(jnp.asarray([0.1, 5.0]))
    with pytest.raises(ValueError, match=r"MatrixParams\.noise must be finite"):
        jax.vmap(reward)(jnp.asarray([0.1, jnp.nan]))

    # inside a jit of the user's own, checkify that function and throw on the host
    checked_reward = checkify.checkify(jax.jit(reward))
    err, _ = checked_reward(jnp.float32(0.5))
    err.throw()
    err, _ = checked_reward(jnp.float32(5.0))
    with pytest.raises(checkify.JaxRuntimeError, match=r"MatrixParams\.noise must be finite"):
        err.throw()


def test_checked_env_checks_traced_bool_fields_on_reset():
    commons = sj.make("commons")
    env = sj.checked(commons)

    def reset(flag):
        return env.reset(KEY, commons.default_params.replace(end_on_collapse=flag))[0]

    jax.vmap(reset)(jnp.asarray([0, 1]))
    with pytest.raises(ValueError, match=r"CommonsParams\.end_on_collapse must be a bool \(0 or 1\)"):
        jax.vmap(reset)(jnp.asarray([0, 2]))


def test_checked_env_is_a_wrapper_and_stays_checked_after_with_params(ipd):
    env = sj.checked(ipd)
    assert isinstance(env, sj.core.Wrapper) and env.unwrapped is ipd
    noisy = env.with_params(noise=0.25)
    assert isinstance(noisy, type(env)) and float(noisy.default_params.noise) == 0.25
    _, state = noisy.reset(KEY)
    with pytest.raises(ValueError, match="out-of-range action"):
        noisy.step(KEY, state, jnp.asarray([0, 7], jnp.int32))


def test_a_batch_of_params_is_validated_elementwise_and_set_by_set(ipd):
    """``validate(batched=True)``: the README's sweep, checked before any tracing."""
    batch = jax.vmap(lambda v: ipd.default_params.replace(noise=v))(jnp.array([0.0, 0.5]))
    assert batch.validate(batched=True) is not None
    bad = jax.vmap(lambda v: ipd.default_params.replace(noise=v))(jnp.array([0.0, jnp.nan]))
    with pytest.raises(ValueError, match=r"MatrixParams\.noise is NaN"):
        bad.validate(batched=True)
    with pytest.raises(ValueError, match="same leading sweep axis"):
        ipd.default_params.replace(noise=jnp.array([0.0, 0.5])).validate(batched=True)


def test_params_traced_in_a_vmap_are_flagged_in_every_step():
    """Params built inside a ``vmap`` or ``jit`` of the caller's cannot be checked on the
    host: each step flags them in ``info["invalid_params"]`` (a NaN, a value out of its
    declared range, a bool field other than 0 or 1), and valid ones are never flagged."""
    env = sj.make("ipd", num_rounds=5)
    key = jax.random.key(0)
    _, state = env.reset(key)

    @jax.jit
    @jax.vmap
    def flags(noise, continue_prob):
        params = env.default_params.replace(noise=noise, continue_prob=continue_prob)
        return env.step(key, state, jnp.zeros((2,), jnp.int32), params)[4]["invalid_params"]

    noise = jnp.array([0.0, 0.1, jnp.nan, 1.5, 0.0, -0.2])
    continue_prob = jnp.array([1.0, 0.5, 1.0, 1.0, jnp.inf, 1.0])
    np.testing.assert_array_equal(flags(noise, continue_prob), [False, False, True, True, True, True])
    assert not bool(env.step(key, state, jnp.zeros((2,), jnp.int32))[4]["invalid_params"])
