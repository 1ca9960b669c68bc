"""The social outcome metrics over training in a common-pool resource game (Perolat et
al. 2017).

Perolat et al. trained independently learning agents in a gridworld commons whose
apples regrow faster where more apples are left nearby, and followed four metrics over
training: efficiency (collective reward per step), equality (one minus the Gini
coefficient of the returns), sustainability (the mean time step at which rewards are
collected) and peace (the players not tagged out). They describe three phases: a naive
one while the stock is plentiful, a tragedy in which the learners deplete it, and a
mature one in which they manage it, excluding others with the tagging beam.

The commons here has Melting Pot's Commons Harvest rules (``harvest_open``): an empty
apple cell regrows with a probability set by the live apples within Euclidean distance
2 (Perolat et al.'s rule; Melting Pot's ``commons_harvest__open`` probabilities), so a
patch eaten bare never regrows, and the beam removes the player it hits for a few steps
(no fines), so peace counts exclusion. At cpu and small scale the map is
:data:`COMMONS_MAP`, a small map of ours: three patches of 13 apples, 5 players. Random
play leaves most of the stock standing through a 250-step episode (measured: 37.7
apples eaten per episode, 15 of the 26 apples of two such patches left at the end),
while players who go straight for the apples can strip the patches within the episode,
so the tragedy can appear within a CPU run. The criterion tests that first transition:
from the first to the last fifth of training the learners collect more (efficiency
rises) and sooner in the episode, the stock running out (sustainability falls).
"""

from __future__ import annotations

import numpy as np

from socialjax.reproduce.core import (
    FINAL_SHARE,
    Condition,
    Entry,
    Measure,
    Reference,
    combined_verdict,
    finish_figure,
    sign_verdict,
)
from socialjax.reproduce.gridworlds import PAPER_IPPO, SMALL, SMALL_EPISODE
from socialjax.viz.plots import mean_ci95, pyplot

METRICS = (
    ("efficiency", "efficiency (collective reward per step)"),
    ("equality", "equality (1 - Gini of returns)"),
    ("sustainability", "sustainability (mean step of reward)"),
    ("peace", "peace (players not tagged out)"),
)
SOURCE = ("Perolat et al. 2017, A multi-agent reinforcement learning model of common-pool resource appropriation "
          "(NeurIPS 2017), the social outcome metrics over training")
HOW = ("qualitative: the three phases as the paper's abstract and its summaries state them; its figures and "
       "numbers were not read here")

# Ours (Melting Pot legend: A apple cell, P spawn point, W wall): three patches of 13 apples (the
# diamond of Melting Pot's open map), 5 players spawning below them.
COMMONS_MAP = """
WWWWWWWWWWWWWWWWWWWWW
W   A     A     A   W
W  AAA   AAA   AAA  W
W AAAAA AAAAA AAAAA W
W  AAA   AAA   AAA  W
W   A     A     A   W
W                   W
W PPPPPPPPPPPPPPPPP W
WWWWWWWWWWWWWWWWWWWWW
"""
PLAYERS = 5
SMALL_OPTIONS = dict(num_agents=PLAYERS, episode="fixed", episode_length=SMALL_EPISODE, ascii_map=COMMONS_MAP)
PAPER_OPTIONS = dict(num_agents=PLAYERS, episode="fixed", episode_length=1000)  # Melting Pot's open map
# cpu scale: 4 games x 125 steps x 40 updates (20,000 env steps per seed, 4 seeds); gpu scale:
# SocialJax's batch (256 games x 1000 steps) for 40 updates, 3 seeds (3.1e7 env steps; five
# independent networks, so slower per step than the one shared network of the measured 1.3e5 env
# steps/s on one H100)
CPU = dict(SMALL, num_envs=4, num_updates=40)
GPU = dict(PAPER_IPPO, seating="independent", num_updates=40)
SELFISH = Condition(
    name="selfish",
    env=dict.fromkeys(("small", "cpu", "gpu", "paper"), "harvest_open"),
    env_options={"paper": PAPER_OPTIONS, "gpu": PAPER_OPTIONS, "cpu": SMALL_OPTIONS, "small": SMALL_OPTIONS},
    config={"paper": dict(PAPER_IPPO, seating="independent"), "gpu": GPU, "cpu": CPU,
            "small": dict(SMALL, num_updates=24)},
)


