"""Hyperparameters are declared once (socialjax.agents.hparams): TrainConfig's defaults,
its checks, the learners' names and PBT's probabilities all come from the declarations;
both learners keep the Learner protocol."""

import dataclasses

import numpy as np
import pytest

import socialjax as sj
from socialjax.agents import hparams
from socialjax.agents.dqn import DEFAULT_HPARAMS, DQNLearner
from socialjax.agents.learner import Learner
from socialjax.agents.ppo import ActorCriticLearner
from socialjax.train import TrainConfig
from socialjax.train.config import SWEEPABLE
from socialjax.train.learners import make_learner
from socialjax.train.selection import PROBABILITIES


def test_every_sweepable_hyperparameter_is_declared_with_the_config_default():
    fields = {f.name: f.default for f in dataclasses.fields(TrainConfig)}
    assert set(SWEEPABLE) == set(hparams.HPARAMS)
    for name, hp in hparams.HPARAMS.items():
        assert fields[name] == hp.default, name
    assert {k: hparams.HPARAMS[k].default for k in hparams.DQN} == DEFAULT_HPARAMS


def test_probabilities_are_the_declared_unit_interval_ones():
    assert set(PROBABILITIES) == {"gamma", "gae_lambda", "eps_start", "eps_end", "eps_decay", "self_interest",
                                  "irat_anneal"}
    for name in PROBABILITIES:
        assert (hparams.HPARAMS[name].low, hparams.HPARAMS[name].high) == (0.0, 1.0)


@pytest.mark.parametrize("name, value", [("gamma", 1.5), ("lr", -1e-3), ("eps_end", -0.1), ("clip_eps", float("inf")),
                                         ("temperature", float("nan")), ("aa_beta", float("inf")),
                                         ("aa_beta", -5.0)])
def test_the_config_checks_the_declared_ranges(name, value):
    problem = r"(is NaN|is not finite|is below its minimum|is above its maximum)"
    with pytest.raises(ValueError, match=f"{name}.*{problem}"):
        TrainConfig(**{name: value}).validate()
    with pytest.raises(ValueError, match=f"{name}.*{problem}"):
        TrainConfig(**{name: [hparams.HPARAMS[name].default, value]}).validate()


def test_both_learners_keep_the_protocol_and_name_what_they_read():
    env = sj.make("ipd", num_rounds=5)
    for algo, cls, names in (("ppo", ActorCriticLearner, hparams.ACTOR_CRITIC), ("dqn", DQNLearner, hparams.DQN)):
        learner = make_learner(env, TrainConfig(algo=algo, num_envs=2, rollout_len=4), seats_per_learner=4)
        assert isinstance(learner, cls) and isinstance(learner, Learner)
        assert learner.hparams == names
    assert np.all([isinstance(hparams.HPARAMS[n].default, float) for n in hparams.HPARAMS])
