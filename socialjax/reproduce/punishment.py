"""Cooperation with and without peer punishment in the public goods game, under partner
and stranger matching (Fehr & Gaechter 2000, AER; Fehr & Gaechter 2002, Nature), in
``public_goods``.

The published setup. Groups of 4, an endowment of 20 tokens per period, MPCR 0.4: every
token kept is worth 1 to its owner, every token contributed 0.4 to each of the 4, so
free riding is each member's dominant strategy in the one-shot game. Fehr & Gaechter
(2000) ran 10 periods without and 10 with a punishment stage (members see the others'
contributions and can assign costly points: a convex cost of 0..30 for 0..10 points, each
point received cutting 10% of the first-stage payoff), with fixed groups (partner) and
with groups redrawn every period (stranger). Fehr & Gaechter (2002) ran 6 periods with
and 6 without punishment in a perfect-stranger design (each point costs its giver 1 and
removes 3 from its target). Without punishment contributions start near half the
endowment and decay towards free riding; with punishment they are sustained, and under
partner matching they rise.

What we measure. (1) Scripted populations, at both scales: each session has 24 members
(ours), two thirds conditional cooperators and one third free riders (ours; Fischbacher,
Gaechter & Fehr 2001 found conditional cooperators the largest type and free riders the
next). A conditional cooperator moves its contribution halfway towards a little less
than what the others in its group gave last period (the downward bias Fischbacher,
Gaechter & Fehr 2001 report); a free rider moves halfway towards zero; a member who was
punished raises its contribution by half the payoff punishment took from it; in the
punishment stage every conditional cooperator gives each member below the group's mean
one point per three tokens of shortfall; under partner matching a punished member meets
its punishers again, learns their standard (its group's mean of that period) and keeps
to it from then on (:func:`learnt_standard`), under stranger matching it cannot (all
ours except the qualitative shape and the matching protocols). Per
period: the mean contribution as a fraction of the endowment, the payoff and the
points received, over 10 periods for the 2000 design (partner and stranger) and 6 for
the 2002 design (stranger). (2) Learners, at cpu and paper scale (every population is a
compilation of its own: more than the fast suite can spend): 16 independent PPO learners
in 4 groups, trained with and without the 2002 design's punishment stage under each
matching; in the punishment stage a learner picks a standard (0..20) and every member
below it receives a point per three tokens of shortfall (:class:`StandardPunishment`:
the learners need one discrete action, the environment's punishment action is a vector).
Measured: the contribution over the first and last fifth of training and in each tenth,
the points assigned at the end, and the per-period contributions of the trained
population.

Criterion. Without punishment the last-period contribution is below the first (each
run); with punishment the contribution over the last third of the periods is above the
contribution without, under each matching and design; with punishment partner is above
stranger (2000 design). With learners (cpu and paper scale) the same three: without punishment
the contribution falls from the first to the last fifth of training; at the end of
training it is higher with punishment than without (each matching), and with punishment
higher under partner than stranger matching. Each comparison over seeds (95%
intervals); reproduced when all are separated, not reproduced when none is even
ordered, partly otherwise.

What differs from the papers. The subjects are scripted rules or learners; the rules
have no reason to punish strategically, and what makes partner matching special for them
is only the learnt standard of the punished (their contributions under partner matching
with punishment hold level rather than rise as published); our stranger matching
redraws groups at random (the 2002 design avoided any two members meeting twice); the
2002 design's 6 periods are the first 6 of a 10-period session (the rules do not read
the period); sessions without punishment play the punishment game with no points
assigned, which is the game without punishment exactly.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from socialjax import make
from socialjax.core.spaces import Discrete
from socialjax.core.wrappers import Wrapper
from socialjax.envs.institutions.public_goods import design_params
from socialjax.reproduce.core import (
    Analysis,
    Entry,
    Reference,
    combined_verdict,
    final_values,
    finish_figure,
    interval,
    ordered_verdict,
    sign_verdict,
    stream_key,
)
from socialjax.reproduce.punishment_rules import SESSION, session, shortfall_points
from socialjax.train import TrainConfig, as_run, make_train, play, run
from socialjax.viz.plots import pyplot

# Fehr & Gaechter 2000: 10 periods per treatment; Fehr & Gaechter 2002: 6.
PERIODS = {"2000": 10, "2002": 6}
SESSIONS = {"small": 16, "cpu": 64, "paper": 64}  # sessions per seed

MATCHINGS = ("partner", "stranger")
# (design, matching) of the scripted rows: the 2000 design under both matchings, the 2002
# design under stranger matching (its perfect-stranger protocol)
ARMS = (("2000", "partner"), ("2000", "stranger"), ("2002", "stranger"))
LEARNER_PLAYERS = 16  # ours: 4 groups, so that stranger matching regroups
QUANTITIES = ("last third", "change", "payoff", "points")

FG2000 = "Fehr & Gaechter 2000, Cooperation and punishment in public goods experiments (AER 90(4))"
FG2002 = "Fehr & Gaechter 2002, Altruistic punishment in humans (Nature 415)"
HOW = "qualitative: the papers' description of their contribution trajectories; their numbers were not read here"
ABSTRACT = "text (the abstract), qualitative"


def row_name(design: str, matching: str, punish: bool) -> str:
    return f"{design}/{matching}/{'with' if punish else 'without'}"


def learner_row(matching: str, punish: bool) -> str:
    return f"learners/{matching}/{'with' if punish else 'without'}"


def period_key(t: int) -> str:
    return f"period {t + 1}"


def tenth_key(k: int) -> str:
    """The learners' mean contribution over the ``k``-th tenth of training (0-based ``k``)."""
    return f"training {k + 1}/{TENTHS}"


