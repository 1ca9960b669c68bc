"""Shared, expensive fixtures for the population-loop tests.

XLA compilation dominates the run time of these tests (tens of seconds per program on
a small CPU, far more than running them), so each program below is compiled once per
session and read by several test files:

- ``ipd_tft``: PPO against a fixed TFT co-player, with a NaN-making second learning
  rate in the same batch: learning (test_learning.py), NaN halting, scripted members
  (test_population.py) and determinism across batches and devices (test_run.py);
- ``oneshot``: two PPO learners in the one-shot PD, with truncation selection and
  evaluation against a held-out ALLD: learning, selection in the loop, evaluation;
- ``gru``: recurrent PPO against TFT, compiled from a lowering whose text the LAPACK
  regression test reads.
"""

import jax
import pytest

import socialjax as sj
from socialjax.train import TrainConfig, make_train
from socialjax.train.run import run_keys

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


@pytest.fixture(scope="session")
def ipd_tft():
    """``sj.train.run`` of :data:`IPD_TFT`: 2 grid points (lr 3e-3, 1e30) x seeds 0..3."""
    return sj.train.run(ipd_env(), IPD_TFT, seeds=IPD_TFT_SEEDS, progress=False)


@pytest.fixture(scope="session")
def oneshot():
    """``sj.train.run`` of :data:`ONESHOT` in ``ipd`` with one round, seeds 0..3."""
    return sj.train.run(sj.make("ipd", num_rounds=1), ONESHOT, seeds=4, progress=False)


@pytest.fixture(scope="session")
def gru():
    """Recurrent PPO vs TFT for seeds 0..3: ``(lowered program text, metrics)``."""
    train = jax.vmap(make_train(ipd_env(), GRU_TFT))
    keys = run_keys([0, 1, 2, 3])
    lowered = jax.jit(train).lower(keys)
    _, metrics = lowered.compile()(keys)
    return lowered.as_text(), jax.device_get(metrics)
