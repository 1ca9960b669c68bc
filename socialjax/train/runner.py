"""One runner for every long job: a :class:`~socialjax.train.spec.JobSpec` in, a result
folder out, and nothing lost on the way.

    result, text = execute(spec, Destination(Path("results/x"), checkpoint_every=10), listeners)
    result, text = run_spec(spec, "results/x", checkpoint_every=10)   # the folder checked and held too

:func:`execute` is the only code that turns a job's stop or failure into what is kept:
it runs the job of the spec's kind (:data:`KINDS`) on the engine
(:func:`socialjax.train.engine.run_job`) with the listeners, saves a checkpoint into
``OUT/resume/`` every ``checkpoint_every`` updates (and when a signal stops the job),
writes the result folder while a first signal waits (:func:`~socialjax.train.interrupts.deferred`),
and hands the figure to the listeners. What it raises:

- :class:`Stopped` (a signal): the message says what is saved and the ``--resume``
  command; ``at_once`` when a second signal (or one while compiling) gave it no time;
- :class:`Failed` (memory, a full or read-only disk, another job writing the folder):
  one line, with what is kept (:func:`what_is_kept`);
- ``ValueError`` / ``TypeError`` before anything is compiled (settings the seats or the
  batch cannot take), as the job raised them.

A job kind is one :class:`JobKind` value: how to train a spec (the engine's arguments in,
the kind's result out), how to write that result, the name of its figure, the word for
its updates. :func:`register_kind` adds one; the population kind is here, donor
evolution's in :mod:`socialjax.train.cultural_evolution`, the models' (scripted,
tabular and evolutionary programs, one computation each) in :mod:`socialjax.train.models`.

The caller checks and claims the output folder (:func:`socialjax.train.store.check_out_dir`,
:func:`~socialjax.train.store.claim`) and owns the listeners, as :func:`run_spec` does
(Python's door: ``sj.train.run_spec``); under
``jax.distributed`` every process calls :func:`execute` and process 0 alone (``lead``)
writes.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from socialjax.core.registry import make
from socialjax.train import results, store
from socialjax.train.engine import Interrupted, Snapshot
from socialjax.train.formats import config_from_dict
from socialjax.train.interrupts import deferred, interrupts
from socialjax.train.population import make_train
from socialjax.train.spec import JobSpec
from socialjax.train.tracking import Listeners, Tracker, as_listeners

# the module, called through its attribute (socialjax.train's `run` is the function)
run_module = importlib.import_module("socialjax.train.run")


class Stopped(Exception):
    """A signal stopped the job; the message says what is saved and how to continue.
    ``at_once``: a second signal (or one while compiling) ended it without waiting."""

    def __init__(self, message: str, at_once: bool = False):
        super().__init__(message)
        self.at_once = at_once


class Written(Stopped):
    """A signal came while the result was written: it is complete (``text`` its summary)."""

    def __init__(self, text: str, message: str):
        super().__init__(message)
        self.text = text


class Failed(Exception):
    """The job could not go on or its result could not be written: one line, ending
    with what is kept."""


@dataclasses.dataclass(frozen=True)
class Destination:
    """Where a job's result and checkpoints go: ``out``, ``overwrite`` (an earlier result
    there may be replaced), ``checkpoint_every`` (updates between checkpoints; ``None``:
    saved only when a signal stops it), ``memory`` (bytes a device may use) and
    ``continue_with`` (what continues a stopped job, for its messages; default
    ``socialjax train --resume OUT``)."""

    out: Path
    overwrite: bool = False
    checkpoint_every: int | None = None
    memory: int | None = None
    continue_with: str | None = None

    @property
    def continuation(self) -> str:
        return continuation(self.out, self.continue_with)


def continuation(out: Path, continue_with: str | None = None) -> str:
    """The command that continues a stopped job in ``out``: ``continue_with``, or
    ``socialjax train --resume OUT``."""
    return continue_with or f"socialjax train --resume {out}"


@dataclasses.dataclass(frozen=True)
class JobKind:
    """A kind of job for :func:`execute`: ``name`` (a spec's ``kind``), ``unit`` (what
    its updates are called), ``num_updates(spec)``, ``train(spec, **engine)`` (runs it on
    the engine; ``engine`` are :func:`socialjax.train.engine.run_job`'s ``progress``,
    ``label``, ``chunk``, ``memory``, ``segment``, ``on_segment``, ``resume`` and
    ``trackers``; returns the kind's result), ``write(result, spec, out, overwrite)``
    (the result folder, whole or not at all; returns the summary text), ``figure``
    (the file of the result folder handed to the listeners; ``None``: it draws none)
    and ``restore(checkpoint)`` (the :class:`~socialjax.train.engine.Snapshot` a
    checkpoint of the kind holds; ``None``: the kind keeps no checkpoint)."""

    name: str
    unit: str
    num_updates: Callable[[JobSpec], int]
    train: Callable[..., Any]
    write: Callable[..., str]
    figure: str | None
    restore: Callable[[results.Checkpoint], Snapshot] | None = None


KINDS: dict[str, JobKind] = {}


def register_kind(kind: JobKind) -> JobKind:
    """Make ``kind`` the job of specs whose ``kind`` is ``kind.name``."""
    KINDS[kind.name] = kind
    return kind


def kind_of(spec: JobSpec) -> JobKind:
    if spec.kind not in KINDS:
        raise ValueError(f"no job kind {spec.kind!r} is registered (registered: {sorted(KINDS)})")
    return KINDS[spec.kind]


def run_spec(spec: JobSpec, out: str | os.PathLike | None = None, *, overwrite: bool = False,
             checkpoint_every: int | None = None, resume: bool = False, memory: int | None = None,
             log: Sequence[str | Tracker] | Listeners = (), log_dir: str | os.PathLike = "runs",
             progress: bool = True, start_line: str | None = None) -> tuple[Any, str]:
    """Run ``spec`` from Python as ``socialjax train`` runs it: with ``out``, the folder
    is checked (an earlier result is replaced only with ``overwrite``) and held for the
    job (:func:`socialjax.train.store.claim`), a checkpoint is saved every
    ``checkpoint_every`` updates and when a signal stops it, ``resume=True`` continues
    the unfinished run of the same spec saved there (its bits those of a run never
    stopped), and the result folder is written (:func:`execute`, which raises
    :class:`Stopped` or :class:`Failed` with what is kept); without ``out`` the job runs
    in memory and nothing is written. ``log``: tracker names (made under ``log_dir``)
    or objects, or a :class:`~socialjax.train.tracking.Listeners` (the caller's, left
    open). Returns the kind's result and its summary text (empty without ``out``)."""
    kind = kind_of(spec)
    if out is None and (resume or checkpoint_every or overwrite):
        raise ValueError("resume, checkpoint_every and overwrite need an output folder (out)")
    listeners, made = as_listeners(log, log_dir, spec.label)
    try:
        if out is None:
            result = kind.train(spec, progress=progress, label=spec.label, chunk=None, memory=memory, segment=None,
                                on_segment=None, resume=None, trackers=listeners)
            return result, ""
        with store.claim(out):
            snapshot = None
            if resume:
                checkpoint = results.load_checkpoint(out)
                if kind.restore is None or not checkpoint.spec.same_settings(spec):
                    raise ValueError(f"{out} holds an unfinished run of other settings: {checkpoint.spec.to_json()}")
                checkpoint_every = checkpoint_every or checkpoint.meta.get("segment")
                snapshot = kind.restore(checkpoint)
            else:
                store.check_out_dir(out, overwrite=overwrite)
            return execute(spec, Destination(Path(out), overwrite, checkpoint_every, memory), listeners,
                           resume=snapshot, chunk=None if snapshot is None else snapshot.chunk, progress=progress,
                           start_line=start_line)
    finally:
        listeners.close(made)


def execute(spec: JobSpec, dest: Destination, listeners: Listeners, *, resume: Snapshot | None = None,
            chunk: int | None = None, progress: bool = True, lead: bool = True,
            start_line: str | None = None) -> tuple[Any, str]:
    """Run ``spec`` into ``dest`` (see the module docstring); returns the kind's result
    and the summary text (empty where not ``lead``). ``start_line`` is printed first, once
    a signal would stop the job cleanly. A first signal while the result is written lets
    it finish, then :class:`Stopped` says where it is."""
    kind, out, every = kind_of(spec), Path(dest.out), dest.checkpoint_every
    total = kind.num_updates(spec)
    saved = [resume.updates_done if resume is not None else 0]

    def checkpoint(snapshot: Snapshot) -> None:  # every process takes the snapshot; process 0 writes it
        if lead and snapshot.updates_done > saved[0]:
            results.save_checkpoint(out, snapshot, spec, segment=every, memory=dest.memory)
            saved[0] = snapshot.updates_done

    def kept() -> str:
        return what_is_kept(out, f"{kind.unit} {saved[0]} of {total}" if saved[0] else "", dest.continuation)

    try:
        with interrupts(enabled=jax.process_count() == 1):  # from the start: building and compiling the job too
            if start_line:
                print(start_line, flush=True)
            result = kind.train(spec, progress=progress, label=spec.label, chunk=chunk, memory=dest.memory,
                                segment=every, on_segment=checkpoint if every else None, resume=resume,
                                trackers=listeners)
    except MemoryError as err:  # after compiling: before anything ran, or part-way (DeviceMemoryError)
        raise Failed(f"{err}{kept()}") from None
    except OSError as err:  # a checkpoint could not be written (a listener's failure never comes here)
        raise Failed(store.os_error_line(err, "write the checkpoint" if every else "read or write a file")
                     + kept()) from None
    except Interrupted as stop:  # a signal: what is done is saved, with or without checkpoint_every
        done = stop.snapshot.updates_done
        try:
            checkpoint(stop.snapshot)
        except OSError as err:
            raise Failed(f"stopped after {kind.unit} {done}, but {store.os_error_line(err, 'write the checkpoint')}"
                         ": nothing was saved") from None
        raise Stopped(f"stopped after {kind.unit} {done} of {total}: the training state is saved in {out}/resume; "
                      f"continue with: {dest.continuation}") from None
    except KeyboardInterrupt:  # a second signal, or one while compiling
        if saved[0]:
            raise Stopped(f"stopped at once: the last checkpoint ({kind.unit} {saved[0]} of {total}) is in "
                          f"{out}/resume; continue with: {dest.continuation}", at_once=True) from None
        raise Stopped("stopped at once; nothing was saved (no checkpoint yet)", at_once=True) from None
    if not lead:
        return result, ""
    text = _write(kind, result, spec, dest, replace=dest.overwrite or bool(every) or resume is not None, kept=kept)
    if kind.figure is not None and (out / kind.figure).exists():
        listeners.artifact(out / kind.figure)
    return result, text


def _write(kind: JobKind, result, spec: JobSpec, dest: Destination, replace: bool, kept: Callable[[], str]) -> str:
    """The result folder, a first signal waiting until it is written."""
    try:
        with deferred("writing the result") as stop:  # seconds that a stop would waste the training for
            text = kind.write(result, spec, Path(dest.out), overwrite=replace)
    except KeyboardInterrupt:  # a second signal while writing: the result is not written
        raise Stopped(f"stopped at once while writing the result; it was not written{kept()}", at_once=True) from None
    except OSError as err:
        raise Failed(f"trained, but {store.os_error_line(err, 'write the result')}{kept()}") from None
    except store.OutputError as err:  # another job wrote the folder while this one ran
        raise Failed(f"trained, but {err}{kept()}") from None
    if stop.requested:
        raise Written(text, f"{stop.signal_name}: stopped once the result was written to {dest.out}")
    return text


def what_is_kept(out: Path, last: str = "", continue_with: str | None = None) -> str:
    """What a stopped or failed job leaves, for the end of its line: its last checkpoint
    (``last``: which update it holds, when known) with the command that continues it
    (``continue_with``, default ``socialjax train --resume OUT``), an earlier result
    that stays, or that nothing was saved."""
    kept = ""
    state = store.folder_state(Path(out))
    if state in ("unfinished", "replacing"):
        kept = (f"; the last checkpoint{f' ({last})' if last else ''} in {out}/resume is "
                f"intact: continue with `{continuation(out, continue_with)}`")
    if state in ("result", "replacing"):
        kept += f"; the earlier result in {out} is intact"
    return kept or "; nothing was saved"


# ------------------------------------------------------------------------ population
def _train_population(spec: JobSpec, **engine):
    """A population spec on the engine (:func:`socialjax.train.run`)."""
    return run_module.run(make(spec.env, **spec.env_options), config_from_dict(dict(spec.config)),
                          seeds=np.asarray(spec.seeds), base_seed=spec.base_seed, log=engine.pop("trackers"), **engine)


def _write_population(result, spec: JobSpec, out: Path, overwrite: bool) -> str:
    return results.save_run(result, out, env_name=spec.env, env_options=dict(spec.env_options), preset=spec.preset,
                            base_seed=spec.base_seed, overwrite=overwrite)


POPULATION = register_kind(JobKind(
    name="population", unit="update", num_updates=lambda spec: config_from_dict(dict(spec.config)).num_updates,
    train=_train_population, write=_write_population, figure=results.CURVES_FILE,
    restore=lambda checkpoint: results.restore_snapshot(checkpoint, make_train(checkpoint.env, checkpoint.config))))
