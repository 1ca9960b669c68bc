"""Tools for testing environments: the contract checks and the library rollout
(:func:`socialjax.rollout.rollout`, re-exported here).

For anyone writing an environment (and for socialjax's own tests)::

    import chex
    import jax
    from socialjax import testing

    traj = testing.check_env(MyEnv())          # the environment contract, or AssertionError
    run = jax.jit(lambda keys: testing.rollout(env, keys, 100))
    traj = run(jax.random.split(jax.random.key(0), 8))   # 8 envs x 100 random steps
    traj.reward                                # (8, 100, N)

    step = chex.assert_max_traces(env.step, n=1)   # a guard against recompiling
    sweep = jax.jit(jax.vmap(step))            # call it with new params: still one trace

``check_env`` compares trees with chex's assertions (``chex.assert_trees_all_equal_shapes_and_dtypes``
for the shapes, ``chex.assert_trees_all_equal`` / ``chex.assert_trees_all_close`` for the values,
``chex.assert_tree_all_finite`` for the rewards); a failure names the contract's rule
first, then chex's message (which leaf, what differs). The retrace guard is chex's
``chex.assert_max_traces``, and a rule test checks a function with and without ``jit``
with ``chex.variants`` (docs/testing.md, "Rule tests with and without jit").

Everything here uses only the public API of an environment (``reset``, ``step``,
``sample_actions``, ``action_space``, ``observation_space``, ``global_observation``,
``global_observation_space``, ``num_agents``), so it
works for wrappers too. Shapes: ``N = num_agents``, ``T = num_steps``, ``B`` envs.
"""

from __future__ import annotations

from collections.abc import Callable

import chex
import jax
import jax.numpy as jnp
import numpy as np

from socialjax.core.lazy import SidesDiffer
from socialjax.core.spaces import Box, Dict, Discrete, Space
from socialjax.core.wrappers import Wrapper
from socialjax.rollout import Trajectory, rollout, rollout_keys

__all__ = ["ATOL", "RTOL", "Trajectory", "assert_trees_same", "check_env", "rollout"]


def _auto_reset_key(key_step: jax.Array) -> jax.Array:
    """The key ``Environment.step(key_step, ...)`` resets from on ``done``: it splits
    its key into ``(step, reset)``."""
    return jax.random.split(key_step)[1]


# --------------------------------------------------------------------------- contract
INFO_KEYS = ("terminated", "truncated", "invalid_action", "invalid_params", "final_obs")
INVALID_RATE = 0.125  # fraction of actions check_env replaces by out-of-range ones
RTOL, ATOL = 2e-3, 1e-5  # floats of two programs that need not agree bit for bit


