"""Parametric donor-game strategies: the donated fraction depends on the recipient's trace.

Two strategy spaces (``SPACES``), the option ``strategy_space`` of the cultural evolution.

``"linear"``: a strategy is a ``(D + 2,)`` float32 vector ``theta = [bias, w_1 .. w_D, w_unknown]``
for trace depth ``D``. Facing a recipient whose trace is ``tau`` with known-mask ``k``,
the donor gives the fraction

    f = clip(bias + sum_d w_d * k_d * tau_d + w_unknown * (1 - k_1), low, 1)

with ``low = -1`` when punishment is allowed (negative = punish) and ``0`` otherwise.
``w_1`` weighs what the recipient gave last time (reciprocity towards a generous
recipient), ``w_2`` what that turn's recipient had given (were they rewarding a
deserving partner?), and ``w_unknown`` shifts the gift to a recipient with no history.
Since traces are fractions given (>= 0 without punishment), ``bias``, ``w_1`` and
``w_unknown`` are all knobs of how much a strategy gives to everyone.

``"reciprocal"``: a strategy is a ``(2,)`` float32 vector ``theta = [opening,
reciprocity]``; the donor gives

    f = clip(reciprocity * tau_1, low, 1)   if the recipient's last gift is known,
    f = clip(opening, low, 1)               to a recipient with no history,

that is, ``reciprocity`` times what the recipient gave in its last donor turn (1: the
same fraction, as a trace tit-for-tat; 2: twice as much) and nothing to a recipient who
gave nothing: every gift beyond the opening one is conditional on the recipient's own
generosity, which the linear space cannot enforce (its ``bias`` gives to free riders
too). With punishment, a recipient who punished (``tau_1 < 0``) is punished back.

``"sanctioning"``: a strategy is a ``(4,)`` float32 vector ``theta = [opening,
reciprocity, standard, fine]``; the donor gives

    f = clip(reciprocity * tau_1, low, 1)   if the recipient's last gift tau_1 >= standard,
    f = clip(-fine, low, 1)                 if it is known and below the standard,
    f = clip(opening, low, 1)               to a recipient with no history,

that is, the reciprocal rule with a norm: a recipient whose last gift fell short of the
donor's ``standard`` is fined ``fine`` of the donor's resources where punishment is
allowed, and given nothing where it is not. This is the shape of the strategies the
paper's cooperative language models wrote for themselves (give in proportion to the
recipient's generosity, punish those who gave too little); the reciprocal space can only
withhold from a free rider, and punish only one who punished.

These play the role the language-model agents play in Vallinder & Hughes (2024), so that
cultural evolution can run with no language model at all. All functions are pure and
work under ``jit``/``vmap``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from socialjax.envs.donor.env import OBS_TRACE

SPACES = ("linear", "reciprocal", "sanctioning")
# ours: the reciprocal space's initial reciprocity is uniform in [0, RECIPROCITY_MAX], from
# ignoring the recipient's last gift to returning twice its fraction
RECIPROCITY_MAX = 2.0


def check_space(space: str) -> str:
    """``space`` if it is one of ``SPACES``, else a ``ValueError``."""
    if space not in SPACES:
        raise ValueError(f"strategy_space must be one of {SPACES}, got {space!r}")
    return space


def num_params(trace_depth: int, space: str = "linear") -> int:
    """Length of a strategy vector of ``space`` for ``trace_depth``."""
    return {"linear": trace_depth + 2, "reciprocal": 2, "sanctioning": 4}[check_space(space)]


def fixed_fraction(fraction: float, trace_depth: int) -> jax.Array:
    """Always give ``fraction`` whatever the recipient did."""
    return jnp.zeros(num_params(trace_depth)).at[0].set(fraction)


def reciprocator(trace_depth: int, unknown: float = 0.5) -> jax.Array:
    """Give what the recipient gave last time; ``unknown`` to a recipient with no
    history (a trace-based tit-for-tat)."""
    return jnp.zeros(num_params(trace_depth)).at[1].set(1.0).at[-1].set(unknown)


def donation_fraction(theta: jax.Array, obs: jax.Array, trace_depth: int, punishment: bool = False) -> jax.Array:
    """The signed fraction a strategy gives, for one agent's observation ``(obs_size,)``."""
    trace = obs[OBS_TRACE : OBS_TRACE + trace_depth]
    known = obs[OBS_TRACE + trace_depth : OBS_TRACE + 2 * trace_depth]
    raw = theta[0] + jnp.sum(theta[1 : 1 + trace_depth] * known * trace) + theta[-1] * (1.0 - known[0])
    return jnp.clip(raw, -1.0 if punishment else 0.0, 1.0)


