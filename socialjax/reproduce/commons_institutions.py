"""Common-pool resources with and without institutions (Ostrom, Gardner & Walker 1994),
and the GovSim fishery's collapse as a function of how much the group takes (Piatti et
al. 2024), in ``commons``.

GovSim. Piatti et al.'s fishery (``commons_govsim``): a lake of at most 100 tons, five
fishers, twelve months; what the group leaves doubles (up to 100), and a remainder
under 5 tons collapses the fishery for good. Leaving at least half the stock keeps it
whole (the remainder doubles back), so the group's sustainable take is half the stock;
GovSim found that most LLM groups take more and collapse the lake. We sweep scripted
policies: every month each fisher asks for a fraction ``f_i`` of an equal share of the
stock, ``f_i S / 5`` tons (randomly rounded to whole tons), where ``f_i`` is the group's
fraction ``f`` times a per-fisher factor ``exp(h u)``, ``u`` uniform on
``[-sqrt 3, sqrt 3]`` (heterogeneity ``h = 0.25``, ours: fishers differ, as LLM agents
do, and the collapse rate becomes a smooth function of ``f``). Measured for ``f`` from
0.05 to 1 over many games (one jitted call): the collapse rate within the 12 months,
the months before the collapse, and the group's catch. Criterion: no collapse below
the threshold (the largest collapse rate over ``f < 0.5`` under 0.05), collapse well
above it (the mean over ``f >= 0.75``, one and a half times the threshold, above 0.95),
and a collapse rate that rises with ``f`` (no drop between neighbouring ``f`` larger
than 0.05, sampling noise). Between ``f = 0.5`` and about 0.59 the stock shrinks yet
lasts the twelve months (with everyone at ``f`` the stock after ``t`` months is
``100 (2 (1 - f))^t``, and the collapse comes within 12 months only when
``(2 (1 - f))^12 < 0.1``): the threshold is one of sustainability, not of collapse
within the horizon.

Institutions. The laboratory CPR of Ostrom, Gardner & Walker (1994) (``commons_ostrom``):
8 players, 25 tokens each, a token in the market earns 5, the pool pays
``23 X - 0.25 X^2`` for ``X`` tokens in total, shared in proportion. The group's rent,
what the pool earns above the market, is ``18 X - 0.25 X^2``: it peaks at ``X* = 36``
(324 per round) while the symmetric Nash equilibrium puts in ``X = 64`` (8 each), where
the rent is 128, 39.5% of the peak (:func:`ostrom_benchmarks`). In OGW's experiments
without communication or sanctions, groups over-appropriated (near the Nash level,
rent well below the optimum); sanctioning alone raised the rent a little, and
communication with sanctioning the most. The env's institutions: monitoring (pay 1 to
see the others' tokens), sanctions (each token above the quota in force, 4.5 at reset,
the optimum's share, is fined 10, the fines destroyed) and a quota vote (every 5
rounds the median vote becomes the quota). Five arms: none, monitoring, sanctions
(the fixed quota), quota vote, sanctions + quota vote (the group chooses the rule the
fines enforce: the nearest the env has to OGW's communication with sanctioning).

The learners. ``socialjax.train``'s learners need a ``Discrete`` action space, and
monitoring and the vote add action heads (a ``Box`` action), so the arms are learned
by independent REINFORCE learners (ours, :mod:`~socialjax.reproduce.commons_learners`):
each player a linear softmax policy on its observation (normalised), one softmax per
action head, trained on its own reward to go (no discount: a vote pays later), with the
batch mean as baseline, the advantage scaled per player, Adam (lr 0.1). One compiled
program covers the five arms: the env
built with all three institutions, an arm without one holding it off (fine rate 0,
monitor flag 0, vote abstain), which by the env's rules is the env without that option
(tests/reproduce/test_commons_institutions.py checks it). At paper scale the package's
IPPO learners are also trained in the two arms they can play, none and sanctions.
Measured per arm over the last fifth of training: tokens per round, rent as a share of
the optimum, net share (the group's payoff above the all-market payoff, after fines
and monitoring costs, over the optimum rent), fines, monitoring rate and quota in
force. Criterion: with no institution the group is nearer the Nash level than the
optimum (tokens above the midpoint, 50), and sanctions, and sanctions with a voted
quota, each raise the rent above none (95% intervals over seeds).

Scales. ``small`` (a pipeline check): 2 seeds, 256 games per f, 120 updates of 16 games;
there the voted quota under sanctions does not separate from none (seeds from 1000:
rent share 0.446 vs 0.414, intervals overlapping). ``cpu``: 8 seeds, 1024 games per f,
400 updates of 32 games, no IPPO: the learners need the longer training to vote
themselves a quota that the fines hold (tokens per round about 60 at the end, against 64
with no institution), and 8 seeds separate it on seed sets 0 and 1000. ``paper``: 4096
games per f, 1000 updates, 8 seeds, and IPPO.

What differs. OGW's players were people who sanctioned each other at a cost and talked
face to face; here fines are automatic, detection certain, and the quota of the
sanctions arm is set by us at the optimum's share, so "sanctions" here is an imposed
rule at the optimum, stronger than OGW's sanctioning without agreement, and the
ordering "communication with sanctions above sanctions alone" is not tested. Selfish
learners gain nothing from monitoring or a vote that nothing enforces (the env gives
them no other effect), unlike OGW's groups, whose cheap talk raised the rent. GovSim's
agents are LLMs that talk; ours are scripted policies, the sweep maps the outcome
against the policy that GovSim's agents had to find.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from socialjax import make
from socialjax.reproduce.commons_learners import (
    ARMS,
    INSTITUTION_MEASURES,
    LEARNING_RATE,
    OSTROM_MODEL,
    SWITCHES,
    arm_actions,
    arm_params,
    benchmarks,
    institutions_env,
    learn_institutions,
    ostrom_benchmarks,
    seed_keys,
)
from socialjax.reproduce.core import (
    Condition,
    Entry,
    Measure,
    Reference,
    combined_verdict,
    finish_figure,
    interval,
    model_condition,
    ordered_verdict,
    sign_verdict,
)
from socialjax.rollout import infos, scan_steps
from socialjax.train.models import Model, register_model
from socialjax.viz.plots import mean_ci95, pyplot

# the arms and their learners are commons_learners' (and importable from here, as they were)
__all__ = ["ARMS", "BATCH", "COMMONS_INSTITUTIONS", "FRACTIONS", "GOVSIM_GAMES", "HETEROGENEITY",
           "INSTITUTION_MEASURES", "ITERATIONS", "LEARNING_RATE", "PPO_CONFIG", "SWITCHES", "THRESHOLD", "WELL_ABOVE",
           "arm_actions", "arm_params", "f_half", "govsim_sweep", "institutions_env", "learn_institutions",
           "ostrom_benchmarks", "plot"]

# ----------------------------------------------------------------------------- GovSim
FRACTIONS = tuple(round(0.05 * k, 2) for k in range(1, 21))  # the group's fraction of the stock, 0.05 .. 1
THRESHOLD = 0.5  # GovSim: the remainder doubles, so taking at most half the stock keeps it whole
WELL_ABOVE = 0.75  # ours: one and a half times the threshold
HETEROGENEITY = 0.25  # ours: std of the log of each fisher's factor on the group fraction
GOVSIM_GAMES = {"small": 256, "cpu": 1024, "paper": 4096}  # games per fraction per seed
NEAR_ZERO, NEAR_ONE, DROP = 0.05, 0.95, 0.05  # ours: the criterion's tolerances

# ------------------------------------------------- institutions (ARMS: commons_learners)
ITERATIONS = {"small": 120, "cpu": 400, "paper": 1000}  # learner updates
BATCH = {"small": 16, "cpu": 32, "paper": 32}  # games per update

GOVSIM = ("Piatti et al. 2024, Cooperate or Collapse: Emergence of Sustainable Cooperation in a Society of LLM "
          "Agents (GovSim), arXiv:2404.16698")
GOVSIM_CODE = (GOVSIM + "; its code, giorgiopiatti/GovSim at 1d11adf, simulation/scenarios/common/environment/"
               "concurrent_env.py (doubling capped at 100, collapse under 5 tons, per-agent threshold "
               "(stock // 2) // N)")
OGW = ("Ostrom, Gardner & Walker 1994, Rules, Games, and Common-Pool Resources (University of Michigan Press), "
       "the laboratory CPR experiments")
OGW_HOW = "qualitative: the direction of the findings as summaries of the book state them; its tables were not read"


def _row(f: float) -> str:
    return f"govsim f={f:.2f}"


def _govsim_keys() -> tuple[tuple[str, str], ...]:
    keys = [(_row(f), m) for f in FRACTIONS for m in ("collapse_rate", "survival_months", "catch")]
    keys += [("govsim below threshold", "max_collapse_rate"), ("govsim well above threshold", "collapse_rate"),
             ("govsim curve", "largest_drop"), ("govsim curve", "f_half")]
    return tuple(keys)


# ------------------------------------------------------------------ GovSim: the sweep
@functools.partial(jax.jit, static_argnames=("games",))
def govsim_sweep(keys: jax.Array, fractions: jax.Array, games: int) -> dict[str, jax.Array]:
    """``(S, F)`` collapse rate, months before the collapse and the group's catch per
    game, for ``S`` keys (seeds) and ``F`` group fractions, ``games`` games each: every
    month each of the 5 fishers asks for ``f_i S / N`` tons, ``f_i = f exp(h u_i)`` (``u``
    uniform with unit variance, fixed for the game), randomly rounded to whole tons."""
    env = make("commons_govsim")
    params = env.default_params
    N, T, L = env.num_agents, env.episode_length, env.num_levels

    def game(f, u, key):
        share = f * jnp.exp(HETEROGENEITY * jnp.sqrt(3.0) * (2.0 * u[0] - 1.0))  # (N,)

        def ask(u_t, obs, state):  # unbiased rounding to whole tons
            return jnp.clip(jnp.floor(share * state.stock / N + u_t), 0, L - 1).astype(jnp.int32)

        keys = jnp.broadcast_to(key, (T,))  # every month steps with the game's key
        collapsed, catch = scan_steps(env, env.reset(key, params), ask, keys=keys, inputs=u[1:], params=params,
                                      record=infos("collapsed", "total_harvest"), auto_reset=False).records
        return collapsed[-1], T - collapsed.sum(), catch.sum()

    def seed(key):
        u = jax.random.uniform(key, (fractions.shape[0], games, T + 1, N))
        collapsed, months, catch = jax.vmap(jax.vmap(game, in_axes=(None, 0, None)), in_axes=(0, 0, None))(
            fractions, u, key)
        return {"collapse_rate": collapsed.mean(axis=1), "survival_months": months.mean(axis=1),
                "catch": catch.mean(axis=1)}

    return jax.vmap(seed)(keys)


def f_half(fractions: np.ndarray, rate: np.ndarray) -> float:
    """The fraction at which ``rate`` first reaches 0.5 (linear interpolation between grid
    points; NaN when it never does)."""
    above = np.nonzero(rate >= 0.5)[0]
    if above.size == 0:
        return float("nan")
    k = above[0]
    if k == 0:
        return float(fractions[0])
    f0, f1, r0, r1 = fractions[k - 1], fractions[k], rate[k - 1], rate[k]
    return float(f0 + (0.5 - r0) * (f1 - f0) / (r1 - r0))


# ------------------------------------------------------------------------ the entry
def govsim_values(games: int, seeds: int, base_seed: int = 0) -> dict[tuple[str, str], np.ndarray]:
    """The GovSim rows, ``(seeds,)`` each: per fraction the collapse rate, months before
    the collapse and catch (:func:`govsim_sweep`, ``games`` games per fraction and
    seed), and the curve's summaries the criterion reads. The model
    ``commons-institutions/govsim``."""
    out: dict[tuple[str, str], np.ndarray] = {}
    fractions = np.asarray(FRACTIONS, np.float32)
    sweep = {k: np.asarray(v, np.float64) for k, v in govsim_sweep(
        seed_keys(seeds, base_seed, 0), jnp.asarray(fractions), games=games).items()}  # (S, F)
    for i, f in enumerate(FRACTIONS):
        for m in ("collapse_rate", "survival_months", "catch"):
            out[(_row(f), m)] = sweep[m][:, i]
    rate = sweep["collapse_rate"]
    below, above = fractions < THRESHOLD, fractions >= WELL_ABOVE
    out[("govsim below threshold", "max_collapse_rate")] = rate[:, below].max(axis=1)
    out[("govsim well above threshold", "collapse_rate")] = rate[:, above].mean(axis=1)
    out[("govsim curve", "largest_drop")] = np.maximum((rate[:, :-1] - rate[:, 1:]).max(axis=1), 0.0)
    out[("govsim curve", "f_half")] = np.array([f_half(fractions, r) for r in rate])
    return out


GOVSIM_MODEL = register_model(Model("commons-institutions/govsim", "commons_govsim", govsim_values,
                                    lambda settings: _govsim_keys()))


def _criterion(finals):
    f = finals
    below = f[("govsim below threshold", "max_collapse_rate")]
    above = f[("govsim well above threshold", "collapse_rate")]
    drop = f[("govsim curve", "largest_drop")]
    parts = [
        sign_verdict(NEAR_ZERO - below, f"GovSim: largest collapse rate below f = {THRESHOLD:g} "
                                        f"{np.mean(below):.3g}, its margin under {NEAR_ZERO:g}"),
        sign_verdict(above - NEAR_ONE, f"GovSim: collapse rate over f >= {WELL_ABOVE:g} {np.mean(above):.3g}, "
                                       f"its margin over {NEAR_ONE:g}"),
        sign_verdict(DROP - drop, f"GovSim: largest drop of the collapse rate as f grows {np.mean(drop):.3g}, "
                                  f"its margin under {DROP:g}"),
    ]
    bench = benchmarks()
    midpoint = 0.5 * (bench["nash_tokens"] + bench["optimum_tokens"])
    tokens = f[("ostrom/none", "tokens")]
    parts.append(sign_verdict(tokens - midpoint,
                              f"Ostrom CPR, no institution: tokens per round {np.mean(tokens):.3g} (optimum "
                              f"{bench['optimum_tokens']:g}, Nash {bench['nash_tokens']:g}), margin over the "
                              f"midpoint {midpoint:g}"))
    for arm in ("sanctions", "sanctions+quota_vote"):
        parts.append(ordered_verdict(f, (f"ostrom/{arm}", "rent_share"), ("ostrom/none", "rent_share"),
                                     "Ostrom CPR, rent share of the optimum"))
    if ("ppo/sanctions", "collective_return") in f:
        parts.append(ordered_verdict(f, ("ppo/sanctions", "collective_return"), ("ppo/none", "collective_return"),
                                     "Ostrom CPR, IPPO, group payoff per game"))
    return combined_verdict(parts)


def plot(rep, path) -> None:
    """Left: GovSim's collapse rate and months survived against the group's fraction
    (mean over seeds, 95% band), the sustainability threshold marked. Right: each
    arm's rent and net share of the optimum (mean, 95% interval), the Nash level and the
    optimum marked, and at paper scale IPPO's group payoff as a net share."""
    plt = pyplot()

    fig, (ax, ax_i) = plt.subplots(1, 2, figsize=(11.5, 4.0))
    x = np.asarray(FRACTIONS)
    rate = np.stack([rep.finals[(_row(f), "collapse_rate")] for f in FRACTIONS], axis=1)
    months = np.stack([rep.finals[(_row(f), "survival_months")] for f in FRACTIONS], axis=1)
    mean, low, high = mean_ci95(rate)
    ax.plot(x, mean, marker="o", ms=3, color="tab:red", label="collapse rate (12 months)")
    ax.fill_between(x, low, high, color="tab:red", alpha=0.25, lw=0)
    ax.axvline(THRESHOLD, color="k", ls="--", lw=1, label="sustainability threshold (half the stock)")
    ax.set_xlabel("fraction of the stock the group asks for each month")
    ax.set_ylabel("collapse rate")
    ax.set_ylim(-0.03, 1.03)
    ax2 = ax.twinx()
    mean, low, high = mean_ci95(months)
    ax2.plot(x, mean, marker="s", ms=3, color="tab:blue", label="months before the collapse")
    ax2.fill_between(x, low, high, color="tab:blue", alpha=0.2, lw=0)
    ax2.set_ylabel("months before the collapse (of 12)")
    ax2.set_ylim(-0.4, 12.4)
    lines = ax.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], fontsize=7, loc="center left")
    ax.set_title("GovSim fishery: scripted groups, 5 fishers", fontsize=9)
    ax.grid(alpha=0.3)

    y = np.arange(len(ARMS))
    for j, (m, colour) in enumerate((("rent_share", "tab:green"), ("net_share", "tab:olive"))):
        stats = np.array([interval(rep.finals[(f"ostrom/{arm}", m)]) for arm in ARMS])
        ax_i.barh(y + (j - 0.5) * 0.38, stats[:, 0], 0.38, xerr=np.abs(stats[:, 1:].T - stats[:, 0]), color=colour,
                  label={"rent_share": "rent", "net_share": "net of fines and monitoring"}[m])
    labels = list(ARMS)
    ppo = [name for name in ("ppo/none", "ppo/sanctions") if (name, "collective_return") in rep.finals]
    if ppo:  # IPPO (paper scale): its group payoff per game as a net share
        env = institutions_env()
        p, bench = env.default_params, benchmarks()
        outside = env.num_agents * float(p.market_wage) * float(p.endowment)
        net = [(rep.finals[(name, "collective_return")] / env.episode_length - outside) / bench["peak_rent"]
               for name in ppo]
        stats = np.array([interval(v) for v in net])
        y_ppo = len(ARMS) + np.arange(len(ppo))
        ax_i.barh(y_ppo + 0.19, stats[:, 0], 0.38, xerr=np.abs(stats[:, 1:].T - stats[:, 0]), color="tab:purple",
                  label="IPPO, net")
        y, labels = np.concatenate([y, y_ppo]), labels + [f"IPPO: {name[4:]}" for name in ppo]
    nash = float(np.mean(rep.finals[("benchmark/nash", "rent_share")]))
    ax_i.axvline(nash, color="tab:red", ls="--", lw=1, label=f"Nash ({nash:.3f})")
    ax_i.axvline(1.0, color="k", ls=":", lw=1, label="optimum")
    ax_i.set_yticks(y, labels, fontsize=8)
    ax_i.set_xlabel("share of the optimum rent (per round)")
    ax_i.set_title("Ostrom CPR, 8 learners, last fifth of training", fontsize=9)
    ax_i.legend(fontsize=7, loc="lower right")
    ax_i.grid(alpha=0.3, axis="x")
    finish_figure(fig, rep, path)


