"""Network pieces: the patch convolution equals flax's convolution, and the
Gram-Schmidt orthogonal initialiser gives orthonormal columns. Everything is computed
in one jitted call per test (compilation is most of the time here)."""

import flax.linen as nn
import jax
import numpy as np

from socialjax.agents.networks import PatchConv, orthogonal

KEY = jax.random.key(0)


def test_patch_conv_equals_flax_conv_with_the_same_parameters():
    """Same parameter names, shapes and initial values for the same key, and the same
    output for the same parameters (odd and even kernels); vmapped over members, the
    same as each member alone."""
    rng = np.random.default_rng(0)  # numpy draws: JAX's own samplers take seconds to compile
    x = rng.normal(size=(4, 7, 6, 5)).astype(np.float32)
    members = rng.normal(size=(3, 2, 5, 5, 4)).astype(np.float32)  # (members, batch, H, W, C)

    def random_params(*shape):
        return {"params": {"kernel": rng.normal(size=shape).astype(np.float32),
                           "bias": rng.normal(size=shape[-1:]).astype(np.float32)}}

    by_size = {size: random_params(size, size, 5, 9) for size in (3, 2)}
    stacked = random_params(3, 3, 3, 4, 8)  # 3 members' kernels (3, 3, 3, 4, 8) and biases (3, 8)
    stacked["params"]["bias"] = rng.normal(size=(3, 8)).astype(np.float32)

    @jax.jit
    def compute(by_size, stacked):
        out = {"init": (nn.Conv(9, (3, 3)).init(jax.random.key(1), x), PatchConv(9).init(jax.random.key(1), x))}
        for size, params in by_size.items():
            out[f"{size}-apply"] = (nn.Conv(9, (size, size)).apply(params, x), PatchConv(9, size).apply(params, x))
        patch = PatchConv(8)
        alone = [patch.apply(jax.tree_util.tree_map(lambda p: p[m], stacked), members[m]) for m in range(3)]
        out["vmap"] = (jax.vmap(patch.apply)(stacked, members), alone)
        return out

    out = jax.device_get(compute(by_size, stacked))
    flax_params, patch_params = out["init"]
    assert jax.tree_util.tree_structure(flax_params) == jax.tree_util.tree_structure(patch_params)
    for a, b in zip(jax.tree_util.tree_leaves(flax_params), jax.tree_util.tree_leaves(patch_params)):
        np.testing.assert_array_equal(a, b)
    for size in (3, 2):
        want, got = out[f"{size}-apply"]
        assert got.shape == want.shape == (4, 7, 6, 9)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    batched, alone = out["vmap"]
    for m in range(3):
        np.testing.assert_allclose(batched[m], alone[m], rtol=1e-5, atol=1e-5)


def test_orthogonal_init_is_orthonormal_and_scaled():
    shapes = [(6, 4), (4, 6), (2, 3, 5)]
    mats = jax.device_get(jax.jit(lambda: [orthogonal(2.0)(k, s) for s in shapes for k in (KEY, jax.random.key(1))])())
    for i, shape in enumerate(shapes):
        w, other = (np.asarray(m).reshape(-1, shape[-1]) for m in mats[2 * i : 2 * i + 2])
        assert mats[2 * i].shape == shape
        gram = w.T @ w if w.shape[0] >= w.shape[1] else w @ w.T
        np.testing.assert_allclose(gram, 4.0 * np.eye(gram.shape[0]), atol=1e-4)
        assert not np.allclose(w, other)  # the key matters
