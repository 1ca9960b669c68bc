"""Flax networks for the learners: an observation encoder chosen from the observation
space, an optional GRU core, and actor-critic or Q-value heads.

Encoders (``kind``):

- ``"mlp"``: float vectors, flattened, two dense layers.
- ``"onehot"``: small integer codes (matrix-game histories, lattice neighbours, public-goods
  records): each feature one-hot over ``high + 1`` classes, then the MLP.
- ``"cnn"``: gridworld observations. Integer codes ``(V, V) uint8`` are embedded
  (``nn.Embed``: a code is a category, not a brightness), RGB ``(H, W, 3) uint8`` is
  scaled to [0, 1]; two 3x3 convolutions, a dense layer, and the ``ready_to_zap`` flag
  concatenated.

Every network has the same call signature so that the learners do not care which one
they hold::

    hidden, out = net.apply(params, hidden, obs, reset)

``obs`` has a leading batch axis ``B``; ``reset`` ``(B,) bool`` marks the first step of
an episode (the GRU state is zeroed there); ``hidden`` is ``(B, H)`` float32 (``H = 1``
and unused for feed-forward networks). ``out`` is ``(logits (B, A), value (B,))`` for
:class:`ActorCritic` and ``q (B, A)`` for :class:`QNetwork`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from socialjax.core.spaces import Box, Dict, Space

ENCODERS = ("auto", "mlp", "onehot", "cnn")
MAX_ONEHOT_CLASSES = 256  # integer features with more values than this are fed as floats


@dataclasses.dataclass(frozen=True)
class EncoderSpec:
    """Static description of how to read one agent's observation."""

    kind: str  # "mlp" | "onehot" | "cnn"
    num_classes: tuple[int, ...] = ()  # onehot: classes per feature; cnn: (num_codes,) for code grids
    grid_key: str | None = None  # cnn: "grid" (codes) or "rgb"


def encoder_spec(space: Space, kind: str = "auto") -> EncoderSpec:
    """Pick (or check) the encoder for an agent's observation space."""
    if kind not in ENCODERS:
        raise ValueError(f"network must be one of {ENCODERS}, got {kind!r}")
    if isinstance(space, Dict):
        key = "grid" if "grid" in space.spaces else "rgb" if "rgb" in space.spaces else None
        if key is None:
            raise ValueError(f"no encoder for a Dict observation without 'grid' or 'rgb': {space}")
        if kind not in ("auto", "cnn"):
            raise ValueError(f"gridworld observations need network='cnn', got {kind!r}")
        classes = (int(np.max(space.spaces["grid"].high)) + 1,) if key == "grid" else ()
        return EncoderSpec("cnn", classes, key)
    if not isinstance(space, Box):
        raise TypeError(f"unsupported observation space {space!r}")
    if kind == "cnn":
        raise ValueError(f"network='cnn' needs a gridworld observation, got {space}")
    integer = jnp.issubdtype(space.dtype, jnp.integer)
    high = np.asarray(space.high).reshape(-1)
    small = integer and np.all(np.isfinite(high)) and np.all(high < MAX_ONEHOT_CLASSES)
    if kind == "onehot" and not small:
        raise ValueError(f"network='onehot' needs integer features below {MAX_ONEHOT_CLASSES}, got {space}")
    if kind == "onehot" or (kind == "auto" and small):
        return EncoderSpec("onehot", tuple(int(h) + 1 for h in high))
    return EncoderSpec("mlp")


class Encoder(nn.Module):
    spec: EncoderSpec
    hidden: int = 64
    embed_dim: int = 8
    channels: int = 32

    @nn.compact
    def __call__(self, obs: Any) -> jax.Array:
        spec = self.spec
        if spec.kind == "cnn":
            if spec.grid_key == "grid":
                x = nn.Embed(spec.num_classes[0], self.embed_dim)(obs["grid"].astype(jnp.int32))
            else:
                x = obs["rgb"].astype(jnp.float32) / 255.0
            # named like flax's nn.Conv, with the same parameter shapes and init
            x = nn.relu(PatchConv(self.channels, name="Conv_0")(x))
            x = nn.relu(PatchConv(self.channels, name="Conv_1")(x))
            x = x.reshape(x.shape[0], -1)
            x = nn.relu(nn.Dense(self.hidden)(x))
            flag = obs["ready_to_zap"].astype(jnp.float32).reshape(x.shape[0], 1)
            return jnp.concatenate([x, flag], axis=-1)
        if spec.kind == "onehot":
            codes = obs.reshape(obs.shape[0], -1).astype(jnp.int32)
            x = jnp.concatenate(
                [jax.nn.one_hot(codes[:, i], n) for i, n in enumerate(spec.num_classes)], axis=-1
            )
        else:
            x = obs.reshape(obs.shape[0], -1).astype(jnp.float32)
        x = nn.relu(nn.Dense(self.hidden)(x))
        return nn.relu(nn.Dense(self.hidden)(x))


