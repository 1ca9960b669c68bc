"""Flax networks for the learners: an observation encoder chosen from the observation
space, an optional GRU core, and actor-critic or Q-value heads.

Encoders (``kind``):

- ``"mlp"``: float vectors, flattened, two dense layers.
- ``"onehot"``: small integer codes (matrix-game histories, lattice neighbours, public-goods
  records): each feature one-hot over ``high + 1`` classes, then the MLP.
- ``"cnn"``: gridworld observations. Integer codes ``(V, V) uint8`` are embedded
  (``nn.Embed``: a code is a category, not a brightness), RGB ``(H, W, 3) uint8`` is
  scaled to [0, 1]; two 3x3 convolutions, a dense layer, and the observation's other
  entries concatenated as floats: the ``ready_to_zap`` flag, then any others in name
  order (e.g. an inventory).
- ``"cnn_sj"``: the same inputs through the CNN of SocialJax's published IPPO baselines
  (cooperativex/SocialJax, ``algorithms/utils/networks.py``, used by
  ``algorithms/IPPO/ippo_cnn_cleanup.py``): a 5x5 and two 3x3 convolutions, a dense
  layer, orthogonal ``sqrt(2)`` initialisation (see :class:`Encoder`).

An observation ``{"obs": ..., "coplayer": (K,) float32}`` (what a learner sees with
``TrainConfig.coplayer_id``: its own observation and a description of its co-players,
see :mod:`socialjax.train.seated`) is read by the encoder of ``"obs"``, with the ``K``
floats concatenated to the features: before the dense layers of ``"mlp"`` and
``"onehot"`` (the input, as in the "Opponent ID" ablation of Weis et al. 2026), after
the convolutions of the grid encoders (beside the ``ready_to_zap`` flag).

Two settings do not change the parameters, only how they are computed:

- ``conv``: how each convolution (:class:`Conv2D`) is computed, one of the functions of
  :mod:`socialjax.agents.convolution`: ``"patch"`` (one matrix product over image
  patches), ``"xla"`` (``lax.conv_general_dilated``, what flax's ``nn.Conv`` calls; many
  members' own kernels as batched matrix products: the GPU's choice) or ``"looped"``
  (XLA's convolution with hand-written gradients, population members one after another:
  fastest on XLA's CPU backend). None becomes a grouped convolution under ``vmap``.
  :func:`resolve_conv` turns ``"auto"`` into ``"looped"`` or ``"xla"`` for the default backend.
- ``dtype``: the compute dtype. ``jnp.bfloat16`` runs the embeddings, convolutions and
  dense layers in bfloat16 with float32 parameters; the GRU and its state stay float32,
  and the logits, values and Q-values are returned as float32.

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
from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from jax.lax import Precision

from socialjax.agents.convolution import CONVOLUTIONS
from socialjax.core.spaces import Box, Dict, Space

ENCODERS = ("auto", "mlp", "onehot", "cnn", "cnn_sj")
GRID_ENCODERS = ("cnn", "cnn_sj")
CONVS = ("auto", "patch", "xla", "looped")
PRECISIONS = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}
HIGHEST = Precision.HIGHEST
MAX_ONEHOT_CLASSES = 256  # integer features with more values than this are fed as floats
COPLAYER = "coplayer"  # the key of the co-player view in an observation (TrainConfig.coplayer_id)
# the keys of what a learner with a centralised critic sees on each seat (CentralActorCritic)
ACTOR, GLOBAL, SEAT = "actor", "global", "seat"


def resolve_conv(conv: str, backend: str | None = None) -> str:
    """``"patch"``, ``"xla"`` or ``"looped"``: ``conv`` itself, or for ``"auto"`` the looped
    convolution on the CPU backend and XLA's convolution on any other (``backend``
    defaults to ``jax.default_backend()``)."""
    if conv not in CONVS:
        raise ValueError(f"conv must be one of {CONVS}, got {conv!r}")
    if conv != "auto":
        return conv
    backend = jax.default_backend() if backend is None else backend
    return "looped" if backend == "cpu" else "xla"


def compute_dtype(precision: str) -> Any:
    """The compute dtype of a ``precision`` name (``"float32"`` or ``"bfloat16"``)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {tuple(PRECISIONS)}, got {precision!r}")
    return PRECISIONS[precision]


