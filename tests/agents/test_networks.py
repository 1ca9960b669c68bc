"""Network pieces: the patch convolution equals flax's convolution, and the
Gram-Schmidt orthogonal initialiser gives orthonormal columns."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from socialjax.agents.networks import PatchConv, orthogonal


@pytest.mark.parametrize("size", [3, 2])
def test_patch_conv_equals_flax_conv_with_the_same_parameters(size):
    x = jax.random.normal(jax.random.key(0), (4, 7, 6, 5))
    conv, patch = nn.Conv(9, (size, size)), PatchConv(9, size)
    params = conv.init(jax.random.key(1), x)
    # same parameter names, shapes and initial values for the same key
    assert jax.tree_util.tree_structure(params) == jax.tree_util.tree_structure(patch.init(jax.random.key(1), x))
    for a, b in zip(jax.tree_util.tree_leaves(params), jax.tree_util.tree_leaves(patch.init(jax.random.key(1), x))):
        np.testing.assert_array_equal(a, b)
    # a non-zero bias, so that the bias is checked too
    params = jax.tree_util.tree_map(lambda p: p + 0.1 * jax.random.normal(jax.random.key(2), p.shape), params)
    want, got = jax.jit(conv.apply)(params, x), jax.jit(patch.apply)(params, x)
    assert got.shape == want.shape == (4, 7, 6, 9)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_patch_conv_vmapped_over_members_equals_each_member_alone():
    patch = PatchConv(8)
    x = jax.random.normal(jax.random.key(0), (3, 2, 5, 5, 4))  # (members, batch, H, W, C)
    params = jax.vmap(patch.init)(jax.random.split(jax.random.key(1), 3), x)
    batched = jax.jit(jax.vmap(patch.apply))(params, x)
    for m in range(3):
        alone = patch.apply(jax.tree_util.tree_map(lambda p: p[m], params), x[m])
        np.testing.assert_allclose(batched[m], alone, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (2, 3, 5)])
def test_orthogonal_init_is_orthonormal_and_scaled(shape):
    w = np.asarray(orthogonal(2.0)(jax.random.key(0), shape)).reshape(-1, shape[-1])
    gram = w.T @ w if w.shape[0] >= w.shape[1] else w @ w.T
    np.testing.assert_allclose(gram, 4.0 * np.eye(gram.shape[0]), atol=1e-4)
    # different keys give different matrices
    assert not np.allclose(w, np.asarray(orthogonal(2.0)(jax.random.key(1), shape)).reshape(w.shape))