# ------------------------------------------------------------------------ scripted rules
# (the rules themselves: socialjax.reproduce.punishment_rules)
# The sessions are tiny (a few thousand members x 20 steps): compiling, not running, is
# their cost, so they compile with XLA's backend optimisations off (what the suite's
# jax_disable_most_optimizations does; the same functions, less optimised code).
QUICK_COMPILE = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}


def simulate(env, params, key: jax.Array, punish) -> dict[str, jax.Array]:
    """:func:`session` over a batch: ``params`` with a leading axis ``B`` (one per session),
    ``punish`` ``(B,)`` bool, the sessions' keys split from ``key``; one compiled call per
    ``env``."""

    def run(params, key, punish):
        keys = jax.random.split(key, punish.shape[0])
        return jax.vmap(lambda p, k, q: session(env, p, k, q))(params, keys, punish)

    return jax.jit(run, compiler_options=QUICK_COMPILE)(params, key, punish)


def scripted_values(scale: str, seeds: int, base_seed: int = 0) -> dict[tuple[str, str], np.ndarray]:
    """Every scripted row's per-period contributions and summary quantities, ``(S,)``
    each (a seed's value is the mean over its ``SESSIONS[scale]`` sessions)."""
    G, out = SESSIONS[scale], {}
    for m, matching in enumerate(MATCHINGS):
        env = make("public_goods", num_agents=SESSION, punishment=True, matching=matching,
                   num_periods=max(PERIODS.values()))
        cases = [(design, punish) for design, arm in ARMS if arm == matching for punish in (False, True)]
        per_case = [design_params(design) for design, _ in cases]  # numpy leaves
        params = jax.tree_util.tree_map(lambda *x: np.repeat(np.stack([np.asarray(v) for v in x]), seeds * G, axis=0),
                                        *per_case)
        punish = np.repeat([p for _, p in cases], seeds * G)
        res = {k: np.asarray(v, np.float64).reshape(len(cases), seeds, G, -1).mean(axis=2)
               for k, v in simulate(env, params, stream_key(1000 + m, base_seed), punish).items()}  # (cases, S, P)
        for c, (design, punish) in enumerate(cases):
            out.update(summarise(row_name(design, matching, punish), res["contribution"][c, :, :PERIODS[design]],
                                 res["payoff"][c, :, :PERIODS[design]], res["points"][c, :, :PERIODS[design]]))
    return out


def summarise(row: str, contribution: np.ndarray, payoff: np.ndarray, points: np.ndarray):
    """The keys of one row from ``(S, P)`` per-period values: each period's contribution,
    its mean over the last third of the periods, the last minus the first period, and the
    payoff and points received per member and period (means over the periods)."""
    P = contribution.shape[1]
    third = max(1, math.ceil(P / 3))
    out = {(row, period_key(t)): contribution[:, t] for t in range(P)}
    out[(row, "last third")] = contribution[:, -third:].mean(axis=1)
    out[(row, "change")] = contribution[:, -1] - contribution[:, 0]
    out[(row, "payoff")] = payoff.mean(axis=1)
    out[(row, "points")] = points.mean(axis=1)
    return out


def scripted_keys() -> tuple[tuple[str, str], ...]:
    keys = []
    for design, matching in ARMS:
        for punish in (False, True):
            row = row_name(design, matching, punish)
            keys += [(row, period_key(t)) for t in range(PERIODS[design])] + [(row, q) for q in QUANTITIES]
    return tuple(keys)


