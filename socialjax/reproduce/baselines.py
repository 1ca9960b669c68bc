"""The baselines SocialJax ships, side by side (Guo et al., SocialJax): IPPO on individual
reward, MAPPO on the common reward, IRAT (individual and team policies), VDN on the team
reward and IPPO with social value orientation, in Clean Up and Commons Harvest (open).

The direction tested: the learners that optimise the group's reward (MAPPO, VDN, IRAT)
or are prosocial (SVO) reach a higher collective return than IPPO on individual reward.
It is measured on each trained population playing its deployed policy (the training
seating's evaluation, ``eval/collective_return``: every learner's ``play``), because
IRAT's team policy, the one it trains for, does not act while it trains; the training
curves are reported beside it.

Scales. ``paper``: SocialJax's configuration of each algorithm (its
``algorithms/<ALGO>/config/*.yaml`` at cooperativex/SocialJax 9df972d: learning rate,
games, rollout length, minibatches, total steps, reward mode), 7 players, 1000-step
episodes; for a GPU, not run here. ``gpu``: SocialJax's IPPO batch (256 games x
1000-step rollouts) for every actor-critic, VDN at its own batch, updates cut to about
2 minutes of one H100 per game. ``cpu``: the ``cpu`` scale of the Clean Up entries (the
original Cleanup rules on a small map of ours, 3 players, one shared network, our small
CNN) and Harvest's open map with 3 players, every algorithm with the same network and
batch. ``small``: a pipeline check of a few updates (the test suite's).
"""

from __future__ import annotations

import numpy as np

from socialjax.reproduce.cleanup_scales import CPU_ENV_OPTIONS, CPU_IPPO, GPU_BATCH, GPU_ENV_STEPS_PER_S
from socialjax.reproduce.core import SCALES, Analysis, Condition, Entry, Reference, combined_verdict, ordered_verdict
from socialjax.reproduce.gridworlds import HARVEST_SMALL, PAPER_IPPO, SMALL, SMALL_EPISODE, SOCIAL
from socialjax.train.presets import PAPER_EPISODE

ALGOS = ("ippo", "mappo", "irat", "vdn", "svo")
TEAM = ("mappo", "irat", "vdn", "svo")  # each compared with ippo
GAMES = {"cleanup": ("cleanup", "cleanup_ssd"), "harvest": ("harvest_open", "harvest_open")}  # paper, cpu env
SEEDS = {"small": 2, "cpu": 3, "gpu": 2, "paper": 3}
EVAL_GAMES = 8  # games of the evaluation after training

