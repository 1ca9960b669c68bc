"""Public goods game with punishment (``public_goods``; Fehr & Gaechter 2000, 2002), and
the sequential variant MAC-SPGG (Liang et al. 2025).

Rules (Fehr & Gaechter 2000, 2002; docs/environments.md, "Public goods game"):

- ``N`` agents (static ``num_agents``) play in groups of ``n`` (static ``group_size``,
  4; ``N`` a multiple of ``n``). Each period every member gets an endowment of ``e``
  tokens (static ``endowment``, 20) and contributes an integer ``g_i`` in ``0..e`` to
  the group project. First-stage payoff: ``pi1_i = e - g_i + mpcr * sum_{j in group} g_j``
  (marginal per-capita return ``mpcr`` = 0.4).
- Punishment (static ``punishment=True``): after seeing the contributions, each member
  assigns ``p_ij`` in ``0..10`` points (static ``max_points``) to each other member j.
  With ``R_i`` the points i received in total, the period payoff is::

      pi_i = pi1_i * (1 - min(max_cut, cut_per_point * R_i)) - fine_per_point * R_i
             - sum_j cost_schedule[p_ij]

  ``design="2002"`` (default; Fehr & Gaechter 2002): cost 1 per point (``cost_schedule =
  0, 1, ..., 10``), each point removes ``fine_per_point = 3``, no cut. ``design="2000"``
  (Fehr & Gaechter 2000): convex ``cost_schedule = (0, 1, 2, 4, 6, 9, 12, 16, 20, 25,
  30)``, each point cuts ``cut_per_point = 10%`` of the first-stage payoff, at most
  ``max_cut = 100%``, no fine. ``design`` only picks default params: both designs are
  the same code, so a sweep across them is a ``vmap``. Payoffs are not floored.
- Steps per period: one contribution step, then (with punishment) one punishment step;
  sequential: ``n`` contribution sub-steps (see below). The ``stage`` entry of the
  observation says which step it is. Rewards are paid as they accrue: the contribution
  step pays ``pi1``, the punishment step pays ``pi - pi1``; over a period they sum to
  ``pi``.
- Matching (static ``matching``): ``"partner"`` draws groups (and the order of members
  within a group) uniformly at random at reset and keeps them for the episode;
  ``"stranger"`` redraws them uniformly at random at the start of every period (the
  order is the ``top_k`` of uniform draws, a uniformly random permutation).
- Sequential variant (static ``sequential=True``; MAC-SPGG, Liang et al. 2025; no
  punishment stage): each period has ``n`` sub-steps; at sub-step ``k`` the member at
  position ``k`` of every group contributes ``s`` in ``0..e`` (the other agents' actions
  are ignored), seeing its predecessors' contributions. At the last sub-step every
  member is paid::

      u_i = -kappa * s_i^2 + gamma * sum_{j before i} s_j + (rho / n) * sum_j s_j
            - penalty * [sum_j s_j < threshold]

  (zero reward at the other sub-steps). The defaults are ours, not Liang et al.'s:
  ``gamma = 0.5, rho = 2, kappa = 0.025, penalty = 10, threshold = 40``: the
  privately best contribution ignoring the threshold is ``rho / (2 n kappa) = 10`` and
  four such contributions just reach the threshold (half of the group's 4 x 20).
- Episode: ``num_periods`` periods (static, 10), then ``done`` (``terminated``).

Actions, one per agent: without punishment ``Discrete(e + 1)``, the contribution. With
punishment an int32 ``Box`` of shape ``(n,)``: entry 0 the contribution (``0..e``, read
at the contribution step), entries ``1..n-1`` the points (``0..max_points``, read at the
punishment step) for the other members in the observation's order. With punishment by
a standard (static ``punish_by="standard"``; ``public_goods_standard_punishment``; ours,
one discrete action for learners): ``Discrete(e + 1)``, the contribution at the
contribution step and at the punishment step a standard ``s``: each other member gets
``round((s - g_j) / 3)`` points, clipped to ``0..max_points`` (a point per three tokens
of shortfall from ``s``; ``s = 0`` punishes nobody). An out-of-range action is replaced
by the no-op ``0`` (contribute nothing, punish nobody) and flagged in
``info["invalid_action"]``.

Observation of agent i, ``(3n + 3,)`` int32 (see ``OBS_*``): ``[period, stage,
is_punishment_stage, position, last (n), received (n - 1), current (n)]``. Members are
listed own first, then the others in cyclic group order after i (``view``): ``last`` is
the contributions of i's group in the previous period (zeros in period 0; under
stranger matching that is the previous group), ``received`` the points i received from
each of them in that period, ``current`` the contributions made so far this period
(zeros at the contribution step; all of them at the punishment step; the predecessors'
in the sequential game, where i moves when ``stage == position``). ``period`` is
``num_periods`` only in the final observation of an episode.

``info`` per step, ``(N,)``: ``contributed``, ``points_assigned``, ``points_received``,
``punish_cost`` (paid by the punisher), ``punish_loss`` (payoff lost by the target),
``period_payoff`` (``pi`` or ``u``, nonzero only when the period ends), ``group`` and
``position``; ``period_over`` (() bool) and ``period`` (() int32, the period played).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from socialjax.core.environment import Environment
from socialjax.core.params import EnvParams, check_bool, check_choice, check_int, param
from socialjax.core.spaces import Box, Discrete

# Fehr & Gaechter 2000 (AER) and 2002 (Nature): groups of 4, endowment 20, MPCR 0.4,
# up to 10 punishment points per other member, 10 periods.
GROUP_SIZE = 4
ENDOWMENT = 20
MPCR = 0.4
MAX_POINTS = 10
POINTS_LIMIT = 2**20  # our limit on max_points: the cost schedule (max_points + 1,) is built on the host
NUM_PERIODS = 10
# 2002: each point costs the punisher 1 and removes 3 from the target.
COST_PER_POINT_2002 = 1.0
FINE_PER_POINT_2002 = 3.0
# 2000: convex cost of 0..10 points; each point received cuts 10% of the first-stage
# payoff, at most 100%.
COST_SCHEDULE_2000 = (0.0, 1.0, 2.0, 4.0, 6.0, 9.0, 12.0, 16.0, 20.0, 25.0, 30.0)
CUT_PER_POINT_2000 = 0.1
MAX_CUT = 1.0
# MAC-SPGG (Liang et al. 2025): the payoff form is theirs; these default values are ours.
SEQ_GAMMA = 0.5  # weight on predecessors' contributions
SEQ_RHO = 2.0  # public-good multiplier, shared as rho / n
SEQ_KAPPA = 0.025  # convex cost C(s) = kappa * s^2
SEQ_PENALTY = 10.0  # P, paid by everyone when the group total is below B
SEQ_THRESHOLD = 40.0  # B

DESIGNS = ("2002", "2000")
MATCHINGS = ("partner", "stranger")
PUNISH_BY = ("points", "standard")
SHORTFALL_RATE = 1.0 / 3.0  # ours: points per token of shortfall from a standard (see shortfall_points)

# Observation layout: 4 scalars, then last (n), received (n - 1), current (n).
OBS_PERIOD, OBS_STAGE, OBS_PUNISH_STAGE, OBS_POSITION, OBS_LAST = 0, 1, 2, 3, 4


def shortfall_points(current: jax.Array, standard: jax.Array, max_points: int) -> jax.Array:
    """``(N, n - 1) int32``: a point per ``1 / SHORTFALL_RATE`` tokens by which each other
    member's contribution (``current`` ``(N, n)``, own first) fell short of ``standard``
    ``(N,)``, rounded, at most ``max_points``."""
    short = standard[:, None] - current[:, 1:].astype(jnp.float32)
    return jnp.clip(jnp.round(SHORTFALL_RATE * short), 0, max_points).astype(jnp.int32)


def rounded(x: jax.Array) -> jax.Array:
    """``x`` unchanged (bar ``+inf``), but fenced: a product passed through here is
    rounded to float32 before it is added to anything. XLA on the CPU contracts a
    multiply feeding an add into a fused multiply-add in some fusions and not in others
    (e.g. batched under ``vmap`` or not), which changes the last bit; the ``minimum``
    blocks that, so rewards are bit-identical whatever batch the step runs in
    (``optimization_barrier`` does not: it is removed before fusion)."""
    return jnp.minimum(x, jnp.finfo(jnp.float32).max)


def obs_slices(group_size: int) -> dict[str, slice]:
    """Where ``last``, ``received`` and ``current`` sit in the observation."""
    n = group_size
    return {
        "last": slice(OBS_LAST, OBS_LAST + n),
        "received": slice(OBS_LAST + n, OBS_LAST + 2 * n - 1),
        "current": slice(OBS_LAST + 2 * n - 1, OBS_LAST + 3 * n - 1),
    }


@struct.dataclass
class PublicGoodsParams(EnvParams):
    """Numbers of the public goods game (defaults: the 2002 design)."""

    mpcr: float = param(MPCR, 0.0, None, doc="marginal per-capita return of the project (F&G: 0.4)")
    cost_schedule: jax.Array = param(
        np.arange(MAX_POINTS + 1, dtype=np.float32) * COST_PER_POINT_2002,
        0.0,
        None,
        doc="(max_points + 1,) cost to the punisher of assigning 0..max_points points to one member",
    )
    fine_per_point: float = param(
        FINE_PER_POINT_2002, 0.0, None, doc="payoff removed from the target per point (2002: 3)"
    )
    cut_per_point: float = param(0.0, 0.0, 1.0, doc="fraction of first-stage payoff cut per point received (2000: 0.1)")
    max_cut: float = param(MAX_CUT, 0.0, 1.0, doc="cap on the fraction cut (2000: 1.0)")
    gamma: float = param(SEQ_GAMMA, 0.0, None, doc="sequential: weight on predecessors' contributions")
    rho: float = param(SEQ_RHO, 0.0, None, doc="sequential: public-good multiplier (shared as rho / n)")
    kappa: float = param(SEQ_KAPPA, 0.0, None, doc="sequential: cost C(s) = kappa * s^2")
    penalty: float = param(SEQ_PENALTY, 0.0, None, doc="sequential: P, paid when the group total < threshold")
    threshold: float = param(SEQ_THRESHOLD, 0.0, None, doc="sequential: B")


def design_params(design: str = "2002", max_points: int = MAX_POINTS) -> PublicGoodsParams:
    """Default params of a punishment design, ``"2002"`` or ``"2000"``."""
    check_choice("design", design, DESIGNS)
    if design == "2002":
        schedule = np.arange(max_points + 1, dtype=np.float32) * COST_PER_POINT_2002
        return PublicGoodsParams(cost_schedule=schedule)
    return PublicGoodsParams(
        cost_schedule=np.asarray(COST_SCHEDULE_2000, np.float32),
        fine_per_point=0.0,
        cut_per_point=CUT_PER_POINT_2000,
        max_cut=MAX_CUT,
    )


@struct.dataclass
class PublicGoodsState:
    order: jax.Array  # (N,) int32: order[g * n + k] is the agent at position k of group g
    period: jax.Array  # () int32, periods completed
    stage: jax.Array  # () int32, step within the period
    contrib: jax.Array  # (N,) int32, contributions made this period (0 if not yet)
    last_contrib: jax.Array  # (N, n) int32, previous period's group contributions, own first
    last_received: jax.Array  # (N, n - 1) int32, points received from each of them


class PublicGoods(Environment):
    """Public goods game with optional punishment, partner / stranger matching and a
    sequential (MAC-SPGG) variant; see the module docstring for rules and shapes.

    Static options: ``num_agents`` (4), ``group_size`` (4), ``punishment`` (False),
    ``design`` ("2002" | "2000": default params), ``matching`` ("partner" |
    "stranger"), ``num_periods`` (10), ``sequential`` (False), ``endowment`` (20),
    ``max_points`` (10) and ``punish_by`` ("points" | "standard"), which fix the action
    set.
    """

    params_cls = PublicGoodsParams
    noop_action = 0  # contribute nothing, punish nobody
    # per-agent per-step amounts totalled per episode by socialjax.metrics
    event_keys = ("contributed", "points_assigned", "points_received", "punish_cost", "punish_loss")

    def __init__(
        self,
        num_agents: int = GROUP_SIZE,
        group_size: int = GROUP_SIZE,
        punishment: bool = False,
        design: str = "2002",
        matching: str = "partner",
        num_periods: int = NUM_PERIODS,
        sequential: bool = False,
        endowment: int = ENDOWMENT,
        max_points: int = MAX_POINTS,
        punish_by: str = "points",
    ):
        for name, value, low in (
            ("group_size", group_size, 2),
            ("num_periods", num_periods, 1),
            ("endowment", endowment, 1),
            ("max_points", max_points, 1),
        ):
            check_int(name, value, low)
        if max_points > POINTS_LIMIT:
            raise ValueError(f"max_points={max_points} is above the limit {POINTS_LIMIT}")
        if not isinstance(num_agents, int) or isinstance(num_agents, bool) or num_agents < group_size:
            raise ValueError(f"num_agents must be an int >= group_size={group_size}, got {num_agents!r}")
        if num_agents % group_size:
            raise ValueError(
                f"num_agents={num_agents} must be a multiple of group_size={group_size}"
            )
        check_choice("design", design, DESIGNS)
        if design == "2000" and max_points != MAX_POINTS:
            raise ValueError(
                f"design='2000' has a cost schedule for 0..10 points, so max_points must be 10, got {max_points}"
            )
        check_choice("matching", matching, MATCHINGS)
        punishment = check_bool("punishment", punishment)
        sequential = check_bool("sequential", sequential)
        if sequential and punishment:
            raise ValueError("sequential=True has no punishment stage: punishment must be False")
        check_choice("punish_by", punish_by, PUNISH_BY)
        if punish_by == "standard" and not punishment:
            raise ValueError("punish_by='standard' sets how the punishment stage is played: punishment must be True")
        super().__init__(num_agents)
        self.group_size = group_size
        self.num_groups = num_agents // group_size
        self.punishment = punishment
        self.design = design
        self.matching = matching
        self.num_periods = num_periods
        self.sequential = sequential
        self.endowment = endowment
        self.max_points = max_points
        self.punish_by = punish_by
        self.contribution_steps = group_size if sequential else 1
        self.steps_per_period = self.contribution_steps + int(punishment)
        self.episode_length = num_periods * self.steps_per_period
        self.obs_size = OBS_LAST + 3 * group_size - 1

    def make_default_params(self) -> PublicGoodsParams:
        return design_params(self.design, self.max_points)

    def check_params(self, params: PublicGoodsParams) -> None:
        shape = np.shape(params.cost_schedule)
        if shape != (self.max_points + 1,):
            raise ValueError(
                f"{self.name}: cost_schedule must have shape (max_points + 1,)=({self.max_points + 1},), got {shape}"
            )

    # -- rules ---------------------------------------------------------------
    def draw_groups(self, key: jax.Array) -> jax.Array:
        """A uniformly random grouping: ``(N,) int32`` order, the agent at position k of
        group g being ``order[g * n + k]`` (top_k of uniform draws: a uniform permutation,
        cheaper than ``jax.random.permutation`` on the CPU)."""
        return jax.lax.top_k(jax.random.uniform(key, (self.num_agents,)), self.num_agents)[1].astype(jnp.int32)

    def membership(self, order: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        """``group (N,)``, ``position (N,)`` and ``view (N, n)`` int32: ``view[i, j]`` is
        the member j places after i in its group, cyclically (``view[i, 0] == i``)."""
        n = self.group_size
        slot = jnp.zeros(self.num_agents, jnp.int32).at[order].set(jnp.arange(self.num_agents, dtype=jnp.int32))
        group, position = slot // n, slot % n
        view = order[group[:, None] * n + (position[:, None] + jnp.arange(n)) % n]
        return group, position, view

    def group_totals(self, contrib: jax.Array, group: jax.Array) -> jax.Array:
        """``(N,)`` total contribution of each agent's group."""
        totals = jnp.zeros(self.num_groups, contrib.dtype).at[group].add(contrib)
        return totals[group]

    def first_stage_payoff(self, contrib: jax.Array, group: jax.Array, params: PublicGoodsParams) -> jax.Array:
        """``e - g_i + mpcr * sum_group g``: ``(N,) float32``."""
        total = self.group_totals(contrib, group).astype(jnp.float32)
        return self.endowment - contrib.astype(jnp.float32) + rounded(params.mpcr * total)

    def received_points(self, points: jax.Array, view: jax.Array) -> jax.Array:
        """``(N, n - 1)`` points i received from each other member, in i's view order.

        ``points[k, j - 1]`` goes to ``view[k, j]``; i sits ``n - j`` places after the
        member ``view[i, j]``, so that member's points for i are at column ``n - j - 1``."""
        n = self.group_size
        cols = n - jnp.arange(1, n) - 1  # (n - 1,)
        return points[view[:, 1:], cols[None, :]]

    def punished_payoff(
        self, first: jax.Array, points: jax.Array, received: jax.Array, params: PublicGoodsParams
    ) -> tuple[jax.Array, jax.Array, jax.Array]:
        """Period payoff after punishment. ``points (N, n - 1)`` assigned, ``received (N,)``
        in total. Returns ``(payoff, cost, loss)``, each ``(N,) float32``."""
        cost = jnp.sum(params.cost_schedule[points], axis=1)
        r = received.astype(jnp.float32)
        cut = jnp.minimum(params.max_cut, rounded(params.cut_per_point * r))
        loss = rounded(first * cut) + rounded(params.fine_per_point * r)
        return first - loss - cost, cost, loss

    def sequential_payoff(
        self, contrib: jax.Array, group: jax.Array, position: jax.Array, params: PublicGoodsParams
    ) -> jax.Array:
        """MAC-SPGG ``u_i = -kappa s_i^2 + gamma sum_{j<i} s_j + (rho/n) sum_j s_j
        - P [sum_j s_j < B]``: ``(N,) float32``."""
        s = contrib.astype(jnp.float32)
        total = self.group_totals(s, group)
        same_group = group[:, None] == group[None, :]
        before = same_group & (position[None, :] < position[:, None])  # [i, j]: j moves before i
        predecessors = before.astype(jnp.float32) @ s
        short = (total < params.threshold).astype(jnp.float32)
        cost, shared = rounded(params.kappa * s**2), rounded(params.rho / self.group_size * total)
        return -cost + rounded(params.gamma * predecessors) + shared - rounded(params.penalty * short)

    def split_action(self, actions: jax.Array, contrib: jax.Array, view: jax.Array) -> tuple[jax.Array, jax.Array]:
        """``contribution (N,)`` and ``points (N, n - 1)`` int32 (``contrib`` ``(N,)``
        this period's contributions, ``view`` the members' order: a standard's points
        are the shortfalls from it)."""
        if self.punish_by == "standard":
            points = shortfall_points(contrib[view], actions.astype(jnp.float32), self.max_points)
            return actions, points
        if self.punishment:
            return actions[:, 0], actions[:, 1:]
        return actions, jnp.zeros((self.num_agents, self.group_size - 1), jnp.int32)

    # -- contract ------------------------------------------------------------
    def initial_state(self, key, params):
        n, N = self.group_size, self.num_agents
        return PublicGoodsState(
            order=self.draw_groups(key),
            period=jnp.zeros((), jnp.int32),
            stage=jnp.zeros((), jnp.int32),
            contrib=jnp.zeros(N, jnp.int32),
            last_contrib=jnp.zeros((N, n), jnp.int32),
            last_received=jnp.zeros((N, n - 1), jnp.int32),
        )

    def transition(self, key, state, actions, params):
        group, position, view = self.membership(state.order)
        contribution, points = self.split_action(actions, state.contrib, view)
        contributing = state.stage < self.contribution_steps
        movers = position == state.stage if self.sequential else jnp.ones(self.num_agents, bool)
        moving = contributing & movers
        contributed = jnp.where(moving, contribution, 0)
        contrib = jnp.where(moving, contribution, state.contrib)

        punishing = jnp.asarray(self.punishment) & (state.stage == self.contribution_steps)
        points = jnp.where(punishing, points, 0)
        received_from = self.received_points(points, view)
        received = jnp.sum(received_from, axis=1)
        first = self.first_stage_payoff(contrib, group, params)
        payoff, cost, loss = self.punished_payoff(first, points, received, params)

        period_over = state.stage == self.steps_per_period - 1
        if self.sequential:
            payoff = self.sequential_payoff(contrib, group, position, params)
            reward = jnp.where(period_over, payoff, 0.0)
        else:
            reward = jnp.where(contributing, first, 0.0) + jnp.where(punishing, payoff - first, 0.0)
        period = state.period + period_over.astype(jnp.int32)
        order = state.order
        if self.matching == "stranger":
            order = jnp.where(period_over, self.draw_groups(key), order)
        new_state = PublicGoodsState(
            order=order,
            period=period,
            stage=jnp.where(period_over, 0, state.stage + 1).astype(jnp.int32),
            contrib=jnp.where(period_over, 0, contrib),
            last_contrib=jnp.where(period_over, contrib[view], state.last_contrib),
            last_received=jnp.where(period_over, received_from, state.last_received),
        )
        done = period_over & (period >= self.num_periods)
        info = {
            "terminated": done,
            "truncated": jnp.zeros((), bool),
            "contributed": contributed,
            "points_assigned": jnp.sum(points, axis=1),
            "points_received": received,
            "punish_cost": jnp.where(punishing, cost, 0.0),
            "punish_loss": jnp.where(punishing, loss, 0.0),
            "period_payoff": jnp.where(period_over, payoff, 0.0),
            "group": group,
            "position": position,
            "period_over": period_over,
            "period": state.period,
        }
        return new_state, reward.astype(jnp.float32), done, info

    def get_obs(self, state, params):
        _, position, view = self.membership(state.order)
        N = self.num_agents
        scalars = jnp.stack(
            [
                jnp.full(N, state.period),
                jnp.full(N, state.stage),
                jnp.full(N, jnp.asarray(self.punishment) & (state.stage == self.contribution_steps)).astype(jnp.int32),
                position,
            ],
            axis=1,
        ).astype(jnp.int32)
        return jnp.concatenate([scalars, state.last_contrib, state.last_received, state.contrib[view]], axis=1)

    def action_space(self, params=None):
        if not self.punishment or self.punish_by == "standard":
            return Discrete(self.endowment + 1)
        high = np.array([self.endowment] + [self.max_points] * (self.group_size - 1), np.int32)
        return Box(0, high, (self.group_size,), jnp.int32)

    def observation_space(self, params=None):
        n, e = self.group_size, self.endowment
        high = np.array(
            [self.num_periods, self.steps_per_period - 1, 1, n - 1] + [e] * n + [self.max_points] * (n - 1) + [e] * n,
            np.int32,
        )
        return Box(0, high, (self.obs_size,), jnp.int32)
