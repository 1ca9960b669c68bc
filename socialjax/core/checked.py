"""``checked(env)``: a debugging wrapper that raises on out-of-range actions.

Under ``jit`` an out-of-range action cannot raise, so :class:`Environment` replaces it
by the environment's no-op action and flags it in ``info["invalid_action"]``. For
debugging, ``checked(env)`` functionalises the check with
``jax.experimental.checkify`` and raises a ``ValueError`` on the host instead.
Its ``step`` and ``reset`` are compiled inside (do not wrap them in ``jit``); pass
batched inputs with ``batched=True`` to check a whole ``vmap`` of environments.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax.experimental import checkify

from socialjax.core.environment import Environment


class CheckedEnv:
    """Wraps an environment; forwards every attribute except ``step``/``reset``."""

    def __init__(self, env: Environment, batched: bool = False):
        self._env = env
        self._batched = batched

        def _step(key, state, actions, params):
            space = env.action_space(params)
            checkify.check(
                jnp.all(space.valid(jnp.asarray(actions))),
                f"{env.name}: out-of-range action in {{actions}} for {space}",
                actions=jnp.asarray(actions),
            )
            return env.step(key, state, actions, params)

        step, reset = _step, env.reset
        if batched:
            step = jax.vmap(step, in_axes=(0, 0, 0, None))
            reset = jax.vmap(reset, in_axes=(0, None))
        self._step = jax.jit(checkify.checkify(step, errors=checkify.user_checks | checkify.nan_checks))
        self._reset = jax.jit(checkify.checkify(reset, errors=checkify.user_checks))

    def __getattr__(self, item: str) -> Any:
        return getattr(self._env, item)

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


def _throw(err: checkify.Error) -> None:
    try:
        err.throw()
    except checkify.JaxRuntimeError as exc:
        raise ValueError(str(exc).split("\n")[0]) from None


def checked(env: Environment, batched: bool = False) -> CheckedEnv:
    """Return a debugging view of ``env`` whose ``step`` raises ``ValueError`` on
    out-of-range actions (and NaNs produced inside the step)."""
    return CheckedEnv(env, batched=batched)