@dataclasses.dataclass(frozen=True)
class EncoderSpec:
    """Static description of how to read one agent's observation."""

    kind: str  # "mlp" | "onehot" | "cnn" | "cnn_sj"
    num_classes: tuple[int, ...] = ()  # onehot: classes per feature; cnn: (num_codes,) for code grids
    grid_key: str | None = None  # cnn: "grid" (codes) or "rgb"
    vector_keys: tuple[str, ...] = ("ready_to_zap",)  # cnn: the other entries, concatenated after the CNN
    extra: int = 0  # floats read beside the observation (0: none): the co-player view, or a critic's seat
    extra_key: str = COPLAYER  # where those floats are: obs[extra_key] beside obs["obs"]


def encoder_spec(space: Space, kind: str = "auto") -> EncoderSpec:
    """Pick (or check) the encoder for an agent's observation space."""
    if kind not in ENCODERS:
        raise ValueError(f"network must be one of {ENCODERS}, got {kind!r}")
    if isinstance(space, Dict) and COPLAYER in space.spaces:
        inner, view = space.spaces["obs"], space.spaces[COPLAYER]
        return dataclasses.replace(encoder_spec(inner, kind), extra=int(np.prod(view.shape)))
    if isinstance(space, Dict):
        key = "grid" if "grid" in space.spaces else "rgb" if "rgb" in space.spaces else None
        if key is None:
            raise ValueError(f"no encoder for a Dict observation without 'grid' or 'rgb': {space}")
        if kind not in ("auto",) + GRID_ENCODERS:
            raise ValueError(f"gridworld observations need network='cnn' or 'cnn_sj', got {kind!r}")
        classes = (int(np.max(space.spaces["grid"].high)) + 1,) if key == "grid" else ()
        others = sorted(k for k in space.spaces if k not in ("grid", "rgb", "ready_to_zap"))
        vectors = (("ready_to_zap",) if "ready_to_zap" in space.spaces else ()) + tuple(others)
        return EncoderSpec("cnn_sj" if kind == "cnn_sj" else "cnn", classes, key, vector_keys=vectors)
    if not isinstance(space, Box):
        raise TypeError(f"unsupported observation space {space!r}")
    if kind in GRID_ENCODERS:
        raise ValueError(f"network={kind!r} needs a gridworld observation, got {space}")
    integer = jnp.issubdtype(space.dtype, jnp.integer)
    high = np.asarray(space.high).reshape(-1)
    small = integer and np.all(np.isfinite(high)) and np.all(high < MAX_ONEHOT_CLASSES)
    if kind == "onehot" and not small:
        raise ValueError(f"network='onehot' needs integer features below {MAX_ONEHOT_CLASSES}, got {space}")
    if kind == "onehot" or (kind == "auto" and small):
        return EncoderSpec("onehot", tuple(int(h) + 1 for h in high))
    return EncoderSpec("mlp")


# SocialJax's IPPO CNN (cooperativex/SocialJax, algorithms/utils/networks.py, classes CNN
# and ActorCritic, used by algorithms/IPPO/ippo_cnn_cleanup.py with ACTIVATION "relu"
# from algorithms/IPPO/config/ippo_base.yaml): convolutions of 32 features with 5x5, 3x3
# and 3x3 kernels (flax defaults: stride 1, SAME padding), a 64-unit dense layer, ReLU
# after each; kernels orthogonal with scale sqrt(2), biases zero. Here the widths are
# ``channels`` and ``hidden``, whose defaults (32, 64) are theirs.
SJ_KERNELS = (5, 3, 3)
SJ_SCALE = float(np.sqrt(2.0))
CNN_KERNELS = (3, 3)  # our own "cnn"


