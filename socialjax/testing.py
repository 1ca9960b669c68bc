"""Tools for testing environments: the contract checks, a retrace guard, and the library
rollout (:func:`socialjax.rollout.rollout`, re-exported here).

For anyone writing an environment (and for socialjax's own tests)::

    import jax
    from socialjax import testing

    traj = testing.check_env(MyEnv())          # the environment contract, or AssertionError
    run = jax.jit(lambda keys: testing.rollout(env, keys, 100))
    traj = run(jax.random.split(jax.random.key(0), 8))   # 8 envs x 100 random steps
    traj.reward                                # (8, 100, N)

    step = testing.assert_max_traces(env.step, n=1)   # a guard against recompiling
    sweep = jax.jit(jax.vmap(step))            # call it with new params: still one trace

Everything here uses only the public API of an environment (``reset``, ``step``,
``sample_actions``, ``action_space``, ``observation_space``, ``global_observation``,
``global_observation_space``, ``num_agents``), so it
works for wrappers too. Shapes: ``N = num_agents``, ``T = num_steps``, ``B`` envs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from socialjax.core.spaces import Box, Dict, Discrete, Space
from socialjax.core.wrappers import Wrapper
from socialjax.rollout import Trajectory, rollout, rollout_keys

__all__ = ["Trajectory", "assert_max_traces", "check_env", "rollout"]


def _auto_reset_key(key_step: jax.Array) -> jax.Array:
    """The key ``Environment.step(key_step, ...)`` resets from on ``done``: it splits
    its key into ``(step, reset)``."""
    return jax.random.split(key_step)[1]


# --------------------------------------------------------------------------- contract
INFO_KEYS = ("terminated", "truncated", "invalid_action", "final_obs")
INVALID_RATE = 0.125  # fraction of actions check_env replaces by out-of-range ones


def check_env(
    env,
    params=None,
    *,
    key: jax.Array | int = 0,
    num_envs: int = 4,
    num_steps: int = 100,
    exact: bool | None = None,
    alone: bool = True,
) -> Trajectory:
    """Check ``env`` against the socialjax environment contract (README, "The
    environment contract"); raise ``AssertionError`` naming the rule broken.

    1. Shapes, before anything is compiled (``jax.eval_shape``): ``reset`` returns
       observations ``(N, *space.shape)`` of the observation space's dtype (each entry
       of a ``Dict`` space); ``sample_actions`` gives ``(N, *action_shape)`` of the action
       space's dtype; ``step`` returns an observation and a state shaped like
       ``reset``'s, ``reward`` ``(N,) float32``, ``done`` ``() bool`` and an ``info`` dict
       with ``terminated`` and ``truncated`` ``() bool``, ``invalid_action`` ``(N,) bool``
       and ``final_obs`` shaped like the observation; ``global_observation`` of
       ``reset``'s state has the shapes and dtypes of ``global_observation_space``
       (one game: no agent axis).
    2. One jitted ``vmap`` of ``num_envs`` rollouts of ``num_steps`` random steps, the
       params a traced argument, with about one action in eight replaced by an
       out-of-range one: every observation (also ``final_obs`` and fresh resets) lies in
       the observation space; the global observation of every state of the rollout (the
       first, stepped and auto-reset ones), computed in the same program under ``jit``
       and ``vmap`` (over the envs and over the steps), lies in the global observation
       space; rewards are finite; ``done == terminated | truncated``
       and never both; ``invalid_action`` flags exactly the out-of-range actions; every
       env ends an episode; on a ``done`` step the observation and state are those of a
       fresh ``reset`` with the key ``step`` resets from, and ``final_obs`` equals the
       observation on every other step.
    3. Determinism: the same keys give the same bits again, and env 1 run alone (a
       second compiled program) gives env 1's trajectory of the batch (its global
       observations included): bit for bit when
       ``exact`` (default: on the CPU backend, where XLA computes float32 the same way in
       every program); otherwise integer and bool leaves equal and floats within
       ``rtol=2e-3, atol=1e-5`` (GPU reductions may sum in another order).

    Args:
        env: an environment or wrapper (wrappers pass the state of the environment
            they hold as ``state.env_state``, or unchanged).
        params: the params to check (default ``env.default_params``).
        key: a ``jax.random.key`` or an int seed.
        num_envs: ``B >= 2``. num_steps: ``T``; long enough for every env to end an
            episode.
        exact: see 3.
        alone: run env 1 alone and compare (3; a second compilation). ``False``
            skips that part, e.g. for a second map of a game already checked alone.

    Returns:
        The checked trajectory, ``(B, T, ...)`` leaves (a :class:`Trajectory`; ``actions``
        include the out-of-range ones), so a test can check more without compiling
        again.
    """
    name = getattr(env, "name", type(env).__name__)

    def check(ok, message):
        if not bool(ok):
            raise AssertionError(f"{name}: {message}")

    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        key = jax.random.key(int(key))
    check(int(num_envs) >= 2, f"check_env needs num_envs >= 2, got {num_envs}")
    check(int(num_steps) >= 1, f"check_env needs num_steps >= 1, got {num_steps}")
    params = env.default_params if params is None else params
    act_space = env.action_space(params)
    exact = jax.default_backend() == "cpu" if exact is None else exact

    # 1. shapes and dtypes, traced only
    _check_step_shapes(check, env, key, params)

    # 2. the batched rollout, once compiled
    bad_action = _out_of_range(act_space)
    one = _contract_rollout(env, num_steps, bad_action)
    keys = jax.random.split(key, num_envs)
    run = jax.jit(jax.vmap(one, in_axes=(0, None)))
    checked = jax.device_get(run(keys, params))
    _check_trajectory(check, env, params, checked, bad_action, num_steps)

    # 3. determinism
    _check_determinism(check, run, one if alone else None, keys, params, checked, exact)
    return checked[0]


def _check_step_shapes(check, env, key, params) -> None:
    """check_env's part 1: the shapes and dtypes of reset, sample_actions and step,
    traced only (``jax.eval_shape``)."""
    n = env.num_agents
    obs_space, act_space = env.observation_space(params), env.action_space(params)
    obs, state = jax.eval_shape(env.reset, key, params)
    _check_obs_shapes(check, obs, obs_space, (n,), "reset's observation")
    world = jax.eval_shape(env.global_observation, state, params)
    _check_obs_shapes(check, world, env.global_observation_space(params), (), "the global observation")
    acts = jax.eval_shape(env.sample_actions, key, params)
    want = (n, *act_space.shape)
    check(
        acts.shape == want and acts.dtype == act_space.dtype,
        f"sample_actions must give {want} {act_space.dtype} (N={n}, {act_space}), got {acts.shape} {acts.dtype}",
    )
    out = jax.eval_shape(env.step, key, state, acts, params)
    step_obs, step_state, reward, done, info = out
    _check_same_shapes(check, step_obs, obs, "step's observation", "reset's")
    _check_same_shapes(check, step_state, state, "step's state", "reset's")
    check(
        reward.shape == (n,) and reward.dtype == jnp.float32,
        f"reward must be ({n},) float32 (one per agent), got {reward.shape} {reward.dtype}",
    )
    check(done.shape == () and done.dtype == jnp.bool_, f"done must be a () bool, got {done.shape} {done.dtype}")
    check(isinstance(info, dict), f"info must be a dict, got {type(info).__name__}")
    missing = [k for k in INFO_KEYS if k not in info]
    check(not missing, f"info lacks {missing} (every step's info has {list(INFO_KEYS)})")
    for k in ("terminated", "truncated"):
        x = info[k]
        check(x.shape == () and x.dtype == jnp.bool_, f'info["{k}"] must be a () bool, got {x.shape} {x.dtype}')
    x = info["invalid_action"]
    check(x.shape == (n,) and x.dtype == jnp.bool_,
          f'info["invalid_action"] must be ({n},) bool, got {x.shape} {x.dtype}')
    _check_same_shapes(check, info["final_obs"], obs, 'info["final_obs"]', "the observation")


def _check_trajectory(check, env, params, checked, bad_action, num_steps: int) -> None:
    """check_env's part 2 on the batch's ``checked = (traj, bad, reset_obs, reset_state,
    world)`` (numpy leaves, ``(B, T, ...)``)."""
    traj, bad, reset_obs, reset_state, world = checked
    obs_space, act_space = env.observation_space(params), env.action_space(params)
    done, info = traj.done, traj.info
    observed = (("an observation", traj.obs, obs_space), ('info["final_obs"]', info["final_obs"], obs_space),
                ("a reset's observation", reset_obs, obs_space),
                ("a global observation", world, env.global_observation_space(params)))
    for what, x, space in observed:
        for part, part_space, label in _obs_parts(x, space):
            check(np.asarray(part_space.contains(part)), f"{what}{label} lies outside {part_space}")
    check(np.isfinite(traj.reward).all(), "rewards must be finite")
    term, trunc = info["terminated"], info["truncated"]
    check(np.array_equal(done, term | trunc), 'done must equal info["terminated"] | info["truncated"]')
    check(not np.any(term & trunc), 'info["terminated"] and info["truncated"] are never both True')
    if bad_action is not None:
        check(np.asarray(act_space.valid(traj.actions))[~bad].all(), f"sample_actions gave actions outside {act_space}")
        check(
            np.array_equal(info["invalid_action"], bad),
            f'info["invalid_action"] must flag exactly the out-of-range actions ({int(bad.sum())} given, '
            f'{int(info["invalid_action"].sum())} flagged, {int((info["invalid_action"] != bad).sum())} wrong)',
        )
    else:  # no out-of-range value exists (e.g. a Dict action space): nothing to flag
        check(np.asarray(act_space.contains(traj.actions)), f"sample_actions gave actions outside {act_space}")
        check(not info["invalid_action"].any(), 'info["invalid_action"] flags valid actions')
    check(done.any(axis=1).all(), f"no episode ended within num_steps={num_steps} steps in some env: pass more steps")
    # the step that ends an episode returns the next one's first observation and state
    after = lambda tree: jax.tree_util.tree_map(lambda x: x[:, 1:], tree)  # noqa: E731
    leaves = jax.tree_util.tree_leaves
    for what, got, fresh in (
        ("observation", after(traj.obs), reset_obs),
        ("state", after(_inner_state(env, traj.state)), reset_state),
    ):
        for x, y in zip(leaves(got), leaves(fresh)):
            check(np.array_equal(x[done], y[done]), f"on a done step, step must return the {what} of a fresh reset")
    for final, got in zip(leaves(info["final_obs"]), leaves(after(traj.obs))):
        check(np.array_equal(final[~done], got[~done]),
              'info["final_obs"] must equal the observation on a step without done')


def _check_determinism(check, run, one, keys, params, checked, exact: bool) -> None:
    """check_env's part 3: ``run`` (the batch) again gives ``checked``, and ``one`` (env 1
    alone; ``None``: not compared) gives env 1 of the batch."""
    again = jax.device_get(run(keys, params))
    check(_tree_equal(again, checked), "the same keys gave different trajectories")
    if one is not None:
        single = jax.device_get(jax.jit(one)(keys[1], params))
        in_batch = jax.tree_util.tree_map(lambda x: x[1], checked)
        how = "bit for bit" if exact else "to rtol=2e-3, atol=1e-5"
        check(
            _tree_equal(single, in_batch, exact),
            f"env 1 run alone must give env 1's trajectory of the batch ({how}): does the env depend on the "
            "batch, or on a value fixed while tracing (e.g. numpy randomness)?",
        )


def _contract_rollout(env, num_steps: int, bad_action):
    """``one(key, params) -> (traj, bad (T, N), reset_obs (T, ...), reset_state (T, ...),
    world (T + 1, ...))``: random actions, each replaced by ``bad_action`` with
    probability INVALID_RATE, per step a fresh reset with the key of the step's
    auto-reset (the innermost state), and the global observation of every state of the
    trajectory."""

    def one(key, params):
        key_env, key_act, key_bad = jax.random.split(key, 3)
        act_keys = jax.random.split(key_act, num_steps)
        actions = jax.vmap(lambda k: env.sample_actions(k, params))(act_keys)
        if bad_action is None:
            bad = jnp.zeros(actions.shape[:2], bool)
        else:
            bad = jax.random.bernoulli(key_bad, INVALID_RATE, actions.shape[:2])
            mask = bad.reshape(bad.shape + (1,) * (actions.ndim - 2))
            actions = jnp.where(mask, bad_action, actions)
        traj = rollout(env, key_env, num_steps, params=params, actions=actions)
        _, _, key_step = rollout_keys(key_env, num_steps)
        reset_obs, reset_state = jax.vmap(lambda k: env.reset(_auto_reset_key(k), params))(key_step)
        world = jax.vmap(lambda state: env.global_observation(state, params))(traj.state)
        # keys held in a state compare as their data (numpy cannot hold typed keys)
        return _key_data((traj, bad, reset_obs, _inner_state(env, reset_state), world))

    return one


def _key_data(tree):
    as_data = lambda x: jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x  # noqa: E731
    return jax.tree_util.tree_map(as_data, tree)


def _out_of_range(space: Space):
    """An action (array of the space's shape and dtype) outside ``space``, or None."""
    if isinstance(space, Discrete):
        return jnp.asarray(space.n, space.dtype)
    if isinstance(space, Box):
        if jnp.issubdtype(space.dtype, jnp.floating):
            return jnp.full(space.shape, jnp.nan, space.dtype)
        info = np.iinfo(space.dtype)
        if np.all(space.high < info.max):
            return jnp.asarray(space.high.astype(np.int64) + 1, space.dtype)
        if np.all(space.low > info.min):
            return jnp.asarray(space.low.astype(np.int64) - 1, space.dtype)
    return None


def _inner_state(env, state):
    """The state of the innermost environment: a wrapper holds its environment's state
    as ``state.env_state`` (or passes it through unchanged)."""
    while isinstance(env, Wrapper):
        state = getattr(state, "env_state", state)
        env = env._env
    return state


def _obs_parts(obs, space: Space):
    """``(array, space, label)`` per observation entry (a Dict space has several)."""
    if isinstance(space, Dict):
        if not isinstance(obs, dict) or set(obs) != set(space.spaces):
            got = sorted(obs) if isinstance(obs, dict) else type(obs).__name__
            raise AssertionError(f"the observation must be a dict with keys {sorted(space.spaces)} ({space}), "
                                 f"got {got}")
        return [(obs[k], s, f"[{k!r}]") for k, s in space.spaces.items()]
    return [(obs, space, "")]


def _check_obs_shapes(check, obs, space: Space, lead: tuple, what: str) -> None:
    try:
        parts = _obs_parts(obs, space)
    except AssertionError as e:
        check(False, f"{what}: {e}")
    for part, part_space, label in parts:
        want = lead + tuple(part_space.shape)
        per = f"N={lead[0]}, " if lead else ""
        check(
            part.shape == want and part.dtype == part_space.dtype,
            f"{what}{label} must be {want} {part_space.dtype} ({per}{part_space}), "
            f"got {part.shape} {part.dtype}",
        )


def _check_same_shapes(check, got, want, what: str, like: str) -> None:
    tree_got, tree_want = jax.tree_util.tree_structure(got), jax.tree_util.tree_structure(want)
    check(tree_got == tree_want, f"{what} must have the structure of {like}: {tree_got} vs {tree_want}")
    for path, (a, b) in zip(
        (jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path(want)),
        zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)),
    ):
        check(a.shape == b.shape and a.dtype == b.dtype,
              f"{what}{path} is {a.shape} {a.dtype}, {like} {b.shape} {b.dtype}")


