"""The library rollout: steps of a policy and ``env.step``, as one ``lax.scan``.

Two levels of one engine::

    import jax, socialjax as sj

    traj = jax.jit(lambda k: sj.rollout(env, k, 100))(jax.random.key(0))   # random actions
    traj.reward                                   # (100, N); a Trajectory, obs/state (101, ...)

    # a scripted episode: given start, step keys and per-step inputs, only what is needed kept
    run = scan_steps(env, env.reset(key_reset, params), lambda x, obs, state: policy(obs),
                     keys=jax.random.split(key_run, T), params=params, auto_reset=False,
                     record=infos("harvest"))
    run.records                                   # ((T, N),)

:func:`rollout` starts from a reset and derives every key from one; :func:`scan_steps`
(which it runs on) takes the start, the keys and the policy's inputs as given and keeps
what ``record`` extracts of each :class:`Step`, plus a carry it may accumulate in.
Everything here uses only the public API of an environment (``reset``, ``step``,
``sample_actions``), so it works for wrappers too (``auto_reset=False`` needs an
environment's own ``step``). Shapes: ``N = num_agents``, ``T`` steps, ``B`` envs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["Run", "Step", "Trajectory", "infos", "rollout", "rollout_keys", "scan_steps"]

#: ``policy(key, obs, state) -> actions (N, *action_shape)``, jittable
Policy = Callable[[jax.Array, Any, Any], jax.Array]


class Step(NamedTuple):
    """One step as ``record`` sees it: ``obs``, ``state``: what the actions were chosen
    from; ``actions`` ``(N, *action_shape)`` as passed to ``step``; then what ``step``
    returned: ``next_obs``, ``next_state``, ``reward`` ``(N,)``, ``done`` ``()``, ``info``."""

    obs: Any
    state: Any
    actions: jax.Array
    next_obs: Any
    next_state: Any
    reward: jax.Array
    done: jax.Array
    info: dict


class Run(NamedTuple):
    """What :func:`scan_steps` returns: the last observation and state, the final carry
    and ``records``, ``record``'s outputs stacked on a leading ``T`` axis."""

    obs: Any
    state: Any
    carry: Any
    records: Any


class Trajectory(NamedTuple):
    """The steps of a :func:`rollout`, stacked on a leading time axis (after the batch
    axis ``B`` when several keys were given: ``(B, T, ...)``).

    - ``obs``: ``(T + 1, N, ...)``: ``obs[0]`` from ``reset``, ``obs[t + 1]`` returned by
      step ``t`` (on a ``done`` step: the next episode's first observation). So
      ``obs[:-1]`` is what each step's actions were chosen from.
    - ``state``: the states likewise, ``(T + 1, ...)`` leaves.
    - ``actions``: ``(T, N, *action_shape)``, as passed to ``step`` (before any
      out-of-range action is replaced by the no-op).
    - ``reward``: ``(T, N)``; ``done``: ``(T,)``; ``info``: ``(T, ...)`` leaves.
    """

    obs: Any
    state: Any
    actions: jax.Array
    reward: jax.Array
    done: jax.Array
    info: dict


def _record_transition(carry, step: Step):
    """The default ``record``: what a :class:`Trajectory` keeps of a step."""
    return carry, (step.next_obs, step.next_state, step.actions, step.reward, step.done, step.info)


def infos(*names: str) -> Callable[[Any, Step], tuple[Any, tuple]]:
    """A ``record`` that keeps the ``info`` entries ``names`` of every step (a tuple, in
    that order) and leaves the carry alone."""
    return lambda carry, step: (carry, tuple(step.info[name] for name in names))


def scan_steps(
    env,
    start: tuple[Any, Any],
    policy: Callable[[Any, Any, Any], jax.Array],
    *,
    keys: jax.Array,
    inputs: Any = None,
    params=None,
    record: Callable[[Any, Step], tuple[Any, Any]] = _record_transition,
    carry: Any = None,
    auto_reset: bool = True,
) -> Run:
    """Step ``env`` from ``start = (obs, state)`` once per key, as one ``lax.scan``.

    Step ``t``: ``actions = policy(inputs[t], obs, state)``, then
    ``env.step(keys[t], state, actions, params)``, then
    ``carry, out = record(carry, Step(...))``. Pure; jit and vmap it as you like.

    Args:
        env: an environment or wrapper.
        start: ``(obs, state)``, e.g. ``env.reset(key, params)``.
        policy: ``policy(input, obs, state) -> (N, *action_shape)`` actions.
        keys: ``(T,)`` step keys (a step with ``auto_reset`` splits off its reset key).
        inputs: the policy's per-step inputs, ``(T, ...)`` leaves (``None``: it gets ``None``).
        params: passed to ``step`` (``None``: the defaults); may be traced.
        record: ``record(carry, step) -> (carry, out)``: what to keep of each step
            (default: what a :class:`Trajectory` holds); ``carry`` starts as ``carry``.
        auto_reset: ``False`` calls ``env.step(..., auto_reset=False)``: no reset on
            ``done``, and the transition gets the step key itself.
    """

    def body(loop, x):
        obs, state, acc = loop
        key, given = x
        actions = policy(given, obs, state)
        if auto_reset:
            next_obs, next_state, reward, done, info = env.step(key, state, actions, params)
        else:
            next_obs, next_state, reward, done, info = env.step(key, state, actions, params, auto_reset=False)
        acc, out = record(acc, Step(obs, state, actions, next_obs, next_state, reward, done, info))
        return (next_obs, next_state, acc), out

    (obs, state, carry), records = jax.lax.scan(body, (*start, carry), (keys, inputs))
    return Run(obs, state, carry, records)