class Encoder(nn.Module):
    spec: EncoderSpec
    hidden: int = 64
    embed_dim: int = 8
    channels: int = 32
    conv: str = "patch"  # "patch" | "xla" | "looped": how the convolutions are computed (same parameters)
    dtype: Any = jnp.float32  # compute dtype; parameters are float32 either way

    @nn.compact
    def __call__(self, obs: Any) -> jax.Array:
        spec = self.spec
        view = None
        if spec.extra:
            extra = obs[spec.extra_key]
            view = extra.astype(jnp.float32).reshape(extra.shape[0], -1).astype(self.dtype)
            obs = obs["obs"]
        if spec.kind in GRID_ENCODERS:
            if spec.grid_key == "grid":
                x = nn.Embed(spec.num_classes[0], self.embed_dim, dtype=self.dtype)(obs["grid"].astype(jnp.int32))
            else:
                x = (obs["rgb"].astype(jnp.float32) / 255.0).astype(self.dtype)
            sj = spec.kind == "cnn_sj"
            init = orthogonal(SJ_SCALE) if sj else nn.initializers.lecun_normal()
            # named like flax's nn.Conv, with the same parameter shapes and init
            for i, size in enumerate(SJ_KERNELS if sj else CNN_KERNELS):
                x = nn.relu(Conv2D(self.channels, size, self.conv, self.dtype, init, name=f"Conv_{i}")(x))
            x = x.reshape(x.shape[0], -1)
            x = nn.relu(nn.Dense(self.hidden, dtype=self.dtype, kernel_init=init)(x))
            vectors = [obs[k].astype(x.dtype).reshape(x.shape[0], -1) for k in spec.vector_keys]
            return jnp.concatenate([x, *vectors] + ([] if view is None else [view]), axis=-1)
        if spec.kind == "onehot":
            codes = obs.reshape(obs.shape[0], -1).astype(jnp.int32)
            x = jnp.concatenate(
                [jax.nn.one_hot(codes[:, i], n, dtype=self.dtype) for i, n in enumerate(spec.num_classes)], axis=-1
            )
        else:
            x = obs.reshape(obs.shape[0], -1).astype(jnp.float32)
        if view is not None:
            x = jnp.concatenate([x, view.astype(x.dtype)], axis=-1)
        x = nn.relu(nn.Dense(self.hidden, dtype=self.dtype)(x))
        return nn.relu(nn.Dense(self.hidden, dtype=self.dtype)(x))


class Conv2D(nn.Module):
    """A ``size x size`` convolution, stride 1, SAME padding, with the parameters of flax's
    ``nn.Conv(features, (size, size))``: ``kernel (size, size, C, features)`` (init
    ``kernel_init``, LeCun-normal by default, as flax's) and ``bias (features,)`` (zeros).

    ``impl`` chooses how it is computed, never what it computes (the three agree up to
    float rounding, and a checkpoint made with one runs with another): ``"patch"``,
    ``"xla"`` or ``"looped"``, the functions of :mod:`socialjax.agents.convolution`
    (whose docstring says where each is fast; BENCHMARKS.md, training, has the numbers).

    ``dtype`` is the compute dtype: the input, kernel and bias are cast to it (the
    parameters themselves stay float32).
    """

    features: int
    size: int = 3
    impl: str = "patch"
    dtype: Any = jnp.float32
    kernel_init: Any = nn.initializers.lecun_normal()

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        k, c = self.size, x.shape[-1]
        kernel = self.param("kernel", self.kernel_init, (k, k, c, self.features))
        bias = self.param("bias", nn.initializers.zeros_init(), (self.features,))
        if self.impl not in CONVOLUTIONS:
            raise ValueError(f"Conv2D impl must be one of {tuple(CONVOLUTIONS)}, got {self.impl!r}")
        x, kernel, bias = (a.astype(self.dtype) for a in (x, kernel, bias))
        return CONVOLUTIONS[self.impl](x, kernel) + bias


PatchConv = Conv2D  # the former name (``impl="patch"`` is the default)


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
                # full float32 products: TF32 (a GPU's default) would leave the columns
                # orthonormal only to about 1e-3
                v = v - jnp.dot(q, jnp.dot(q.T, v, precision=HIGHEST), precision=HIGHEST)
            return q.at[:, j].set(v / jnp.linalg.norm(v)), None

        q, _ = jax.lax.scan(column, q, jnp.arange(k))
        if rows < cols:
            q = q.T
        return (scale * q).reshape(shape).astype(dtype)

    return init


class _Network(nn.Module):
    """Fields every network has: the encoder's spec and sizes, the action count,
    whether a GRU carries memory, how convolutions are computed (``"patch"``, ``"xla"``
    or ``"looped"``, see :class:`Conv2D`) and the compute dtype (float32 or bfloat16)."""

    spec: EncoderSpec
    num_actions: int
    hidden: int = 64
    recurrent: bool = False
    embed_dim: int = 8
    channels: int = 32
    conv: str = "patch"
    dtype: Any = jnp.float32


def _trunk(net: _Network, hidden, obs, reset):
    """The encoder and, for a recurrent network, the GRU: ``(hidden, features)``. Called
    inside ``net``'s compact ``__call__``, so the submodules (``Encoder_0``, ``GRUCore_0``)
    belong to ``net``. The GRU runs in float32 whatever the compute dtype."""
    x = Encoder(net.spec, net.hidden, net.embed_dim, net.channels, net.conv, net.dtype)(obs)
    if net.recurrent:
        hidden, x = GRUCore(net.hidden)(hidden, x.astype(jnp.float32), reset)
    return hidden, x