def _criterion(finals):
    def change(metric):
        return finals[("selfish", f"{metric}_end")] - finals[("selfish", f"{metric}_start")]

    return combined_verdict([
        sign_verdict(change("efficiency"), "efficiency, last minus first fifth of training"),
        sign_verdict(change("sustainability"), "sustainability, last minus first fifth", positive=False),
    ])


def plot(rep, path) -> None:
    """Four panels, one per metric, over training (mean over seeds, 95% band), the first
    and last fifths shaded."""
    plt = pyplot()

    fig, axes = plt.subplots(1, len(METRICS), figsize=(4.4 * len(METRICS), 3.4))
    x = rep.steps["selfish"]
    for ax, (metric, label) in zip(axes, METRICS):
        curve = rep.curves[("selfish", f"{metric}_end")]
        ok = np.isfinite(curve).all(axis=0)
        if ok.any():
            mean, low, high = mean_ci95(curve[:, ok])
            ax.plot(x[ok], mean, marker="o", ms=3)
            ax.fill_between(x[ok], low, high, alpha=0.25, lw=0)
        else:  # e.g. equality when the fines make returns negative
            ax.text(0.5, 0.5, "undefined in every update", transform=ax.transAxes, ha="center", fontsize=8)
        k = max(1, int(round(len(x) * FINAL_SHARE)))
        ax.axvspan(x[0], x[k - 1], color="0.85", zorder=0, label="first fifth")
        ax.axvspan(x[-k], x[-1], color="0.7", zorder=0, label="last fifth")
        ax.set_xlabel("env steps")
        ax.set_title(label, fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    finish_figure(fig, rep, path)


COMMONS_METRICS = Entry(
    name="commons-metrics",
    title="Efficiency, equality, sustainability and peace over training in a commons",
    citation="Perolat et al., NeurIPS 2017",
    conditions=(SELFISH,),
    measures=tuple(Measure(f"{metric}_{window}", metric, f"{label}, {window} of training", window=window)
                   for metric, label in METRICS for window in ("start", "end")),
    references=(
        Reference("selfish", "sustainability_end", None, SOURCE, HOW,
                  "the tragedy: learners deplete the stock, collecting early in the episode (sustainability falls "
                  "from the naive phase)"),
        Reference("selfish", "efficiency_end", None, SOURCE, HOW,
                  "learners appropriate more than naive (random) play"),
        Reference("selfish", "peace_end", None, SOURCE, HOW,
                  "the mature phase excludes others with the tagging beam (peace falls); not part of the "
                  "criterion"),
    ),
    criterion=_criterion,
    criterion_text=("the tragedy phase: from the first to the last fifth of training efficiency rises and "
                    "sustainability falls (each run's change, 95% interval over seeds). Reproduced when both "
                    "intervals exclude zero on the expected side, not reproduced when neither mean is on it, "
                    "partly otherwise. The mature phase (exclusion restoring sustainability) is not tested"),
    notes="Perolat et al.'s own map, number of players and learners were not read here. The rules are Melting "
          "Pot's Commons Harvest (the paper's regrowth by nearby apples, a beam that removes players, no fines), "
          "5 players, our independent IPPO; paper and gpu scale on Melting Pot's open map with 1000-step episodes "
          "(paper at SocialJax's batch, 1e8 env steps), small and cpu scale on COMMONS_MAP (three 13-apple "
          "patches) with 250-step episodes. At cpu scale (20,000 env steps per seed) the learners eat faster "
          "(efficiency 0.22 -> 0.29 apples per step, seeds from 0) and earlier in the episode, the patches "
          "running out (sustainability 130 -> 114): the tragedy's onset. The figure shows all four metrics over "
          "training. "
          "The first version of this entry ran the original SSD Harvest, whose beam fines (1 per shot, 50 per "
          "player hit) made efficiency a measure of beam use and kept peace at 5; there the stock lasted the "
          "episode and sustainability moved only a few steps (partly on seeds 0).",
    seeds={"small": 2, "cpu": 4, "gpu": 3, "paper": 3},
    plot=plot,
)
