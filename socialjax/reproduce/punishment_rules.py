"""The scripted members of the ``punishment`` entry (Fehr & Gaechter 2000, 2002) in the
public goods game (``public_goods`` with ``punishment=True``): conditional cooperators
and free riders, their contributions, their punishment and what a punished member
learns under partner matching; one session of them as a pure function. Every rule and
number is ours except the qualitative shape and the matching protocols (see the entry's
module, :mod:`socialjax.reproduce.punishment`, and docs/reproduce.md)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from socialjax.envs.institutions.public_goods import OBS_PERIOD, OBS_PUNISH_STAGE, obs_slices, shortfall_points

# ours: a session of 24 members (6 groups of 4), two thirds conditional cooperators
SESSION = 24
COOPERATORS = 16
CONDITIONAL, FREE_RIDER = 0, 1
# the scripted rules (ours; the downward bias after Fischbacher, Gaechter & Fehr 2001)
BIAS = 0.9  # a conditional cooperator aims at this fraction of the others' last mean
ADJUST = 0.5  # share of the gap to the aim closed each period
RESPONSE = 0.5  # tokens of extra contribution per token of payoff lost to punishment


def learnt_standard(env, obs: jax.Array, standard: jax.Array) -> jax.Array:
    """``(N,)`` the contribution each scripted member keeps to because its group punished
    it, updated from its observation ``(N, obs_size)`` at a contribution step. Under
    partner matching the group stays together for the whole session (Fehr & Gaechter
    2000, the partner treatment), so a member punished last period meets its punishers
    again: it learns their standard, its group's mean contribution of that period (the
    conditional cooperators punish shortfalls from it), and keeps to it in every later
    period (a later punishment replaces it). Under stranger matching the next group is
    new (its standard unknown; Fehr & Gaechter 2002 ruled out meeting anyone twice):
    nothing is kept (0). ``standard`` ``(N,)``: what was kept so far. Pure."""
    if env.matching != "partner":
        return jnp.zeros_like(standard)
    where = obs_slices(env.group_size)
    punished = obs[:, where["received"]].sum(axis=1) > 0
    learns = punished & (obs[:, OBS_PUNISH_STAGE] == 0)  # once per period, at the contribution step
    return jnp.where(learns, obs[:, where["last"]].astype(jnp.float32).mean(axis=1), standard)


def scripted_contribution(env, obs: jax.Array, types: jax.Array, first: jax.Array, params,
                          standard: jax.Array) -> jax.Array:
    """``(N,) int32`` contributions of scripted members from their observations ``(N,
    obs_size)`` of the public goods game: ``first`` ``(N,)`` in period 0; later, with own
    last contribution ``g``, the others' last mean ``m`` and the payoff ``L`` lost to the
    points received last period, ``g + ADJUST * (aim - g) + RESPONSE * L``, at least the
    learnt ``standard`` ``(N,)`` (:func:`learnt_standard`), rounded and clipped to
    ``0..e``, the aim ``BIAS * m`` for a conditional cooperator and 0 for a free rider.
    Pure."""
    where = obs_slices(env.group_size)
    last = obs[:, where["last"]].astype(jnp.float32)
    received = obs[:, where["received"]].sum(axis=1).astype(jnp.float32)
    own, others = last[:, 0], last[:, 1:].mean(axis=1)
    first_stage = env.endowment - own + params.mpcr * last.sum(axis=1)  # last period's, before punishment
    lost = first_stage * jnp.minimum(params.max_cut, params.cut_per_point * received) + params.fine_per_point * received
    aim = jnp.where(types == CONDITIONAL, BIAS * others, 0.0)
    g = jnp.maximum(own + ADJUST * (aim - own) + RESPONSE * lost, standard)
    g = jnp.where(obs[:, OBS_PERIOD] == 0, first, g)
    return jnp.clip(jnp.round(g), 0, env.endowment).astype(jnp.int32)


def scripted_points(env, obs: jax.Array, types: jax.Array) -> jax.Array:
    """``(N, n - 1) int32`` points at the punishment stage: a conditional cooperator
    punishes shortfalls from its group's mean contribution this period
    (:func:`shortfall_points`), a free rider punishes nobody. Pure."""
    current = obs[:, obs_slices(env.group_size)["current"]]
    points = shortfall_points(current, current.astype(jnp.float32).mean(axis=1), env.max_points)
    return jnp.where((types == CONDITIONAL)[:, None], points, 0)


def scripted_actions(env, obs, types, first, params, punish, standard) -> jax.Array:
    """``(N, n) int32`` actions of the punishment game (``env.punishment``): the
    contribution, then the points (zero unless ``punish``, a traced bool)."""
    points = jnp.where(punish, scripted_points(env, obs, types), 0)
    contribution = scripted_contribution(env, obs, types, first, params, standard)
    return jnp.concatenate([contribution[:, None], points], axis=1)


def session(env, params, key: jax.Array, punish) -> dict[str, jax.Array]:
    """One session of scripted members (``COOPERATORS`` conditional cooperators seated at
    random, first contributions uniform in ``0..e``) in the punishment game ``env``: per
    period ``(P,)`` the mean contribution as a fraction of the endowment, the mean payoff
    and the mean points received per member. Pure; ``punish`` may be traced."""
    N, e = env.num_agents, env.endowment
    key_types, key_first, key_reset, key_run = jax.random.split(key, 4)
    types = jax.random.permutation(key_types, jnp.where(jnp.arange(N) < COOPERATORS, CONDITIONAL, FREE_RIDER))
    first = jax.random.randint(key_first, (N,), 0, e + 1).astype(jnp.float32)

    def step(carry, key):
        obs, state, standard = carry
        standard = learnt_standard(env, obs, standard)
        actions = scripted_actions(env, obs, types, first, params, punish, standard)
        obs, state, _, _, info = env.step(key, state, actions, params, auto_reset=False)
        return (obs, state, standard), (info["contributed"], info["period_payoff"], info["points_received"])

    start = env.reset(key_reset, params) + (jnp.zeros(N, jnp.float32),)
    _, (contributed, payoff, received) = jax.lax.scan(step, start, jax.random.split(key_run, env.episode_length))

    def per_period(x):  # (T, N) -> (P,) mean over members of each period's total
        return x.reshape(env.num_periods, env.steps_per_period, N).sum(axis=1).mean(axis=1)

    return {"contribution": per_period(contributed.astype(jnp.float32)) / e, "payoff": per_period(payoff),
            "points": per_period(received.astype(jnp.float32))}
