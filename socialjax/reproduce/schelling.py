"""Schelling diagrams of Cleanup and Harvest (Hughes et al. 2018; SocialJax).

A Schelling diagram plots the return of one player who cooperates, and of one who
defects, against the number of the other players who cooperate. A game is a social
dilemma when everyone cooperating beats everyone defecting while an individual gains by
defecting (Hughes et al. 2018, after Schelling 1973). The diagrams are empirical: a
cooperating and a defecting policy are trained, then seated in every mix.

Here, as SocialJax describes its diagrams, the cooperating policy is a population
trained with the common reward and the defecting one a population trained with the
individual reward (each one network shared by its players: 5 as published, 3 on the
small map of the cpu scale). Every mix of ``k`` cooperators among the ``N`` seats is
played with each seat position in turn (``N`` rotations), and each seat's return per
episode is the env's own reward. The cpu scale draws Harvest's diagram from
harvest-reward's cpu populations (its two-patch map), where the individual-reward
population learns to strip the patches within a CPU run; the small, gpu and paper
scales draw Cleanup's (and, at paper scale, Harvest's on the original map).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from socialjax.reproduce.cleanup_scales import GPU_SEEDS, gpu_updates
from socialjax.reproduce.core import (
    Analysis,
    Condition,
    Entry,
    Reference,
    combined_verdict,
    finish_figure,
    ordered_verdict,
    sign_verdict,
    stream_key,
)
from socialjax.reproduce.gridworlds import (
    HARVEST_CPU,
    HARVEST_CPU_ENV,
    HARVEST_SEEDS,
    PAPER_IPPO,
    SMALL,
    SMALL_EPISODE,
    SOCIAL,
)
from socialjax.train import as_run
from socialjax.train.evaluation import play_seatings
from socialjax.viz.plots import mean_ci95, pyplot

CPU_ENV, CPU_OPTIONS = HARVEST_CPU_ENV  # the cpu scale's game (see SCALE_GAMES)
PLAYERS = {"small": 5, "cpu": CPU_OPTIONS["num_agents"], "gpu": 5, "paper": 5}  # the published diagrams: 5
GAMES = {"cleanup": "cleanup_ssd", "harvest": "harvest_ssd"}
ROLES = {"cooperators": "common", "defectors": "individual"}
EPISODE = {"small": SMALL_EPISODE, "cpu": CPU_OPTIONS["episode_length"], "gpu": 1000,
           "paper": 1000}  # one episode per eval game
EVAL_ENVS = {"small": 2, "cpu": 8, "gpu": 32, "paper": 32}  # games per seating
# cpu scale: Harvest only, on harvest-reward's cpu setting (Melting Pot's open rules on a two-patch
# map of ours, 150,000 env steps per seed), where the individual-reward population learns to
# strip the patches within the budget; on the small Cleanup map the cleaning-for-apples
# mechanism does not emerge at a CPU size (cleanup-reward's notes), so a defector there gains
# nothing to free-ride on
SCALE_GAMES = {"small": ("cleanup",), "cpu": ("harvest",), "gpu": ("cleanup",), "paper": tuple(GAMES)}
CONFIG = {"small": SMALL, "gpu": dict(PAPER_IPPO, num_updates=gpu_updates(2)), "paper": PAPER_IPPO}
SEEDS = {"small": 2, "cpu": HARVEST_SEEDS["cpu"], "gpu": GPU_SEEDS, "paper": 3}


def _setting(game: str, scale: str) -> tuple[str, dict, dict]:
    """The env name, its options and the training config of ``game`` at ``scale``."""
    if scale == "cpu":
        if game != "harvest":
            raise ValueError(f"schelling's cpu scale runs Harvest only, not {game!r}")
        return CPU_ENV, dict(CPU_OPTIONS), dict(HARVEST_CPU)
    return GAMES[game], dict(num_agents=PLAYERS[scale], episode_length=EPISODE[scale]), dict(CONFIG[scale])


# Hughes et al. (2018), Schelling diagrams of Cleanup and Harvest (5 players), the return
# per 1000-step episode at x = 0..4 other cooperators, read off the figure as reproduced
# in the README of eugenevinitsky/sequential_social_dilemma_games (images/schelling.png);
# approximate (about +-5), the x = 0 values extrapolated to the frame's edge.
PUBLISHED = {
    "cleanup": {"cooperator": (68, 145, 171, 209, 197), "defector": (0, 208, 217, 235, 203)},
    "harvest": {"cooperator": (142, 184, 222, 276, 328), "defector": (127, 222, 262, 396, 438)},
}
SOURCE = ("Hughes et al. 2018, Inequity aversion improves cooperation in intertemporal social dilemmas, "
          "Schelling diagrams of Cleanup and Harvest")
HOW = "figure, approximate (read off the copy in the SSD games repository's README, about +-5)"


def _games(scale: str) -> tuple[str, ...]:
    """The games run at ``scale`` (both at paper scale only: each game is three
    compilations and its training, and the cpu and gpu budgets hold one game)."""
    return SCALE_GAMES[scale]


def _condition(game: str, role: str) -> Condition:
    form = dict(reward=ROLES[role], seating="shared")
    scales = tuple(scale for scale in EPISODE if game in _games(scale))
    settings = {scale: _setting(game, scale) for scale in scales}
    return Condition(
        name=f"{game}/{role}",
        env={scale: env for scale, (env, _, _) in settings.items()},
        env_options={scale: options for scale, (_, options, _) in settings.items()},
        config={scale: dict(config, **form) for scale, (_, _, config) in settings.items()},
        scales=scales,
    )


def compositions(num_players: int) -> np.ndarray:
    """``((N + 1) * N, N)`` seatings: for ``k = 0..N`` cooperators (member 0) among
    defectors (member 1), the row ``[0] * k + [1] * (N - k)`` rotated to each of the
    ``N`` seat positions."""
    rows = []
    for k in range(num_players + 1):
        base = np.array([0] * k + [1] * (num_players - k), np.int32)
        rows.extend(np.roll(base, r) for r in range(num_players))
    return np.stack(rows)


def schelling_diagram(env, config, cooperators, defectors, key: jax.Array, *, eval_envs: int,
                      episode_length: int) -> dict[str, np.ndarray]:
    """Returns per episode ``{"cooperator": (S, N), "defector": (S, N)}`` at ``x =
    0..N-1`` other cooperators, for ``S`` pairs of trained learners: ``cooperators`` and
    ``defectors`` are the learner states of ``S`` runs each (leaves ``(S, 1, ...)``: one
    learner per run, trained with ``config`` on ``env``), run ``s`` of one seated with run
    ``s`` of the other. Each seating of :func:`compositions` is played in ``eval_envs``
    games of ``episode_length`` steps (one compiled program for all pairs)."""
    rows = compositions(env.num_agents)
    pairs = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([jnp.asarray(a), jnp.asarray(b)], axis=1),
                                   cooperators, defectors)  # (S, 2, ...)
    rate = play_seatings(env, config, pairs, rows, key, eval_envs=eval_envs, steps=episode_length)
    return diagram(rows, rate * episode_length)


def diagram(rows: np.ndarray, returns: np.ndarray) -> dict[str, np.ndarray]:
    """The diagram from seatings ``rows`` ``(R, N)`` (member 0 cooperates, 1 defects) and
    each seat's return ``(S, R, N)``: the cooperator at ``x`` is the mean over the
    cooperating seats of the rows with ``x + 1`` cooperators, the defector at ``x`` the
    mean over the defecting seats of the rows with ``x`` cooperators; ``(S, N)`` each."""
    N = rows.shape[1]
    k = (rows == 0).sum(axis=1)
    coop = [returns[:, k == x + 1][:, rows[k == x + 1] == 0].mean(axis=1) for x in range(N)]
    defect = [returns[:, k == x][:, rows[k == x] == 1].mean(axis=1) for x in range(N)]
    return {"cooperator": np.stack(coop, axis=1), "defector": np.stack(defect, axis=1)}


def _keys(scale: str) -> tuple[tuple[str, str], ...]:
    keys = []
    for game in _games(scale):
        keys += [(f"{game}/{role}", f"x={x}") for role in ("cooperator", "defector") for x in range(PLAYERS[scale])]
        keys += [(game, "all_cooperate"), (game, "all_defect"), (game, "defect_gain")]
    return tuple(keys)


def _compute(runs, scale: str, seeds: int, base_seed: int) -> dict[tuple[str, str], np.ndarray]:
    out = {}
    for i, game in enumerate(_games(scale)):
        coop, env, config = runs[f"{game}/cooperators"]
        defect = runs[f"{game}/defectors"][0]
        diagram = schelling_diagram(env, config, as_run(coop.states.learners, 0), as_run(defect.states.learners, 0),
                                    stream_key(1000 + i, base_seed), eval_envs=EVAL_ENVS[scale],
                                    episode_length=EPISODE[scale])
        C, D = diagram["cooperator"], diagram["defector"]  # (S, N)
        for x in range(PLAYERS[scale]):
            out[(f"{game}/cooperator", f"x={x}")] = C[:, x]
            out[(f"{game}/defector", f"x={x}")] = D[:, x]
        out[(game, "all_cooperate")] = C[:, -1]
        out[(game, "all_defect")] = D[:, 0]
        out[(game, "defect_gain")] = (D[:, 1:] - C[:, 1:]).mean(axis=1)
    return out


def _criterion(finals):
    parts = []
    for game in (g for g in GAMES if (g, "defect_gain") in finals):
        parts.append(ordered_verdict(finals, (game, "all_cooperate"), (game, "all_defect"),
                                     f"{game}: everyone cooperating vs everyone defecting"))
        others = sum(1 for row, _ in finals if row == f"{game}/cooperator") - 1  # N - 1
        parts.append(sign_verdict(finals[(game, "defect_gain")],
                                  f"{game}: defector minus cooperator return, mean over 1..{others} other cooperators"))
    return combined_verdict(parts)


def plot(rep, path) -> None:
    """A row per game: our diagram (mean over seeds, 95% band) and, beside it, the
    published one (approximate)."""
    plt = pyplot()

    x = np.arange(PLAYERS[rep.scale])
    colours = {"cooperator": "tab:blue", "defector": "tab:red"}
    games = _games(rep.scale)
    fig, axes = plt.subplots(len(games), 2, figsize=(9, 3.4 * len(games)), squeeze=False)
    for (ax, ax_pub), game in zip(axes, games):
        for role, colour in colours.items():
            values = np.stack([rep.finals[(f"{game}/{role}", f"x={i}")] for i in x], axis=1)  # (S, N)
            ok = np.isfinite(values).all(axis=1)
            mean, low, high = mean_ci95(values[ok]) if ok.any() else (x * np.nan,) * 3
            ax.plot(x, mean, marker="o", color=colour, label=role)
            ax.fill_between(x, low, high, color=colour, alpha=0.25, lw=0)
            ax_pub.plot(np.arange(5), PUBLISHED[game][role], marker="s", ls="--", color=colour, label=role)
        ax.set_title(f"{game}: ours ({rep.scale} scale, {rep.seeds} seeds)", fontsize=9)
        ax_pub.set_title(f"{game}: Hughes et al. 2018 (approximate)", fontsize=9)
        for a in (ax, ax_pub):
            a.set_xlabel("other players cooperating")
            a.set_ylabel("return per episode")
            a.set_xticks(np.arange(5))
            a.grid(alpha=0.3)
            a.legend(fontsize=7)
    finish_figure(fig, rep, path)


SCHELLING = Entry(
    name="schelling",
    title="Schelling diagrams of Cleanup and Harvest from trained cooperators and defectors",
    citation="Hughes et al., NeurIPS 2018; Guo et al., SocialJax (ICLR 2026)",
    conditions=tuple(_condition(game, role) for game in GAMES for role in ROLES),
    # the populations' own training curves: their collective return, and the sustainability that
    # shows the individual-reward one stripping the patches
    measures=tuple(m for m in SOCIAL if m.name in ("collective_return", "sustainability")),
    references=tuple(Reference(f"{game}/{role}", f"x={x}", float(PUBLISHED[game][role][x]), SOURCE, HOW)
                     for game in GAMES for role in ("cooperator", "defector") for x in range(5)),
    criterion=_criterion,
    criterion_text=("in each game run (Cleanup and Harvest at paper scale, Harvest at cpu scale, Cleanup at "
                    "small and gpu scale), everyone cooperating returns more than everyone defecting (95% intervals "
                    "over seeds separated) and "
                    "a defector returns more than a cooperator, averaged over 1 to N - 1 other "
                    "cooperators (its 95% interval above zero): reproduced when all hold, not reproduced "
                    "when none holds even in the means, partly otherwise"),
    notes="The published values come from 1000-step episodes of the original maps after long training; at small "
          "scale episodes are 250 steps, the policies are trained for 4,000 env steps and only Cleanup is run, so "
          "only the shape compares. Hughes et al.'s way of obtaining their cooperating and defecting policies was "
          "not read here; the common- vs individual-reward populations follow SocialJax's description. cpu scale: "
          "Harvest only, on harvest-reward's cpu setting (Melting Pot's open rules on a two-patch map of ours, "
          "socialjax.reproduce.gridworlds.HARVEST_CPU_MAP, 3 players, so x = 0..2; 250-step episodes, 150,000 env "
          "steps per population and seed, the same populations as harvest-reward's), 8 games per seating: there "
          "the individual-reward population learns to strip the patches, so a defector seated with cooperators "
          "eats what they leave standing. On the small Cleanup map at a CPU size the cleaning-for-apples "
          "mechanism did not emerge (cleanup-reward's notes): there the fire beam's fines dominated the returns "
          "and a defector, which fires more, returned less than a cooperator (gain from defecting -24.5 "
          "[-42, -10.5] on the seeds from 0). gpu scale: Cleanup only, 5 players, SocialJax's batch with "
          "the updates cut to about 5 minutes of H100 training (cleanup_scales.gpu_updates).",
    seeds=SEEDS,
    analysis=Analysis(keys={scale: _keys(scale) for scale in EPISODE}, compute=_compute),
    plot=plot,
)
