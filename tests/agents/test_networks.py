"""Network pieces: the patch convolution equals flax's convolution, and the
Gram-Schmidt orthogonal initialiser gives orthonormal columns; whole networks give the
same parameters and outputs with either convolution (``conv``) and close outputs in
bfloat16 (``precision``); ``cnn_sj`` has the shapes of SocialJax's CNN. Everything is
computed in one jitted call per test or fixture (compilation is most of the time here).

(bfloat16 learning, and float32 parameters and Adam state after training in bfloat16,
are checked in tests/train/test_learning.py.)"""

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import socialjax as sj
from socialjax.agents import networks
from socialjax.agents.networks import (
    ActorCritic,
    PatchConv,
    QNetwork,
    encoder_spec,
    init_hidden,
    orthogonal,
    resolve_conv,
    sample_obs,
)
from socialjax.core.spaces import Box, Dict
from socialjax.train import TrainConfig
from socialjax.train import config as config_module
from socialjax.train.learners import make_learner

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

    with jax.default_matmul_precision("highest"):  # a convolution against a matrix product: no TF32 on GPUs
        out = jax.device_get(compute(by_size, stacked))
    flax_params, patch_params = out["init"]
    assert jax.tree_util.tree_structure(flax_params) == jax.tree_util.tree_structure(patch_params)
    for a, b in zip(jax.tree_util.tree_leaves(flax_params), jax.tree_util.tree_leaves(patch_params)):
        np.testing.assert_array_equal(a, b)
    for size in (3, 2):
        want, got = out[f"{size}-apply"]
        chex.assert_shape([got, want], (4, 7, 6, 9))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    batched, alone = out["vmap"]
    for m in range(3):
        np.testing.assert_allclose(batched[m], alone[m], rtol=1e-5, atol=1e-5)


def test_orthogonal_init_is_orthonormal_and_scaled():
    shapes = [(6, 4), (4, 6), (2, 3, 5)]
    mats = jax.device_get(jax.jit(lambda: [orthogonal(2.0)(k, s) for s in shapes for k in (KEY, jax.random.key(1))])())
    for i, shape in enumerate(shapes):
        w, other = (np.asarray(m).reshape(-1, shape[-1]) for m in mats[2 * i : 2 * i + 2])
        chex.assert_shape(mats[2 * i], shape)
        gram = w.T @ w if w.shape[0] >= w.shape[1] else w @ w.T
        np.testing.assert_allclose(gram, 4.0 * np.eye(gram.shape[0]), atol=1e-4)
        assert not np.allclose(w, other)  # the key matters


# ------------------------------------------------------------------- conv and precision
# Small observation spaces (non-square, so a transposed kernel or image would show).
CODES = Dict({"grid": Box(0, 9, (6, 5), np.uint8), "ready_to_zap": Box(0, 1, (), np.uint8)})
RGB = Dict({"rgb": Box(0, 255, (6, 5, 3), np.uint8), "ready_to_zap": Box(0, 1, (), np.uint8)})
VECTOR = Box(-1.0, 1.0, (7,), np.float32)
MEMBERS, BATCH, ACTIONS = 3, 4, 5
# name: (network class, space, encoder, recurrent, [(conv, precision), ...]); the first
# variant is the reference
VARIANTS = {
    "cnn_sj": (ActorCritic, CODES, "cnn_sj", False,
               [("patch", "float32"), ("xla", "float32"), ("looped", "float32"), ("patch", "bfloat16"),
                ("looped", "bfloat16"), ("xla", "bfloat16")]),
    "cnn_rgb_gru": (ActorCritic, RGB, "cnn", True,
                    [("patch", "float32"), ("xla", "float32"), ("looped", "float32"), ("xla", "bfloat16")]),
    "q_mlp": (QNetwork, VECTOR, "mlp", False, [("patch", "float32"), ("patch", "bfloat16")]),
}


