"""The learners of the ``commons-institutions`` entry's Ostrom arms (ours): independent
REINFORCE learners in the laboratory CPR of Ostrom, Gardner & Walker (1994), in
``commons_ostrom`` with all three institutions built in, each arm of :data:`ARMS`
holding off the ones it lacks (:func:`arm_params`, :func:`arm_actions`).

Each player is a linear softmax policy on its observation (normalised), one softmax
per action head (the level, the monitor flag, the vote), trained on its own reward to
go (no discount: a vote pays later), with the batch mean as baseline, the advantage
scaled per player, Adam (:data:`LEARNING_RATE`).
:func:`learn_institutions` trains every arm for a set of seeds in one compiled program;
:func:`ostrom_benchmarks` gives the stage game's Nash equilibrium and optimum the
arms are measured against; :func:`institution_values` is the entry's model
``commons-institutions/ostrom``. The experiment and its criterion:
:mod:`socialjax.reproduce.commons_institutions`."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax

from socialjax import make
from socialjax.reproduce.entry import FINAL_SHARE
from socialjax.rollout import scan_steps
from socialjax.train.models import Model, register_model

ARMS = ("none", "monitoring", "sanctions", "quota_vote", "sanctions+quota_vote")
# per arm: (monitoring on, sanctions on, vote on)
SWITCHES = {"none": (0, 0, 0), "monitoring": (1, 0, 0), "sanctions": (0, 1, 0), "quota_vote": (0, 0, 1),
            "sanctions+quota_vote": (0, 1, 1)}
LEARNING_RATE = 0.1  # ours (Adam)


def ostrom_benchmarks(params, num_agents: int) -> dict[str, float]:
    """The symmetric Nash equilibrium and the optimum of the OGW stage game with
    ``reward_i = w (e - x_i) + x_i (a - b X)``: a player's marginal payoff ``a - w - b X
    - b x_i`` vanishes at ``x = (a - w) / (b (N + 1))`` each; the group's rent ``(a - w)
    X - b X^2`` peaks at ``X* = (a - w) / (2 b)`` with ``(a - w)^2 / (4 b)``. Totals of
    tokens per round and the rent as a share of the peak."""
    a, b, w = float(params.pool_a), float(params.pool_b), float(params.market_wage)
    nash = num_agents * (a - w) / (b * (num_agents + 1))
    optimum = (a - w) / (2 * b)
    peak = (a - w) ** 2 / (4 * b)
    rent = lambda x: ((a - w) * x - b * x * x) / peak  # noqa: E731
    return {"nash_tokens": nash, "optimum_tokens": optimum, "peak_rent": peak,
            "nash_rent_share": rent(nash), "optimum_rent_share": 1.0}


def institutions_env():
    """The Ostrom CPR with all three institutions built in (an arm switches off the ones
    it lacks)."""
    return make("commons_ostrom", monitoring=True, sanctions="destroy", quota_vote=True)


def arm_params(env, arm: str):
    """The env params of ``arm``: the fine rate 0 where it has no sanctions."""
    return env.default_params.replace(fine_rate=env.default_params.fine_rate * SWITCHES[arm][1])


def arm_actions(env, actions: jax.Array, arm_on: jax.Array) -> jax.Array:
    """``(N, 3)`` actions with the heads an arm lacks held at the no-op (monitor flag 0,
    vote abstain); ``arm_on`` ``(3,)`` bool: level, monitoring, vote."""
    return jnp.where(arm_on[None, :], actions, jnp.asarray(env.noop_action)[None, :])


def _features(env, obs: jax.Array, params) -> jax.Array:
    """``(N, N + 5)``: a bias and the observation, tokens over the endowment, the step
    over the episode length."""
    e = params.endowment.astype(jnp.float32)
    scale = jnp.full((obs.shape[1],), e).at[env.obs_index["seen"]].set(1.0).at[env.obs_index["step"]].set(
        float(env.episode_length))
    return jnp.concatenate([jnp.ones((obs.shape[0], 1)), obs / scale], axis=1)


def _head_starts(env) -> np.ndarray:
    """Where each action head's logits start in a policy's output, its total width last:
    the level (``num_levels``), the monitor flag (2) and the vote (``num_levels + 1``)."""
    L = env.num_levels
    return np.cumsum((0, L, 2, L + 1))


def _act(theta: jax.Array, feat: jax.Array, gumbel: jax.Array, starts: np.ndarray) -> jax.Array:
    """``(N, 3)`` actions of the policies ``theta`` on ``feat`` ``(N, F)``, sampled with
    the Gumbel noise ``gumbel`` ``(N, width)``: each head's largest perturbed logit."""
    logits = jnp.einsum("nf,nfa->na", feat, theta) + gumbel
    return jnp.stack([jnp.argmax(logits[:, starts[h]:starts[h + 1]], axis=1) for h in range(3)], axis=1)