def _tree_equal(a, b, exact: bool = True) -> bool:
    """Same structure and equal leaves; unless ``exact``, floating leaves only close."""
    leaves_a, tree_a = jax.tree_util.tree_flatten(a)
    leaves_b, tree_b = jax.tree_util.tree_flatten(b)
    if tree_a != tree_b:
        return False
    for x, y in zip(leaves_a, leaves_b):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if exact or not np.issubdtype(x.dtype, np.inexact):
            if not np.array_equal(x, y, equal_nan=np.issubdtype(x.dtype, np.inexact)):
                return False
        elif not np.allclose(x, y, rtol=2e-3, atol=1e-5, equal_nan=True):
            return False
    return True


# --------------------------------------------------------------------------- retrace guard
def assert_max_traces(fn: Callable, n: int = 1) -> Callable:
    """``fn`` wrapped to count how often JAX traces it, raising ``AssertionError`` on
    trace ``n + 1``: a guard against recompiling.

    Wrap the plain function, then transform the wrapper (``jax.jit(assert_max_traces(f))``,
    not the other way round), and keep the transformed function to call it again. A call
    counts as a trace when an argument is a tracer (``jit``, ``vmap``, ``eval_shape``,
    ...); a cached compiled call does not call ``fn`` at all. The count is the wrapper's
    own (``.traces``), so guards on the same function never share it::

        step = assert_max_traces(env.step, n=1)
        sweep = jax.jit(jax.vmap(step, in_axes=(0, 0, 0, 0)))
        sweep(keys, states, actions, params_a)   # traced once
        sweep(keys, states, actions, params_b)   # new values, same shapes: no retrace
        assert step.traces == 1

    Retraced are, e.g., new shapes or dtypes, a strongly typed array where a weakly typed
    scalar was (``default_params`` holds Python numbers as weakly typed scalars, so
    ``replace(noise=jnp.float32(0.1))`` is a new signature; ``replace(noise=0.1)`` is
    not), and a changed static argument.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"assert_max_traces: n must be a non-negative int, got {n!r}")
    if not callable(fn):
        raise TypeError(f"assert_max_traces: fn must be callable, got {type(fn).__name__}")

    @functools.wraps(fn)
    def guarded(*args, **kwargs):
        if any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves((args, kwargs))):
            guarded.traces += 1
            if guarded.traces > n:
                raise AssertionError(
                    f"{getattr(fn, '__qualname__', fn)!s} traced {guarded.traces} times (at most {n} allowed): "
                    "a jitted function recompiled, e.g. for new shapes or dtypes, a strongly typed array "
                    "where a weakly typed scalar (a Python number) was, or a changed static argument"
                )
        return fn(*args, **kwargs)

    guarded.traces = 0
    return guarded
