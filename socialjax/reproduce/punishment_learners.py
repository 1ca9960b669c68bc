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
of shortfall (:class:`StandardPunishment`: one discrete action per step, where the
game's punishment action is a vector). Per scale:

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

What differs from the papers: learners instead of people; many games instead of one
session; the punishment stage's standard instead of points chosen member by member; our
stranger matching redraws groups at random (the 2002 design kept any two members from
meeting twice).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from socialjax import make
from socialjax.core.spaces import Discrete
from socialjax.core.wrappers import Wrapper
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
)
from socialjax.reproduce.punishment import ABSTRACT, FG2000, FG2002, HOW, HUMAN, MATCHINGS, PERIODS
from socialjax.reproduce.punishment_rules import shortfall_points
from socialjax.train import TrainConfig, as_run, make_train, play, run
from socialjax.viz.plots import pyplot


class StandardPunishment(Wrapper):
    """The punishment game (``public_goods`` with ``punishment=True``) with one discrete
    action per step, for learners: ``Discrete(e + 1)``. At the contribution step the
    action is the contribution; at the punishment step it is a standard ``s``: each other
    member who contributed less than ``s`` gets a point per three tokens of shortfall
    (:func:`shortfall_points`; ``s = 0`` punishes nobody). Everything else (the
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


def row_name(matching: str, punish: bool) -> str:
    return f"{matching}/{'with' if punish else 'without'}"


# the two series of each row, ``(S, 10)`` each (curves for the figure, not table rows)
OVER_TRAINING = "contribution over training"  # the mean over each tenth of the updates
PER_PERIOD = "contribution per period"  # the trained population's, in each period of an episode


def learner_env(matching: str, punish: bool, players: int = 16):
    """The game the learners play: ``players`` members in groups of 4, 10 periods, the
    2002 design's punishment (through :class:`StandardPunishment`) or none."""
    env = make("public_goods", num_agents=players, matching=matching, punishment=punish, num_periods=PERIODS["2000"])
    return StandardPunishment(env) if punish else env


def learner_config(env, scale: str) -> TrainConfig:
    size = SIZES[scale]
    return TrainConfig().replace(rollout_len=env.episode_length, num_updates=size.num_updates,
                                 num_envs=size.num_envs, **PPO_SETTINGS)


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


def rows(scale: str) -> list[tuple[str, bool]]:
    """``(matching, punish)`` of every population trained at ``scale``."""
    return [(m, p) for m in SIZES[scale].matchings for p in (False, True)]


def learner_values(scale: str, seeds: int, base_seed: int = 0) -> dict[tuple[str, str], np.ndarray]:
    """Each row: the contribution over the first and the last fifth of training
    (``start``, ``end``) and their difference (``change``) and the points assigned per
    member and period at the end, ``(S,)`` each; the contribution in each tenth of
    training (:data:`OVER_TRAINING`) and the trained population's in each period
    (:data:`PER_PERIOD`), ``(S, 10)`` each."""
    out = {}
    for c, (matching, punish) in enumerate(rows(scale)):
        env, row = learner_env(matching, punish, SIZES[scale].players), row_name(matching, punish)
        config = learner_config(env, scale)
        print(f"[punishment-learners] {row}: {config.num_updates} updates x {config.num_envs} games x "
              f"{config.rollout_len} steps, {seeds} seeds", flush=True)
        result = run(env, config, seeds=seeds, base_seed=base_seed, progress=False, label=row)
        base = getattr(env, "unwrapped", env)
        per = base.num_agents * base.num_periods  # per member and period
        contribution = np.asarray(result.metrics["events/contributed"], np.float64)[0] / (per * base.endowment)
        points = np.asarray(result.metrics["events/points_assigned"], np.float64)[0] / per
        out[(row, "start")] = final_values(contribution, "start")
        out[(row, "end")] = final_values(contribution, "end")
        out[(row, "change")] = out[(row, "end")] - out[(row, "start")]
        out[(row, "points")] = final_values(points, "end")
        tenths = np.array_split(np.arange(config.num_updates), TENTHS)
        out[(row, OVER_TRAINING)] = np.stack([np.nanmean(contribution[:, part], axis=1) for part in tenths], axis=1)
        train = make_train(env, config)  # one playback program for every seed
        keys = [jax.random.key(2000 + 100 * c + base_seed + s) for s in range(seeds)]
        out[(row, PER_PERIOD)] = np.stack([trained_periods(train, as_run(result.states.learners, 0, s), keys[s])
                                           for s in range(seeds)])  # (S, P)
    return out


def keys(scale: str) -> tuple[tuple[str, str], ...]:
    return tuple((row_name(matching, punish), q) for matching, punish in rows(scale)
                 for q in ("start", "end", "change", "points"))


def series(scale: str) -> tuple[tuple[str, str], ...]:
    return tuple((row_name(matching, punish), q) for matching, punish in rows(scale)
                 for q in (OVER_TRAINING, PER_PERIOD))


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
        for ax, name, x in ((axes["training"], OVER_TRAINING, (np.arange(TENTHS) + 0.5) / TENTHS),
                            (axes["periods"], PER_PERIOD, np.arange(1, PERIODS["2000"] + 1))):
            stats = np.array([interval(v) for v in rep.curves[(row, name)].T])  # (X, 3)
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


def _compute(runs, scale: str, seeds: int, base_seed: int) -> dict[tuple[str, str], np.ndarray]:
    return learner_values(scale, seeds, base_seed)


PUNISHMENT_LEARNERS = Entry(
    name="punishment-learners",
    title="Learners in the public goods game: contributions collapse without peer punishment, not with it",
    citation="Fehr & Gaechter, AER 2000; Fehr & Gaechter, Nature 2002",
    conditions=(),
    measures=(),
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
    analysis=Analysis(keys={scale: keys(scale) for scale in SIZES}, compute=_compute,
                      series={scale: series(scale) for scale in SIZES}),
    plot=plot,
)