def _log_prob(theta: jax.Array, on: jax.Array, feat: jax.Array, a: jax.Array, starts: np.ndarray) -> jax.Array:
    """``(..., N)`` log-probabilities of the actions ``a`` ``(..., N, 3)`` on ``feat``
    ``(..., N, F)``, summed over the heads the arm has (``on``)."""
    logits = jnp.einsum("...nf,nfa->...na", feat, theta)
    total = 0.0
    for h in range(3):
        lp = jax.nn.log_softmax(logits[..., starts[h]:starts[h + 1]])
        total = total + on[h] * jnp.take_along_axis(lp, a[..., h:h + 1], axis=-1)[..., 0]
    return total


def _episode(env, starts: np.ndarray, theta, on, params, gumbel, key) -> tuple[jax.Array, ...]:
    """One game of the policies ``theta`` in the arm ``on`` (``gumbel`` ``(T, N,
    width)``): per round the features, the actions, the rewards, the group's tokens and
    fines, the monitoring rate and the quota in force."""

    def policy(g, obs, state):
        return arm_actions(env, _act(theta, _features(env, obs, params), g, starts).astype(jnp.int32), on)

    def per_round(carry, step):
        info = step.info
        return carry, (_features(env, step.obs, params), step.actions, step.reward, info["harvest"].sum(),
                       info["fine"].sum(), info["monitored"].mean(), info["quota"])

    return scan_steps(env, env.reset(key, params), policy, keys=jax.random.split(key, env.episode_length),
                      inputs=gumbel, params=params, record=per_round, auto_reset=False).records


def _round_metrics(params, bench: dict, r, tokens, fines, monitored, quota) -> dict[str, jax.Array]:
    """A batch's means per round: tokens, the rent and the net payoff (above everyone in
    the market, after fines and monitoring costs) as shares of the optimum rent, fines,
    monitoring rate and quota in force."""
    rent = ((params.pool_a - params.market_wage) * tokens - params.pool_b * tokens ** 2) / bench["peak_rent"]
    outside = r.shape[-1] * params.market_wage * params.endowment  # everyone in the market
    return {"tokens": tokens.mean(), "rent_share": rent.mean(),
            "net_share": (r.sum(axis=-1) - outside).mean() / bench["peak_rent"], "fines": fines.mean(),
            "monitoring": monitored.mean(), "quota": quota.mean()}