# IPPO in the two arms the package's learners can play (a Discrete action), paper scale only
PPO_CONFIG = dict(seating="independent", num_envs=64, rollout_len=20, num_updates=500, hidden=64, update_epochs=4,
                  num_minibatches=4, lr=1e-3, evaluate=False)  # ours


def _ppo(name: str, options: dict) -> Condition:
    return Condition(name=f"ppo/{name}", env={"paper": "commons_ostrom"}, env_options={"paper": options},
                     config={"paper": PPO_CONFIG}, scales=("paper",))


COMMONS_INSTITUTIONS = Entry(
    name="commons-institutions",
    title="Common-pool resources: collapse against the harvest (GovSim) and rent with and without institutions "
          "(Ostrom's lab CPR)",
    citation="Piatti et al., NeurIPS 2024 (arXiv:2404.16698); Ostrom, Gardner & Walker 1994",
    conditions=(_ppo("none", {}), _ppo("sanctions", {"sanctions": "destroy"}),
                model_condition("govsim", GOVSIM_MODEL.name, {s: {"games": n} for s, n in GOVSIM_GAMES.items()}),
                model_condition("ostrom", OSTROM_MODEL.name,
                                {s: {"iterations": n, "batch": BATCH[s]} for s, n in ITERATIONS.items()})),
    measures=(Measure("collective_return", "collective_return", "group payoff per 20-round game"),
              Measure("tokens", "events/harvest", "tokens in the pool per game (all players)"),
              Measure("fines", "events/fine", "fines per game (all players)")),
    references=(
        Reference("govsim below threshold", "max_collapse_rate", None, GOVSIM_CODE,
                  "qualitative: the rule as GovSim's code states it",
                  "the stock doubles up to 100 and falls below 5 tons for good; each fisher's sustainable share "
                  "is half the stock split five ways (10 tons at a full lake), so a group within it keeps the lake"),
        Reference("govsim well above threshold", "collapse_rate", None, GOVSIM,
                  "text (abstract of v3); qualitative for our scripted policies",
                  "groups that take more collapse the fishery; all but the most powerful LLMs failed to sustain "
                  "it, the highest survival rate below 54%"),
        Reference("ostrom/none", "tokens", None, OGW, OGW_HOW,
                  "without communication or sanctions groups over-appropriate, near the Nash level (64 tokens "
                  "here), rent well below the optimum"),
        Reference("ostrom/sanctions", "rent_share", None, OGW, OGW_HOW,
                  "sanctioning alone raises the rent a little (OGW's sanctions were costly peer punishment "
                  "without an agreed rule; here an imposed quota at the optimum's share)"),
        Reference("ostrom/sanctions+quota_vote", "rent_share", None, OGW, OGW_HOW,
                  "communication with sanctioning raises the rent the most (here: a voted quota enforced by "
                  "fines)"),
    ),
    criterion=_criterion,
    criterion_text=(f"GovSim: the largest collapse rate below f = {THRESHOLD:g} under {NEAR_ZERO:g}, the collapse "
                    f"rate over f >= {WELL_ABOVE:g} above {NEAR_ONE:g}, and no drop of the collapse rate as f "
                    f"grows larger than {DROP:g}; Ostrom CPR: with no institution, tokens per round above the "
                    "midpoint of the optimum (36) and the Nash level (64), and the rent share higher with "
                    "sanctions and with sanctions plus a voted quota than with none (at paper scale also the "
                    "IPPO group payoff, sanctions above none). Each over seeds (95% intervals); reproduced when "
                    "all hold, not reproduced when none holds even in the means, partly otherwise"),
    seeds={"small": 2, "cpu": 8, "paper": 8},
    notes="GovSim's agents are LLMs; ours are scripted policies with heterogeneous fishers (the heterogeneity "
          "0.25 is ours). OGW's subjects sanctioned each other at a cost and talked; here fines are automatic "
          "(detection certain, the fined tokens destroyed) and the sanctions arm's quota is fixed by us at the "
          "optimum's share; the learners are independent REINFORCE learners with linear policies (ours), "
          "because monitoring and the vote are action heads the package's learners cannot play. Episodes are "
          "20 rounds (ours). The cpu scale (8 seeds, 400 updates of 32 games, no IPPO) trains long enough "
          "for sanctions with a voted quota to separate from none on seed sets 0 and 1000 (at small scale they "
          "do not).",
    plot=plot,
)
