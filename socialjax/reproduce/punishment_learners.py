"""Learners in the public goods game with and without peer punishment (Fehr & Gaechter
2000, AER; Fehr & Gaechter 2002, Nature), in ``public_goods``: the published finding
("cooperation flourishes if altruistic punishment is possible, and breaks down if it is
ruled out", Fehr & Gaechter 2002) emerging from learning rather than from scripted
rules (the ``punishment`` entry models the human subjects with scripted rules).

The game. Groups of 4, an endowment of 20 tokens per period, MPCR 0.4 (Fehr & Gaechter
2000, 2002): every token kept is worth 1 to its owner, every token contributed 0.4 to
each of the 4, so free riding is each member's dominant strategy. 10 periods per
episode; with punishment, each period has a punishment stage with the 2002 design's
costs (a point costs its giver 1 and removes 3 from its target). Groups are redrawn
every period (stranger matching) or fixed (partner matching).

The learners (ours). Independent PPO learners, one network each, seeing the game's
observation (the period, their own and their group's last contributions, the points
they received). In the punishment stage a learner picks a standard ``s`` (0..20) and
every member of its group who contributed less than ``s`` gets a point per three tokens
of shortfall (``public_goods_standard_punishment``: one discrete action per step, where
the game's punishment action is a vector). Per scale:

- ``small`` (the README's first command, about a minute on a 2-core CPU): 8 players (2
  groups of 4, so that stranger matching regroups), stranger matching (the 2002 design's
  protocol), 80 updates of 8 games, 8 seeds;
- ``cpu``: 16 players (4 groups), both matchings, 100 updates of 16 games, 4 seeds;
- ``paper``: as ``cpu`` with 400 updates of 32 games and 8 seeds (the papers' subjects
  played one session, not thousands of games: there is no published training length).

Measured: the mean contribution (fraction of the endowment) over the first and the last
fifth of training and in each tenth, the points assigned per member and period at the
end, and the trained population's contribution in each period of an episode.

Criterion. Under each matching run: without punishment the contribution falls from the
first to the last fifth of training (each seed's change, its 95% interval below 0); at
the end of training it is higher with punishment than without (intervals separated);
with both matchings, partner above stranger with punishment (Fehr & Gaechter 2000).
Reproduced when all are separated, not reproduced when none is even ordered, partly
otherwise.

The trained populations without punishment contribute a little more in the last periods
than in the first (the README's run: 0.03 in period 1, 0.21 in period 10): a transient
of learning, not of the game's end. A learner's contribution persists from one period to
the next, so discounted, GAE-smoothed returns charge an early contribution with the later
ones it brings, and contributing is unlearnt in the early periods first; with gamma 0 the
profile is flat at 0, with 4 times the updates flat at 0.009 (REPRODUCTIONS.md, "The
last-period rise"; ``scripts/last_period.py``).

What differs from the papers: learners instead of people; many games instead of one
session; the punishment stage's standard instead of points chosen member by member; our
stranger matching redraws groups at random (the 2002 design kept any two members from
meeting twice).
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from socialjax.reproduce.core import (
    Analysis,
    Condition,
    Entry,
    Measure,
    Reference,
    combined_verdict,
    finish_figure,
    interval,
    ordered_verdict,
    sign_verdict,
)
from socialjax.reproduce.punishment import ABSTRACT, FG2000, FG2002, HOW, HUMAN, MATCHINGS, PERIODS
from socialjax.train import as_run, make_train, play
from socialjax.viz.plots import pyplot

# ours: independent PPO learners, one network each, an update every batch of whole episodes
PPO_SETTINGS = dict(seating="independent", hidden=64, update_epochs=4, num_minibatches=4, lr=3e-3, gamma=0.95,
                    ent_coef=0.01, evaluate=False)


@dataclasses.dataclass(frozen=True)
class Size:
    """What a scale trains: ``players`` per game (groups of 4), the ``matchings`` run, and
    ``num_updates`` updates of ``num_envs`` games each."""

    players: int
    matchings: tuple[str, ...]
    num_updates: int
    num_envs: int


# ours, per scale (measured on the 2-core CPU: docs/reproduce.md)
SIZES = {
    "small": Size(players=8, matchings=("stranger",), num_updates=80, num_envs=8),
    "cpu": Size(players=16, matchings=MATCHINGS, num_updates=100, num_envs=16),
    "paper": Size(players=16, matchings=MATCHINGS, num_updates=400, num_envs=32),
}
PLAYBACK_EPISODES = 16  # episodes of each trained population played to measure its periods
TENTHS = 10  # the contribution over training, in tenths of the updates
PER_PERIOD = "contribution per period"  # the trained population's, in each period of an episode (a series)


def row_name(matching: str, punish: bool) -> str:
    return f"{matching}/{'with' if punish else 'without'}"


def rows(scale: str) -> list[tuple[str, bool]]:
    """``(matching, punish)`` of every population trained at ``scale``."""
    return [(m, p) for m in SIZES[scale].matchings for p in (False, True)]


def condition(matching: str, punish: bool) -> Condition:
    """The population of one row at every scale that runs its matching: ``players``
    members in groups of 4, 10 periods, the 2002 design's punishment played by a
    standard, or none."""
    scales = [scale for scale, size in SIZES.items() if matching in size.matchings]
    env = "public_goods_standard_punishment" if punish else "public_goods"
    episode = PERIODS["2000"] * (2 if punish else 1)  # a contribution step (and a punishment step) per period
    return Condition(
        row_name(matching, punish),
        env={scale: env for scale in scales},
        env_options={scale: dict(num_agents=SIZES[scale].players, matching=matching, num_periods=PERIODS["2000"])
                     for scale in scales},
        config={scale: dict(PPO_SETTINGS, rollout_len=episode, num_updates=SIZES[scale].num_updates,
                            num_envs=SIZES[scale].num_envs) for scale in scales})


CONDITIONS = tuple(condition(m, p) for m in MATCHINGS for p in (False, True))


def endowment_per_episode(env) -> float:
    """The tokens of every member's endowment over an episode: a contribution total's divisor."""
    return env.num_agents * env.num_periods * env.endowment


def member_periods(env) -> float:
    return env.num_agents * env.num_periods


CONTRIBUTION = "events/contributed"  # tokens contributed per episode, all members
MEASURES = (
    Measure("start", CONTRIBUTION, "contribution / endowment, first fifth of training", window="start",
            normaliser=endowment_per_episode),
    Measure("end", CONTRIBUTION, "contribution / endowment, last fifth of training", normaliser=endowment_per_episode),
    Measure("change", CONTRIBUTION, "contribution / endowment, last minus first fifth", window="change",
            normaliser=endowment_per_episode),
    Measure("points", "events/points_assigned", "points assigned per member and period, last fifth",
            normaliser=member_periods),
)


def over_training(curve: np.ndarray) -> np.ndarray:
    """``(S, TENTHS)``: an ``(S, U)`` curve's mean over each tenth of the updates."""
    parts = np.array_split(np.arange(curve.shape[1]), TENTHS)
    return np.stack([np.nanmean(curve[:, part], axis=1) for part in parts], axis=1)


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


