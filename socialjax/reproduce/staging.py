"""A reproduction's runs kept while it runs, so that a stop loses at most the update
under way.

While ``socialjax reproduce`` trains, each run (one condition, or a group of conditions
trained as one grid) is a job of the one runner (:func:`socialjax.train.runner.execute`)
whose output folder is ``OUT/resume/<run>/``, beside ``OUT/resume/reproduce.json`` (the
entry, scale, seeds and base seed): a finished run is a population result written whole
(:func:`socialjax.train.save_run`) or a model run's (:mod:`socialjax.train.models`), a
population stopped by Ctrl-C or SIGTERM keeps its training state there as a checkpoint.
The output folder is then an unfinished run
(:func:`socialjax.train.store.folder_state`); the same command run again reads the
finished runs back instead of training them (their bits are the ones saved), continues
the stopped one from its checkpoint (the same bits as a run never stopped), and the
reproduction's own folder replaces ``OUT`` when every condition is done. A run saved
for other settings is refused (``--overwrite`` starts again); a damaged one, or one
saved in another format version (:data:`socialjax.train.formats.FORMAT_VERSION`), is
trained again.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from socialjax.train import RunResult, load_run, results, store
from socialjax.train.models import ModelRun, load_model_run
from socialjax.train.population import make_train
from socialjax.train.runner import Destination, execute
from socialjax.train.spec import JobSpec
from socialjax.train.tracking import Listeners

SETTINGS_FILE = "reproduce.json"
CONTINUE_WITH = "the same socialjax reproduce command"  # what continues a stopped reproduction


class Staging:
    """The finished runs of one reproduction in ``out/resume/``: :meth:`get` one back,
    :meth:`train` one into it, kept as it finishes. ``settings`` (entry, scale, seeds, base seed) must be
    those of the runs already there; ``overwrite`` discards runs saved for others."""

    def __init__(self, out: Path, settings: dict, overwrite: bool = False):
        self.folder = Path(out) / store.RESUME_DIR
        self.settings = settings
        saved = self._saved_settings()
        if saved is not None and saved != settings:
            if not overwrite:
                raise store.OutputError(
                    f"{out} holds an unfinished run of other settings ({_describe(saved)}, not "
                    f"{_describe(settings)}); pass --overwrite to start again, or choose another output folder")
            shutil.rmtree(self.folder)

    def _saved_settings(self) -> dict | None:
        """The settings of the runs saved here; ``{}`` for a folder that is not a
        reproduction's (a training checkpoint), ``None`` when nothing is saved."""
        if not self.folder.is_dir():
            return None
        try:
            return json.loads((self.folder / SETTINGS_FILE).read_text())
        except (OSError, ValueError):
            return {}

    def get(self, name: str) -> RunResult | None:
        """The run ``name`` as saved (``None`` when it is not, or is damaged)."""
        path = self.folder / run_folder(name)
        if not path.is_dir():
            return None
        try:
            loaded = load_run(path)
        except (store.ResultError, ValueError, OSError):
            return None
        meta = loaded.meta
        return RunResult(loaded.config, loaded.env_name, loaded.seeds, loaded.grid, loaded.metrics, loaded.states,
                         list(meta.get("nan_runs", [])), float(meta.get("seconds", 0.0)),
                         float(meta.get("compile_seconds", 0.0)), int(meta.get("per_device", 1)),
                         meta.get("chunk"), int(meta.get("memory_bytes", 0)),
                         {k: tuple(v) for k, v in meta.get("compile_times", {}).items()})

    def get_model(self, name: str) -> ModelRun | None:
        """The model run ``name`` as saved (``None`` when it is not, or is damaged)."""
        path = self.folder / run_folder(name)
        if not path.is_dir():
            return None
        try:
            return load_model_run(path)
        except (store.ResultError, ValueError, KeyError, OSError):
            return None

    def train(self, name: str, spec: JobSpec, listeners: Listeners, progress: bool) -> RunResult | ModelRun:
        """Run ``name`` (``spec``, a population or model job) into its folder through the
        runner, a population from the checkpoint a stopped try of the same settings left
        there, if any. A stop or a failure is the runner's :class:`~socialjax.train.runner.Stopped`
        or :class:`~socialjax.train.runner.Failed`, the state kept."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with store.replacing(self.folder / SETTINGS_FILE) as tmp:
            tmp.write_text(json.dumps(self.settings, indent=2) + "\n")
        folder = self.folder / run_folder(name)
        dest = Destination(folder, overwrite=True, continue_with=CONTINUE_WITH)
        result, _ = execute(spec, dest, listeners, resume=_checkpoint(folder, spec), progress=progress)
        return result


def _checkpoint(folder: Path, spec: JobSpec):
    """The :class:`~socialjax.train.engine.Snapshot` a stopped try of ``spec`` left in
    ``folder``; ``None`` when there is none, or it is damaged or of other settings."""
    if store.folder_state(folder) not in ("unfinished", "replacing"):
        return None
    try:
        checkpoint = results.load_checkpoint(folder)
        if not checkpoint.spec.same_settings(spec):
            return None
        return results.restore_snapshot(checkpoint, make_train(checkpoint.env, checkpoint.config))
    except (store.ResultError, store.OutputError, ValueError, KeyError, OSError):
        return None


def finished_runs(out: str | Path) -> list[str]:
    """The runs a reproduction writing to ``out`` has finished and kept."""
    folder = Path(out) / store.RESUME_DIR
    if not (folder / SETTINGS_FILE).is_file():
        return []
    return sorted(p.name for p in folder.iterdir()
                  if p.is_dir() and not p.name.startswith(".") and store.folder_state(p) == "result")


def kept_text(out: str | Path | None) -> str:
    """The end of a stopped reproduction's message: the runs it kept and how to continue
    (empty when none was kept)."""
    kept = finished_runs(out) if out is not None else []
    if not kept:
        return ""
    return f"; the {len(kept)} run(s) finished are kept in {out}/resume: run the same command again to continue"


def run_folder(name: str) -> str:
    """A folder name for the run of conditions ``name`` (its letters, digits, ``-_.+``)."""
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", name)[:120] or "run"


def _describe(settings: dict) -> str:
    if not settings:
        return "not a reproduction"
    return ", ".join(f"{k} {settings.get(k)}" for k in ("entry", "scale", "seeds", "base_seed"))