def make_net(cls, space, kind, recurrent, conv="patch", precision="float32"):
    return cls(encoder_spec(space, kind), ACTIONS, hidden=8, recurrent=recurrent, embed_dim=3, channels=4,
               conv=conv, dtype=networks.compute_dtype(precision))


def draw_obs(rng, space, shape):
    if isinstance(space, Dict):
        return {k: draw_obs(rng, s, shape) for k, s in space.spaces.items()}
    if np.issubdtype(space.dtype, np.integer):
        return rng.integers(space.low, space.high.astype(np.int64) + 1, size=shape + space.shape).astype(space.dtype)
    return rng.uniform(-1, 1, size=shape + space.shape).astype(space.dtype)


def draw_params(rng, net, space):
    """Random parameters for ``MEMBERS`` members (numpy draws, LeCun-like scale: the
    outputs are O(0.1 .. 1), not the near-zero logits of the real initialisation)."""
    shapes = jax.eval_shape(net.init, jax.random.key(0), init_hidden(net, 1), sample_obs(space, 1), jnp.zeros((1,),
                                                                                                              bool))

    def draw(x):
        fan_in = int(np.prod(x.shape[:-1])) if len(x.shape) > 1 else 1
        return (rng.normal(size=(MEMBERS, *x.shape)) / np.sqrt(fan_in)).astype(np.float32)

    return jax.tree_util.tree_map(draw, shapes)


@pytest.fixture(scope="module")
def outputs():
    """Per network: for each (conv, precision), the outputs of the members, vmapped,
    on the same parameters and inputs; and the initial parameters of the first and last
    variants for the same key. One compiled call, matrix products at full float32
    precision (so that TF32 on a GPU would not blur the patch/XLA comparison)."""
    rng = np.random.default_rng(0)
    inputs = {}
    for name, (cls, space, kind, recurrent, variants) in VARIANTS.items():
        net = make_net(cls, space, kind, recurrent)
        hidden = rng.normal(size=(MEMBERS, BATCH, networks.hidden_size(net))).astype(np.float32)
        reset = np.zeros((MEMBERS, BATCH), bool)
        reset[:, 0] = True
        inputs[name] = (draw_params(rng, net, space), hidden, draw_obs(rng, space, (MEMBERS, BATCH)), reset)

    @jax.jit
    def compute(inputs):
        out = {}
        for name, (cls, space, kind, recurrent, variants) in VARIANTS.items():
            params, hidden, obs, reset = inputs[name]
            for conv, precision in variants:
                net = make_net(cls, space, kind, recurrent, conv, precision)
                out[name, conv, precision] = jax.vmap(net.apply)(params, hidden, obs, reset)
            (c0, p0), (c1, p1) = variants[0], variants[-1]
            dummy = (init_hidden(net, 1), sample_obs(space, 1), jnp.zeros((1,), bool))
            out[name, "init"] = tuple(make_net(cls, space, kind, recurrent, c, p).init(jax.random.key(1), *dummy)
                                      for c, p in ((c0, p0), (c1, p1)))
        return out

    with jax.default_matmul_precision("highest"):
        return jax.device_get(compute(inputs))


def leaves(out):
    """``(hidden, logits, value)`` or ``(hidden, q)`` as a flat list."""
    return jax.tree_util.tree_leaves(out)