# ------------------------------------------------------------------------------ learners
class StandardPunishment(Wrapper):
    """The punishment game (``public_goods`` with ``punishment=True``) with one discrete
    action per step, for learners: ``Discrete(e + 1)``. At the contribution step the
    action is the contribution; at the punishment step it is a standard ``s``: each other
    member who contributed less than ``s`` gets a point per ``1 / RATE`` tokens of
    shortfall (:func:`shortfall_points`; ``s = 0`` punishes nobody). Everything else (the
    observation, rewards, info, params) is the wrapped game's."""

    def __init__(self, env):
        base = getattr(env, "unwrapped", env)
        if not getattr(base, "punishment", False) or getattr(base, "sequential", True):
            raise ValueError(f"StandardPunishment wraps the public goods game with punishment, got {env!r}")
        super().__init__(env)

    def action_space(self, params=None) -> Discrete:
        return Discrete(self.unwrapped.endowment + 1)

    def reset(self, key, params=None):
        return self._env.reset(key, params)

    def game_actions(self, state, actions: jax.Array) -> jax.Array:
        """``(N, n) int32`` actions of the wrapped game for the ``(N,)`` discrete ones."""
        env = self.unwrapped
        actions = jnp.asarray(actions).astype(jnp.int32)
        _, _, view = env.membership(state.order)
        points = shortfall_points(state.contrib[view], actions.astype(jnp.float32), env.max_points)
        contributing = state.stage < env.contribution_steps
        zeros = jnp.zeros_like(points)
        return jnp.where(contributing, jnp.concatenate([actions[:, None], zeros], axis=1),
                         jnp.concatenate([jnp.zeros_like(actions)[:, None], points], axis=1))

    def step(self, key, state, actions, params=None):
        return self._env.step(key, state, self.game_actions(state, actions), params)


# ours: independent PPO learners, one network each, an update every batch of whole episodes
PPO_SETTINGS = dict(seating="independent", hidden=64, update_epochs=4, num_minibatches=4, lr=3e-3, gamma=0.95,
                ent_coef=0.01, evaluate=False)
# ours, per scale: updates x games per update. cpu: the fall without punishment and the
# level with it separate by then (measured: docs/reproduce.md)
LEARNER_SIZES = {"cpu": dict(num_updates=100, num_envs=16), "paper": dict(num_updates=400, num_envs=32)}
PLAYBACK_EPISODES = 16  # episodes of each trained population played to measure its periods
TENTHS = 10  # the learners' contribution over training, in tenths of the updates


def learner_env(matching: str, punish: bool):
    """The game the learners play: 16 players, 10 periods, the 2002 design's punishment
    (through :class:`StandardPunishment`) or none."""
    env = make("public_goods", num_agents=LEARNER_PLAYERS, matching=matching, punishment=punish,
               num_periods=PERIODS["2000"])
    return StandardPunishment(env) if punish else env


def learner_config(env, scale: str = "paper"):
    return TrainConfig().replace(rollout_len=env.episode_length, **PPO_SETTINGS, **LEARNER_SIZES[scale])


def trained_periods(train, learners, key: jax.Array) -> np.ndarray:
    """``(P,)`` mean contribution per period (fraction of the endowment) of one trained
    population (``train``: :func:`socialjax.train.make_train` of its env and config;
    ``learners``: one run's learner states), its policies sampled over
    ``PLAYBACK_EPISODES`` episodes."""
    env = train.env
    base = getattr(env, "unwrapped", env)
    out = play(train, learners, key, env.episode_length * PLAYBACK_EPISODES)
    steps = np.asarray(out.actions, np.float64).reshape(PLAYBACK_EPISODES, base.num_periods, base.steps_per_period,
                                                        base.num_agents)
    return steps[:, :, 0, :].mean(axis=(0, 2)) / base.endowment  # the contribution step of each period


