"""Cooperation with and without direct punishment, partner selection and reputation in a
population of independent learners playing the repeated prisoner's dilemma (Dasgupta &
Musolesi 2023/2025, "Investigating the impact of direct punishment on the emergence of
cooperation in multi-agent reinforcement learning systems"), in ``partner_punishment``.

The published setup (the authors' released code, nayanadasgupta/
Understanding_Punishment_In_MAS_With_RL): 5 agents, episodes of 10-round PD games with
(R, S, T, P) = (3, 0, 4, 1); a punished agent loses 3, the punisher gets +2 for a just
punishment (the target defected) and -10 for an unjust one; public reputation +1 for C,
-1 for D, +2 for a just and -3 for an unjust punishment. Each agent learns with
independent DQNs, one per decision (partner selection, play, punishment), 128 hidden
units, learning rates 0.01 / 0.1 / 0.001, discount 0.9; 20 runs of 2000 episodes. The
finding (qualitative; no numbers were found): direct punishment, and partner selection
with reputation, raise cooperation over a population with neither.

What we measure. The learners of ``socialjax.train`` need one discrete action, and the
environment's action is a vector of three heads of which only the current phase's is
read: ``partner_punishment_one_action`` has ``Discrete(lcm(N - 1, 2))`` (4 with 5 agents)
and reads action ``a`` as partner ``a mod (N - 1)`` at the select step, C/D ``a mod 2``
at a play step and no/yes ``a mod 2`` at a punish step. Every value of every head then has
the same number of discrete actions, so a uniform policy is uniform over each phase's
choices (with ``Discrete(N - 1)`` and ``a mod 2`` an odd ``N - 1`` would favour C and
punishing). Four conditions: baseline (neither), direct punishment, partner selection
with reputation observed, both. At both scales, populations of 5 independent tabular
Q-learners (ours: one Q-table each over the observation's phase, whether it acts, its
own and its partner's last move and its target's move, so not the reputations;
epsilon-greedy, learning rate 0.1, the paper's discount 0.9 per step), the four
conditions and all seeds in one jitted call: every condition plays the game with
selection and direct punishment, a mechanism that is off emptied (random picks, no
punishment) and looked through (:func:`tabular_run`): the game without it for these
learners, up to their values passing through one more table entry. An episode is several
cycles (``num_cycles``: a select step and N games each; 2 at small scale, 10 at cpu and
paper scale), reputation kept across them, so that from the second cycle on a selection
can read what the others did. With selection each tabular agent also has a selection
table over who leads in reputation
(:func:`~socialjax.reproduce.partner_punishment_tabular.select_state`), learnt as the authors'
selection network is, from its rewards in the rounds of its own game. (Not
``socialjax.train``'s learners at small scale: on the 2-core CPU one of its PPO or DQN
populations took 12-25 s to compile, per condition.) At paper scale also 5 independent
DQN learners of ``socialjax.train`` (128 hidden units, discount 0.9; 2000 episodes each
seed, 20 seeds) on each condition's own game and on the game with third-party
punishment: the entry's conditions (paper scale only). Measured over training: the
cooperation rate of the rounds played (cooperated / played, the environment's event
counts), punishments per episode, and the episode's total reward, whose accounting
(PD payoffs from the counts, minus 3 per punishment, +2 just, -10 unjust) the test
checks.

Criterion. At the end of training (last fifth) cooperation is higher with direct
punishment than in the baseline, and higher with partner selection and reputation than
in the baseline (95% intervals over seeds; :func:`ordered_verdict` each, combined), for
the tabular learners and (paper scale) the DQN learners.

What differs from the paper. Our learners are one tabular Q-learner (or one DQN) per
agent for play and punishment, not per-stage DQNs with their own learning rates, buffers
and epsilon schedules; the tabular selection is a table over who leads in reputation (the
authors' network reads the whole reputation vector), moved at the end of each cycle
towards the mean reward per round of the agent's own game (a bandit: the authors' network
stores each round's reward and bootstraps, discount 0.9, on the next reputations).
Reputation is kept across the cycles of an episode (10 at cpu and paper scale: 100 and
200 episodes, 1000 and 2000 cycles, the paper's 2000 "episodes" being our cycles) and
reset between episodes (the authors never reset it). The DQN learners (paper scale) play
one cycle per episode, so their selection sees reputations of 0. Reputation is observed
during play (the partner's) by the DQN learners, not by the tabular ones (the authors'
main play state holds none either).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np

from socialjax import make
from socialjax.envs.institutions.partner_punishment import episode_length
from socialjax.reproduce.core import (
    FINAL_SHARE,
    Condition,
    Entry,
    Measure,
    Reference,
    combined_verdict,
    final_values,
    finish_figure,
    model_condition,
    ordered_verdict,
    stream_key,
)
from socialjax.reproduce.partner_punishment_tabular import GAMMA, tabular_run
from socialjax.train.models import Model, register_model
from socialjax.viz.plots import mean_ci95, pyplot

# ----------------------------------------------------------------------------- conditions
CONDITIONS = {  # the environment's static options per condition
    "baseline": dict(partner_selection=False, direct_punishment=False, observe_reputation=False),
    "direct punishment": dict(partner_selection=False, direct_punishment=True, observe_reputation=False),
    "selection + reputation": dict(partner_selection=True, direct_punishment=False, observe_reputation=True),
    "both": dict(partner_selection=True, direct_punishment=True, observe_reputation=True),
}
PAPER_ONLY = {  # DQN learners only (paper scale): third-party punishment alone
    "third-party punishment": dict(partner_selection=False, direct_punishment=False, third_party_punishment=True,
                                   observe_reputation=False),
}
# Dasgupta & Musolesi (authors' code, MultipleRunner_*_pd.py): 5 agents, 10 rounds per game
NUM_AGENTS, NUM_ROUNDS = 5, 10
QUANTITIES = ("cooperation", "cooperation start", "punishments", "unjust punishments", "played", "cooperated",
              "reward")

# The tabular learners (ours), per scale: parallel games per seed, episodes of training,
# and cycles (select step + N games) per episode, reputation kept across them. Paper: 200
# episodes of 10 cycles, the authors' 2000 "episodes" (one selection each, reputation kept).
class TabularSize(NamedTuple):
    games: int  # parallel games per seed
    episodes: int  # of training
    cycles: int  # per episode


TABULAR = {"small": TabularSize(8, 40, 2), "cpu": TabularSize(8, 100, 10), "paper": TabularSize(16, 200, 10)}


def make_env(options, one_action: bool = True, cycles: int = 1):
    """The game of a condition (``options``), with one action per step for learners."""
    return make("partner_punishment_one_action" if one_action else "partner_punishment", num_agents=NUM_AGENTS,
                num_rounds=NUM_ROUNDS, num_cycles=cycles, **options)


# Tiny programs: compiling, not running, is most of their cost on a CPU, so they compile
# with XLA's backend optimisations off (the same function, less optimised code).
QUICK_COMPILE = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}


def tabular_curves(size: TabularSize, seeds: int, base_seed: int = 0, quick: bool = False) -> dict[str, np.ndarray]:
    """``{quantity: (C, S, episodes)}`` of the tabular populations of every condition
    (``C`` in :data:`CONDITIONS` order), all in one jitted call vmapped over conditions
    and seeds; ``quick`` compiles with :data:`QUICK_COMPILE` (when compiling dominates)."""
    env = make_env(dict(partner_selection=True, direct_punishment=True, observe_reputation=True),
                   cycles=size.cycles)
    select = np.repeat([o["partner_selection"] for o in CONDITIONS.values()], seeds)
    punish = np.repeat([o["direct_punishment"] for o in CONDITIONS.values()], seeds)

    def runs(keys, select, punish):
        return jax.vmap(lambda k, a, b: tabular_run(env, k, a, b, size.games, size.episodes))(keys, select, punish)

    keys = jax.random.split(stream_key(100, base_seed), len(select))
    out = jax.jit(runs, compiler_options=QUICK_COMPILE if quick else None)(keys, select, punish)
    return {k: np.asarray(v, np.float64).reshape(len(CONDITIONS), seeds, -1) for k, v in out.items()}


def summarise(row: str, played, cooperated, punished, unjust, reward) -> dict[tuple[str, str], np.ndarray]:
    """The keys of one row from ``(S, U)`` per-episode totals (per game): the cooperation
    rate at the end and the start of training (last / first fifth), and, at the end,
    punishments, unjust punishments, rounds played (counted per player), cooperations and
    total reward per episode. Its series: the cooperation rate and punishments over
    training."""
    rate = np.where(played > 0, cooperated / np.maximum(played, 1), np.nan)
    out = {(row, "cooperation"): final_values(rate, "end"), (row, "cooperation start"): final_values(rate, "start")}
    for name, curve in (("punishments", punished), ("unjust punishments", unjust), ("played", played),
                        ("cooperated", cooperated), ("reward", reward)):
        out[(row, name)] = final_values(curve, "end")
    for name, curve in (("cooperation", rate), ("punishments", punished)):
        out[(row, f"{name} over training")] = curve
    return out


def tabular_values(games: int, episodes: int, cycles: int, seeds: int, base_seed: int = 0, quick: bool = False
                   ) -> dict[tuple[str, str], np.ndarray]:
    """Every tabular row's keys (:func:`summarise`): the populations of every condition
    with ``games`` parallel games per seed, ``episodes`` of training of ``cycles``
    cycles (:class:`TabularSize`), one compiled call (:func:`tabular_curves`). The model
    ``partner-punishment/tabular``."""
    curves, out = tabular_curves(TabularSize(games, episodes, cycles), seeds, base_seed, quick=quick), {}
    for c, name in enumerate(CONDITIONS):
        out.update(summarise(f"tabular/{name}", *(curves[k][c] for k in ("played", "cooperated", "punished",
                                                                           "unjust_punishments", "reward"))))
    return out


# ------------------------------------------------------------------------ DQN (paper scale)
# ours where the paper's per-stage settings do not carry over to one network per agent:
# the paper's 128 hidden units and discount 0.9; 8 games x 250 updates = 2000 episodes
# per seed (the paper's 2000 episodes); Adam step 1e-3 (its three stages used 0.01, 0.1
# and 0.001).
DQN = dict(algo="dqn", hidden=128, gamma=GAMMA, lr=1e-3, num_envs=8, num_updates=250, eps_start=0.8889,
           eps_end=0.01, eps_decay=0.5, seating="independent", evaluate=False)


def dqn_condition(name: str, options: dict) -> Condition:
    """The DQN learners of one condition (paper scale): the one-action game of one cycle
    per episode."""
    env = dict(num_agents=NUM_AGENTS, num_rounds=NUM_ROUNDS, num_cycles=1, **options)
    episode = episode_length(NUM_AGENTS, NUM_ROUNDS, 1, options["partner_selection"],
                             options["direct_punishment"] or options.get("third_party_punishment", False))
    return Condition(f"dqn/{name}", env={"paper": "partner_punishment_one_action"}, env_options={"paper": env},
                     config={"paper": dict(DQN, rollout_len=episode)})


DQN_CONDITIONS = tuple(dqn_condition(name, options) for name, options in {**CONDITIONS, **PAPER_ONLY}.items())
# the DQN rows' quantities, from the training metrics: per episode, over the agents
MEASURES = (
    Measure("cooperation", "events/cooperated", "cooperation rate (cooperated / played)", denominator="events/played"),
    Measure("cooperation start", "events/cooperated", "cooperation rate, first fifth of training",
            denominator="events/played", window="start"),
    Measure("punishments", "events/punished", "punishments per episode", total=True),
    Measure("unjust punishments", "events/unjust_punishments", "unjust punishments per episode", total=True),
    Measure("played", "events/played", "rounds played per episode (counted per player)", total=True),
    Measure("cooperated", "events/cooperated", "cooperations per episode", total=True),
    Measure("reward", "collective_return", "total reward per episode"),
)
assert tuple(m.name for m in MEASURES) == QUANTITIES


# ------------------------------------------------------------------------------ the entry
TABULAR_ROWS = tuple(f"tabular/{n}" for n in CONDITIONS)


def rows(scale: str) -> tuple[str, ...]:
    return TABULAR_ROWS + (tuple(c.name for c in DQN_CONDITIONS) if scale == "paper" else ())


def _keys(settings) -> tuple[tuple[str, str], ...]:
    return tuple((row, q) for row in TABULAR_ROWS for q in QUANTITIES)


def _series(settings) -> tuple[tuple[str, str], ...]:
    return tuple((row, f"{q} over training") for row in TABULAR_ROWS for q in ("cooperation", "punishments"))


TABULAR_MODEL = register_model(Model("partner-punishment/tabular", "partner_punishment_one_action", tabular_values,
                                     _keys, _series))
# the tabular learners, every condition in one run (its rows tabular/<condition>); the small
# scale's tiny programs compile with QUICK_COMPILE
TABULAR_CONDITION = model_condition("tabular", TABULAR_MODEL.name,
                                    {s: {**size._asdict(), "quick": s == "small"} for s, size in TABULAR.items()})


def curve_over_training(rep, row: str, quantity: str) -> np.ndarray:
    """``(S, X)``: a tabular row's series over episodes, a DQN row's measure over updates."""
    return rep.curves.get((row, f"{quantity} over training"), rep.curves.get((row, quantity)))


def _criterion(finals):
    parts = []
    for learner in ("tabular", "dqn"):
        if (f"{learner}/baseline", "cooperation") not in finals:
            continue
        for mechanism in ("direct punishment", "selection + reputation"):
            parts.append(ordered_verdict(finals, (f"{learner}/{mechanism}", "cooperation"),
                                         (f"{learner}/baseline", "cooperation"),
                                         f"{learner}, cooperation at the end of training"))
    return combined_verdict(parts)


def plot(rep, path) -> None:
    """Per learner kind, two panels over training (mean over seeds, 95% band): the
    cooperation rate of the rounds played and the punishments per episode, a line per
    condition."""
    plt = pyplot()

    learners = [k for k in ("tabular", "dqn") if curve_over_training(rep, f"{k}/baseline", "cooperation") is not None]
    fig, axes = plt.subplots(len(learners), 2, figsize=(10, 3.6 * len(learners)), squeeze=False)
    for r, learner in enumerate(learners):
        for ax, quantity, label in zip(axes[r], ("cooperation", "punishments"),
                                       ("cooperation rate (cooperated / played)", "punishments per episode")):
            for row in (x for x in rows(rep.scale) if x.startswith(learner + "/")):
                curve = curve_over_training(rep, row, quantity)
                ok = np.isfinite(curve).all(axis=0)
                x = (np.arange(curve.shape[1]) + 1)[ok]
                mean, low, high = mean_ci95(curve[:, ok])
                line, = ax.plot(x, mean, label=row.split("/", 1)[1])
                ax.fill_between(x, low, high, color=line.get_color(), alpha=0.2, lw=0)
            k = max(1, int(round(curve.shape[1] * FINAL_SHARE)))
            ax.axvspan(curve.shape[1] - k + 1, curve.shape[1], color="0.9", zorder=0)
            ax.set_xlabel("episode" if learner == "tabular" else "update (8 episodes)")
            ax.set_ylabel(label)
            ax.set_title(f"{learner} learners: {label}", fontsize=9)
            if quantity == "cooperation":
                ax.set_ylim(0, 1)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
    finish_figure(fig, rep, path)


SOURCE = ("Dasgupta & Musolesi, Investigating the impact of direct punishment on the emergence of cooperation in "
          "multi-agent reinforcement learning systems (arXiv 2301.08278; AAMAS journal 39(1), 2025)")
HOW = "text (the abstract), qualitative; no published numbers were found"


def _references() -> tuple[Reference, ...]:
    refs = []
    for learner in ("tabular", "dqn"):
        refs += [
            Reference(f"{learner}/direct punishment", "cooperation", None, SOURCE, HOW,
                      "direct punishment raises cooperation over a population without it"),
            Reference(f"{learner}/selection + reputation", "cooperation", None, SOURCE, HOW,
                      "partner selection with reputation raises cooperation over a population without it"),
        ]
    return tuple(refs)


PARTNER_PUNISHMENT = Entry(
    name="partner-punishment",
    title="Direct punishment, partner selection and reputation vs neither, independent learners in the PD",
    citation="Dasgupta & Musolesi, Autonomous Agents and Multi-Agent Systems 39(1), 2025 (arXiv 2301.08278)",
    conditions=DQN_CONDITIONS + (TABULAR_CONDITION,),
    measures=MEASURES,
    references=_references(),
    criterion=_criterion,
    criterion_text=(
        "cooperation rate of the rounds played over the last fifth of training: direct punishment above the "
        "baseline (no selection, no punishment), and partner selection with reputation above the baseline; for "
        "the tabular learners (both scales) and the DQN learners (paper scale). Each comparison over seeds (95% "
        "intervals); reproduced when all are separated, not reproduced when none is even ordered, partly "
        "otherwise"),
    seeds={"small": 4, "cpu": 8, "paper": 20},
    notes=("5 agents, 10-round PD games (3, 0, 4, 1), the authors' punishment and reputation constants. Learners "
           "act through partner_punishment_one_action (Discrete(4): partner a mod 4, C/D and no/yes a mod 2). "
           "Tabular learners: one "
           "Q-table per agent for play and punishment (phase, acting, own / partner / target last move), epsilon 1 "
           "-> 0.02 over 60% of training, learning rate 0.1, discount 0.9 per step; with selection a second table "
           "over who leads in reputation, moved each cycle towards the mean reward per round of the agent's own "
           "game (as the authors' selection network learns, but a bandit). An episode is several cycles (a select "
           "step and 5 games each), reputation kept across them and reset between episodes (the authors never "
           "reset it): 8 games x 40 episodes of 2 cycles (small), 8 x 100 of 10 (cpu), 16 x 200 of 10 (paper: "
           "2000 cycles, the paper's 2000 episodes). DQN learners (paper scale): one network per agent, 128 "
           "hidden units, discount 0.9, Adam 1e-3, 2000 one-cycle episodes (their selection sees reputations of "
           "0), 20 seeds; also third-party punishment. The published findings are qualitative."),
    plot=plot,
)
