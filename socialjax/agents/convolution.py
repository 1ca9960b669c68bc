"""Three ways to compute one convolution: stride 1, SAME padding, an input ``(..., H, W, C)``
(any leading axes), a kernel ``(k, k, C, F)`` in flax's layout, an output ``(..., H, W, F)``.
They compute the same function (up to float rounding) and differ only in speed, which
depends on the backend and on how the call is vmapped (see BENCHMARKS.md, training):

- :func:`patch_conv`: one matrix product over the ``k * k`` shifted copies of the input.
  Vmapped over population members (per-member kernels) it stays a batched matrix
  product; XLA differentiates it.
- :func:`xla_conv`: ``lax.conv_general_dilated``, what flax's ``nn.Conv`` calls. Fastest
  on GPUs. On XLA's CPU backend two things make it slow inside a training step: vmapped
  over members it becomes a grouped convolution, and inside a loop (the learner's epochs
  and minibatches) XLA's own gradient with respect to the kernel falls to a path about
  40x slower than the same convolution outside the loop (measured on jaxlib 0.10.2).
- :func:`looped_conv`: XLA's convolution forward, with both gradients written out: the
  input's as the convolution of the output's gradient with the flipped kernel, the
  kernel's as one matrix product per kernel offset. Vmapped with per-member kernels, the
  members run one after another (``lax.map``), each a plain convolution; vmapped over
  inputs only, the mapped axis joins the batch. Fastest on XLA's CPU backend.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import custom_batching

NHWC = ("NHWC", "HWIO", "NHWC")


def same_padding(size: int) -> tuple[int, int]:
    """SAME padding of a ``size``-wide kernel: the extra row or column (even sizes) at the end."""
    lo = (size - 1) // 2
    return lo, size - 1 - lo


def patch_conv(x: jax.Array, kernel: jax.Array) -> jax.Array:
    k, c, f = kernel.shape[0], kernel.shape[2], kernel.shape[3]
    h, w = x.shape[-3], x.shape[-2]
    lo, hi = same_padding(k)
    xp = jnp.pad(x, [(0, 0)] * (x.ndim - 3) + [(lo, hi), (lo, hi), (0, 0)])
    # patch features ordered (row offset, column offset, channel): the kernel's layout
    patches = jnp.concatenate([xp[..., i : i + h, j : j + w, :] for i in range(k) for j in range(k)], axis=-1)
    return patches @ kernel.reshape(k * k * c, f)


def _conv4(x: jax.Array, kernel: jax.Array, pads: tuple[int, int]) -> jax.Array:
    return jax.lax.conv_general_dilated(x, kernel, (1, 1), [pads, pads], dimension_numbers=NHWC)


def _flat(fn: Callable[[jax.Array, jax.Array], jax.Array], x: jax.Array, *rest: jax.Array) -> jax.Array:
    """``fn`` on ``x`` with its leading axes merged into one batch axis, and back."""
    lead = x.shape[:-3]
    y = fn(x.reshape(-1, *x.shape[-3:]), *rest)
    return y.reshape(*lead, *y.shape[1:])


def xla_conv(x: jax.Array, kernel: jax.Array) -> jax.Array:
    return _flat(lambda a, k: _conv4(a, k, same_padding(k.shape[0])), x, kernel)


def _per_member(fn: Callable[..., jax.Array], merge_first: bool) -> Callable[..., jax.Array]:
    """``fn(a, b)`` on one member's ``(B, H, W, C)`` batch, vmapped by hand: where ``b`` (a
    kernel) is mapped, a ``lax.map`` over the mapped axis; where only ``a`` is and
    ``merge_first``, that axis merged into ``a``'s batch (``fn`` must then act on each
    batch row alone, as a convolution does and the kernel's gradient, a sum over the
    batch, does not)."""
    batched = custom_batching.custom_vmap(fn)

    @batched.def_vmap
    def rule(axis_size, in_batched, a, b):
        a_mapped, b_mapped = in_batched
        if merge_first and not b_mapped:
            y = batched(a.reshape(-1, *a.shape[2:]), b)
            return y.reshape(axis_size, -1, *y.shape[1:]), True
        a = a if a_mapped else jnp.broadcast_to(a, (axis_size, *a.shape))
        b = b if b_mapped else jnp.broadcast_to(b, (axis_size, *b.shape))
        return jax.lax.map(lambda ab: batched(*ab), (a, b)), True

    return batched


@functools.cache
def _looped(size: int) -> Callable[[jax.Array, jax.Array], jax.Array]:
    """The differentiable ``(B, H, W, C) x (size, size, C, F)`` convolution of
    :func:`looped_conv`, one per kernel size."""
    lo, hi = same_padding(size)
    forward = _per_member(lambda x, kernel: _conv4(x, kernel, (lo, hi)), merge_first=True)
    # d input = the output's gradient convolved with the kernel flipped in space and with
    # its channel axes swapped (padding mirrored for even sizes)
    input_grad = _per_member(
        lambda dy, kernel: _conv4(dy, jnp.transpose(kernel[::-1, ::-1], (0, 1, 3, 2)), (hi, lo)), merge_first=True
    )

    def kernel_grad_one(x: jax.Array, dy: jax.Array) -> jax.Array:
        # d kernel[i, j] = sum over batch and positions of the input shifted by (i, j) times
        # the output's gradient: one (C, F) matrix product per offset
        h, w, c, f = x.shape[1], x.shape[2], x.shape[3], dy.shape[3]
        xp = jnp.pad(x, [(0, 0), (lo, hi), (lo, hi), (0, 0)])
        d = dy.reshape(-1, f)
        rows = [jnp.stack([xp[:, i : i + h, j : j + w, :].reshape(-1, c).T @ d for j in range(size)])
                for i in range(size)]
        return jnp.stack(rows)

    kernel_grad = _per_member(kernel_grad_one, merge_first=False)

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


def looped_conv(x: jax.Array, kernel: jax.Array) -> jax.Array:
    return _flat(_looped(kernel.shape[0]), x, kernel)


CONVOLUTIONS: dict[str, Callable[[jax.Array, jax.Array], jax.Array]] = {
    "patch": patch_conv, "xla": xla_conv, "looped": looped_conv,
}
