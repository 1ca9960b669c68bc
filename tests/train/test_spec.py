"""A run as one value (socialjax.train.spec.JobSpec): every preset's run round-trips
through JSON to the same spec and the same config; bad specs are refused naming the
fault; a result folder and a checkpoint hold the spec they were run from."""

from __future__ import annotations

import json

import numpy as np
import pytest

import socialjax as sj
from socialjax.train import TrainConfig, results
from socialjax.train.cultural_evolution import donor_settings, donor_spec
from socialjax.train.formats import config_from_dict, config_to_dict, population_spec
from socialjax.train.presets import PRESETS
from socialjax.train.spec import JobSpec


def through_json(spec: JobSpec) -> JobSpec:
    return JobSpec.from_json(json.loads(json.dumps(spec.to_json())))


@pytest.mark.parametrize("name", [n for n, p in PRESETS.items() if n != "donor-evolution"])
def test_every_preset_round_trips_through_json(name):
    preset = PRESETS[name]
    config = preset.make_config()
    spec = population_spec(config, preset.env, preset.options(), range(preset.seeds), 3, name)
    again = through_json(spec)
    assert again == spec and again.same_settings(spec)
    assert config_from_dict(dict(again.config)) == config
    assert again.label == name and again.seeds == tuple(range(preset.seeds)) and again.base_seed == 3


def test_a_sweep_reads_back_as_the_same_settings():
    """A swept hyperparameter given as a list, an array or a tuple is one spec."""
    config = TrainConfig(lr=[1e-3, 3e-3], seats=(0, 1), seating="fixed", scripted=("tft",))
    as_list = population_spec(config, "ipd", {"num_rounds": 5}, [0, 1])
    as_array = population_spec(config.replace(lr=np.array([1e-3, 3e-3])), "ipd", {"num_rounds": 5}, np.arange(2))
    assert as_list.same_settings(as_array) and through_json(as_list) == as_list
    assert not as_list.same_settings(as_list.replace(base_seed=1))


def test_donor_evolution_round_trips_to_its_arguments():
    spec = donor_spec(4, 3, (1.5, 2.0), 7, {"schedule": "random"}, mutation_std=0.2)
    assert through_json(spec) == spec
    assert donor_settings(through_json(spec)) == dict(num_seeds=4, num_generations=3, multipliers=(1.5, 2.0), seed=7,
                                                      env_options={"schedule": "random"}, mutation_std=0.2)


@pytest.mark.parametrize("changes, message", [
    (dict(kind="evolution"), "kind must be one of"),
    (dict(env=""), "registered environment's name"),
    (dict(seeds=()), "seeds must be distinct non-negative ints"),
    (dict(seeds=(0, 0)), "seeds must be distinct"),
    (dict(seeds=(0, -1)), "seeds must be distinct non-negative ints"),
    (dict(seeds=(0.5,)), "seeds must be distinct non-negative ints"),
    (dict(base_seed=2**31), "base_seed must be an int"),
    (dict(base_seed=True), "base_seed must be an int"),
    # found by the adversarial suite: a bare TypeError or numpy's error before
    (dict(base_seed=np.timedelta64(3, "s")), "base_seed must be an int"),
    (dict(seeds=np.asarray(1 + 1j)), "seeds must be distinct non-negative ints"),
    (dict(kind=np.zeros((2, 3))), r"kind must be one of .*got array\(\[\[0\., 0\., 0\.\], \[0\."),
    (dict(config={"lr": float("nan")}), r"config\['lr'\] = nan cannot be saved as JSON"),
    (dict(config={"f": object()}), r"config\['f'\] = .* cannot be saved as JSON"),
    (dict(env_options=[("num_rounds", 5)]), "env_options must be a mapping"),
])
def test_a_bad_spec_is_refused_naming_the_fault(changes, message):
    good = dict(kind="population", env="ipd", env_options={}, config={}, seeds=(0,))
    with pytest.raises(ValueError, match=message):
        JobSpec(**{**good, **changes})
    with pytest.raises(ValueError, match="not a job spec: no config, seeds"):
        JobSpec.from_json({"job": "population", "env": "ipd"})


def test_a_result_and_its_checkpoint_hold_the_spec_they_ran(tmp_path):
    config = TrainConfig(num_envs=2, rollout_len=5, num_updates=2, hidden=8, update_epochs=1, num_minibatches=1,
                         evaluate=False, seating="fixed", seats=(0, 1), scripted=("tft",))
    env = sj.make("ipd", num_rounds=5)
    spec = population_spec(config, "ipd", {"num_rounds": 5}, [0, 1], 0, "toy")
    kept = []
    result = sj.train.run(env, config, seeds=2, progress=False, segment=1,
                          on_segment=lambda snap: kept.append(results.save_checkpoint(tmp_path / "ckpt", snap, spec,
                                                                                      segment=1)))
    assert results.load_checkpoint(tmp_path / "ckpt").spec == spec
    results.save_run(result, tmp_path / "run", env_name="ipd", env_options={"num_rounds": 5}, preset="toy", plot=False)
    loaded = results.load_run(tmp_path / "run")
    assert loaded.spec == spec and config_to_dict(loaded.config) == dict(spec.to_json()["config"])
