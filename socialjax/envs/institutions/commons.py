"""Common-pool resources (``commons``): one stock shared by N harvesters, with optional
institutions (monitoring, sanctions, a voted quota).

Rules (docs/environments.md, "Common-pool resources", with their sources):

- Each step every agent chooses a harvest *level* ``l in 0 .. L-1`` (static
  ``num_levels`` = L). Its demand is ``d = l / (L - 1) * harvest_cap`` (a fraction of the
  per-agent cap, a param) in the stock presets, and ``d = l`` tokens in ``"ostrom"``.
- Rationing: if the total demand ``D`` exceeds the stock ``S``, every agent gets
  ``h_i = d_i * S / D`` (shared in proportion to demand, so the total handed out equals
  the stock, up to float32 rounding); otherwise ``h_i = d_i``.
- Regrowth presets (static ``preset``):

  * ``"logistic"`` (a Schaefer fishery): ``S' = clip(S + r S (1 - S/K) - H, 0, K)`` with
    ``H = sum h``; growth is computed on the stock before the harvest (Schaefer 1954).
  * ``"govsim"`` (GovSim fishery, Piatti et al. 2024): the remainder ``R = S - H``
    doubles, ``S' = min(2 R, K)``; if ``R < collapse_threshold`` (5) the resource
    collapses: the stock is 0 for good (for the rest of the episode; with
    ``end_on_collapse`` the episode ends there, ``terminated``).
  * ``"ostrom"`` (the lab CPR of Ostrom, Gardner & Walker 1994): no stock dynamics, a
    repeated stage game. The level is the number of tokens ``x_i`` an agent puts in the
    pool out of its ``endowment`` e; the rest earns ``market_wage`` (5) each in the
    outside market; the pool pays ``F(X) = a X - b X^2`` (a = 23, b = 0.25), shared in
    proportion to tokens: ``x_i / X * F(X) = x_i (a - b X)``. So
    ``reward_i = w (e - x_i) + x_i (a - b X)``. ``num_levels`` must be at least e + 1;
    a token count above the endowment param is an out-of-range action.

  The collapse rule applies to every stock preset with its own threshold
  (``collapse_threshold`` is 0, i.e. off, for ``"logistic"``).
- Institutions (static options, each adds an action head; Ostrom 1990, Gupta et al. 2025):

  * ``monitoring=True``: a flag ``m in {0, 1}``; an agent that sets it pays
    ``monitor_cost`` this step and its next observation shows the others' harvests of
    this step. Without it (flag 0, or the option off) those entries are 0 and the
    "seen" flag is 0: the others' harvests are hidden.
  * ``sanctions="destroy" | "pot"``: each unit harvested above the quota in force is
    fined ``fine_rate``, detected independently per agent with ``detection_prob``. With
    ``"destroy"`` the fines vanish; with ``"pot"`` they are shared equally among all N
    agents in the same step.
  * ``quota_vote=True``: a vote ``v in 0 .. L`` (``v = L`` abstains; the others name a
    quota on the same scale as harvest levels). At steps ``t`` with
    ``t % vote_every == 0`` the median of the cast votes (mean of the two middle ones
    when their number is even; majority rule for single-peaked preferences) becomes the
    quota from step ``t + 1`` on; with no vote cast the quota is kept. Otherwise the
    quota is the ``quota`` param throughout (it matters only with sanctions).

- Actions: without options a ``Discrete(L)`` level. With options a ``Box`` int32 of shape
  ``(K,)``: ``[level, monitor flag (if monitoring), vote (if quota_vote)]``. An
  out-of-range action (any entry) is replaced by the no-op ``[0, 0, L]``: harvest (invest)
  nothing, do not monitor, abstain; it is flagged in ``info["invalid_action"]``.
- Observation of agent i, ``(N + 4,)`` float32 (see ``OBS_*``): ``[stock, own last
  harvest, others' last harvests (N - 1, agents i+1, i+2, ... mod N; 0 unless seen),
  seen flag, quota in force, step]``. ``stock`` is the stock available this step (in
  ``"ostrom"``: the endowment e). Harvests are amounts actually taken (tokens in
  ``"ostrom"``).
- Reward: the harvest (stock presets) or the stage payoff (``"ostrom"``), minus the
  monitoring cost and fine, plus the pot share.
- Episode: ``episode_length`` steps (static), then ``terminated``.
- ``info`` per step, ``(N,)``: ``demand``, ``harvest``, ``monitored``, ``over_quota``,
  ``fined`` (detected and fined), ``fine``, ``pot_share``; scalars ``stock_before``,
  ``stock`` (after regrowth), ``total_harvest``, ``collapsed``, ``quota`` (in force this
  step), ``next_quota``, ``vote_step``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from socialjax.core.environment import Environment
from socialjax.core.params import EnvParams, check_bool, check_choice, check_int, param
from socialjax.core.spaces import Box, Discrete

PRESETS = ("logistic", "govsim", "ostrom")
SANCTIONS = (None, "destroy", "pot")

# Per-preset static defaults: num_agents, num_levels, episode_length.
STATIC_DEFAULTS = {
    # our choice: 5 fishers, levels 0..10 of a cap of 10, 50 seasons
    "logistic": dict(num_agents=5, num_levels=11, episode_length=50),
    # GovSim (Piatti et al. 2024): 5 agents, 12 rounds (months); whole tons 0..20
    "govsim": dict(num_agents=5, num_levels=21, episode_length=12),
    # Ostrom, Gardner & Walker 1994: 8 players, 25 tokens (levels 0..25); 20 rounds (our choice)
    "ostrom": dict(num_agents=8, num_levels=26, episode_length=20),
}

# Per-preset params defaults (anything not listed takes the field default).
PARAM_DEFAULTS = {
    "logistic": dict(
        growth_rate=0.5,  # r (our choice): maximum sustainable yield r K / 4 = 12.5 per step
        capacity=100.0,  # K (our choice)
        initial_stock=50.0,  # S0 = K / 2, the MSY stock (our choice)
        harvest_cap=10.0,  # per-agent cap: all at the cap take 50, four times the MSY
        collapse_threshold=0.0,  # no collapse
        quota=2.5,  # MSY / N
        monitor_cost=0.5,
        fine_rate=2.0,
        vote_every=10,
    ),
    "govsim": dict(
        capacity=100.0,  # GovSim: 100 tons
        initial_stock=100.0,  # GovSim: the lake starts full
        growth_factor=2.0,  # GovSim: the remainder doubles
        harvest_cap=20.0,  # K / N (our choice)
        collapse_threshold=5.0,  # GovSim: below 5 tons the resource collapses
        quota=10.0,  # K / (2 N): the remainder 50 doubles back to 100
        monitor_cost=1.0,
        fine_rate=2.0,
        vote_every=3,
    ),
    "ostrom": dict(
        endowment=25,  # OGW 1994: 25 tokens (the 10-token design: num_levels=11)
        market_wage=5.0,  # OGW 1994: 5 per token in the outside market
        pool_a=23.0,  # OGW 1994: F(X) = 23 X - 0.25 X^2
        pool_b=0.25,
        quota=4.5,  # social optimum X* = 36 over 8 players
        monitor_cost=1.0,
        fine_rate=10.0,  # above the marginal gain of ~8 per extra token near X*
        vote_every=5,
    ),
}

# Observation layout (others' harvests occupy OBS_OTHERS .. OBS_OTHERS + N - 2; the
# remaining entries follow them, see Commons.obs_index).
OBS_STOCK, OBS_OWN, OBS_OTHERS = 0, 1, 2


@struct.dataclass
class CommonsParams(EnvParams):
    # stock dynamics (logistic / govsim)
    capacity: float = param(100.0, 1e-6, None, doc="K: carrying capacity of the stock")
    initial_stock: float = param(50.0, 0.0, None, doc="S0: stock at reset (<= capacity)")
    growth_rate: float = param(0.5, 0.0, 4.0, doc="r of logistic regrowth (logistic)")
    growth_factor: float = param(2.0, 0.0, None, doc="the remainder is multiplied by this (govsim)")
    harvest_cap: float = param(10.0, 0.0, None, doc="demand of the top level, per agent")
    collapse_threshold: float = param(0.0, 0.0, None, doc="remainder below this: stock gone for good")
    end_on_collapse: bool = param(True, 0, 1, doc="a collapse ends the episode (terminated)")
    # ostrom stage game
    endowment: int = param(25, 0, None, doc="tokens per player (ostrom)")
    market_wage: float = param(5.0, None, None, doc="outside market pay per token (ostrom)")
    pool_a: float = param(23.0, None, None, doc="a in F(X) = a X - b X^2 (ostrom)")
    pool_b: float = param(0.25, 0.0, None, doc="b in F(X) = a X - b X^2 (ostrom)")
    # institutions
    quota: float = param(2.5, 0.0, None, doc="per-agent quota at reset (amount per step)")
    monitor_cost: float = param(0.5, 0.0, None, doc="c_m: cost of observing the others' harvests")
    fine_rate: float = param(2.0, 0.0, None, doc="fine per unit harvested above the quota")
    detection_prob: float = param(1.0, 0.0, 1.0, doc="probability a violation is detected and fined")
    vote_every: int = param(10, 1, None, doc="k: the quota is voted at steps t with t % k == 0")

    def check(self) -> None:
        if isinstance(self.initial_stock, jax.core.Tracer) or isinstance(self.capacity, jax.core.Tracer):
            return
        s0, k = np.asarray(self.initial_stock), np.asarray(self.capacity)
        if np.any(s0 > k):
            raise ValueError(f"CommonsParams.initial_stock={s0.tolist()} is above capacity={k.tolist()}")


@struct.dataclass
class CommonsState:
    stock: jax.Array  # () float32, stock available at the next step
    last_harvest: jax.Array  # (N,) float32, amounts taken at the last step
    seen: jax.Array  # (N,) bool, the agent monitored at the last step
    quota: jax.Array  # () float32, quota in force at the next step
    step: jax.Array  # () int32, steps played in this episode
    collapsed: jax.Array  # () bool


class Commons(Environment):
    """Common-pool resource game; see the module docstring for rules and shapes.

    Static options: ``preset`` ("logistic" | "govsim" | "ostrom"), ``num_agents``,
    ``num_levels``, ``episode_length`` (per-preset defaults when None), ``monitoring``
    (False), ``sanctions`` (None | "destroy" | "pot"), ``quota_vote`` (False).
    """

    params_cls = CommonsParams
    event_keys = ("demand", "harvest", "monitored", "over_quota", "fined", "fine")

    def __init__(
        self,
        preset: str = "logistic",
        num_agents: int | None = None,
        num_levels: int | None = None,
        episode_length: int | None = None,
        monitoring: bool = False,
        sanctions: str | None = None,
        quota_vote: bool = False,
    ):
        if preset not in PRESETS:
            raise ValueError(f"preset must be one of {PRESETS}, got {preset!r}")
        defaults = STATIC_DEFAULTS[preset]
        num_agents = defaults["num_agents"] if num_agents is None else num_agents
        num_levels = defaults["num_levels"] if num_levels is None else num_levels
        episode_length = defaults["episode_length"] if episode_length is None else episode_length
        bounds = (("num_agents", num_agents, 2), ("num_levels", num_levels, 2), ("episode_length", episode_length, 1))
        for name, value, low in bounds:
            check_int(name, value, low)
        check_choice("sanctions", sanctions, SANCTIONS)
        monitoring = check_bool("monitoring", monitoring)
        quota_vote = check_bool("quota_vote", quota_vote)
        super().__init__(num_agents)
        self.preset = preset
        self.num_levels = num_levels
        self.episode_length = episode_length
        self.monitoring = monitoring
        self.sanctions = sanctions
        self.quota_vote = quota_vote
        self.abstain = num_levels  # the vote code that abstains
        # action heads: level, then monitor flag, then vote
        self.head_monitor = 1 if monitoring else None
        self.head_vote = (1 + int(monitoring)) if quota_vote else None
        self.num_heads = 1 + int(monitoring) + int(quota_vote)
        noop = [0] + ([0] if monitoring else []) + ([self.abstain] if quota_vote else [])
        self.noop_action = 0 if self.num_heads == 1 else np.asarray(noop, np.int32)
        n = num_agents
        self.obs_index = dict(
            stock=OBS_STOCK, own=OBS_OWN, others=OBS_OTHERS, seen=n + 1, quota=n + 2, step=n + 3
        )
        self.obs_size = n + 4
        # build and validate the defaults now, outside any trace
        self.default_params

    def make_default_params(self) -> CommonsParams:
        changes = dict(PARAM_DEFAULTS[self.preset])
        if self.preset == "ostrom":
            changes["endowment"] = min(changes["endowment"], self.num_levels - 1)
        return CommonsParams(**changes)

    def check_params(self, params: CommonsParams) -> None:
        if self.preset == "ostrom" and not isinstance(params.endowment, jax.core.Tracer):
            e = np.asarray(params.endowment)
            if np.any(e > self.num_levels - 1):
                raise ValueError(
                    f"{self.name}: CommonsParams.endowment={e.tolist()} needs num_levels >= endowment + 1 "
                    f"(num_levels={self.num_levels})"
                )

    # -- rules ---------------------------------------------------------------
    def split_actions(self, actions: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        """``(N,)`` or ``(N, K)`` actions -> levels ``(N,)``, monitor flags ``(N,) bool``,
        votes ``(N,) int32`` (abstain when there is no vote head)."""
        levels = actions if self.num_heads == 1 else actions[:, 0]
        monitor = actions[:, self.head_monitor] == 1 if self.monitoring else jnp.zeros(self.num_agents, bool)
        votes = actions[:, self.head_vote] if self.quota_vote else jnp.full(self.num_agents, self.abstain, jnp.int32)
        return levels, monitor, votes

    def level_amount(self, levels: jax.Array, params: CommonsParams) -> jax.Array:
        """Amount (float32, same shape) of harvest levels: ``l / (L-1) * harvest_cap``,
        or ``l`` tokens in ``"ostrom"``."""
        levels = levels.astype(jnp.float32)
        if self.preset == "ostrom":
            return levels
        return levels / (self.num_levels - 1) * params.harvest_cap

    def ration(self, demand: jax.Array, stock: jax.Array) -> jax.Array:
        """Harvests ``(N,)``: demands, scaled down in proportion when their total exceeds
        the stock (so that they add up to the stock)."""
        total = jnp.sum(demand)
        scale = jnp.where(total > stock, stock / jnp.maximum(total, 1e-30), 1.0)
        return demand * scale

    def regrow(self, stock: jax.Array, total_harvest: jax.Array, params: CommonsParams) -> jax.Array:
        """Stock at the next step, before collapse (``()`` float32)."""
        if self.preset == "logistic":
            # S / K as S times 1/K: XLA computes a division by a value the batch shares that way in a
            # vmapped batch (not as IEEE division), so a program of one game must too
            growth = _rounded(params.growth_rate * stock * (1.0 - _rounded(stock * (1.0 / params.capacity))))
            return jnp.clip(stock + growth - total_harvest, 0.0, params.capacity)
        remainder = jnp.maximum(stock - total_harvest, 0.0)
        return jnp.clip(params.growth_factor * remainder, 0.0, params.capacity)

    def ostrom_payoff(self, tokens: jax.Array, params: CommonsParams) -> jax.Array:
        """``(N,)`` stage payoffs ``w (e - x_i) + x_i / X * (a X - b X^2)``
        (written ``x_i (a - b X)``, exact also at ``X = 0``)."""
        total = jnp.sum(tokens)
        market = params.market_wage * (params.endowment - tokens)
        return market + tokens * (params.pool_a - params.pool_b * total)

    def sanction(self, key: jax.Array, harvest: jax.Array, quota: jax.Array, params: CommonsParams):
        """Fines ``(N,)`` on the excess over the quota, each violation detected with
        ``detection_prob``; returns ``(over, fined, fine, pot_share)``."""
        excess = jnp.maximum(harvest - quota, 0.0)
        over = excess > 0
        if self.sanctions is None:
            zeros = jnp.zeros_like(harvest)
            return over, jnp.zeros_like(over), zeros, zeros
        detected = jax.random.uniform(key, harvest.shape) < params.detection_prob
        fined = over & detected
        fine = jnp.where(fined, params.fine_rate * excess, 0.0)
        if self.sanctions == "pot":
            pot_share = jnp.full_like(harvest, jnp.sum(fine) / self.num_agents)
        else:
            pot_share = jnp.zeros_like(harvest)
        return over, fined, fine, pot_share

    def vote_quota(self, votes: jax.Array, quota: jax.Array, params: CommonsParams) -> jax.Array:
        """Median of the cast votes' amounts (mean of the two middle ones when even);
        the old quota when nobody votes. ``votes (N,) int32`` -> ``() float32``."""
        cast = votes != self.abstain
        amounts = jnp.where(cast, self.level_amount(votes, params), jnp.inf)
        ordered = jnp.sort(amounts)
        m = jnp.sum(cast)
        lo = ordered[jnp.maximum((m - 1) // 2, 0)]
        hi = ordered[jnp.minimum(m // 2, self.num_agents - 1)]
        return jnp.where(m > 0, 0.5 * (lo + hi), quota)

    # -- contract ------------------------------------------------------------
    def prepare_actions(self, actions, params):
        """Base checks, plus (``"ostrom"``) tokens above the endowment are out of range."""
        actions, invalid = super().prepare_actions(actions, params)
        if self.preset == "ostrom":
            levels = actions if self.num_heads == 1 else actions[:, 0]
            over = levels > params.endowment
            noop = jnp.asarray(self.noop_action, actions.dtype)
            mask = over if self.num_heads == 1 else over[:, None]
            actions = jnp.where(mask, noop, actions)
            invalid = invalid | over
        return actions, invalid

    def initial_state(self, key, params):
        stock = jnp.asarray(0.0 if self.preset == "ostrom" else params.initial_stock, jnp.float32)
        return CommonsState(
            stock=stock,
            last_harvest=jnp.zeros(self.num_agents, jnp.float32),
            seen=jnp.zeros(self.num_agents, bool),
            quota=jnp.asarray(params.quota, jnp.float32),
            step=jnp.zeros((), jnp.int32),
            collapsed=jnp.zeros((), bool),
        )

    def transition(self, key, state, actions, params):
        levels, monitor, votes = self.split_actions(actions)
        demand = self.level_amount(levels, params)
        if self.preset == "ostrom":
            harvest = demand
            stock = state.stock
            collapsed = state.collapsed
            base = self.ostrom_payoff(harvest, params)
        else:
            harvest = self.ration(demand, state.stock)
            total = jnp.sum(harvest)
            remainder = jnp.maximum(state.stock - total, 0.0)
            collapsed = state.collapsed | (remainder < params.collapse_threshold)
            stock = jnp.where(collapsed, 0.0, self.regrow(state.stock, total, params))
            base = harvest
        over, fined, fine, pot_share = self.sanction(key, harvest, state.quota, params)
        monitor_cost = jnp.where(monitor, params.monitor_cost, 0.0)
        reward = (base - monitor_cost - fine + pot_share).astype(jnp.float32)

        vote_step = (state.step % params.vote_every) == 0
        next_quota = jnp.where(vote_step, self.vote_quota(votes, state.quota, params), state.quota)
        step = state.step + 1
        done = (step >= self.episode_length) | (collapsed & params.end_on_collapse)
        new_state = CommonsState(
            stock=stock.astype(jnp.float32),
            last_harvest=harvest.astype(jnp.float32),
            seen=monitor,
            quota=next_quota.astype(jnp.float32),
            step=step,
            collapsed=collapsed,
        )
        info = {
            "terminated": done,
            "truncated": jnp.zeros((), bool),
            "demand": demand,
            "harvest": harvest,
            "monitored": monitor.astype(jnp.float32),
            "over_quota": over.astype(jnp.float32),
            "fined": fined.astype(jnp.float32),
            "fine": fine,
            "pot_share": pot_share,
            "stock_before": state.stock,
            "stock": new_state.stock,
            "total_harvest": jnp.sum(harvest),
            "collapsed": collapsed,
            "quota": state.quota,
            "next_quota": new_state.quota,
            "vote_step": vote_step,
        }
        return new_state, reward, done, info

    def get_obs(self, state, params):
        n = self.num_agents
        stock = jnp.asarray(params.endowment, jnp.float32) if self.preset == "ostrom" else state.stock
        others = (jnp.arange(n)[:, None] + 1 + jnp.arange(n - 1)[None, :]) % n  # (N, N-1)
        seen = state.seen.astype(jnp.float32)
        cols = [
            jnp.broadcast_to(stock, (n, 1)),
            state.last_harvest[:, None],
            state.last_harvest[others] * seen[:, None],
            seen[:, None],
            jnp.broadcast_to(state.quota, (n, 1)),
            jnp.broadcast_to(state.step.astype(jnp.float32), (n, 1)),
        ]
        return jnp.concatenate(cols, axis=1).astype(jnp.float32)

    def action_space(self, params=None):
        if self.num_heads == 1:
            return Discrete(self.num_levels)
        high = [self.num_levels - 1] + ([1] if self.monitoring else []) + ([self.abstain] if self.quota_vote else [])
        return Box(0, np.asarray(high, np.int32), (self.num_heads,), jnp.int32)

    def observation_space(self, params=None):
        return Box(0.0, np.inf, (self.obs_size,), jnp.float32)


def _rounded(x: jax.Array) -> jax.Array:
    """``x`` rounded to float32 before it is used. jax 0.12's CPU backend fuses ``c +- a * b``
    into one fused multiply-add (one rounding) in a program of one game's scalars but not in
    a vmapped batch (two roundings), so the stock, a scalar per game, took other bits alone
    than in a batch; the barrier keeps XLA from fusing across it."""
    return jax.lax.optimization_barrier(x)