def per_period(runs, scale: str, seeds: int, base_seed: int = 0) -> dict[tuple[str, str], np.ndarray]:
    """Each trained population's contribution in each period of an episode
    (:data:`PER_PERIOD`, ``(S, P)``), its policies played back."""
    out = {}
    for c, (matching, punish) in enumerate(rows(scale)):
        row = row_name(matching, punish)
        result, env, config = runs[row]
        train = make_train(env, config)  # one playback program for every seed
        keys = [jax.random.key(2000 + 100 * c + base_seed + s) for s in range(seeds)]
        out[(row, PER_PERIOD)] = np.stack([trained_periods(train, as_run(result.states.learners, 0, s), keys[s])
                                           for s in range(seeds)])  # (S, P)
    return out


def series(scale: str) -> tuple[tuple[str, str], ...]:
    return tuple((row_name(matching, punish), PER_PERIOD) for matching, punish in rows(scale))


def criterion(finals):
    parts = []
    for matching in MATCHINGS:
        without, with_ = row_name(matching, False), row_name(matching, True)
        if (without, "end") not in finals:
            continue
        parts.append(sign_verdict(finals[(without, "change")], f"{without}: end minus start of training",
                                  positive=False))
        parts.append(ordered_verdict(finals, (with_, "end"), (without, "end"), f"{matching}, end of training"))
    if all((row_name(m, True), "end") in finals for m in MATCHINGS):
        parts.append(ordered_verdict(finals, (row_name("partner", True), "end"), (row_name("stranger", True), "end"),
                                     "with punishment, end of training"))
    return combined_verdict(parts)