@pytest.mark.parametrize("name", ["cnn_sj", "cnn_rgb_gru"])
def test_every_convolution_gives_the_same_network(outputs, name):
    """Same parameters (names, shapes, initial values) whatever ``conv`` and
    ``precision``, and with the same parameters the same outputs, vmapped over members."""
    init_a, init_b = outputs[name, "init"]
    chex.assert_trees_all_equal(init_a, init_b, strict=True)
    chex.assert_type(jax.tree_util.tree_leaves(init_a), jnp.float32)
    ref = leaves(outputs[name, "patch", "float32"])
    chex.assert_type(ref, jnp.float32)
    for conv in ("xla", "looped"):
        chex.assert_trees_all_equal_shapes_and_dtypes(leaves(outputs[name, conv, "float32"]), ref)
        for want, have in zip(ref, leaves(outputs[name, conv, "float32"])):
            np.testing.assert_allclose(have, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


@pytest.mark.parametrize("name", list(VARIANTS))
def test_bfloat16_outputs_are_float32_and_close_to_float32(outputs, name):
    """bfloat16 compute returns float32 logits, values, Q-values and GRU state, within
    bfloat16 rounding of the float32 network (a few per cent of the output scale) but
    not equal to it (the computation did run in bfloat16)."""
    variants = VARIANTS[name][-1]
    ref = leaves(outputs[(name, *variants[0])])
    for conv, precision in variants:
        if precision != "bfloat16":
            continue
        got = leaves(outputs[name, conv, precision])
        chex.assert_type(got, jnp.float32)
        chex.assert_trees_all_equal_shapes(got, ref)
        for want, have in zip(ref, got):
            scale = np.abs(want).max()
            assert np.abs(have - want).max() < 5e-2 * scale, (conv, np.abs(have - want).max(), scale)
        assert any(np.abs(have - want).max() > 0 for want, have in zip(ref, got))


# ------------------------------------------------------------------------------ cnn_sj
# SocialJax's IPPO CNN (cooperativex/SocialJax, algorithms/utils/networks.py, CNN and
# ActorCritic): Conv 32 5x5, Conv 32 3x3, Conv 32 3x3 (stride 1, SAME), Dense 64, then
# actor Dense 64 -> Dense A and critic Dense 64 -> Dense 1. On our Clean Up observation
# (11x11 codes 0..123, embedded in 8 dimensions; 9 actions) with the default widths
# (channels 32, hidden 64) and our ready_to_zap flag appended to the 64 features:
CLEANUP_SJ = {
    "Encoder_0/Embed_0/embedding": (124, 8),  # 992
    "Encoder_0/Conv_0/kernel": (5, 5, 8, 32), "Encoder_0/Conv_0/bias": (32,),  # 6,432
    "Encoder_0/Conv_1/kernel": (3, 3, 32, 32), "Encoder_0/Conv_1/bias": (32,),  # 9,248
    "Encoder_0/Conv_2/kernel": (3, 3, 32, 32), "Encoder_0/Conv_2/bias": (32,),  # 9,248
    "Encoder_0/Dense_0/kernel": (11 * 11 * 32, 64), "Encoder_0/Dense_0/bias": (64,),  # 247,872
    "Dense_1/kernel": (65, 64), "Dense_1/bias": (64,),  # actor hidden: 4,224
    "Dense_0/kernel": (64, 9), "Dense_0/bias": (9,),  # actor output: 585
    "Dense_3/kernel": (65, 64), "Dense_3/bias": (64,),  # critic hidden: 4,224
    "Dense_2/kernel": (64, 1), "Dense_2/bias": (1,),  # critic output: 65
}
CLEANUP_SJ_PARAMS = 992 + 6432 + 9248 + 9248 + 247872 + 4224 + 585 + 4224 + 65  # 282,890
# (Their own input is a 19-channel one-hot 11x11 image without the flag: Conv_0 has
# 5*5*19*32 + 32 = 15,232 parameters and the heads 64 inputs, 290,570 in all.)


def param_shapes(net, space):
    shapes = jax.eval_shape(net.init, jax.random.key(0), init_hidden(net, 1), sample_obs(space, 1), jnp.zeros((1,),
                                                                                                              bool))
    return {"/".join(k.key for k in path[1:]): x.shape for path, x in jax.tree_util.tree_leaves_with_path(shapes)}


def test_cnn_sj_has_socialjax_layers_on_cleanup_codes_and_rgb():
    """``network="cnn_sj"`` through make_learner with the default config: the shapes
    derived above from SocialJax's network; on RGB frames (88x88x3) only the first
    convolution's input channels and the flattened width change."""
    for obs_mode in ("codes", "rgb"):
        env = sj.make("cleanup") if obs_mode == "codes" else sj.make("cleanup", obs_mode="rgb")
        net = make_learner(env, TrainConfig(network="cnn_sj"), 1).net
        got = param_shapes(net, env.observation_space(env.default_params))
        if obs_mode == "codes":
            assert got == CLEANUP_SJ
            assert sum(int(np.prod(s)) for s in got.values()) == CLEANUP_SJ_PARAMS == 282_890
        else:
            want = {k: v for k, v in CLEANUP_SJ.items() if "Embed" not in k}
            want["Encoder_0/Conv_0/kernel"] = (5, 5, 3, 32)
            want["Encoder_0/Dense_0/kernel"] = (88 * 88 * 32, 64)
            assert got == want


# ------------------------------------------------------------------------ the settings
def test_grid_observations_other_entries_reach_the_features():
    """A grid observation's entries besides the grid (the zap flag, then e.g. an
    inventory, in name order) are concatenated after the CNN: the features change with
    them."""
    space = Dict({"grid": Box(0, 9, (5, 5), jnp.uint8), "ready_to_zap": Box(0, 1, (), jnp.uint8),
                  "inventory": Box(0, 100, (3,), jnp.int32)})
    spec = encoder_spec(space)
    assert spec.vector_keys == ("ready_to_zap", "inventory")
    enc = networks.Encoder(spec, hidden=16)
    obs = sample_obs(space, 2)
    params = enc.init(jax.random.key(0), obs)
    x = enc.apply(params, obs)
    chex.assert_shape(x, (2, 16 + 1 + 3))
    richer = dict(obs, inventory=jnp.array([[0, 0, 0], [5, 1, 2]], jnp.int32))
    np.testing.assert_array_equal(enc.apply(params, richer)[1, -3:], [5, 1, 2])
    np.testing.assert_array_equal(enc.apply(params, richer)[0], x[0])


def test_conv_and_precision_settings_are_checked_and_resolved():
    """``conv="auto"`` is the looped convolution on the CPU backend and XLA's convolution
    elsewhere, resolved when the learner is built; unknown values are rejected before
    anything is compiled; ``socialjax train --set conv=xla`` reaches the config."""
    from socialjax.cli.common import config_overrides, key_value

    assert resolve_conv("auto", "cpu") == "looped"
    assert resolve_conv("auto", "gpu") == resolve_conv("auto", "tpu") == "xla"
    assert resolve_conv("patch", "gpu") == "patch" and resolve_conv("xla", "cpu") == "xla"
    env = sj.make("cleanup")
    for algo in ("ppo", "dqn"):
        net = make_learner(env, TrainConfig(algo=algo, precision="bfloat16"), 4).net
        assert net.conv == ("looped" if jax.default_backend() == "cpu" else "xla")
        assert net.dtype == jnp.bfloat16
        assert make_learner(env, TrainConfig(algo=algo, conv="xla"), 4).net.dtype == jnp.float32
    for field, bad in (("conv", "gpu"), ("precision", "float16"), ("network", "resnet")):
        with pytest.raises(ValueError, match=field):
            TrainConfig(**{field: bad}).validate()
    with pytest.raises(ValueError, match="conv"):
        resolve_conv("cudnn")
    with pytest.raises(ValueError, match="precision"):
        networks.compute_dtype("fp16")
    # the config's copies of the option lists (it does not import JAX) agree
    assert config_module.NETWORKS == networks.ENCODERS
    assert config_module.CONVS == networks.CONVS
    assert tuple(networks.PRECISIONS) == config_module.PRECISIONS
    overrides = config_overrides([key_value("conv=xla"), key_value("precision=bfloat16"), key_value("network=cnn_sj")])
    assert TrainConfig().replace(**overrides) == TrainConfig(conv="xla", precision="bfloat16", network="cnn_sj")
