"""The three convolutions of ``socialjax.agents.convolution`` compute one function, and
the hand-written gradients of the looped and XLA ones are the gradients of that
function: checked against XLA's convolution differentiated by JAX, plain, vmapped over
members (per-member kernels: a few, mapped one after another, and more than
``MAP_MEMBERS``, batched products over the patches), vmapped over inputs only (one
kernel), vmapped twice (seeds x members), for odd and even kernel sizes, at full float32
precision (so TF32 on a GPU does not blur the comparison) and in bfloat16."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from socialjax.agents import networks
from socialjax.agents.convolution import CONVOLUTIONS, MAP_MEMBERS, looped_conv, patch_conv, same_padding, xla_conv

H, W, C, F = 5, 4, 3, 2
MANY = MAP_MEMBERS + 2  # members with their own kernels beyond those mapped one by one


def reference(x, kernel):
    """flax's ``nn.Conv`` (SAME, stride 1): XLA's convolution with JAX's own gradients."""
    lo, hi = same_padding(kernel.shape[0])
    return jax.lax.conv_general_dilated(x.reshape(-1, *x.shape[-3:]), kernel, (1, 1), [(lo, hi), (lo, hi)],
                                        dimension_numbers=("NHWC", "HWIO", "NHWC")).reshape(*x.shape[:-1], F)


def loss(conv):
    # a nonlinear scalar of the output, so the output's gradient differs from cell to cell
    return lambda x, kernel: jnp.sum(jnp.sin(conv(x, kernel)) * jnp.arange(F, dtype=x.dtype))


def grads(conv, x, kernel, axes):
    """value and both gradients of ``loss(conv)``, vmapped over ``axes`` ((x axis, kernel
    axis) per level, outermost first)."""
    fn = jax.value_and_grad(loss(conv), argnums=(0, 1))
    for in_axes in reversed(axes):
        fn = jax.vmap(fn, in_axes=in_axes)
    return jax.jit(fn)(x, kernel)


def draw(rng, shape):
    return jnp.asarray(rng.normal(size=shape).astype(np.float32))


# (name, leading axes of x, leading axes of kernel, vmap in_axes per level)
MAPPINGS = [
    ("plain", (6,), (), ()),
    ("members", (3, 6), (3,), ((0, 0),)),
    ("inputs only", (3, 6), (), ((0, None),)),
    ("kernel only", (6,), (3,), ((None, 0),)),
    ("seeds x members", (2, 3, 6), (2, 3), ((0, 0), (0, 0))),
    ("seeds x inputs", (2, 3, 6), (2,), ((0, 0), (0, None))),
    ("many members", (MANY, 6), (MANY,), ((0, 0),)),
    ("many seeds x members", (MANY, 3, 6), (MANY, 3), ((0, 0), (0, 0))),
    ("seeds x many members", (2, MANY, 6), (2, MANY), ((0, 0), (0, 0))),
    ("one member", (1, 6), (1,), ((0, 0),)),
]


# every kernel size plain and vmapped over members (SocialJax's CNN has 5x5 and 3x3); an
# odd and an even size for the other mappings
CASES = [(size, *m) for m in MAPPINGS[:2] for size in (1, 2, 3, 4, 5)] + [
    (size, *m) for m in MAPPINGS[2:] for size in (3, 4)]


@pytest.mark.parametrize("size,name,x_lead,k_lead,axes", CASES, ids=[f"{c[1]}-{c[0]}" for c in CASES])
def test_every_convolution_and_its_gradients_match_xlas_own(size, name, x_lead, k_lead, axes):
    rng = np.random.default_rng(size)
    x = draw(rng, (*x_lead, H, W, C))
    kernel = draw(rng, (*k_lead, size, size, C, F))
    with jax.default_matmul_precision("highest"):
        want = grads(reference, x, kernel, axes)
        for conv in (looped_conv, patch_conv, xla_conv):
            have = grads(conv, x, kernel, axes)
            chex.assert_trees_all_equal_shapes_and_dtypes(have, want)
            for a, b in zip(jax.tree_util.tree_leaves(have), jax.tree_util.tree_leaves(want)):
                np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * float(jnp.abs(b).max()))


@pytest.mark.parametrize("conv, members", [(looped_conv, 3), (xla_conv, 3), (xla_conv, MANY)])
def test_in_bfloat16_the_gradients_are_bfloat16_and_close_to_float32(conv, members):
    rng = np.random.default_rng(0)
    x, kernel = draw(rng, (members, 6, H, W, C)), draw(rng, (members, 3, 3, C, F))
    with jax.default_matmul_precision("highest"):
        want = grads(reference, x, kernel, ((0, 0),))
    have = grads(conv, x.astype(jnp.bfloat16), kernel.astype(jnp.bfloat16), ((0, 0),))
    chex.assert_type(jax.tree_util.tree_leaves(have), jnp.bfloat16)
    for a, b in zip(jax.tree_util.tree_leaves(have), jax.tree_util.tree_leaves(want)):
        a = np.asarray(a, np.float32)
        assert np.abs(a - b).max() < 5e-2 * float(jnp.abs(b).max())


def test_every_convolution_is_a_network_option():
    assert ("auto", *CONVOLUTIONS) == networks.CONVS
    assert set(CONVOLUTIONS) == {"patch", "xla", "looped"}