def check_env(env, params=None, *, key: jax.Array | int = 0, num_envs: int = 4, num_steps: int = 100,
              exact: bool | None = None, alone: bool = True, eager_steps: int = 3) -> Trajectory:
    """Check ``env`` against the socialjax environment contract (README, "The
    environment contract"); raise ``AssertionError`` naming the rule broken (and, where
    a chex assertion found it, chex's message: which leaf, what differs).

    1. Shapes, before anything is compiled (``jax.eval_shape``): ``reset`` returns
       observations ``(N, *space.shape)`` of the observation space's dtype (each entry
       of a ``Dict`` space); ``sample_actions`` gives ``(N, *action_shape)`` of the action
       space's dtype; ``step`` returns an observation and a state shaped like
       ``reset``'s, ``reward`` ``(N,) float32``, ``done`` ``() bool`` and an ``info`` dict
       with ``terminated`` and ``truncated`` ``() bool``, ``invalid_action`` ``(N,) bool``,
       ``invalid_params`` ``() bool`` and ``final_obs`` shaped like the observation; ``global_observation`` of
       ``reset``'s state has the shapes and dtypes of ``global_observation_space``
       (one game: no agent axis).
    2. One jitted ``vmap`` of ``num_envs`` rollouts of ``num_steps`` random steps, the
       params a traced argument, with about one action in eight replaced by an
       out-of-range one: every observation (also ``final_obs`` and fresh resets) lies in
       the observation space; the global observation of every state of the rollout (the
       first, stepped and auto-reset ones), computed in the same program under ``jit``
       and ``vmap`` (over the envs and over the steps), lies in the global observation
       space; rewards are finite; ``done == terminated | truncated``
       and never both; ``invalid_action`` flags exactly the out-of-range actions and
       ``invalid_params`` nothing (the params are valid); every
       env ends an episode; on a ``done`` step the observation and state are those of a
       fresh ``reset`` with the key ``step`` resets from, and ``final_obs`` equals the
       observation on every other step.
    3. Determinism: the same keys give the same bits again, and env 1 run alone (a
       second compiled program) gives env 1's trajectory of the batch (its global
       observations included): bit for bit when
       ``exact`` (default: on the CPU backend, where XLA computes float32 the same way in
       every program); otherwise integer and bool leaves equal and floats within
       ``rtol=2e-3, atol=1e-5`` (GPU reductions may sum in another order).
    4. Without ``jit``: ``reset`` and the first ``eager_steps`` steps of env 0, called
       eagerly (op by op, as when stepping by hand or in a debugger) with its keys and
       actions, give env 0's trajectory of the batch: what an environment does must not
       depend on being traced (e.g. a branch taken only on concrete values, or a value
       cached during a trace). Integer and bool leaves equal, floats within
       ``rtol=2e-3, atol=1e-5`` on every backend (a compiled program may fuse
       arithmetic, e.g. ``c - a * b`` into one multiply-add, that op-by-op calls round
       in between). Eager calls dispatch every operation on its own: a few seconds for
       a grid game.

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
        eager_steps: the steps of 4, at most ``num_steps``; ``0`` skips 4.

    Returns:
        The checked trajectory, ``(B, T, ...)`` leaves (a :class:`Trajectory`; ``actions``
        include the out-of-range ones), so a test can check more without compiling
        again.
    """
    rules = _Rules(getattr(env, "name", type(env).__name__))
    key = _checked_arguments(rules, key, num_envs, num_steps, eager_steps)
    params = env.default_params if params is None else params
    act_space = env.action_space(params)
    exact = jax.default_backend() == "cpu" if exact is None else exact

    _check_step_shapes(rules, env, key, params)  # 1. shapes and dtypes, traced only

    # 2. the batched rollout, once compiled
    bad_action = _out_of_range(act_space)
    one = _contract_rollout(env, num_steps, bad_action)
    keys = jax.random.split(key, num_envs)
    run = jax.jit(jax.vmap(one, in_axes=(0, None)))
    checked = jax.device_get(run(keys, params))
    _check_trajectory(rules, env, params, checked, bad_action, num_steps)

    _check_determinism(rules, run, one if alone else None, keys, params, checked, exact)  # 3. determinism
    _check_eager(rules, env, params, keys[0], _at(checked[0], 0), num_steps, int(eager_steps))  # 4. without jit
    return checked[0]


def _checked_arguments(rules: _Rules, key: jax.Array | int, num_envs: int, num_steps: int,
                       eager_steps: int) -> jax.Array:
    """``key`` as a key (an int is a seed); check_env's sizes refused as a broken rule
    where nothing can be checked with them (fewer than 2 envs, no step, more eager steps
    than steps)."""
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        key = jax.random.key(int(key))
    rules.check(int(num_envs) >= 2, f"check_env needs num_envs >= 2, got {num_envs}")
    rules.check(int(num_steps) >= 1, f"check_env needs num_steps >= 1, got {num_steps}")
    rules.check(0 <= int(eager_steps) <= int(num_steps),
                f"check_env needs 0 <= eager_steps <= num_steps={num_steps}, got {eager_steps}")
    return key


class _Rules:
    """How check_env reports a broken rule: ``AssertionError("<env name>: <rule>")``,
    followed by chex's message where a chex assertion found it."""

    def __init__(self, name: str):
        self.name = name

    def check(self, ok, rule: str) -> None:
        if not bool(ok):
            raise AssertionError(f"{self.name}: {rule}")

    def chex(self, assertion: Callable, *args, rule: str, **kwargs) -> None:
        """``assertion(*args, **kwargs)``, a chex assertion; its failure raised as ``rule``'s."""
        try:
            assertion(*args, **kwargs)
        except AssertionError as e:
            raise AssertionError(f"{self.name}: {rule} {e}") from None