def _head_init(net: _Network):
    """Initialiser of the heads' hidden layers: SocialJax's orthogonal ``sqrt(2)`` for
    ``cnn_sj`` (their ActorCritic), flax's LeCun-normal default otherwise."""
    return orthogonal(SJ_SCALE) if net.spec.kind == "cnn_sj" else nn.initializers.lecun_normal()


class ActorCritic(_Network):
    """Encoder, optional GRU, separate policy and value heads (a hidden layer each; the
    output layers orthogonal with scale 0.01 and 1.0). Logits and values come back as
    float32 whatever the compute dtype."""

    @nn.compact
    def __call__(self, hidden, obs, reset):
        hidden, x = _trunk(self, hidden, obs, reset)
        dense = lambda n, init: nn.Dense(n, dtype=self.dtype, kernel_init=init)
        init = _head_init(self)
        logits = dense(self.num_actions, orthogonal(0.01))(nn.relu(dense(self.hidden, init)(x)))
        value = dense(1, orthogonal(1.0))(nn.relu(dense(self.hidden, init)(x)))
        return hidden, (logits.astype(jnp.float32), value[:, 0].astype(jnp.float32))


class CentralActorCritic(_Network):
    """An actor on the seat's own observation and a centralised critic on the game's
    global observation (MAPPO, Yu et al. 2022). ``obs`` is ``{"actor": own observation,
    "global": the game's global observation, "seat": (N,) one-hot of the seat in its
    game}``. The actor is ``spec``'s encoder, the optional GRU and a policy head; the
    critic is ``critic_spec``'s encoder of the global observation with the seat's one-hot
    read beside it (``critic_spec.extra_key == "seat"``: one critic gives each seat its
    own value, the agent-id conditioning of MAPPO's paper) and a value head; the critic
    is feed-forward (the global observation is the state). Heads as in
    :class:`ActorCritic`."""

    critic_spec: EncoderSpec = EncoderSpec("mlp")

    @nn.compact
    def __call__(self, hidden, obs, reset):
        hidden, x = _trunk(self, hidden, obs[ACTOR], reset)
        dense = lambda n, init: nn.Dense(n, dtype=self.dtype, kernel_init=init)
        init = _head_init(self)
        logits = dense(self.num_actions, orthogonal(0.01))(nn.relu(dense(self.hidden, init)(x)))
        critic = Encoder(self.critic_spec, self.hidden, self.embed_dim, self.channels, self.conv, self.dtype,
                         name="Critic")
        y = critic({"obs": obs[GLOBAL], SEAT: obs[SEAT]})
        value = dense(1, orthogonal(1.0))(nn.relu(dense(self.hidden, init)(y)))
        return hidden, (logits.astype(jnp.float32), value[:, 0].astype(jnp.float32))


class QNetwork(_Network):
    """Encoder, optional GRU, one Q-value per action (float32 whatever the compute
    dtype)."""

    @nn.compact
    def __call__(self, hidden, obs, reset):
        hidden, x = _trunk(self, hidden, obs, reset)
        q = nn.Dense(self.num_actions, dtype=self.dtype)(nn.relu(nn.Dense(self.hidden, dtype=self.dtype)(x)))
        return hidden, q.astype(jnp.float32)


def critic_spec(global_space: Space, kind: str, num_seats: int) -> EncoderSpec:
    """The encoder of a centralised critic: ``kind``'s encoder for the global observation
    space, reading the seat's ``(num_seats,)`` one-hot beside it."""
    return dataclasses.replace(encoder_spec(global_space, kind), extra=num_seats, extra_key=SEAT)


def central_space(actor_space: Space, global_space: Space, num_seats: int) -> Dict:
    """What a learner with a centralised critic observes on each seat: ``{"actor": the
    seat's own observation, "global": the game's global observation, "seat": (N,)
    one-hot of the seat in its game}``."""
    return Dict({ACTOR: actor_space, GLOBAL: global_space, SEAT: Box(0.0, 1.0, (num_seats,), np.float32)})


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
    "CentralActorCritic",
    "QNetwork",
    "Conv2D",
    "Encoder",
    "EncoderSpec",
    "GRUCore",
    "PatchConv",
    "central_space",
    "compute_dtype",
    "critic_spec",
    "encoder_spec",
    "resolve_conv",
    "hidden_size",
    "init_hidden",
    "sample_obs",
    "num_params",
)
