"""Configurations shared by the population-loop tests (the session fixtures that
compile them live in conftest.py)."""

import socialjax as sj
from socialjax.train import TrainConfig

IPD_ROUNDS = 20

# PPO vs a fixed TFT co-player (member 1). lr 1e30 drives its runs to a non-finite loss.
IPD_TFT = TrainConfig(
    num_envs=16,
    rollout_len=20,
    num_updates=50,
    hidden=32,
    lr=[3e-3, 1e30],
    seating="fixed",
    seats=(0, 1),
    scripted=("tft",),
    evaluate=False,
)
IPD_TFT_SEEDS = 4  # passed as an int: seeds 0 .. 3

# Two independent PPO learners in the one-shot PD, truncation every 10 updates (the
# worse of the two becomes a copy of the better), evaluated with a held-out ALLD.
ONESHOT = TrainConfig(
    num_envs=16,
    rollout_len=8,
    num_updates=40,
    hidden=32,
    lr=3e-3,
    selection="truncation",
    select_every=10,
    select_frac=0.5,
    background=("alld",),
)

GRU_TFT = IPD_TFT.replace(lr=3e-3, recurrent=True, hidden=16)


def ipd_env():
    return sj.make("ipd", num_rounds=IPD_ROUNDS)
