"""Training: the compiled population loop and the runs around it.

- :class:`TrainConfig` (:mod:`.config`): one frozen dataclass for a whole experiment.
- :func:`make_train` (:mod:`.population`): a :class:`~.population.Trainer`, ``train(key, hparams=None)``,
  pure and jittable, or in segments (``train.init``, ``train.updates``, ``train.finish``).
- :func:`run` (:mod:`.run`): seeds x hyperparameter grid in one call, vmapped and spread over devices;
  in segments with a :class:`Snapshot` after each, to checkpoint and resume.
- :func:`play` (:mod:`.playback`): roll out (and render) a trained population.
- presets (:mod:`.presets`): named experiments for ``socialjax train``.
  Its pieces: :mod:`.devices` (blocks of runs on devices), :mod:`.memory` (fitting them
  into a device's memory), :mod:`.interrupts` (Ctrl-C between segments).
- :func:`save_run` / :func:`load_run` (:mod:`.results`): metrics, config, checkpoint,
  curves and summary of a run on disk (one transaction, :mod:`.store`; the files
  :mod:`.formats`), and back; unfinished runs' checkpoints (``save_checkpoint`` /
  ``load_checkpoint``). The summary text and the curves: :mod:`.reports`.
- :func:`~socialjax.train.tables.to_frame` / :func:`~socialjax.train.tables.write_csv`
  (:mod:`.tables`, also importable from :mod:`.results`): a results folder as one long
  table (pandas, or CSV).
- :mod:`.cultural_evolution`: the donor game's cultural evolution (``donor-evolution``).
- :class:`~.spec.JobSpec` (:mod:`.spec`): a run as one value (kind, env, config, seeds) that
  round-trips through JSON; :func:`~.runner.execute` (:mod:`.runner`): the one runner that
  checkpoints, stops, saves and reports every kind of job (``socialjax train`` uses it);
  :func:`~.runner.run_spec`: Python's door to it (a folder checked and held, checkpoints,
  ``resume=True``), for a population, donor evolution or a model (:mod:`.models`).
"""

from socialjax.train.config import TrainConfig
from socialjax.train.playback import Playback, as_run, play
from socialjax.train.population import TrainState, make_train
from socialjax.train.results import LoadedRun, load_run, save_run
from socialjax.train.run import Interrupted, RunResult, Snapshot, run, run_keys
from socialjax.train.runner import run_spec
from socialjax.train.spec import JobSpec

__all__ = ["Interrupted", "JobSpec", "LoadedRun", "Playback", "RunResult", "Snapshot", "TrainConfig", "TrainState",
           "as_run", "load_run", "make_train", "play", "run", "run_keys", "run_spec", "save_run"]