@functools.partial(jax.jit, static_argnames=("iterations", "batch"))
def learn_institutions(keys: jax.Array, iterations: int, batch: int, lr: float = LEARNING_RATE) -> dict[str, jax.Array]:
    """Independent REINFORCE learners in every arm of :data:`ARMS`, ``S`` seeds: per
    iteration ``(S, A, I)`` curves of tokens per round, rent share, net share, fines per
    round (the group's), monitoring rate and quota in force (means over the batch's
    games and rounds)."""
    env = institutions_env()
    base = env.default_params
    N, T = env.num_agents, env.episode_length
    starts = _head_starts(env)
    width = int(starts[-1])
    bench = ostrom_benchmarks(base, N)
    opt = optax.adam(lr)
    games = jax.vmap(functools.partial(_episode, env, starts), in_axes=(None, None, None, 0, 0))

    def run(key, arm):
        on = jnp.array([True, arm[0] == 1, arm[2] == 1])
        params = base.replace(fine_rate=base.fine_rate * arm[1])

        def update(carry, key):
            theta, opt_state = carry
            k_u, k_env = jax.random.split(key)
            gumbel = -jnp.log(-jnp.log(jax.random.uniform(k_u, (batch, T, N, width), minval=1e-9, maxval=1.0)))
            feat, a, r, tokens, fines, monitored, quota = games(theta, on, params, gumbel,
                                                                jax.random.split(k_env, batch))
            to_go = jnp.cumsum(r[:, ::-1], axis=1)[:, ::-1]  # (B, T, N)
            adv = to_go - to_go.mean(axis=0, keepdims=True)
            adv = adv / (adv.std(axis=(0, 1), keepdims=True) + 1e-6)
            grad = jax.grad(lambda th: -(_log_prob(th, on, feat, a, starts) * adv).mean())(theta)
            step, opt_state = opt.update(grad, opt_state, theta)
            theta = optax.apply_updates(theta, step)
            return (theta, opt_state), _round_metrics(params, bench, r, tokens, fines, monitored, quota)

        theta = jnp.zeros((N, N + 5, width))
        _, metrics = jax.lax.scan(update, (theta, opt.init(theta)), jax.random.split(key, iterations))
        return metrics

    arms = jnp.asarray([SWITCHES[a] for a in ARMS], jnp.float32)
    return jax.vmap(lambda k: jax.vmap(run, in_axes=(None, 0))(k, arms))(keys)


# ------------------------------------------------------------------ the entry's model
INSTITUTION_MEASURES = ("tokens", "rent_share", "net_share", "fines", "monitoring", "quota")


def seed_keys(seeds: int, base_seed: int, offset: int) -> jax.Array:
    """The keys of seeds ``base_seed .. base_seed + seeds - 1`` of a stream (``offset``).
    RBG keys (ours): the same statistics as the default generator, and its programs
    compile several times faster on the CPU."""
    return jnp.stack([jax.random.key(offset + base_seed + s, impl="rbg") for s in range(seeds)])


def institution_keys() -> tuple[tuple[str, str], ...]:
    keys = [(f"ostrom/{arm}", m) for arm in ARMS for m in INSTITUTION_MEASURES]
    keys += [(f"benchmark/{b}", m) for b in ("nash", "optimum") for m in ("tokens", "rent_share")]
    return tuple(keys)


def benchmarks() -> dict[str, float]:
    env = institutions_env()
    return ostrom_benchmarks(env.default_params, env.num_agents)


def institution_values(iterations: int, batch: int, seeds: int, base_seed: int = 0
                       ) -> dict[tuple[str, str], np.ndarray]:
    """Each arm's REINFORCE learners (:func:`learn_institutions`, ``iterations`` updates
    of ``batch`` games), ``(seeds,)`` per measure: the mean over the last
    :data:`FINAL_SHARE` of updates; with the Nash and optimum benchmarks beside them.
    The model ``commons-institutions/ostrom``."""
    out: dict[tuple[str, str], np.ndarray] = {}
    curves = learn_institutions(seed_keys(seeds, base_seed, 1000), iterations=iterations, batch=batch)
    k = max(1, int(round(iterations * FINAL_SHARE)))
    for a, arm in enumerate(ARMS):
        for m in INSTITUTION_MEASURES:
            out[(f"ostrom/{arm}", m)] = np.asarray(curves[m], np.float64)[:, a, -k:].mean(axis=1)
    bench = benchmarks()
    for b in ("nash", "optimum"):
        out[(f"benchmark/{b}", "tokens")] = np.full(seeds, bench[f"{b}_tokens"])
        out[(f"benchmark/{b}", "rent_share")] = np.full(seeds, bench[f"{b}_rent_share"])
    return out


OSTROM_MODEL = register_model(Model("commons-institutions/ostrom", "commons_ostrom", institution_values,
                                    lambda settings: institution_keys()))