def _check_step_shapes(rules: _Rules, env, key, params) -> None:
    """check_env's part 1: the shapes and dtypes of reset, sample_actions and step,
    traced only (``jax.eval_shape``)."""
    n = env.num_agents
    obs_space, act_space = env.observation_space(params), env.action_space(params)
    world_space = env.global_observation_space(params)
    shaped = chex.assert_trees_all_equal_shapes_and_dtypes
    obs, state = jax.eval_shape(env.reset, key, params)
    rules.chex(shaped, obs, _shapes(obs_space, (n,)),
               rule=f"reset's observation must be (N={n}, *shape) of each entry's dtype ({obs_space}):")
    world = jax.eval_shape(env.global_observation, state, params)
    rules.chex(shaped, world, _shapes(world_space, ()),
               rule=f"the global observation must have the shapes and dtypes of {world_space} (no agent axis):")
    acts = jax.eval_shape(env.sample_actions, key, params)
    rules.chex(shaped, acts, _shapes(act_space, (n,)),
               rule=f"sample_actions must give (N={n}, *shape) of the dtype of {act_space}:")
    rule = (f"step must return reset's shapes and dtypes of obs and state, reward ({n},) float32 (one per agent), "
            f'done () bool, info["terminated"] and ["truncated"] () bool, ["invalid_action"] ({n},) bool, '
            '["invalid_params"] () bool and ["final_obs"] shaped like obs:')
    try:
        step_obs, step_state, reward, done, info = jax.eval_shape(env.step, key, state, acts, params)
    except SidesDiffer as err:  # the auto-reset found the stepped state unlike the fresh one
        rules.check(False, f"{rule} {err}")
    rules.check(isinstance(info, dict), f"info must be a dict, got {type(info).__name__}")
    missing = [k for k in INFO_KEYS if k not in info]
    rules.check(not missing, f"info lacks {missing} (every step's info has {list(INFO_KEYS)})")
    flag, flags = jax.ShapeDtypeStruct((), jnp.bool_), jax.ShapeDtypeStruct((n,), jnp.bool_)
    rules.chex(
        shaped,
        {"obs": step_obs, "state": step_state, "reward": reward, "done": done, "info": {k: info[k] for k in INFO_KEYS}},
        {"obs": obs, "state": state, "reward": jax.ShapeDtypeStruct((n,), jnp.float32), "done": flag,
         "info": {"terminated": flag, "truncated": flag, "invalid_action": flags, "invalid_params": flag,
                  "final_obs": obs}},
        rule=rule,
    )


def _check_trajectory(rules: _Rules, env, params, checked, bad_action, num_steps: int) -> None:
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
            rules.check(np.asarray(part_space.contains(part)), f"{what}{label} lies outside {part_space}")
    rules.chex(chex.assert_tree_all_finite, traj.reward, rule="rewards must be finite:")
    term, trunc = info["terminated"], info["truncated"]
    rules.check(np.array_equal(done, term | trunc), 'done must equal info["terminated"] | info["truncated"]')
    rules.check(not np.any(term & trunc), 'info["terminated"] and info["truncated"] are never both True')
    rules.check(not np.any(info["invalid_params"]), 'info["invalid_params"] flags the valid params the rollout used')
    if bad_action is not None:
        rules.check(np.asarray(act_space.valid(traj.actions))[~bad].all(),
                    f"sample_actions gave actions outside {act_space}")
        rules.check(
            np.array_equal(info["invalid_action"], bad),
            f'info["invalid_action"] must flag exactly the out-of-range actions ({int(bad.sum())} given, '
            f'{int(info["invalid_action"].sum())} flagged, {int((info["invalid_action"] != bad).sum())} wrong)',
        )
    else:  # no out-of-range value exists (e.g. a Dict action space): nothing to flag
        rules.check(np.asarray(act_space.contains(traj.actions)), f"sample_actions gave actions outside {act_space}")
        rules.check(not info["invalid_action"].any(), 'info["invalid_action"] flags valid actions')
    rules.check(done.any(axis=1).all(),
                f"no episode ended within num_steps={num_steps} steps in some env: pass more steps")
    # the step that ends an episode returns the next one's first observation and state
    next_obs, next_state = _at(traj.obs, np.s_[:, 1:]), _at(_inner_state(env, traj.state), np.s_[:, 1:])
    rules.chex(chex.assert_trees_all_equal, _at(next_obs, done), _at(reset_obs, done),
               rule="on a done step, step must return the observation of a fresh reset:")
    rules.chex(chex.assert_trees_all_equal, _at(next_state, done), _at(reset_state, done),
               rule="on a done step, step must return the state of a fresh reset:")
    rules.chex(chex.assert_trees_all_equal, _at(info["final_obs"], ~done), _at(next_obs, ~done),
               rule='info["final_obs"] must equal the observation on a step without done:')


