"""``lazy_where``: a select whose expensive side runs only on the steps that need it.

Some of a step's work matters only on the rare steps where something happens: the
auto-reset (a fresh initial state, only when an episode ended), a grid game's respawn
(random free spawn points, only when a removed player comes back). Written as a select,
a ``vmap`` of games computes that work for every game on every step and throws almost
all of it away: on the CPU the auto-reset was about 15% of a Commons Harvest step and
the respawn draw about 20% (BENCHMARKS.md, "The step made faster").

``lazy_where(pred, on_true, on_false, *args)`` is ``on_true(*args)`` where ``pred`` and
``on_false(*args)`` elsewhere, with the same bits (and derivatives) as that select, but
decided at the level of the whole batch: under any number of nested ``vmap`` (games, seeds, a sweep)
its batching rule folds every batch axis into one axis of instances and asks once
whether *any* instance needs ``on_true``; only then does ``on_true`` run (for every
instance, each on its own arguments, and selected where ``pred``). Randomness is
untouched: each instance keeps its own keys, drawn exactly as before.

The saving needs a conditional that skips work: on the CPU that is ``lax.cond``. On
other backends it stays a select (a conditional there waits for the predicate on the
host on every step, and that cost is not measured yet), so GPU and TPU programs compute
both sides as before. The choice is made when the program is lowered
(``lax.platform_dependent``); both give the same bits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap


class SidesDiffer(TypeError):
    """The two sides of a :func:`lazy_where` return different shapes or dtypes."""


def select(pred: jax.Array, on_true: Any, on_false: Any) -> Any:
    """``jnp.where`` over two pytrees of the same structure with a scalar predicate."""
    return jax.tree_util.tree_map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)


def lazy_where(pred: jax.Array, on_true: Callable[..., Any], on_false: Callable[..., Any], *args: Any,
               sides: str = "the two sides") -> Any:
    """``on_true(*args)`` if ``pred`` (a ``()`` bool) else ``on_false(*args)``; the two
    must return the same shapes and dtypes (:class:`SidesDiffer`, a ``TypeError`` naming
    ``sides`` and the first leaf that differs, if not). Under ``vmap``, ``on_true`` runs only on calls where
    some instance of the whole batch has ``pred`` (module docstring). Same bits as
    ``select(pred, on_true(*args), on_false(*args))``."""
    _check_same_types(on_true, on_false, args, sides)

    def chosen(pred, *args):
        return select(pred, on_true(*args), on_false(*args))

    def batch(pred, *args):
        return jax.vmap(chosen)(pred, *args)

    @custom_vmap
    def instances(pred, *args):
        """Every argument with a leading axis of instances."""
        return _cond_on_cpu(jnp.any(pred), batch, lambda pred, *args: jax.vmap(on_false)(*args), batch, pred, *args)

    @instances.def_vmap
    def instances_rule(size, in_batched, *args):
        # one more batch axis around the instances: fold it into theirs
        args = _broadcast(args, in_batched, size)
        count = args[0].shape[1]
        out = instances(*jax.tree_util.tree_map(lambda x: x.reshape((size * count,) + x.shape[2:]), args))
        out = jax.tree_util.tree_map(lambda x: x.reshape((size, count) + x.shape[1:]), out)
        return out, jax.tree_util.tree_map(lambda _: True, out)

    @custom_vmap
    def one(pred, *args):
        return _cond_on_cpu(pred, lambda pred, *args: on_true(*args), lambda pred, *args: on_false(*args), chosen,
                            pred, *args)

    @one.def_vmap
    def one_rule(size, in_batched, *args):
        out = instances(*_broadcast(args, in_batched, size))
        return out, jax.tree_util.tree_map(lambda _: True, out)

    # differentiated as the select it equals (custom_vmap alone has no reverse mode)
    @jax.custom_jvp
    def differentiable(pred, *args):
        return one(pred, *args)

    @differentiable.defjvp
    def differentiable_jvp(primals, tangents):
        pred, *args = primals
        return jax.jvp(lambda *args: chosen(pred, *args), tuple(args), tuple(tangents[1:]))

    return differentiable(pred, *args)


def _check_same_types(on_true: Callable, on_false: Callable, args: tuple, sides: str) -> None:
    """A clear error (instead of ``lax.cond``'s, or a select's silent broadcast) when the
    two sides do not return the same shapes and dtypes."""
    true_leaves, true_tree = jax.tree_util.tree_flatten_with_path(jax.eval_shape(on_true, *args))
    false_leaves, false_tree = jax.tree_util.tree_flatten_with_path(jax.eval_shape(on_false, *args))
    if true_tree != false_tree:
        raise SidesDiffer(f"{sides} must have the same structure: {true_tree} and {false_tree}")
    for (path, a), (_, b) in zip(true_leaves, false_leaves):
        if (a.shape, a.dtype) != (b.shape, b.dtype):
            raise SidesDiffer(f"{sides} must have the same shapes and dtypes: at {jax.tree_util.keystr(path)}, "
                            f"{a.dtype}{list(a.shape)} and {b.dtype}{list(b.shape)}")


def _cond_on_cpu(pred: jax.Array, on_true: Callable, on_false: Callable, elsewhere: Callable, *args: Any) -> Any:
    """On the CPU ``lax.cond(pred, on_true, on_false, *args)``; on any other backend
    ``elsewhere(*args)``, which gives the same result without a conditional."""
    return jax.lax.platform_dependent(
        *args, cpu=lambda *args: jax.lax.cond(pred, on_true, on_false, *args), default=elsewhere
    )


def _broadcast(args: tuple, in_batched: tuple, size: int) -> tuple:
    """Each argument's leaves with a leading batch axis of ``size`` (copied where the
    leaf was not batched)."""
    return tuple(
        jax.tree_util.tree_map(lambda x, b: x if b else jnp.broadcast_to(x, (size,) + jnp.shape(x)), arg, batched)
        for arg, batched in zip(args, in_batched)
    )
