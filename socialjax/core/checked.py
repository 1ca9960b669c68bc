"""``checked(env)``: a debugging wrapper that raises on out-of-range actions and params.

Under ``jit`` an out-of-range action cannot raise, so :class:`Environment` replaces it
by the environment's no-op action and flags it in ``info["invalid_action"]``; and
params that are traced (computed inside a ``jit`` or ``vmap``) cannot be validated on
the host. For debugging, ``checked(env)`` functionalises both checks (every params
field finite, within its declared range, a bool field 0 or 1) with
``jax.experimental.checkify`` and raises a ``ValueError`` naming the action or the
field on the host instead. Its ``step`` and ``reset`` are compiled inside; pass batched
inputs with ``batched=True`` to check a whole ``vmap`` of environments. Under a ``vmap``
of your own they raise as well. Inside a ``jit`` of your own, functionalise that
function too: ``err, out = checkify.checkify(jax.jit(f))(...)``, then ``err.throw()``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax.experimental import checkify

from socialjax.core.environment import Environment
from socialjax.core.params import EnvParams
from socialjax.core.wrappers import Wrapper


class CheckedEnv(Wrapper):
    """Wraps an environment; forwards every attribute except ``step``/``reset`` (and
    ``with_params``, which checks the new environment)."""

    def __init__(self, env: Environment, batched: bool = False):
        super().__init__(env)
        self._batched = batched

        def _reset(key, params):
            checkify_params(env, params)
            return env.reset(key, params)

        def _step(key, state, actions, params):
            checkify_params(env, params)
            space = env.action_space(params)
            checkify.check(
                jnp.all(space.valid(jnp.asarray(actions))),
                f"{env.name}: out-of-range action in {{actions}} for {space}",
                actions=jnp.asarray(actions),
            )
            return env.step(key, state, actions, params)

        step, reset = _step, _reset
        if batched:
            step = jax.vmap(step, in_axes=(0, 0, 0, None))
            reset = jax.vmap(reset, in_axes=(0, None))
        self._step = jax.jit(checkify.checkify(step, errors=checkify.user_checks | checkify.nan_checks))
        self._reset = jax.jit(checkify.checkify(reset, errors=checkify.user_checks))

    def with_params(self, **changes: Any) -> CheckedEnv:
        return CheckedEnv(self._env.with_params(**changes), self._batched)

    def reset(self, key, params=None):
        params = self._env._resolve_params(params)
        err, out = self._reset(key, params)
        _throw(err)
        return out

    def step(self, key, state, actions, params=None):
        params = self._env._resolve_params(params)
        err, out = self._step(key, state, actions, params)
        _throw(err)
        return out


def checkify_params(env: Environment, params: EnvParams) -> None:
    """``checkify.check`` that every field of (possibly traced) ``params`` is finite and
    within its declared range, and that bool fields are 0 or 1; call it inside a
    function that ``checkify.checkify`` functionalises."""
    cls = type(params).__name__
    for name, (ok, rule) in params.field_rules().items():
        value = jnp.asarray(getattr(params, name))
        checkify.check(jnp.all(ok), f"{env.name}: {cls}.{name} must be {rule}, got {{value}}", value=value)


def _throw(err: checkify.Error) -> None:
    try:
        err.throw()
    except checkify.JaxRuntimeError as exc:
        raise ValueError(str(exc).split("\n")[0]) from None


def checked(env: Environment, batched: bool = False) -> CheckedEnv:
    """Return a debugging view of ``env`` whose ``step`` and ``reset`` raise ``ValueError``
    on out-of-range actions, params out of their declared range or not finite (traced
    ones too), and NaNs produced inside the step."""
    return CheckedEnv(env, batched=batched)