def reciprocal_fraction(theta: jax.Array, obs: jax.Array, trace_depth: int, punishment: bool = False) -> jax.Array:
    """The signed fraction a ``"reciprocal"`` strategy ``[opening, reciprocity]`` gives,
    for one agent's observation ``(obs_size,)``."""
    known = obs[OBS_TRACE + trace_depth] > 0
    raw = jnp.where(known, theta[1] * obs[OBS_TRACE], theta[0])
    return jnp.clip(raw, -1.0 if punishment else 0.0, 1.0)


def sanctioning_fraction(theta: jax.Array, obs: jax.Array, trace_depth: int, punishment: bool = False) -> jax.Array:
    """The signed fraction a ``"sanctioning"`` strategy ``[opening, reciprocity, standard,
    fine]`` gives, for one agent's observation ``(obs_size,)``."""
    known = obs[OBS_TRACE + trace_depth] > 0
    last = obs[OBS_TRACE]
    raw = jnp.where(known, jnp.where(last >= theta[2], theta[1] * last, -theta[3]), theta[0])
    return jnp.clip(raw, -1.0 if punishment else 0.0, 1.0)


RULES = {"linear": donation_fraction, "reciprocal": reciprocal_fraction, "sanctioning": sanctioning_fraction}


def act(thetas: jax.Array, obs: jax.Array, trace_depth: int, punishment: bool = False,
        space: str = "linear") -> jax.Array:
    """Continuous actions for all agents: ``thetas (N, num_params)`` of ``space``, ``obs
    (N, obs_size)`` -> ``(N,) float32``. (Non-donors' actions are ignored by the
    environment.)"""
    rule = RULES[check_space(space)]
    return jax.vmap(rule, in_axes=(0, 0, None, None))(thetas, obs, trace_depth, punishment)


def random_strategies(key: jax.Array, num: int, trace_depth: int, weight_scale: float = 0.5,
                      gift_max: float = 1.0, space: str = "linear") -> jax.Array:
    """An initial population ``(num, num_params)`` of ``space``. Linear: ``bias`` uniform
    in ``[0, gift_max]``, trace and unknown weights normal with standard deviation
    ``weight_scale``. Reciprocal: ``opening`` uniform in ``[0, gift_max]``, ``reciprocity``
    uniform in ``[0, RECIPROCITY_MAX]``. Sanctioning: as reciprocal, with ``standard`` and
    ``fine`` uniform in ``[0, gift_max]`` (a population's first norms no stricter than its
    own opening gifts)."""
    key_bias, key_w = jax.random.split(key)
    bias = gift_max * jax.random.uniform(key_bias, (num, 1))
    if check_space(space) == "linear":
        return jnp.concatenate([bias, weight_scale * jax.random.normal(key_w, (num, trace_depth + 1))], axis=1)
    parts = [bias, RECIPROCITY_MAX * jax.random.uniform(key_w, (num, 1))]
    if space == "sanctioning":  # standard and fine
        parts.append(gift_max * jax.random.uniform(jax.random.fold_in(key_w, 1), (num, 2)))
    return jnp.concatenate(parts, axis=1)


def mutate(key: jax.Array, thetas: jax.Array, std: float | jax.Array) -> jax.Array:
    """Gaussian mutation of every coefficient."""
    return thetas + std * jax.random.normal(key, thetas.shape)
