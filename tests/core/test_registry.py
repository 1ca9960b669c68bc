"""The boundary of the contract: `make`, params, actions and keys.

Every bad input raises ``ValueError``/``TypeError`` naming what is at fault, before
anything is compiled; under ``jit`` an out-of-range action is replaced by the env's
no-op and flagged; ``checked(env)`` turns that into an error.
"""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import socialjax as sj

KEY = jax.random.key(0)
NUM_ROUNDS = 4


@pytest.fixture(scope="module")
def ipd():
    return sj.make("ipd", num_rounds=NUM_ROUNDS)


@pytest.fixture(scope="module")
def ipd_state(ipd):
    return ipd.reset(KEY)[1]


def test_registered_envs_include_the_foundation_envs():
    names = sj.registered_envs()
    assert names == sorted(names)
    assert {"chicken", "donor_game", "ipd", "matrix_game", "nplayer_matrix", "stag_hunt"} <= set(names)
    assert set(sj.describe_envs()) == set(sj.registered_envs())


def test_unknown_env_name_suggests_close_names():
    with pytest.raises(ValueError, match=r"unknown environment 'ipdd'.*Did you mean \['ipd'\]"):
        sj.make("ipdd")


def test_unknown_env_name_without_close_match_lists_registered():
    with pytest.raises(ValueError, match=r"unknown environment 'zzzz'.*Registered: \["):
        sj.make("zzzz")


def test_unknown_option_is_named():
    with pytest.raises(ValueError, match=r"ipd: unknown option\(s\) \['rounds'\]"):
        sj.make("ipd", rounds=10)


@pytest.mark.parametrize(
    "option, value, message",
    [
        ("noise", 1.5, r"noise=1.5 is above its maximum 1.0"),
        ("noise", -0.01, r"noise=-0.01 is below its minimum 0.0"),
        ("continue_prob", -0.1, r"continue_prob=-0.1 is below its minimum 0.0"),
        ("continue_prob", float("nan"), r"continue_prob is NaN"),
    ],
)
def test_param_out_of_range_at_make(option, value, message):
    with pytest.raises(ValueError, match=message):
        sj.make("ipd", **{option: value})


def test_wrong_payoff_shape_at_make():
    with pytest.raises(ValueError, match=r"payoffs must have shape \(2, 2, 2\)"):
        sj.make("matrix_game", payoffs=np.zeros((2, 2)))
    with pytest.raises(ValueError, match=r"payoffs must have shape \(2, num_agents\)=\(2, 3\)"):
        sj.make("nplayer_matrix", num_agents=3, payoffs=np.zeros((2, 2)))


@pytest.mark.parametrize(
    "name, options, message",
    [
        ("ipd", {"num_rounds": 0}, r"num_rounds must be an int >= 1, got 0"),
        ("ipd", {"num_rounds": 2.5}, r"num_rounds must be an int, got 2.5"),
        ("ipd", {"memory": 0}, r"memory must be an int >= 1, got 0"),
        ("matrix_game", {"game": "foo"}, r"game must be one of .* got 'foo'"),
        ("nplayer_matrix", {"num_agents": 1}, r"num_agents must be an int >= 2, got 1"),
    ],
)
def test_bad_static_option(name, options, message):
    with pytest.raises(ValueError, match=message):
        sj.make(name, **options)


def test_static_options_and_params_are_split(ipd):
    env = sj.make("ipd", num_rounds=7, noise=0.25)
    assert env.num_rounds == 7
    assert float(env.default_params.noise) == 0.25
    assert env.name == "ipd"


def test_with_params_returns_a_validated_copy():
    original = sj.make("ipd")
    step = jax.jit(original.step)
    obs, state = original.reset(KEY)
    env = original.with_params(noise=0.1, continue_prob=0.9)
    assert env is not original and float(original.default_params.noise) == 0.0
    # a function jitted on the original keeps its meaning (no stale in-place change)
    richer = original.with_params(payoffs=original.default_params.payoffs * 10)
    np.testing.assert_array_equal(step(KEY, state, jnp.zeros(2, jnp.int32))[2], [3.0, 3.0])
    np.testing.assert_array_equal(jax.jit(richer.step)(KEY, state, jnp.zeros(2, jnp.int32))[2], [30.0, 30.0])
    assert float(env.default_params.noise) == pytest.approx(0.1)
    assert float(env.default_params.continue_prob) == pytest.approx(0.9)
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['nosie'\]"):
        env.with_params(nosie=0.1)
    with pytest.raises(ValueError, match=r"noise=2.0 is above its maximum"):
        env.with_params(noise=2.0)
    assert float(env.default_params.noise) == pytest.approx(0.1)  # unchanged by the failures


def test_a_nested_list_param_becomes_one_array_as_from_a_json_config():
    table = [[[1, -1], [2, 0]], [[1, 2], [-1, 0]]]  # Weis et al. 2026's PD as JSON would hold it
    env = sj.make("ipd", payoffs=table)
    assert isinstance(env.default_params.payoffs, jax.Array)
    chex.assert_shape(env.default_params.payoffs, (2, 2, 2))
    chex.assert_type(env.default_params.payoffs, jnp.float32)
    _, state = env.reset(KEY)
    np.testing.assert_array_equal(env.step(KEY, state, jnp.array([1, 0], jnp.int32))[2], [2.0, -1.0])
    with pytest.raises(ValueError, match=r"payoffs must have shape \(2, 2, 2\)"):
        sj.make("ipd", payoffs=[[1, 2], [3, 4]])


