"""``lazy_where`` (the auto-reset and the grid games' respawn run only on steps that need
them): the same bits as a select of both sides, however the call is batched; on the CPU
the expensive side is skipped when no instance of the whole batch needs it."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import socialjax as sj
from socialjax.core.lazy import lazy_where, select


def expensive(x, k):
    return x * 2.0 + jax.random.uniform(k, x.shape)


def cheap(x, k):
    return x - 1.0


def lazy(pred, x, k):
    return lazy_where(pred, expensive, cheap, x, k)


def reference(pred, x, k):
    return select(pred, expensive(x, k), cheap(x, k))


def assert_same_bits(a, b):
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.mark.parametrize("any_true", [False, True])
def test_the_same_bits_as_a_select_however_it_is_batched(any_true):
    keys = jax.random.split(jax.random.key(0), 12).reshape(3, 4)
    x = jnp.arange(36.0).reshape(3, 4, 3)
    pred = jnp.zeros((3, 4), bool).at[1, 2].set(any_true)
    for pred_, x_, k_ in [(pred[1, 2], x[1, 2], keys[1, 2]), (pred[1], x[1], keys[1])]:
        fn = lazy if pred_.ndim == 0 else jax.vmap(lazy)
        ref = reference if pred_.ndim == 0 else jax.vmap(reference)
        assert_same_bits(fn(pred_, x_, k_), ref(pred_, x_, k_))
        assert_same_bits(jax.jit(fn)(pred_, x_, k_), ref(pred_, x_, k_))
    # two levels of vmap, and arguments batched at one level only
    assert_same_bits(jax.jit(jax.vmap(jax.vmap(lazy)))(pred, x, keys), jax.vmap(jax.vmap(reference))(pred, x, keys))
    shared = jax.vmap(jax.vmap(lazy, in_axes=(0, None, 0)), in_axes=(0, 0, 0))
    shared_ref = jax.vmap(jax.vmap(reference, in_axes=(0, None, 0)), in_axes=(0, 0, 0))
    assert_same_bits(jax.jit(shared)(pred, x[:, 0], keys), shared_ref(pred, x[:, 0], keys))
    # inside a scan, as every rollout calls it
    def rollout(x):
        def body(x, t):
            return jax.vmap(lazy)(pred[t % 3], x, keys[t % 3]), None
        return jax.lax.scan(body, x, jnp.arange(5))[0]

    def rollout_ref(x):
        def body(x, t):
            return jax.vmap(reference)(pred[t % 3], x, keys[t % 3]), None
        return jax.lax.scan(body, x, jnp.arange(5))[0]

    assert_same_bits(jax.jit(rollout)(x[0]), rollout_ref(x[0]))


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="only the CPU skips the work: other backends select")
def test_on_the_cpu_the_expensive_side_runs_only_when_some_instance_needs_it():
    calls = []

    def counted(x, k):
        jax.debug.callback(lambda: calls.append(1))
        return expensive(x, k)

    fn = jax.jit(jax.vmap(jax.vmap(lambda p, x, k: lazy_where(p, counted, cheap, x, k))))
    keys = jax.random.split(jax.random.key(1), 6).reshape(2, 3)
    x = jnp.ones((2, 3, 2))
    jax.block_until_ready(fn(jnp.zeros((2, 3), bool), x, keys))
    jax.effects_barrier()
    assert calls == []
    out = fn(jnp.zeros((2, 3), bool).at[0, 1].set(True), x, keys)
    jax.effects_barrier()
    assert calls  # ran, for the whole batch
    assert_same_bits(out, jax.vmap(jax.vmap(reference))(jnp.zeros((2, 3), bool).at[0, 1].set(True), x, keys))


# ------------------------------------------------------------------ the auto-reset
ENVS = {  # short episodes, so that games end (and some games end before others) in a few steps
    "harvest_open": dict(episode="fixed", episode_length=4),
    "cleanup": dict(episode="fixed", episode_length=3),
    "ipd": dict(num_rounds=3),
    "public_goods": dict(num_periods=2),
}


def step_by_select(env, key, state, actions, params):
    """What ``Environment.step``'s auto-reset computed before it was lazy."""
    key_step, key_reset = jax.random.split(key)
    stepped, reward, done, info = env.transition(key_step, state, env.prepare_actions(actions, params)[0], params)
    state = select(done, env.initial_state(key_reset, params), stepped)
    return env.get_obs(state, params), state, reward, done


def rollouts(env, stepper, seeds, games, steps=7):
    """A jitted ``key -> trajectory`` of ``seeds`` x ``games`` games (vmap of vmap);
    games start at staggered times so that they end on different steps."""
    params = env.default_params

    def one_seed(key):
        keys = jax.random.split(key, games)
        _, state = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
        for g in range(1, games):  # stagger: game g has already taken g % 3 steps
            for _ in range(g % 3):
                st = jax.tree_util.tree_map(lambda x: x[g], state)
                st = stepper(env, jax.random.fold_in(key, g), st, env.sample_actions(key, params), params)[1]
                state = jax.tree_util.tree_map(lambda x, y: x.at[g].set(y), state, st)

        def body(state, k):
            ka, ks = jax.random.split(k)
            actions = jax.vmap(env.sample_actions, in_axes=(0, None))(jax.random.split(ka, games), params)
            out = jax.vmap(lambda k, s, a: stepper(env, k, s, a, params)[:4])(jax.random.split(ks, games), state,
                                                                               actions)
            return out[1], out

        return jax.lax.scan(body, state, jax.random.split(key, steps))[1]

    return jax.jit(lambda key: jax.vmap(one_seed)(jax.random.split(key, seeds)))


def by_env_step(env, key, state, actions, params):
    return env.step(key, state, actions, params)[:4]


@pytest.mark.parametrize("name", sorted(ENVS))
def test_the_auto_reset_gives_the_bits_of_a_fresh_state_selected_where_done(name):
    env = sj.make(name, **ENVS[name])
    key = jax.random.key(3)
    lazy = rollouts(env, by_env_step, seeds=2, games=3)
    lazy_run = lazy(key)
    assert_same_bits(lazy_run, rollouts(env, step_by_select, seeds=2, games=3)(key))
    done = np.asarray(lazy_run[3])
    assert done.any() and not done.all(axis=(0, 2)).all()  # games ended, not all on the same steps
    assert_same_bits(lazy_run, lazy(key))  # the same key, the same bits


def test_derivatives_are_those_of_the_select():
    """Reverse and forward mode through ``lazy_where`` (and so through a step) give the
    select's derivatives, batched or not."""
    x = jnp.array([[1.0, 2.0], [-3.0, -4.0]])

    def lazy_sum(x):
        return jax.vmap(lambda x: lazy_where(x.sum() > 0, lambda x: x * x, lambda x: 3.0 * x, x))(x).sum()

    def select_sum(x):
        return jax.vmap(lambda x: select(x.sum() > 0, x * x, 3.0 * x))(x).sum()

    np.testing.assert_array_equal(jax.grad(lazy_sum)(x), jax.grad(select_sum)(x))
    np.testing.assert_array_equal(jax.grad(lazy_sum)(x), [[2.0, 4.0], [3.0, 3.0]])
    np.testing.assert_array_equal(jax.jvp(lazy_sum, (x,), (jnp.ones_like(x),))[1],
                                  jax.jvp(select_sum, (x,), (jnp.ones_like(x),))[1])