def rollout(
    env,
    key: jax.Array,
    num_steps: int,
    *,
    params=None,
    actions: jax.Array | None = None,
    policy: Policy | None = None,
) -> Trajectory:
    """``num_steps`` steps of ``env`` from a reset, as one ``lax.scan`` (:func:`scan_steps`).

    A pure function: wrap it in ``jax.jit`` (it compiles once per ``env``,
    ``num_steps``, ``policy`` and shapes) and ``vmap`` it over anything, e.g. params.

    Args:
        env: an environment or wrapper.
        key: a ``jax.random.key``, or ``B`` of them (shape ``(B,)``): then ``B``
            environments are vmapped and every leaf gets a leading ``B`` axis.
        num_steps: ``T >= 0``; the environment auto-resets on ``done``.
        params: passed to ``reset`` and ``step`` (``None``: the defaults); may be traced.
        actions: ``(T, N, *action_shape)``: the actions of each step (the same for
            every env of a batch), instead of random ones.
        policy: ``policy(key, obs, state) -> (N, *action_shape)`` actions, instead of
            random ones.

    Random actions (neither given) are ``env.sample_actions(key_act, params)``. Keys
    (:func:`rollout_keys`): ``key_reset, key_run = split(key)``; step ``t`` uses
    ``key_act, key_step = split(split(key_run, T)[t])``.
    """
    if actions is not None and policy is not None:
        raise ValueError("rollout: pass actions or policy, not both")
    if isinstance(num_steps, bool) or not isinstance(num_steps, (int, np.integer)) or num_steps < 0:
        raise ValueError(f"rollout: num_steps must be a non-negative int, got {num_steps!r}")
    num_steps = int(num_steps)
    if _key_batch_ndim(key) == 1:
        return jax.vmap(lambda k: rollout(env, k, num_steps, params=params, actions=actions, policy=policy))(key)
    if actions is not None:
        actions = jnp.asarray(actions)
        if actions.shape[:1] != (num_steps,):
            raise ValueError(f"rollout: actions must have a leading axis of num_steps={num_steps}, got {actions.shape}")

    def act(x, obs, state):
        k_act, given = x
        if given is not None:
            return given
        if policy is not None:
            return policy(k_act, obs, state)
        return env.sample_actions(k_act, params)

    key_reset, key_act, key_step = rollout_keys(key, num_steps)
    obs0, state0 = env.reset(key_reset, params)
    run = scan_steps(env, (obs0, state0), act, keys=key_step, inputs=(key_act, actions), params=params)
    obs, state, acts, reward, done, info = run.records
    prepend = functools.partial(jax.tree_util.tree_map, lambda first, rest: jnp.concatenate([first[None], rest]))
    return Trajectory(prepend(obs0, obs), prepend(state0, state), acts, reward, done, info)


def _key_batch_ndim(key) -> int:
    """0 for one key, 1 for a ``(B,)`` batch (typed keys, or raw ``(B, 2) uint32`` ones)."""
    key = jnp.asarray(key) if not isinstance(key, jax.Array) else key
    typed = jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
    ndim = key.ndim - (0 if typed else 1)
    if ndim not in (0, 1):
        raise ValueError(f"rollout: key must be one key or a (B,) batch of keys, got shape {key.shape}")
    return ndim


def rollout_keys(key: jax.Array, num_steps: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(key_reset, key_act (T,), key_step (T,))``: the keys :func:`rollout` uses."""
    key_reset, key_run = jax.random.split(key)
    pairs = jax.vmap(jax.random.split)(jax.random.split(key_run, num_steps))
    return key_reset, pairs[:, 0], pairs[:, 1]
