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
from train_configs import GRU_TFT, IPD_TFT, IPD_TFT_SEEDS, ONESHOT, ipd_env

import socialjax as sj
from socialjax.train import make_train
from socialjax.train.run import run_keys


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