def learner_values(seeds: int, base_seed: int = 0, scale: str = "paper") -> dict[tuple[str, str], np.ndarray]:
    """Each learner row: the contribution over the first and the last fifth of training
    (``start``, ``end``), the points assigned per member and period at the end, and the
    trained population's contribution per period, ``(S,)`` each."""
    out = {}
    for c, (matching, punish) in enumerate((m, p) for m in MATCHINGS for p in (False, True)):
        env, row = learner_env(matching, punish), learner_row(matching, punish)
        config = learner_config(env, scale)
        print(f"[punishment] {row}: {config.num_updates} updates x {config.num_envs} games x {config.rollout_len} "
              f"steps, {seeds} seeds", flush=True)
        result = run(env, config, seeds=seeds, base_seed=base_seed, progress=False, label=row)
        base = getattr(env, "unwrapped", env)
        per = base.num_agents * base.num_periods  # per member and period
        contribution = np.asarray(result.metrics["events/contributed"], np.float64)[0] / (per * base.endowment)
        points = np.asarray(result.metrics["events/points_assigned"], np.float64)[0] / per
        out[(row, "start")] = final_values(contribution, "start")
        out[(row, "end")] = final_values(contribution, "end")
        out[(row, "points")] = final_values(points, "end")
        tenths = np.array_split(np.arange(config.num_updates), TENTHS)
        out.update({(row, tenth_key(k)): np.nanmean(contribution[:, part], axis=1) for k, part in enumerate(tenths)})
        train = make_train(env, config)  # one playback program for every seed
        keys = [jax.random.key(2000 + 100 * c + base_seed + s) for s in range(seeds)]
        periods = np.stack([trained_periods(train, as_run(result.states.learners, 0, s), keys[s])
                            for s in range(seeds)])  # (S, P)
        out.update({(row, period_key(t)): periods[:, t] for t in range(base.num_periods)})
    return out


def learner_keys() -> tuple[tuple[str, str], ...]:
    quantities = ("start", "end", "points") + tuple(period_key(t) for t in range(PERIODS["2000"]))
    quantities += tuple(tenth_key(k) for k in range(TENTHS))
    return tuple((learner_row(matching, punish), q) for matching in MATCHINGS for punish in (False, True)
                 for q in quantities)


# ------------------------------------------------------------------------------ the entry
def _compute(runs, scale: str, seeds: int, base_seed: int) -> dict[tuple[str, str], np.ndarray]:
    out = scripted_values(scale, seeds, base_seed)
    if scale in LEARNER_SIZES:
        out.update(learner_values(seeds, base_seed, scale))
    return out


def _criterion(finals):
    parts = []
    for design, matching in ARMS:
        without, with_ = row_name(design, matching, False), row_name(design, matching, True)
        parts.append(sign_verdict(finals[(without, "change")], f"{without}: last minus first period",
                                  positive=False))
        parts.append(ordered_verdict(finals, (with_, "last third"), (without, "last third"),
                                     f"{design} {matching}, last third of the periods"))
    parts.append(ordered_verdict(finals, (row_name("2000", "partner", True), "last third"),
                                 (row_name("2000", "stranger", True), "last third"),
                                 "with punishment (2000), last third"))
    if (learner_row("partner", False), "end") in finals:
        for matching in MATCHINGS:
            without, with_ = learner_row(matching, False), learner_row(matching, True)
            parts.append(sign_verdict(finals[(without, "end")] - finals[(without, "start")],
                                      f"{without}: end minus start of training", positive=False))
            parts.append(ordered_verdict(finals, (with_, "end"), (without, "end"),
                                         f"learners {matching}, end of training"))
        parts.append(ordered_verdict(finals, (learner_row("partner", True), "end"),
                                     (learner_row("stranger", True), "end"), "learners with punishment, end"))
    return combined_verdict(parts)


HUMAN = ("Humans (Fehr & Gaechter 2000, 2002; qualitative): without punishment contributions start near half "
         "the endowment and decay towards free riding; with punishment they are sustained, and rise under "
         "partner matching (higher under partner than stranger).")