def plot(rep, path) -> None:
    """The contribution over training (mean per tenth; mean over seeds, 95% band) and the
    trained populations' contribution in each period of an episode, with and without
    punishment, for each matching run; the human finding in a caption below."""
    plt = pyplot()
    colours = {False: "tab:blue", True: "tab:red"}
    fig, axes = plt.subplot_mosaic([["training", "periods"], ["caption", "caption"]], figsize=(10, 4.6),
                                   height_ratios=(10, 1))
    styles = dict(zip(MATCHINGS, ("--", "-")))
    for matching, punish in rows(rep.scale):
        row = row_name(matching, punish)
        label = f"{matching}, {'with' if punish else 'without'} punishment"
        for ax, values, x in ((axes["training"], over_training(rep.curves[(row, "end")]),
                               (np.arange(TENTHS) + 0.5) / TENTHS),
                              (axes["periods"], rep.curves[(row, PER_PERIOD)], np.arange(1, PERIODS["2000"] + 1))):
            stats = np.array([interval(v) for v in values.T])  # (X, 3)
            ax.plot(x, stats[:, 0], styles[matching], marker="o", ms=3, color=colours[punish], label=label)
            ax.fill_between(x, stats[:, 1], stats[:, 2], color=colours[punish], alpha=0.2, lw=0)
    for ax, xlabel, title in ((axes["training"], "fraction of training", "over training (mean per tenth)"),
                              (axes["periods"], "period", "trained populations, per period of an episode")):
        ax.set_ylim(0, 1)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("mean contribution / endowment")
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes["caption"].axis("off")
    axes["caption"].text(0.0, 0.5, HUMAN, fontsize=8, va="center", wrap=True)
    finish_figure(fig, rep, path)


PUNISHMENT_LEARNERS = Entry(
    name="punishment-learners",
    title="Learners in the public goods game: contributions collapse without peer punishment, not with it",
    citation="Fehr & Gaechter, AER 2000; Fehr & Gaechter, Nature 2002",
    conditions=CONDITIONS,
    measures=MEASURES,
    references=(
        Reference(row_name("stranger", False), "change", None, FG2002, ABSTRACT,
                  "cooperation \"breaks down if [altruistic punishment] is ruled out\""),
        Reference(row_name("stranger", True), "end", None, FG2002, ABSTRACT,
                  "\"cooperation flourishes if altruistic punishment is possible\""),
        Reference(row_name("partner", False), "change", None, FG2000, HOW,
                  "without punishment contributions decay towards free riding"),
        Reference(row_name("partner", True), "end", None, FG2000, HOW,
                  "with punishment contributions are sustained, higher under partner than stranger matching"),
    ),
    criterion=criterion,
    criterion_text=(
        "under each matching run: without punishment the learners' contribution falls from the first to the last "
        "fifth of training (95% interval of the change below 0); at the end of training it is higher with "
        "punishment than without (intervals separated); when both matchings run (cpu and paper scale), with "
        "punishment partner above stranger. Reproduced when all are separated, not reproduced when none is even "
        "ordered, partly otherwise"),
    seeds={"small": 8, "cpu": 4, "paper": 8},
    notes=("Independent PPO learners (ours: hidden 64, lr 3e-3, gamma 0.95, 4 epochs x 4 minibatches), groups of "
           "4, 10 periods, the 2002 design's punishment costs; punishment is a standard a learner picks (a point "
           "per 3 tokens of shortfall from it). small: 8 players, stranger matching, 80 updates x 8 games, 8 seeds; "
           "cpu: 16 players, both matchings, 100 x 16, 4 seeds; paper: 400 x 32, 8 seeds. Our stranger matching "
           "redraws groups at random. The published numbers were not read here: every reference is qualitative."),
    analysis=Analysis(keys={scale: () for scale in SIZES}, compute=per_period,
                      series={scale: series(scale) for scale in SIZES}),
    plot=plot,
)