# SocialJax 9df972d, algorithms/*/config: the settings of each algorithm that differ from
# its IPPO (PAPER_IPPO: lr 5e-4, 256 games x 1000 steps, 2 epochs x 500 minibatches, 1e8
# steps, one shared network). MAPPO (mappo_base.yaml; mappo_cnn_cleanup.yaml and
# mappo_cnn_harvest_open.yaml): common reward, 3e8 steps, 100-step rollouts, 4 minibatches,
# lr 1e-3 in Clean Up (4 games) and 5e-4 in Harvest (256 games). IRAT (irat_base.yaml):
# individual reward, lr 5e-4, 5 games x 100 steps, 4 minibatches, 3e8 steps. SVO
# (svo_base.yaml): individual reward shaped with w 0.5 towards 90 degrees, lr not annealed,
# 3e8 steps. VDN (vdn_base.yaml): team reward, 32 games x 1 step per update, 5e6 steps,
# buffer 1e5 transitions, batch 128, 4 gradient steps per update, target copied every 10,
# lr 7e-5 decayed, epsilon 1 -> 0.05 over 10% of training, gradient norm 1.
PAPER_STEPS_3E8 = 300_000_000
PAPER = {
    "ippo": {"cleanup": dict(PAPER_IPPO), "harvest": dict(PAPER_IPPO)},
    "mappo": {game: dict(PAPER_IPPO, algo="mappo", reward="common", num_envs=envs, rollout_len=100,
                         num_minibatches=4, lr=lr, num_updates=PAPER_STEPS_3E8 // (envs * 100))
              for game, envs, lr in (("cleanup", 4, 1e-3), ("harvest", 256, 5e-4))},
    "irat": {game: dict(PAPER_IPPO, algo="irat", num_envs=5, rollout_len=100, num_minibatches=4, lr=5e-4,
                        num_updates=PAPER_STEPS_3E8 // 500) for game in GAMES},
    "svo": {game: dict(PAPER_IPPO, reward="svo", svo_angle=90.0, svo_weight=0.5, anneal_lr=False,
                       num_updates=PAPER_STEPS_3E8 // (PAPER_IPPO["num_envs"] * PAPER_IPPO["rollout_len"]))
            for game in GAMES},
    "vdn": {game: dict(algo="vdn", seating="shared", num_envs=32, rollout_len=1, num_updates=5_000_000 // 32,
                       buffer_rollouts=100_000 // 32, dqn_batch=128, dqn_updates=4, target_update_every=10,
                       n_step=1, lr=7e-5, anneal_lr=True, eps_start=1.0, eps_end=0.05, eps_decay=0.1,
                       max_grad_norm=1.0, gamma=0.99, evaluate=False) for game in GAMES},
}

# cpu: every algorithm at Clean Up's cpu batch (16 games x 125 steps, 20 updates, our small
# CNN, one shared network); VDN with the DQN learner's own defaults for its buffer and steps
CPU_VDN = dict(CPU_IPPO, algo="vdn", lr=5e-4, update_epochs=1, num_minibatches=1)
CPU = {
    "ippo": dict(CPU_IPPO),
    "mappo": dict(CPU_IPPO, algo="mappo", reward="common"),
    "irat": dict(CPU_IPPO, algo="irat"),
    "svo": dict(CPU_IPPO, reward="svo", svo_angle=90.0, svo_weight=0.5),
    "vdn": {k: v for k, v in CPU_VDN.items() if k not in ("update_epochs", "num_minibatches")},
}

# gpu: SocialJax's IPPO batch for the actor-critics; VDN at its own batch for the same number
# of env steps; 2 minutes of H100 training per game shared by its 5 algorithms x seeds (the
# entry's 10 compilations take about as long again on a GPU)
GPU_SECONDS_PER_GAME = 120


def _gpu_updates() -> int:
    return int(GPU_ENV_STEPS_PER_S * GPU_SECONDS_PER_GAME // (len(ALGOS) * SEEDS["gpu"] * GPU_BATCH))


def _gpu(algo: str, game: str) -> dict:
    config = PAPER[algo][game]
    if algo == "vdn":
        return dict(config, num_updates=_gpu_updates() * GPU_BATCH // 32)
    return dict(PAPER_IPPO, **{k: v for k, v in config.items() if k in ("algo", "reward", "svo_angle", "svo_weight")},
                num_updates=_gpu_updates())


def _small(algo: str) -> dict:
    config = dict(CPU[algo], **{k: v for k, v in SMALL.items() if k in ("num_envs", "rollout_len")}, num_updates=4)
    return config


def _condition(game: str, algo: str) -> Condition:
    paper_env, cpu_env = GAMES[game]
    paper_options = dict(num_agents=7, episode="fixed", episode_length=PAPER_EPISODE)
    cpu_options = dict(CPU_ENV_OPTIONS) if game == "cleanup" else dict(HARVEST_SMALL[1])
    small_options = dict(cpu_options, episode_length=SMALL_EPISODE)
    return Condition(
        name=f"{game}/{algo}",
        env={"small": cpu_env, "cpu": cpu_env, "gpu": paper_env, "paper": paper_env},
        env_options={"small": small_options, "cpu": cpu_options, "gpu": paper_options, "paper": paper_options},
        # every scale evaluates the trained population for one whole episode in EVAL_GAMES games
        # (the criterion's measure, PLAYED)
        config={scale: dict(config, evaluate=True, eval_envs=EVAL_GAMES, eval_steps=episode)
                for scale, config, episode in (
            ("small", _small(algo), SMALL_EPISODE), ("cpu", CPU[algo], cpu_options["episode_length"]),
            ("gpu", _gpu(algo, game), PAPER_EPISODE), ("paper", PAPER[algo][game], PAPER_EPISODE))},
        scales=("small", "cpu", "gpu", "paper"),
    )


PLAYED = "played_collective_return"  # the trained population's evaluation (its deployed policies)
PLAYED_KEYS = tuple((f"{game}/{algo}", PLAYED) for game in GAMES for algo in ALGOS)


def _played(runs, scale, seeds, base_seed):
    """Each run's collective return in the evaluation of its training seating."""
    return {(name, PLAYED): np.asarray(result.metrics["eval/collective_return"]).reshape(seeds)
            for name, (result, _, _) in runs.items()}


def _criterion(finals):
    parts = [ordered_verdict(finals, (f"{game}/{algo}", PLAYED), (f"{game}/ippo", PLAYED),
                             f"{game} collective return played")
             for game in GAMES for algo in TEAM if (f"{game}/{algo}", PLAYED) in finals]
    return combined_verdict(parts)


SOURCE = "Guo et al., SocialJax (arXiv:2503.14576), baselines IPPO, MAPPO, IRAT, VDN, SVO"
HOW = "the direction the comparison tests; SocialJax's curves and numbers were not read here (see REPRODUCTIONS.md)"

BASELINES = Entry(
    name="baselines",
    title="Clean Up and Commons Harvest: IPPO, MAPPO, IRAT, VDN and SVO side by side",
    citation="Guo et al., SocialJax (ICLR 2026; arXiv:2503.14576)",
    conditions=tuple(_condition(game, algo) for game in GAMES for algo in ALGOS),
    measures=SOCIAL,
    references=tuple(Reference(f"{game}/{algo}", PLAYED, None, SOURCE, HOW,
                               "the team-reward and prosocial learners collect more as a group than IPPO on "
                               "individual reward")
                     for game in GAMES for algo in ALGOS),
    criterion=_criterion,
    analysis=Analysis(keys={scale: PLAYED_KEYS for scale in SCALES}, compute=_played),
    criterion_text=("collective return of each of MAPPO, IRAT, VDN and SVO above IPPO's (individual reward), in "
                    "each game, each trained population playing its deployed policies: "
                    "reproduced when every pair's 95% intervals over seeds are separated, partly when "
                    "some are ordered, not reproduced when none is"),
    seeds=SEEDS,
    notes=("One network shared by all players in every condition (SocialJax's setting). MAPPO trains on the common "
           "reward (the sum of the players' rewards; SocialJax's shared_rewards); IRAT's team policy on the same "
           "sum; VDN's summed Q-values on the sum of the players' rewards. cpu scale: Clean Up is the original "
           "Cleanup rules on a small map of ours (socialjax.reproduce.cleanup_scales.CPU_MAP), 3 players, "
           "250-step episodes; Harvest is the open map with 3 players and 250-step episodes; 20 updates of 16 "
           "games x 125 steps (40,000 env steps per seed) for every algorithm, VDN with lr 5e-4 and the DQN "
           "learner's defaults (ours: SocialJax's 7e-5 is for 5e6 steps)."),
)
