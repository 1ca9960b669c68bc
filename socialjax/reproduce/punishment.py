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
to it from then on (:func:`~socialjax.reproduce.punishment_rules.learnt_standard`), under stranger
matching it cannot (all ours except the qualitative shape and the matching protocols). Per
period: the mean contribution as a fraction of the endowment, the payoff and the
points received, over 10 periods for the 2000 design (partner and stranger) and 6 for
the 2002 design (stranger). Learners in the same games: the ``punishment-learners`` entry
(:mod:`socialjax.reproduce.punishment_learners`).

Criterion. Without punishment the last-period contribution is below the first (each
run); with punishment the contribution over the last third of the periods is above the
contribution without, under each matching and design; with punishment partner is above
stranger (2000 design). Each comparison over seeds (95% intervals); reproduced when all
are separated, not reproduced when none is even ordered, partly otherwise.

What differs from the papers. The subjects are scripted rules; the rules
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
import numpy as np

from socialjax import make
from socialjax.envs.institutions.public_goods import design_params
from socialjax.reproduce.core import (
    Entry,
    Reference,
    combined_verdict,
    finish_figure,
    interval,
    model_condition,
    ordered_verdict,
    sign_verdict,
    stream_key,
)
from socialjax.reproduce.punishment_rules import SESSION, session
from socialjax.train.models import Model, register_model
from socialjax.viz.plots import pyplot

# Fehr & Gaechter 2000: 10 periods per treatment; Fehr & Gaechter 2002: 6.
PERIODS = {"2000": 10, "2002": 6}
SESSIONS = {"small": 16, "cpu": 64, "paper": 64}  # sessions per seed

MATCHINGS = ("partner", "stranger")
# (design, matching) of the scripted rows: the 2000 design under both matchings, the 2002
# design under stranger matching (its perfect-stranger protocol)
ARMS = (("2000", "partner"), ("2000", "stranger"), ("2002", "stranger"))
QUANTITIES = ("last third", "change", "payoff", "points")

FG2000 = "Fehr & Gaechter 2000, Cooperation and punishment in public goods experiments (AER 90(4))"
FG2002 = "Fehr & Gaechter 2002, Altruistic punishment in humans (Nature 415)"
HOW = "qualitative: the papers' description of their contribution trajectories; their numbers were not read here"
ABSTRACT = "text (the abstract), qualitative"


def row_name(design: str, matching: str, punish: bool) -> str:
    return f"{design}/{matching}/{'with' if punish else 'without'}"


def period_key(t: int) -> str:
    return f"period {t + 1}"


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


def matching_values(matching: str, sessions: int, seeds: int, base_seed: int = 0) -> dict[tuple[str, str], np.ndarray]:
    """The scripted rows of one ``matching`` (:data:`ARMS`: each design played under it,
    with and without punishment) in one compiled call: each row's per-period
    contributions and summary quantities (:func:`summarise`), ``(seeds,)`` each, a
    seed's value the mean over its ``sessions`` sessions. The model
    ``punishment/sessions``."""
    m = MATCHINGS.index(matching)
    env = make("public_goods", num_agents=SESSION, punishment=True, matching=matching,
               num_periods=max(PERIODS.values()))
    cases = [(design, punish) for design, arm in ARMS if arm == matching for punish in (False, True)]
    per_case = [design_params(design) for design, _ in cases]  # numpy leaves
    runs = seeds * sessions
    params = jax.tree_util.tree_map(lambda *x: np.repeat(np.stack([np.asarray(v) for v in x]), runs, axis=0),
                                    *per_case)
    punish = np.repeat([p for _, p in cases], runs)
    res = {k: np.asarray(v, np.float64).reshape(len(cases), seeds, sessions, -1).mean(axis=2)
           for k, v in simulate(env, params, stream_key(1000 + m, base_seed), punish).items()}  # (cases, S, P)
    out = {}
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


def matching_keys(settings) -> tuple[tuple[str, str], ...]:
    """The keys of :func:`matching_values` under ``settings["matching"]``."""
    keys = []
    for design, matching in ARMS:
        if matching != settings["matching"]:
            continue
        for punish in (False, True):
            row = row_name(design, matching, punish)
            keys += [(row, period_key(t)) for t in range(PERIODS[design])] + [(row, q) for q in QUANTITIES]
    return tuple(keys)


SESSIONS_MODEL = register_model(Model("punishment/sessions", "public_goods", matching_values, matching_keys))


# ------------------------------------------------------------------------------ the entry
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
    return combined_verdict(parts)


HUMAN = ("Humans (Fehr & Gaechter 2000, 2002; qualitative): without punishment contributions start near half "
         "the endowment and decay towards free riding; with punishment they are sustained, and rise under "
         "partner matching (higher under partner than stranger).")


def plot(rep, path) -> None:
    """A panel per (design, matching): the scripted populations' mean contribution per
    period (fraction of the endowment; mean over seeds, 95% band) with and without
    punishment; the human finding in a caption below."""
    plt = pyplot()

    finals = rep.finals
    names = [f"{design}/{matching}" for design, matching in ARMS]
    fig, axes = plt.subplot_mosaic([names, ["caption"] * len(names)], figsize=(4.6 * len(names), 4.4),
                                   height_ratios=(10, 1))
    colours = {False: "tab:blue", True: "tab:red"}
    for name, (design, matching) in zip(names, ARMS):
        ax = axes[name]
        P = PERIODS[design]
        for punish in (False, True):
            row = row_name(design, matching, punish)
            stats = np.array([interval(finals[(row, period_key(t))]) for t in range(P)])
            x = np.arange(1, P + 1)
            ax.plot(x, stats[:, 0], marker="o", ms=3, color=colours[punish],
                    label=f"scripted, {'with' if punish else 'without'} punishment")
            ax.fill_between(x, stats[:, 1], stats[:, 2], color=colours[punish], alpha=0.2, lw=0)
        ax.set_ylim(0, 1)
        ax.set_xticks(np.arange(1, P + 1))
        ax.set_xlabel("period")
        ax.set_ylabel("mean contribution / endowment")
        ax.set_title(f"{design} design, {matching} matching", fontsize=9)
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
    conditions=tuple(model_condition(matching, SESSIONS_MODEL.name,
                                     {scale: {"matching": matching, "sessions": n} for scale, n in SESSIONS.items()})
                     for matching in MATCHINGS),
    measures=(),
    references=_references(),
    criterion=_criterion,
    criterion_text=(
        "scripted populations: without punishment the last period's contribution is below the first's (2000 "
        "partner, 2000 stranger, 2002 stranger); with punishment the mean contribution over the last third of the "
        "periods is above that without (each of the three); with punishment partner is above stranger (2000). "
        "Each comparison over seeds (95% intervals); reproduced when "
        "all are separated, not reproduced when none is even ordered, partly otherwise"),
    seeds={"small": 4, "cpu": 4, "paper": 8},
    notes=("Scripted members follow our rules (conditional cooperators aim at 0.9 of the others' last mean, free "
           "riders at 0, each closing half the gap per period; a punished member adds half the payoff it lost; "
           "under partner matching a punished member keeps to its group's mean of that period from then on; "
           "conditional cooperators give a point per 3 tokens below the group mean); 24 members per session, two "
           "thirds conditional cooperators; 16 sessions per seed at small scale, 64 at cpu and paper scale (learners "
           "in the same games: the punishment-learners entry). Our stranger matching "
           "redraws groups at random; F&G 2002 kept any two members from meeting twice. The published per-period "
           "numbers were not read here: every reference is qualitative."),
    plot=plot,
)
