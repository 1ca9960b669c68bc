"""Three ways to compute one convolution: stride 1, SAME padding, an input ``(..., H, W, C)``
(any leading axes), a kernel ``(k, k, C, F)`` in flax's layout, an output ``(..., H, W, F)``.
They compute the same function (up to float rounding) and differ only in speed, which
depends on the backend and on how the call is vmapped (see BENCHMARKS.md, training).

A population's members (and, around them, its learners, seeds and grid points) each run
the network on their own parameters under ``vmap``. vmapped with a kernel per member,
XLA's convolution becomes ONE grouped convolution (``feature_group_count`` = members;
its kernel gradient ``batch_group_count`` = members): at a thousand seeds, thousands of
groups of a few channels, the shape cuDNN handles worst and its autotuner tries every
algorithm on, and one that XLA's CPU compiler takes minutes over. None of the three
does that:

- :func:`patch_conv`: one matrix product over the ``k * k`` shifted copies of the input
  (the patches). Vmapped over members it stays a batched matrix product; XLA
  differentiates it. No convolution at all.
- :func:`xla_conv`: XLA's convolution (``lax.conv_general_dilated``, what flax's
  ``nn.Conv`` calls) and XLA's own gradients wherever one kernel serves the batch (a
  lone network; inputs vmapped under one kernel join the batch). Where each member has
  its own kernel: a few members (up to :data:`MAP_MEMBERS`, a run's learners) one after
  another, each a whole convolution; more (seeds, grid points) as batched matrix
  products over the patches, all members in one call (cuBLAS's batched products on a
  GPU). Never a grouped convolution. The GPU's choice.
- :func:`looped_conv`: XLA's convolution forward, with both gradients written out: the
  input's as the convolution of the output's gradient with the flipped kernel, the
  kernel's as one matrix product per kernel offset (XLA's own kernel gradient, inside a
  loop such as the learner's epochs, falls on its CPU backend to a path about 40x slower
  than the same convolution outside the loop; measured on jaxlib 0.10.2). Where each
  member has its own kernel, the members run one after another (``lax.map``), each a
  plain convolution. The CPU's choice.

Each of :func:`xla_conv` and :func:`looped_conv` is a ``custom_vjp`` whose three pieces
(forward, input gradient, kernel gradient) are written for one member and carry their
own ``custom_vmap`` rule: how the pieces are computed for a vmapped axis is decided per
axis, at trace time, from which arguments that axis maps (a mapped axis of size 1 is
dropped, so a lone network vmapped once stays a plain convolution).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import custom_batching

NHWC = ("NHWC", "HWIO", "NHWC")
Pads = tuple[int, int]
# xla_conv: a vmapped axis of at most this many members with their own kernels (a run's
# learners) runs them one after another, each a whole convolution; a wider one (seeds,
# grid points) as batched matrix products. Chosen by reasoning, not yet measured on a GPU:
# a run's few learners each have a batch large enough to fill a convolution kernel, and
# the wider axes vmapped around them then batch one member's patches at a time (all 7
# learners' patches at once made Clean Up's 7-learner preset need 1.9x the memory of the
# looped convolution on the CPU); a thousand seeds one after another would be a thousand
# small kernels per layer and step.
MAP_MEMBERS = 8


def same_padding(size: int) -> Pads:
    """SAME padding of a ``size``-wide kernel: the extra row or column (even sizes) at the end."""
    lo = (size - 1) // 2
    return lo, size - 1 - lo


def _patches(x: jax.Array, size: int, pads: Pads) -> jax.Array:
    """``(..., H, W, size * size * C)``: each position's ``size x size`` neighbourhood of
    ``x`` (padded by ``pads`` before and after), features ordered (row offset, column
    offset, channel), the kernel's layout."""
    h, w = x.shape[-3], x.shape[-2]
    xp = jnp.pad(x, [(0, 0)] * (x.ndim - 3) + [pads, pads, (0, 0)])
    return jnp.concatenate([xp[..., i : i + h, j : j + w, :] for i in range(size) for j in range(size)], axis=-1)


def _patch_product(x: jax.Array, kernel: jax.Array, pads: Pads) -> jax.Array:
    """The convolution of ``x`` with ``kernel`` (padding ``pads``) as one matrix product."""
    k, c, f = kernel.shape[0], kernel.shape[2], kernel.shape[3]
    return _patches(x, k, pads) @ kernel.reshape(k * k * c, f)


def patch_conv(x: jax.Array, kernel: jax.Array) -> jax.Array:
    return _patch_product(x, kernel, same_padding(kernel.shape[0]))


def _conv4(x: jax.Array, kernel: jax.Array, pads: Pads) -> jax.Array:
    return jax.lax.conv_general_dilated(x, kernel, (1, 1), [pads, pads], dimension_numbers=NHWC)


def _flipped(kernel: jax.Array) -> jax.Array:
    """The kernel of the input's gradient: flipped in space, its channel axes swapped."""
    return jnp.transpose(kernel[::-1, ::-1], (0, 1, 3, 2))


def _flat(fn: Callable[[jax.Array, jax.Array], jax.Array], x: jax.Array, *rest: jax.Array) -> jax.Array:
    """``fn`` on ``x`` with its leading axes merged into one batch axis, and back."""
    lead = x.shape[:-3]
    y = fn(x.reshape(-1, *x.shape[-3:]), *rest)
    return y.reshape(*lead, *y.shape[1:])