def _check_determinism(rules: _Rules, run, one, keys, params, checked, exact: bool) -> None:
    """check_env's part 3: ``run`` (the batch) again gives ``checked``, and ``one`` (env 1
    alone; ``None``: not compared) gives env 1 of the batch."""
    again = jax.device_get(run(keys, params))
    rules.chex(assert_trees_same, again, checked, exact=True, rule="the same keys gave different trajectories:")
    if one is not None:
        single = jax.device_get(jax.jit(one)(keys[1], params))
        in_batch = _at(checked, 1)
        how = "bit for bit" if exact else f"to rtol={RTOL}, atol={ATOL}"
        rules.chex(
            assert_trees_same, single, in_batch, exact=exact,
            rule=f"env 1 run alone must give env 1's trajectory of the batch ({how}): does the env depend on the "
                 "batch, or on a value fixed while tracing (e.g. numpy randomness)?",
        )


def _check_eager(rules: _Rules, env, params, key, traj: Trajectory, num_steps: int, eager_steps: int) -> None:
    """check_env's part 4: env 0 (``key``, its trajectory ``traj``: ``(T, ...)`` leaves)
    reset and stepped ``eager_steps`` times without jit."""
    if not eager_steps:
        return
    key_reset, _, key_step = rollout_keys(jax.random.split(key, 3)[0], num_steps)
    labels = ("obs", "state", "reward", "done", "info")
    got = {"reset": dict(zip(labels, env.reset(key_reset, params)))}
    want = {"reset": {"obs": _at(traj.obs, 0), "state": _at(traj.state, 0)}}
    for t in range(eager_steps):
        state = got[f"step {t - 1}" if t else "reset"]["state"]
        got[f"step {t}"] = dict(zip(labels, env.step(key_step[t], state, traj.actions[t], params)))
        want[f"step {t}"] = {"obs": _at(traj.obs, t + 1), "state": _at(traj.state, t + 1), "reward": traj.reward[t],
                             "done": traj.done[t], "info": _at(traj.info, t)}
    rules.chex(assert_trees_same, jax.device_get(_key_data(got)), want, exact=False,
               rule=f"reset and {eager_steps} steps called without jit must give the jitted trajectory (floats "
                    f"to rtol={RTOL}, atol={ATOL}): does the env take another path on concrete values than on traced "
                    "ones?")


def assert_trees_same(actual, desired, exact: bool) -> None:
    """The same tree structure, shapes and dtypes (chex), and equal leaves; unless
    ``exact``, floating leaves only within :data:`RTOL`, :data:`ATOL` (NaN equal to NaN),
    integer and bool leaves still equal: how two programs that need not agree bit for
    bit (jitted and op by op; another backend's fusion or TF32) are compared."""
    if exact:
        chex.assert_trees_all_equal(actual, desired, strict=True)
        return
    chex.assert_trees_all_close(actual, desired, rtol=RTOL, atol=ATOL, strict=True)

    def discrete(tree):
        return [x for x in jax.tree_util.tree_leaves(tree) if not np.issubdtype(x.dtype, np.inexact)]

    chex.assert_trees_all_equal(discrete(actual), discrete(desired), strict=True)


def _at(tree, index):
    """Every leaf of ``tree`` indexed: ``x[index]``."""
    return jax.tree_util.tree_map(lambda x: x[index], tree)


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
        return [(obs[k], s, f"[{k!r}]") for k, s in space.spaces.items()]
    return [(obs, space, "")]


def _shapes(space: Space, lead: tuple):
    """What an array of ``space`` is, with the leading axes ``lead``: a
    ``jax.ShapeDtypeStruct`` (a dict of them for a Dict space), for chex to compare."""
    if isinstance(space, Dict):
        return {k: _shapes(s, lead) for k, s in space.spaces.items()}
    return jax.ShapeDtypeStruct(lead + tuple(space.shape), space.dtype)