class PatchConv(nn.Module):
    """A ``size x size`` convolution, stride 1, SAME padding, computed as one matrix
    product over image patches.

    The result equals ``nn.Conv(features, (size, size))`` with the same parameters
    (``kernel (size, size, C, features)``, ``bias (features,)``, LeCun-normal init), up
    to float rounding. The point is speed when it is vmapped over population members:
    ``vmap`` turns a convolution with per-member kernels into a grouped convolution,
    which XLA's CPU backend runs several times slower than the batched matrix product
    this module becomes (see BENCHMARKS.md, training).
    """

    features: int
    size: int = 3

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        k, c = self.size, x.shape[-1]
        kernel = self.param("kernel", nn.initializers.lecun_normal(), (k, k, c, self.features))
        bias = self.param("bias", nn.initializers.zeros_init(), (self.features,))
        h, w = x.shape[-3], x.shape[-2]
        lo = (k - 1) // 2  # SAME padding: the extra row/column (even k) goes at the end
        pad = [(0, 0)] * (x.ndim - 3) + [(lo, k - 1 - lo), (lo, k - 1 - lo), (0, 0)]
        xp = jnp.pad(x, pad)
        # patch features ordered (row offset, column offset, channel): the kernel's layout
        patches = jnp.concatenate([xp[..., i : i + h, j : j + w, :] for i in range(k) for j in range(k)], axis=-1)
        return patches @ kernel.reshape(k * k * c, self.features) + bias


class GRUCore(nn.Module):
    """A GRU whose state is zeroed where ``reset`` is True, before the step."""

    hidden: int

    @nn.compact
    def __call__(self, carry: jax.Array, x: jax.Array, reset: jax.Array) -> tuple[jax.Array, jax.Array]:
        carry = jnp.where(reset[:, None], jnp.zeros_like(carry), carry)
        carry, y = nn.GRUCell(self.hidden, recurrent_kernel_init=orthogonal())(carry, x)
        return carry, y


def orthogonal(scale: float = 1.0):
    """Orthogonal initialiser (Saxe et al. 2014) computed with Gram-Schmidt in plain
    ``jnp``, not with LAPACK's QR.

    Flax's own ``orthogonal`` calls LAPACK ``geqrf`` through an XLA custom call. Batched
    over population members inside a compiled loop, that call deadlocks jaxlib 0.10's CPU
    runtime on small machines (the QR kernel waits for worker threads that are all busy
    running it; seen on 2 cores). Gram-Schmidt on Gaussian columns gives the same
    distribution (the Q factor with a positive-diagonal R is Haar-distributed), using
    matrix products only. The weight is ``scale`` times a matrix with orthonormal
    columns (or rows, when it is wider than tall), like Flax's.
    """

    def init(key, shape, dtype=jnp.float32):
        rows = int(np.prod(shape[:-1]))
        cols = int(shape[-1])
        m, k = max(rows, cols), min(rows, cols)
        a = jax.random.normal(key, (m, k), jnp.float32)
        q = jnp.zeros((m, k), jnp.float32)

        def column(q, j):
            v = a[:, j]
            for _ in range(2):  # twice is enough for orthogonality to float32 precision
                v = v - q @ (q.T @ v)
            return q.at[:, j].set(v / jnp.linalg.norm(v)), None

        q, _ = jax.lax.scan(column, q, jnp.arange(k))
        if rows < cols:
            q = q.T
        return (scale * q).reshape(shape).astype(dtype)

    return init


class _Network(nn.Module):
    """Fields every network has: the encoder's spec and sizes, the action count, and
    whether a GRU carries memory."""

    spec: EncoderSpec
    num_actions: int
    hidden: int = 64
    recurrent: bool = False
    embed_dim: int = 8
    channels: int = 32


def _trunk(net: _Network, hidden, obs, reset):
    """The encoder and, for a recurrent network, the GRU: ``(hidden, features)``. Called
    inside ``net``'s compact ``__call__``, so the submodules (``Encoder_0``, ``GRUCore_0``)
    belong to ``net``."""
    x = Encoder(net.spec, net.hidden, net.embed_dim, net.channels)(obs)
    if net.recurrent:
        hidden, x = GRUCore(net.hidden)(hidden, x, reset)
    return hidden, x


class ActorCritic(_Network):
    """Encoder, optional GRU, separate policy and value heads."""

    @nn.compact
    def __call__(self, hidden, obs, reset):
        hidden, x = _trunk(self, hidden, obs, reset)
        logits = nn.Dense(self.num_actions, kernel_init=orthogonal(0.01))(nn.relu(nn.Dense(self.hidden)(x)))
        value = nn.Dense(1, kernel_init=orthogonal(1.0))(nn.relu(nn.Dense(self.hidden)(x)))
        return hidden, (logits, value[:, 0])


class QNetwork(_Network):
    """Encoder, optional GRU, one Q-value per action."""

    @nn.compact
    def __call__(self, hidden, obs, reset):
        hidden, x = _trunk(self, hidden, obs, reset)
        q = nn.Dense(self.num_actions)(nn.relu(nn.Dense(self.hidden)(x)))
        return hidden, q


def hidden_size(net: ActorCritic | QNetwork) -> int:
    """Width of the ``hidden`` array the network carries (1 when feed-forward)."""
    return net.hidden if net.recurrent else 1


def init_hidden(net: ActorCritic | QNetwork, batch: int) -> jax.Array:
    return jnp.zeros((batch, hidden_size(net)), jnp.float32)


def sample_obs(space: Space, batch: int) -> Any:
    """Zeros shaped like a batch of observations (to initialise parameters)."""
    if isinstance(space, Dict):
        return {k: sample_obs(s, batch) for k, s in space.spaces.items()}
    return jnp.zeros((batch, *space.shape), space.dtype)


def num_params(params: Any) -> int:
    return int(sum(np.prod(x.shape) for x in jax.tree_util.tree_leaves(params)))


__all__: Sequence[str] = (
    "ActorCritic",
    "QNetwork",
    "Encoder",
    "EncoderSpec",
    "GRUCore",
    "PatchConv",
    "encoder_spec",
    "hidden_size",
    "init_hidden",
    "sample_obs",
    "num_params",
)