def _per_member(one: Callable[[jax.Array, jax.Array], jax.Array],
                members: Callable[[jax.Array, jax.Array], jax.Array] | None,
                merge_first: bool, map_up_to: int = 0) -> Callable[[jax.Array, jax.Array], jax.Array]:
    """``one(a, b)`` on one member's ``(B, ...)`` arrays, vmapped by hand. For each vmapped
    axis: of size 1, dropped (``one`` on the member itself); with ``merge_first`` and
    only ``a`` mapped (inputs under one kernel), the axis merged into ``a``'s batch (then
    ``one`` must act on each batch row alone, as a convolution does and a kernel's
    gradient, a sum over the batch, does not); otherwise the members one after another
    (``lax.map`` of ``one``) when ``members`` is None or the axis has at most
    ``map_up_to`` of them, else all at once by ``members(a, b)`` on arrays with a leading
    member axis."""
    batched = custom_batching.custom_vmap(one)

    @batched.def_vmap
    def rule(axis_size, in_batched, a, b):
        a_mapped, b_mapped = in_batched
        if merge_first and not b_mapped:
            y = batched(a.reshape(-1, *a.shape[2:]), b)
            return y.reshape(axis_size, -1, *y.shape[1:]), True
        if axis_size == 1:
            return batched(a[0] if a_mapped else a, b[0] if b_mapped else b)[None], True
        a = a if a_mapped else jnp.broadcast_to(a, (axis_size, *a.shape))
        b = b if b_mapped else jnp.broadcast_to(b, (axis_size, *b.shape))
        if members is None or axis_size <= map_up_to:
            return jax.lax.map(lambda ab: batched(*ab), (a, b)), True
        return members(a, b), True

    return batched


def _with_gradients(forward: Callable, input_grad: Callable, kernel_grad: Callable) -> Callable:
    """The differentiable ``conv(x, kernel)`` of the three pieces (each ``(B, H, W, .)``)."""

    @jax.custom_vjp
    def conv(x, kernel):
        return forward(x, kernel)

    def conv_forward(x, kernel):
        return forward(x, kernel), (x, kernel)

    def conv_backward(saved, dy):
        x, kernel = saved
        return input_grad(dy, kernel), kernel_grad(x, dy).astype(kernel.dtype)

    conv.defvjp(conv_forward, conv_backward)
    return conv


@functools.cache
def _xla(size: int) -> Callable[[jax.Array, jax.Array], jax.Array]:
    """The differentiable ``(B, H, W, C) x (size, size, C, F)`` convolution of :func:`xla_conv`."""
    lo, hi = same_padding(size)

    def kernel_grad_one(x: jax.Array, dy: jax.Array) -> jax.Array:
        # XLA's own gradient of its convolution with respect to the kernel
        kernel = jax.ShapeDtypeStruct((size, size, x.shape[-1], dy.shape[-1]), dy.dtype)
        return jax.linear_transpose(lambda k: _conv4(x, k, (lo, hi)), kernel)(dy)[0]

    def kernel_grad_members(x: jax.Array, dy: jax.Array) -> jax.Array:
        # per member: the patches' transpose times the output's gradient, (k * k * C, F)
        def one(x, dy):
            p = _patches(x, size, (lo, hi))
            return (p.reshape(-1, p.shape[-1]).T @ dy.reshape(-1, dy.shape[-1])).reshape(
                size, size, x.shape[-1], dy.shape[-1])
        return jax.vmap(one)(x, dy)

    forward = _per_member(lambda x, kernel: _conv4(x, kernel, (lo, hi)),
                          jax.vmap(lambda x, kernel: _patch_product(x, kernel, (lo, hi))), merge_first=True,
                          map_up_to=MAP_MEMBERS)
    # d input = the output's gradient convolved with the flipped kernel (padding mirrored for even sizes)
    input_grad = _per_member(lambda dy, kernel: _conv4(dy, _flipped(kernel), (hi, lo)),
                             jax.vmap(lambda dy, kernel: _patch_product(dy, _flipped(kernel), (hi, lo))),
                             merge_first=True, map_up_to=MAP_MEMBERS)
    kernel_grad = _per_member(kernel_grad_one, kernel_grad_members, merge_first=False, map_up_to=MAP_MEMBERS)
    return _with_gradients(forward, input_grad, kernel_grad)


@functools.cache
def _looped(size: int) -> Callable[[jax.Array, jax.Array], jax.Array]:
    """The differentiable ``(B, H, W, C) x (size, size, C, F)`` convolution of :func:`looped_conv`."""
    lo, hi = same_padding(size)

    def kernel_grad_one(x: jax.Array, dy: jax.Array) -> jax.Array:
        # d kernel[i, j] = sum over batch and positions of the input shifted by (i, j) times
        # the output's gradient: one (C, F) matrix product per offset
        h, w, c, f = x.shape[1], x.shape[2], x.shape[3], dy.shape[3]
        xp = jnp.pad(x, [(0, 0), (lo, hi), (lo, hi), (0, 0)])
        d = dy.reshape(-1, f)
        rows = [jnp.stack([xp[:, i : i + h, j : j + w, :].reshape(-1, c).T @ d for j in range(size)])
                for i in range(size)]
        return jnp.stack(rows)

    forward = _per_member(lambda x, kernel: _conv4(x, kernel, (lo, hi)), None, merge_first=True)
    input_grad = _per_member(lambda dy, kernel: _conv4(dy, _flipped(kernel), (hi, lo)), None, merge_first=True)
    kernel_grad = _per_member(kernel_grad_one, None, merge_first=False)
    return _with_gradients(forward, input_grad, kernel_grad)


def xla_conv(x: jax.Array, kernel: jax.Array) -> jax.Array:
    return _flat(_xla(kernel.shape[0]), x, kernel)


def looped_conv(x: jax.Array, kernel: jax.Array) -> jax.Array:
    return _flat(_looped(kernel.shape[0]), x, kernel)


CONVOLUTIONS: dict[str, Callable[[jax.Array, jax.Array], jax.Array]] = {
    "patch": patch_conv, "xla": xla_conv, "looped": looped_conv,
}