def test_wrong_action_shape(ipd, ipd_state):
    with pytest.raises(ValueError, match=r"ipd: actions must have shape \(2,\) .* got \(3,\)"):
        ipd.step(KEY, ipd_state, jnp.zeros((3,), jnp.int32))
    with pytest.raises(ValueError, match=r"actions must have shape \(2,\)"):
        ipd.step(KEY, ipd_state, jnp.zeros((2, 1), jnp.int32))


def test_float_actions_to_discrete_env(ipd, ipd_state):
    with pytest.raises(TypeError, match=r"ipd: actions must be integers for Discrete\(2\), got dtype float32"):
        ipd.step(KEY, ipd_state, jnp.zeros((2,), jnp.float32))


def test_shape_and_dtype_are_checked_at_trace_time(ipd, ipd_state):
    step = jax.jit(ipd.step)
    with pytest.raises(TypeError, match="actions must be integers"):
        step(KEY, ipd_state, jnp.zeros((2,), jnp.float32))


def test_wrong_params_type(ipd, ipd_state):
    with pytest.raises(TypeError, match=r"ipd: params must be a MatrixParams .* got dict"):
        ipd.step(KEY, ipd_state, jnp.zeros((2,), jnp.int32), {"noise": 0.1})
    nplayer = sj.make("nplayer_matrix")
    with pytest.raises(TypeError, match=r"params must be a NPlayerParams .* got MatrixParams"):
        nplayer.reset(KEY, ipd.default_params)


def test_out_of_range_params_at_step(ipd, ipd_state):
    bad = ipd.default_params.replace(noise=jnp.float32(1.5))
    with pytest.raises(ValueError, match=r"noise=1.5 is above its maximum"):
        ipd.step(KEY, ipd_state, jnp.zeros((2,), jnp.int32), bad)


def test_bad_key(ipd):
    with pytest.raises(TypeError, match="key must be a jax.random key"):
        ipd.reset(0)
    with pytest.raises(TypeError, match="key must come from jax.random.key"):
        ipd.reset(jnp.zeros((3,), jnp.float32))


def test_out_of_range_action_under_jit_is_the_noop(ipd, ipd_state):
    step = jax.jit(ipd.step)
    actions = jnp.array([7, 0], jnp.int32)
    noop = jnp.array([ipd.noop_action, 0], jnp.int32)
    obs, state, reward, done, info = step(KEY, ipd_state, actions)
    obs_n, state_n, reward_n, done_n, info_n = step(KEY, ipd_state, noop)
    np.testing.assert_array_equal(info["invalid_action"], [True, False])
    np.testing.assert_array_equal(info_n["invalid_action"], [False, False])
    np.testing.assert_array_equal(obs, obs_n)
    np.testing.assert_array_equal(reward, reward_n)
    np.testing.assert_array_equal(info["executed"], noop)
    for a, b in zip(jax.tree_util.tree_leaves(state), jax.tree_util.tree_leaves(state_n)):
        np.testing.assert_array_equal(a, b)
    _, _, _, _, info_neg = step(KEY, ipd_state, jnp.array([0, -1], jnp.int32))
    np.testing.assert_array_equal(info_neg["invalid_action"], [False, True])


@pytest.fixture(scope="module")
def checked_ipd(ipd):
    return sj.checked(ipd)


def test_checked_raises_on_out_of_range_action(checked_ipd, ipd_state):
    with pytest.raises(ValueError, match="ipd: out-of-range action"):
        checked_ipd.step(KEY, ipd_state, jnp.array([0, 2], jnp.int32))


def test_checked_passes_a_valid_action(ipd, checked_ipd, ipd_state):
    actions = jnp.array([0, 1], jnp.int32)
    obs, state, reward, done, info = checked_ipd.step(KEY, ipd_state, actions)
    obs_ref, _, reward_ref, _, info_ref = jax.jit(ipd.step)(KEY, ipd_state, actions)
    np.testing.assert_array_equal(obs, obs_ref)
    np.testing.assert_array_equal(reward, reward_ref)
    assert not np.any(info["invalid_action"])
    assert checked_ipd.num_agents == 2  # other attributes are forwarded


def test_checked_batched():
    env = sj.checked(sj.make("ipd", num_rounds=NUM_ROUNDS), batched=True)
    keys = jax.random.split(KEY, 3)
    _, states = env.reset(keys)
    valid = jnp.array([[0, 1], [1, 1], [0, 0]], jnp.int32)
    _, _, reward, _, _ = env.step(keys, states, valid)
    chex.assert_shape(reward, (3, 2))
    with pytest.raises(ValueError, match="out-of-range action"):
        env.step(keys, states, valid.at[2, 1].set(5))


def test_default_params_first_built_inside_jit_do_not_leak_a_tracer():
    from socialjax.envs.donor.env import DonorGame

    env = DonorGame(num_agents=4)  # not via make: defaults are built lazily
    obs, state = jax.jit(env.reset)(KEY)  # first use of default_params is inside a trace
    step = jax.jit(env.step)
    for i in range(3):
        obs, state, *_ = step(jax.random.fold_in(KEY, i), state, jnp.zeros(4))
    assert not isinstance(env.default_params.multiplier, jax.core.Tracer)
