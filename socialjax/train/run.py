"""Many runs in one call: seeds x hyperparameter grid, vmapped and spread over devices.

    result = sj.train.run(env, config, seeds=64)

runs ``train = make_train(env, config)`` for every (grid point, seed) pair.

One engine. Every long job of :mod:`socialjax.train` runs on the engine of
:mod:`socialjax.train.engine` (:func:`~socialjax.train.engine.run_job`), which drives a
*job* through its seams init / updates / finish: a population here (``train``, with the
config's hyperparameter grid, reward and return as progress lines and the non-finite
losses as :attr:`RunResult.nan_runs`), the donor game's cultural evolution in
:mod:`socialjax.train.cultural_evolution` (the multipliers as its grid, the generations
as its updates). What follows (segments, snapshots, Ctrl-C, bits, memory, devices,
processes) holds for every job alike.

The engine. The runs are cut into equal blocks,
one per device, and every device runs the same single-device programs on its block:
``jit(vmap(f))`` of the run's stages ``train.init``, ``train.updates`` (one update per
call where a signal can stop the run, see ``segment`` below; otherwise all updates, or
segments of ``segment`` updates) and ``train.finish`` (a lone run unbatched), compiled
once per device, in parallel threads, and dispatched asynchronously, so the devices run
at the same time. Between segments the runs can be saved (``on_segment``) and resumed
(``resume``) with the same bits as a run never cut: init and finish are always calls of
their own, and update ``i`` draws its key from the run's key and ``i`` alone. Each run's key is
``fold_in(key(base_seed), seed)``: it depends on the seed alone, never on the run's
position in the batch.

Bits. Every device compiles exactly the program a single device would, so a run gives
the same bits on one device or spread over eight (tests/train/test_run.py checks 1 vs 2
of 8 fake CPU devices). Within a device, XLA compiles a vmapped program differently for
different batch sizes, so float results can differ in their last bits from one batch
size to another (docs/training.md, "Many runs, many devices", gives the measurements,
and why one sharded program over all devices was not kept). So a run's bits are fixed by
its seed, its config, the backend and the number of runs computed together on a device:
``chunk=k`` computes a device's runs ``k`` at a time (the device's runs cut into chunks
of ``k``, the last padded, each chunk one call of the same compiled ``k``-run program,
queued on the device one after another), every chunk is then the same program, and a
run gives the same bits alone or in a batch of a thousand (checked at 4, 16 and 64 runs
per device). Without ``chunk``, a device's runs are computed together up to what its
backend gains from a wider vmap (:data:`~socialjax.train.memory.MOST_TOGETHER`: 16 on
the CPU, all on GPUs and TPUs) and in equal chunks beyond it. :class:`RunResult` records
``per_device`` and ``chunk``, so a run can be recomputed to the bit. Runs are not padded
beyond equal blocks (a lone run is computed once), and a batch that does not fill its
blocks is padded with copies of its last run, which are dropped from the result.
Devices that would hold only padding are left idle. What is compiled is one chunk's
program, so compile time does not grow with the number of runs.

Memory. Before running, the compiled program's memory analysis is compared with what a
device can hold (its allocator's limit on GPUs and TPUs, the physical memory on the
CPU: a property of the device, not of the moment, so the same machine makes the same
choice). When the runs of a device do not fit, they are computed in chunks that do
(the largest chunk that fits, evened out so that padding is smallest); when one run
does not fit, a ``MemoryError`` names the sizes to reduce, before anything has run.

Several processes (hosts). Call ``jax.distributed.initialize(...)`` in every process
before anything else touches JAX, then make the same ``run(...)`` call in every process.
``devices`` defaults to ``jax.devices()``, every device of every process, and every
device in the list gets a block (blocks ordered by process, then device id). Each
process compiles and computes only its own devices' blocks, and the results are
gathered onto every process with ``multihost_utils.process_allgather``, so every process
returns the full :class:`RunResult`; progress lines are printed by process 0 alone, over
every process's runs. The devices must span all the processes, as many of each
(the gather is a collective over all of them). A run gives the same bits as in one
process with the same number of runs per device: tests/train/test_multiprocess.py runs
2 local CPU processes (a localhost coordinator, gloo collectives, JAX's CPU default)
against 1 process with 2 devices. It has not been run on separate machines.
``socialjax train --coordinator HOST:PORT --num-processes N --process-id I`` does this
from the command line (process 0 alone writes the results).

Arguments of :func:`run` beyond the environment, config and seeds:

- ``chunk``: compute the runs this many at a time on each device, so that a run's bits
  do not depend on the batch it ran in (see "Bits"); ``None`` (default) vmaps over a
  device's runs together up to the backend's ``MOST_TOGETHER`` (16 on the CPU; all of
  them elsewhere) and falls back to the largest chunk that fits when they do not fit in
  memory together.
- ``memory``: bytes a device may use (default: what the device holds, see
  :func:`~socialjax.train.memory.device_memory`); a program that needs more is chunked,
  or refused with a ``MemoryError`` when one run alone needs more.
- ``segment``: updates between snapshots (default: ``config.log_every`` when progress
  lines are printed, all of them otherwise). After every segment but the last,
  ``on_segment(snapshot)`` receives a :class:`Snapshot` of the runs (their complete
  state and the metrics so far, on the host): save it, and ``run(..., resume=snapshot)``
  continues from it with the same bits as a run that was never stopped (same config,
  seeds and runs per device). In the main thread of a single process, where signals
  can be caught, the runs compute one update per compiled call (each dispatched before
  the one ahead is read back); elsewhere one call per segment. The cut never changes a
  run's bits. A first Ctrl-C or SIGTERM stops the runs after the update under way by
  raising :class:`Interrupted`, which holds a snapshot of the updates done (handed to
  ``on_segment`` first); a second, or one while compiling, raises ``KeyboardInterrupt``
  at once (:mod:`socialjax.train.interrupts`). An allocation that fails on the device
  part-way raises :class:`~socialjax.train.engine.DeviceMemoryError` naming the sizes.
- ``progress``: print a line after every segment (every ``config.log_every`` updates
  unless ``segment`` is given) with the runs' mean reward per step and return at that
  update; ``False`` prints nothing; a :class:`~socialjax.train.progress.Progress` prints
  through it. The lines are printed between the compiled calls, not from inside them:
  JAX never caches a program that calls the host.
- ``devices``: where the runs go (default: ``jax.devices()``, which is this process's
  devices unless ``jax.distributed`` joined several processes; see above).
- ``log``: trackers (:mod:`socialjax.train.tracking`): tracker objects, the names of
  :data:`~socialjax.train.tracking.TRACKERS` (made under
  ``<log_dir>/<label>/<date-time>[-n]/<kind>``, a folder of their own, and closed by
  :func:`run`), or the owner's :class:`~socialjax.train.tracking.Listeners`. The
  trackers, the progress lines and the live display are the engine's listeners: a
  listener that fails (a full disk, W&B without a login) is dropped with one line on
  stderr and the training goes on; :attr:`RunResult.listener_failures` lists them. A
  tracker object given to two calls writes the second run beside the first (in
  ``<folder>/2/``), never over it.
- ``compile_cache``: ``True`` (default) turns JAX's persistent compilation cache on, in
  the folder ``SOCIALJAX_COMPILATION_CACHE`` chooses (``~/.cache/socialjax/jax-cache``
  unless set; ``0`` turns it off), so that a rerun reads its programs from disk instead
  of compiling them; a path puts the cache there; ``False`` leaves JAX's settings as
  they are. See :mod:`socialjax.train.compilation`.

The pieces: :mod:`socialjax.train.engine` (the engine, over any job),
:mod:`socialjax.train.devices` (blocks of runs on devices),
:mod:`socialjax.train.memory` (fitting them into a device's memory),
:mod:`socialjax.train.interrupts` (Ctrl-C and SIGTERM after the update under way).
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

from socialjax.train.config import TrainConfig
from socialjax.train.engine import Interrupted, Snapshot, check_counts, checked_seeds, run_job, run_keys
from socialjax.train.engine import replay as replay_job
from socialjax.train.formats import config_to_dict
from socialjax.train.population import make_train
from socialjax.train.progress import Progress
from socialjax.train.tracking import Listeners, Tracker, as_listeners

__all__ = ["Interrupted", "PopulationJob", "RunResult", "Snapshot", "replay", "run", "run_keys"]


@dataclasses.dataclass
class RunResult:
    """Results of :func:`run`, every array with leading axes ``(G, S)``: grid point, seed.

    ``metrics``: numpy arrays (see :func:`socialjax.train.make_train`); ``states``: the
    trained :class:`~socialjax.train.population.TrainState` (numpy leaves);
    ``grid``: ``{hyperparameter: (G,)}``; ``seeds``: ``(S,)``; ``nan_runs``: a line per
    run whose learning halted on a non-finite loss; ``seconds``: wall time of the call,
    compilation included; ``compile_seconds``: the part spent compiling;
    ``per_device``: runs computed on each device (padding included); ``chunk``: runs
    computed together within a device (``None``: all ``per_device`` at once), which with
    the seed, config and backend fixes a run's bits; ``memory_bytes``: what the compiled
    per-device program needs (XLA's memory analysis); ``compile_times``: the seconds each
    compiled stage took (``init``, ``N update(s)``, ``finish``; the updates' program one
    entry per program tried, more than one when the first did not fit the device);
    ``listener_failures``: a line per tracker (or progress lines, live display) that
    failed while the runs trained and was dropped, the training going on without it."""

    config: TrainConfig
    env_name: str
    seeds: np.ndarray
    grid: dict[str, np.ndarray]
    metrics: dict[str, np.ndarray]
    states: Any
    nan_runs: list[str]
    seconds: float
    compile_seconds: float = 0.0
    per_device: int = 1
    chunk: int | None = None
    memory_bytes: int = 0
    compile_times: dict[str, tuple[float, ...]] = dataclasses.field(default_factory=dict)
    listener_failures: list[str] = dataclasses.field(default_factory=list)

    @property
    def num_runs(self) -> int:
        return int(len(self.seeds) * len(next(iter(self.grid.values()))))

    def point(self, g: int, config: TrainConfig | None = None) -> RunResult:
        """Grid point ``g`` alone (leading axes ``(1, S)``), as if run by itself with
        ``config`` (default: this result's config)."""
        take = lambda x: np.asarray(x)[g:g + 1]  # noqa: E731
        return dataclasses.replace(
            self, config=self.config if config is None else config, grid={k: take(v) for k, v in self.grid.items()},
            metrics={k: take(v) for k, v in self.metrics.items()}, states=jax.tree_util.tree_map(take, self.states),
            nan_runs=[line for line in self.nan_runs if f"grid point {g} " in line or "grid point" not in line],
        )


def run(
    env,
    config: TrainConfig,
    seeds: int | Sequence[int] = 1,
    *,
    params=None,
    base_seed: int = 0,
    devices: Sequence[jax.Device] | None = None,
    progress: bool | Progress = True,
    label: str = "",
    chunk: int | None = None,
    memory: int | None = None,
    segment: int | None = None,
    on_segment: Callable[[Snapshot], None] | None = None,
    resume: Snapshot | None = None,
    compile_cache: bool | str | os.PathLike = True,
    log: Sequence[str | Tracker] | Listeners = (),
    log_dir: str | os.PathLike = "runs",
) -> RunResult:
    """Train ``len(grid) x len(seeds)`` runs in one call: equal blocks of runs, one per
    device, each device running the same compiled single-device program; a
    :class:`Snapshot` to ``on_segment`` every ``segment`` updates, and from
    ``resume`` when given; every update's metrics, per grid point and seed, to the
    trackers ``log`` (see the module docstring). The population is a job of the one
    engine (:func:`socialjax.train.engine.run_job`); the other arguments are described
    in the module docstring."""
    seeds = checked_seeds(seeds)
    check_counts(chunk=chunk, memory=memory, segment=segment)
    config.validate()
    job = PopulationJob(make_train(env, config, params=params), _env_name(env))
    listeners, made = as_listeners(log, log_dir, label or job.env_name)  # a given Listeners: the owner's
    try:
        out = run_job(job, seeds, base_seed=base_seed, devices=devices, progress=progress, label=label,
                      chunk=chunk, memory=memory, segment=segment, on_segment=on_segment, resume=resume,
                      compile_cache=compile_cache, trackers=listeners)
    finally:
        listeners.close(made)
    nan_runs = _nan_runs(out.metrics, out.grid, config, out.seeds)
    return RunResult(config, _env_name(env), out.seeds, out.grid, out.metrics, out.states, nan_runs, out.seconds,
                     out.compile_seconds, out.per_device, out.chunk, out.memory_bytes, out.compile_times,
                     out.listener_failures)


def replay(result: RunResult, env, log: Listeners, label: str = "") -> list[str]:
    """Stream a finished population run that was not trained in this process (read back
    from disk) to ``log`` as :func:`run` streamed it while it trained: opened with its
    runs, every update's tracked values, the evaluation as the summary
    (:func:`socialjax.train.engine.replay`); ``env`` is the environment it trained on.
    The finish's metrics are the ``eval/...`` ones (the halting bookkeeping is not
    tracked). Returns the lines of the listeners that failed."""
    job = PopulationJob(make_train(env, result.config), _env_name(env))
    runs = {k: np.reshape(v, (-1, *np.shape(v)[2:])) for k, v in result.metrics.items()}  # (G, S, ...) -> (R, ...)
    extra = {k: v for k, v in runs.items() if k.startswith("eval/")}
    return replay_job(job, result.seeds, {k: v for k, v in runs.items() if k not in extra}, extra, log, label)


@dataclasses.dataclass(frozen=True, eq=False)
class PopulationJob:
    """A population as a job of the engine (:class:`socialjax.train.engine.Job`):
    ``train = make_train(env, config)``'s stages, the config's number of updates and
    hyperparameter grid, progress lines of the learners' reward per step and return."""

    train: Any  # make_train(env, config): init, updates, finish, config, plan
    env_name: str = ""

    #: what a progress line and a live display show: the learners' mean reward per step and return
    headline = ("reward_rate", "return")

    @property
    def num_updates(self) -> int:
        return self.train.config.num_updates

    @property
    def log_every(self) -> int:
        return self.train.config.log_every

    @property
    def grows_with(self) -> str:
        config = self.train.config
        return (f"num_envs ({config.num_envs}) x rollout_len ({config.rollout_len}) (the stored rollout), the "
                f"minibatch (the rollout's samples / num_minibatches ({config.num_minibatches})) and the network "
                f"(hidden={config.hidden}, channels={config.channels}): reduce num_envs or rollout_len, or raise "
                "num_minibatches")

    def init(self, key, hparams):
        return self.train.init(key, hparams)

    def updates(self, state, start, hparams, *, length: int):
        return self.train.updates(state, start, hparams, length=length)

    def finish(self, state, hparams):
        return self.train.finish(state, hparams)

    def hparam_grid(self) -> dict[str, np.ndarray]:
        return self.train.config.hparam_grid()

    @property
    def meta(self) -> dict[str, Any]:
        return {"env": self.env_name, "config": config_to_dict(self.train.config)}

    def tracked(self, metrics: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """A segment's metrics (``(R, K, ...)``, see :func:`~socialjax.train.make_train`) as
        numbers per run and update: the per-game ones (social metrics, ``episodes``,
        ``events/...``) as they are, the per-member and per-learner ones (``reward_rate``,
        ``return``, losses) as the mean over the learners (NaN where none has a value, e.g.
        no episode ended) and each member's own (``NAME/learner_0``, ``NAME/tft_2``:
        :meth:`members`); ``hparams/...`` only under PBT, where they change; not the
        bookkeeping (``parents``, ``seat_count``, ``halted``)."""
        evolving = self.train.config.selection == "pbt"
        return _per_run({name: v for name, v in metrics.items()
                         if name not in UNTRACKED and (evolving or not name.startswith("hparams/"))},
                        lead=2, members=self.members)

    def summarised(self, extra: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The evaluation of the trained populations (``eval/...``, see
        :mod:`~socialjax.train.evaluation`) as numbers per run: the per-game ones as
        they are, the per-member ones (``eval/reward_rate``) as the mean over the learners
        and each member's own; not the cross-play matrix."""
        return _per_run({name: v for name, v in extra.items() if name.startswith("eval/")}, lead=1,
                        members=self.members)

    @property
    def members(self) -> tuple[str, ...]:
        """The population's members as trackers name them: ``learner_0 .. learner_{L-1}``,
        then each scripted member by its bot and member index (``tft_2``)."""
        L = self.train.plan.num_learners
        return tuple(f"learner_{m}" for m in range(L)) + tuple(f"{bot}_{L + i}" for i, bot in
                                                                enumerate(self.train.config.scripted))

    @staticmethod
    def progress_line(step: int, values: dict[str, np.ndarray]) -> str:
        ret = values["return"][np.isfinite(values["return"])]  # NaN in runs where no episode ended this update
        return (f"reward/step {np.nanmean(values['reward_rate']):.3f}  "
                f"return {f'{ret.mean():.3f}' if ret.size else '-'}")


UNTRACKED = ("parents", "seat_count", "halted")  # per-update bookkeeping, not a training signal


def _per_run(metrics: dict[str, np.ndarray], lead: int, members: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Metrics with ``lead`` leading axes (run, and update) as float32 numbers: a value
    per game as it is; one per member or learner (one more axis, its members the first
    of ``members``) as the mean over the learners (NaN where none has a value, e.g. no
    episode ended) under its name and each member's under ``NAME/<member>``; anything
    with more axes (the cross-play matrix) left out."""
    num_learners = sum(m.startswith("learner_") for m in members)
    out = {}
    with warnings.catch_warnings():  # a mean over nothing is NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        for name, v in metrics.items():
            if v.ndim == lead:
                out[name] = np.asarray(v, np.float32)
            elif v.ndim == lead + 1:
                v = np.asarray(v, np.float32)
                out[name] = np.nanmean(v[..., :num_learners], axis=-1)
                out.update({f"{name}/{member}": v[..., m] for m, member in enumerate(members[:v.shape[-1]])})
    return out


def _nan_runs(metrics: dict[str, np.ndarray], grid: dict[str, np.ndarray], config: TrainConfig,
              seeds: np.ndarray) -> list[str]:
    """A line per run whose learning halted on a non-finite loss (``metrics``: ``(G, S, ...)``)."""
    G, S = metrics["nan_update"].shape[:2]
    nan_runs = []
    for g in range(G):
        for s in range(S):
            u = int(metrics["nan_update"][g, s])
            if u >= 0:
                point = ", ".join(f"{k}={grid[k][g]:g}" for k in config.sweep_axes())
                where = f"grid point {g} ({point}), " if point else ""
                nan_runs.append(
                    f"{where}seed {int(seeds[s])}: non-finite loss at update {u} "
                    f"(learner {int(metrics['nan_member'][g, s])}); its updates stopped there"
                )
    return nan_runs


def _env_name(env) -> str:
    name = getattr(env, "name", None) or type(getattr(env, "unwrapped", env)).__name__
    return str(name)
