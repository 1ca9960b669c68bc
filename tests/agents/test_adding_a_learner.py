"""The learner that docs/architecture.md ("Adding a learner") walks through: the example
file docs/examples/reinforce_learner.py is imported as it is, registered with
``register_learner``, accepted by ``TrainConfig`` and trained by ``make_train``; the
walkthrough's code excerpts are that file's own lines; ``register_learner`` refuses a
taken name, a class that does not keep the protocol and an undeclared hyperparameter."""

import importlib.util
import pathlib
import re

import chex
import jax.numpy as jnp
import numpy as np
import pytest

from socialjax.agents import registry
from socialjax.agents.registry import register_learner
from socialjax.core.spaces import Box, Dict
from socialjax.train.config import TrainConfig

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "reinforce_learner.py"
DOC = ROOT / "docs" / "architecture.md"
NAME = "reinforce"


def _load_example():
    spec = importlib.util.spec_from_file_location("reinforce_learner", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


example = _load_example()


@pytest.fixture
def registered():
    """``reinforce`` registered for one test, and gone after it."""
    register_learner(NAME, example.Reinforce)
    try:
        yield example.Reinforce
    finally:
        registry.LEARNERS.pop(NAME)


def test_an_unregistered_name_is_refused_with_the_known_names():
    with pytest.raises(ValueError, match=r"algo must be one of \('ppo', 'a2c', 'mappo', .*\), got 'reinforce'"):
        TrainConfig(algo=NAME).validate()


def test_a_registered_learner_is_a_valid_algo_with_its_hyperparameters(registered):
    config = TrainConfig(algo=NAME, lr=[0.01, 0.05], selection="pbt", num_learners=2, pbt_hparams=("lr", "gamma"))
    config.validate()  # a sweep over lr, and PBT on two of its hyperparameters
    assert config.hparam_names()[:4] == ("lr", "gamma", "ent_coef", "max_grad_norm")
    assert NAME in registry.algos()
    with pytest.raises(ValueError, match="recurrent=True is only supported by ppo and a2c"):
        TrainConfig(algo=NAME, recurrent=True).validate()
    with pytest.raises(ValueError, match="aa_beta .* needs an actor-critic learner"):
        TrainConfig(algo=NAME, aa_beta=0.5).validate()
    with pytest.raises(ValueError, match=r"pbt_hparams \['clip_eps'\] are not hyperparameters of reinforce"):
        TrainConfig(algo=NAME, selection="pbt", num_learners=2, pbt_hparams=("clip_eps",)).validate()


def test_the_learner_learns_to_cooperate_with_tit_for_tat(registered):
    # the example's own training function: make_train on the ipd-tft preset, jitted and
    # vmapped over seeds nobody tuned (seeds 0-5 all gain 0.4-0.5 per step, lr 0.05)
    rate = example.train_against_tft(seeds=(11, 12), num_updates=60)
    chex.assert_shape(rate, (2, 60))
    chex.assert_tree_all_finite(rate)
    start, end = rate[:, :5].mean(axis=1), rate[:, -5:].mean(axis=1)
    assert np.all(end > start + 0.2), (start, end)  # towards mutual cooperation (3 per step)
    assert np.all(end > 2.6)


def test_a_non_flat_observation_is_refused():
    grid = Dict({"grid": Box(0, 3, (5, 5), jnp.int32)})
    with pytest.raises(ValueError, match="Reinforce reads flat Box observations"):
        example.Reinforce(grid, 2)


def test_a_taken_name_is_refused(registered):
    with pytest.raises(ValueError, match="a learner is already registered as 'reinforce' \\(Reinforce\\)"):
        register_learner(NAME, example.Reinforce)
    with pytest.raises(ValueError, match="already registered as 'ppo' \\(ActorCriticLearner\\)"):
        register_learner("ppo", example.Reinforce)


def test_a_class_without_the_protocol_is_refused():
    class NoGreedy(example.Reinforce):
        greedy = None

    class NoFlags:
        hparams = ("lr",)

    with pytest.raises(ValueError, match=r"NoGreedy does not keep the Learner protocol .*missing \['greedy'\]"):
        register_learner("no-greedy", NoGreedy)
    with pytest.raises(ValueError,
                       match=r"missing \['RECURRENT', 'ALIGNS', 'CENTRAL_CRITIC', 'VALUE_NORM', 'from_config'"):
        register_learner("no-flags", NoFlags)
    assert "no-greedy" not in registry.LEARNERS and "no-flags" not in registry.LEARNERS


def test_an_undeclared_hyperparameter_is_refused():
    class Momentum(example.Reinforce):
        hparams = ("lr", "momentum")

    with pytest.raises(ValueError, match=r"names \['momentum'\], not declared in socialjax.agents.hparams: "
                                         r"a learner reads declared hyperparameters, each a TrainConfig field"):
        register_learner("momentum", Momentum)
    assert "momentum" not in registry.LEARNERS


def test_the_walkthrough_shows_the_example_files_own_lines():
    section = DOC.read_text().split("## Adding a learner", 1)[1].split("\n## ", 1)[0]
    source = EXAMPLE.read_text()
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks
    for block in blocks:  # each run of lines between "..." is a piece of the file
        for piece in re.split(r"^ *\.\.\.$", block, flags=re.M):
            assert piece.strip("\n") in source, piece