def plot(rep, path) -> None:
    """A panel per (design, matching): the mean contribution per period (fraction of the
    endowment; mean over seeds, 95% band) with and without punishment, scripted
    populations solid and (paper scale) trained learners dashed; the human finding in a
    caption below."""
    plt = pyplot()

    finals = rep.finals
    names = [f"{design}/{matching}" for design, matching in ARMS]
    training = (learner_row("partner", False), tenth_key(0)) in finals  # paper scale: the learners' panel
    names += ["training"] if training else []
    fig, axes = plt.subplot_mosaic([names, ["caption"] * len(names)], figsize=(4.6 * len(names), 4.4),
                                   height_ratios=(10, 1))
    colours = {False: "tab:blue", True: "tab:red"}
    for name, (design, matching) in zip(names, ARMS):
        ax = axes[name]
        lines = [(row_name(design, matching, p), p, "scripted", "-") for p in (False, True)]
        lines += [(learner_row(matching, p), p, "learners (trained)", "--") for p in (False, True) if design == "2000"]
        for row, punish, who, style in lines:
            P = sum((row, period_key(t)) in finals for t in range(PERIODS[design]))
            if P == 0:  # the learners: paper scale only
                continue
            stats = np.array([interval(finals[(row, period_key(t))]) for t in range(P)])
            x = np.arange(1, P + 1)
            ax.plot(x, stats[:, 0], style, marker="o", ms=3, color=colours[punish],
                    label=f"{who}, {'with' if punish else 'without'} punishment")
            ax.fill_between(x, stats[:, 1], stats[:, 2], color=colours[punish], alpha=0.2, lw=0)
        ax.set_ylim(0, 1)
        ax.set_xticks(np.arange(1, PERIODS[design] + 1))
        ax.set_xlabel("period")
        ax.set_ylabel("mean contribution / endowment")
        ax.set_title(f"{design} design, {matching} matching", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    if training:
        ax = axes["training"]
        x = (np.arange(TENTHS) + 0.5) / TENTHS
        for matching, style in zip(MATCHINGS, ("--", ":")):
            for punish in (False, True):
                row = learner_row(matching, punish)
                stats = np.array([interval(finals[(row, tenth_key(k))]) for k in range(TENTHS)])
                ax.plot(x, stats[:, 0], style, marker="o", ms=3, color=colours[punish],
                        label=f"{matching}, {'with' if punish else 'without'} punishment")
                ax.fill_between(x, stats[:, 1], stats[:, 2], color=colours[punish], alpha=0.2, lw=0)
        ax.set_ylim(0, 1)
        ax.set_xlabel("fraction of training")
        ax.set_ylabel("mean contribution / endowment")
        ax.set_title("learners over training (mean per tenth)", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes["caption"].axis("off")
    axes["caption"].text(0.0, 0.5, HUMAN, fontsize=8, va="center", wrap=True)
    finish_figure(fig, rep, path)


def _references() -> tuple[Reference, ...]:
    decay = "without punishment contributions start near half the endowment and decay towards free riding"
    return (
        Reference(row_name("2000", "partner", False), "change", None, FG2000, HOW, decay),
        Reference(row_name("2000", "stranger", False), "change", None, FG2000, HOW, decay),
        Reference(row_name("2000", "partner", True), "last third", None, FG2000, HOW,
                  "with punishment contributions are sustained and rise over the periods (partner)"),
        Reference(row_name("2000", "stranger", True), "last third", None, FG2000, HOW,
                  "with punishment contributions are sustained (stranger), below partner's"),
        Reference(row_name("2002", "stranger", False), "change", None, FG2002, ABSTRACT,
                  "cooperation \"breaks down if [altruistic punishment] is ruled out\""),
        Reference(row_name("2002", "stranger", True), "last third", None, FG2002, ABSTRACT,
                  "\"cooperation flourishes if altruistic punishment is possible\""),
    )


PUNISHMENT = Entry(
    name="punishment",
    title="Public goods with and without peer punishment, partner vs stranger matching",
    citation="Fehr & Gaechter, AER 2000; Fehr & Gaechter, Nature 2002",
    conditions=(),
    measures=(),
    references=_references(),
    criterion=_criterion,
    criterion_text=(
        "scripted populations: without punishment the last period's contribution is below the first's (2000 "
        "partner, 2000 stranger, 2002 stranger); with punishment the mean contribution over the last third of the "
        "periods is above that without (each of the three); with punishment partner is above stranger (2000). "
        "The cpu and paper scales add the learners: without punishment their contribution falls from the first to "
        "the last fifth of training; at the end of training it is higher with punishment than without (each matching); "
        "with punishment partner is above stranger. Each comparison over seeds (95% intervals); reproduced when "
        "all are separated, not reproduced when none is even ordered, partly otherwise"),
    seeds={"small": 4, "cpu": 4, "paper": 8},
    notes=("Scripted members follow our rules (conditional cooperators aim at 0.9 of the others' last mean, free "
           "riders at 0, each closing half the gap per period; a punished member adds half the payoff it lost; "
           "under partner matching a punished member keeps to its group's mean of that period from then on; "
           "conditional cooperators give a point per 3 tokens below the group mean); 24 members per session, two "
           "thirds conditional cooperators; 16 sessions per seed at small scale, 64 at cpu and paper scale. The "
           "learners (cpu and paper scale) are 16 independent PPO learners per game, 100 updates of 16 games "
           "(cpu) or 400 of 32 (paper), the 2002 costs; their "
           "punishment is a standard they choose (points per 3 tokens of shortfall from it). Our stranger matching "
           "redraws groups at random; F&G 2002 kept any two members from meeting twice. The published per-period "
           "numbers were not read here: every reference is qualitative."),
    analysis=Analysis(keys={"small": scripted_keys(), "cpu": scripted_keys() + learner_keys(),
                            "paper": scripted_keys() + learner_keys()}, compute=_compute),
    plot=plot,
)
