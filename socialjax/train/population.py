"""The compiled population loop: ``make_train(env, config)`` returns a pure
``train(key, hparams=None) -> (TrainState, metrics)`` that runs a whole experiment,
rollouts, updates, selection and evaluation, in one ``lax.scan``.

One update:

1. seat the members (fixed modes: the same seating every time; random seating: a new
   one, and the games are reset);
2. roll out ``rollout_len`` steps of ``num_envs`` games: the learners act on their
   ``(L, M, ...)`` block of observations (one ``vmap`` over learners), the scripted
   members on theirs, the actions are scattered back to the seats;
3. each learner prepares its batch (PPO: GAE), Advantage Alignment optionally mixes the
   co-players' advantages seat by seat, and every learner updates (``vmap``);
4. a loss or parameter that is not finite halts this run's learning (the run keeps
   playing with its last good parameters; other runs in the batch are unaffected) and is
   recorded in ``metrics["nan_update"]``;
5. every ``select_every`` updates, selection (truncation, PBT, imitation) acts on the
   learners, ranked by their mean reward per step since the previous selection.

Metrics come back as arrays with a leading update axis ``U``: see :func:`make_train`.
The rollout itself is :mod:`socialjax.train.rollout`; the run's state between updates is
a :class:`LoopState`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from socialjax.agents.learner import Learner, LearnerState
from socialjax.agents.scripted import Scripted, make_scripted
from socialjax.train.config import TrainConfig
from socialjax.train.evaluation import Evaluator, make_evaluator
from socialjax.train.learners import make_learner
from socialjax.train.progress import Progress
from socialjax.train.rewards import SeatShaping, make_shaping
from socialjax.train.rollout import align, draw_seating, reset_games, rollout, table
from socialjax.train.seated import Games, Seating
from socialjax.train.seating import SeatPlan, make_plan
from socialjax.train.selection import select

EVAL_ROWS = 4  # random seating: seatings sampled for the population evaluation


@struct.dataclass
class TrainState:
    """What ``train`` returns besides metrics: the learners (stacked on axis ``L``) and
    whether the run halted on a non-finite loss."""

    learners: LearnerState
    halted: jax.Array  # () bool


@struct.dataclass(kw_only=True)
class LoopState:
    """The run between updates: the ``learners`` (stacked on axis ``L``), the current
    ``seating`` and ``games``, the halt flag ``halted`` ``()`` with ``nan_update`` and
    ``nan_member`` ``() int32`` (-1 while finite), the selection fitness so far
    ``fit_sum`` ``(L,)`` over ``fit_count`` ``()`` updates, and the run's ``key`` (update
    ``i`` draws from it and ``i`` alone)."""

    # fields in this order: the leaf order of a checkpointed run state (results.py)
    fit_count: jax.Array
    fit_sum: jax.Array
    games: Games
    halted: jax.Array
    nan_member: jax.Array
    nan_update: jax.Array
    seating: Seating
    learners: LearnerState
    key: jax.Array


def make_train(env, config: TrainConfig, params=None, progress: Progress | None = None) -> Trainer:
    """Build the :class:`Trainer`: ``train(key, hparams=None) -> (TrainState, metrics)``.

    ``params``: the environment's params for every game (default ``env.default_params``),
    validated here, before anything is compiled; a batch of params is an error.
    ``hparams``: a dict of ``()`` numbers overriding the config's hyperparameters (this
    is how a sweep vmaps over them); by default the config's values, which must then be
    scalars. ``metrics`` (``U = num_updates``, ``P`` members, ``L`` learners):

    - ``return`` ``(U, P)``: mean return of the episodes each member finished in the
      update's rollout (NaN when none finished); ``reward_rate`` ``(U, P)``: mean reward
      per step held; ``seat_count`` ``(U, P)``: seats held; with scripted members,
      ``reward_rate_vs_learners`` and ``reward_rate_vs_scripted`` ``(U, P)``: the same
      over the seats whose co-players are all learners, or all scripted (NaN when none);
    - the social metrics ``collective_return``, ``efficiency``, ``equality``,
      ``sustainability``, ``peace`` ``(U,)``, averaged over the episodes that ended;
      ``episodes`` ``(U,)``; ``events/<key>`` ``(U,)`` for each of the environment's
      ``event_keys``: the event's total per episode, summed over the players (e.g.
      ``events/zaps_fired`` in the grid games), averaged like the social metrics;
    - learner statistics ``loss``, ... ``(U, L)``, ``hparams/<name>`` ``(U, L)``;
    - ``parents`` ``(U, L)``: after selection, the learner each one was copied from
      (itself when not replaced);
    - ``halted`` ``(U,)``, ``nan_update`` and ``nan_member`` ``()`` (-1 when finite);
    - with ``config.evaluate``: ``eval/...`` (see :mod:`socialjax.train.evaluation`).

    The same run in segments (what :func:`socialjax.train.run` does to checkpoint):
    ``state = train.init(key, hparams)``, then ``state, m = train.updates(state, start,
    hparams, length=K)`` for consecutive segments, then ``train.finish(state, hparams)``
    for the final learners, ``nan_update``/``nan_member`` and the evaluation.
    """
    config.validate()
    env_params = env.resolve_single_params(params)
    plan = make_plan(config, env.num_agents)
    learner = make_learner(env, config, plan.seats_per_learner, env_params)
    scripted = tuple(make_scripted(name, env) for name in config.scripted)
    L, M = plan.num_learners, plan.seats_per_learner
    if config.selection != "none" and L < 2:
        raise ValueError(f"selection={config.selection!r} needs at least 2 learners, the population has {L}")
    learner.check_batch(config, M)
    evaluator = make_evaluator(env, env_params, config, learner, L, scripted) if config.evaluate else None
    return Trainer(env=env, config=config, plan=plan, learner=learner, scripted=scripted, env_params=env_params,
                   shaping=make_shaping(config, L, plan.num_members, env.num_agents), evaluator=evaluator,
                   progress=progress)


@dataclasses.dataclass(frozen=True, eq=False)
class Trainer:
    """One compiled experiment (built by :func:`make_train`): call it, or run it in
    segments with :meth:`init`, :meth:`updates` and :meth:`finish`. Hashed by identity,
    so it can be a static argument of ``jax.jit``."""

    env: Any
    config: TrainConfig
    plan: SeatPlan
    learner: Learner
    scripted: tuple[Scripted, ...]
    env_params: Any
    shaping: SeatShaping
    evaluator: Evaluator | None
    progress: Progress | None = None

    @property
    def event_keys(self) -> tuple[str, ...]:
        return tuple(getattr(self.env, "event_keys", ()))

    def __call__(self, key: jax.Array, hparams: dict[str, Any] | None = None):
        """``(TrainState, metrics)`` of the whole run."""
        state, metrics = self.updates(self.init(key, hparams), 0, hparams)
        final, extra = self.finish(state, hparams)
        return final, {**metrics, **extra}

    def resolve(self, hparams: dict[str, Any] | None) -> dict[str, jax.Array]:
        """The run's hyperparameters ``{name: () float32}``: ``hparams`` over the config's."""
        config = self.config
        h = config.scalar_hparams() if hparams is None else {**_scalars(config), **hparams}
        return {k: jnp.asarray(v, jnp.float32) for k, v in h.items()}

    def _seating_and_games(self, key_seat: jax.Array, key_env: jax.Array) -> tuple[Seating, Games]:
        seating = draw_seating(self.plan, self.scripted, key_seat, self.config.coplayer_id)
        games = reset_games(self.env, self.env_params, key_env, self.plan.num_envs, self.learner.hidden_size,
                            self.event_keys, self.shaping)
        return seating, games

    def init(self, key: jax.Array, hparams: dict[str, Any] | None = None) -> LoopState:
        """The run's state before its first update (:meth:`updates` carries it on)."""
        h = self.resolve(hparams)
        L, learner = self.plan.num_learners, self.learner
        member_h = {k: jnp.broadcast_to(h[k], (L,)) for k in learner.hparams}
        key, key_init, key_seat, key_env = jax.random.split(key, 4)
        states = jax.vmap(learner.init)(jax.random.split(key_init, L), member_h)
        seating, games = self._seating_and_games(key_seat, key_env)
        return LoopState(
            fit_count=jnp.zeros((), jnp.float32), fit_sum=jnp.zeros((L,), jnp.float32), games=games,
            halted=jnp.zeros((), bool), nan_member=jnp.full((), -1, jnp.int32), nan_update=jnp.full((), -1, jnp.int32),
            seating=seating, learners=states, key=key,
        )

    def updates(self, state: LoopState, start, hparams: dict[str, Any] | None = None, *,
                length: int | None = None) -> tuple[LoopState, dict[str, jax.Array]]:
        """Updates ``start .. start + length - 1`` of the run (``length``: default all
        ``num_updates``): ``(state, metrics)`` with a leading ``length`` axis on the
        per-update metrics. Update ``i`` draws its key from the run's key and ``i`` alone,
        so any split into segments gives the same run."""
        U = self.config.num_updates
        length = U if length is None else length
        h = self.resolve(hparams)
        start = jnp.asarray(start, jnp.int32)
        keys = jax.random.split(state.key, U)
        if length != U:
            keys = jax.lax.dynamic_slice_in_dim(keys, start, length)
        return jax.lax.scan(lambda carry, xs: self._update(carry, xs, h), state,
                            (start + jnp.arange(length, dtype=jnp.int32), keys))

    def _update(self, carry: LoopState, xs, h):
        """One update (the module docstring's steps 1 to 5): ``(state, metrics)``."""
        config, plan, learner = self.config, self.plan, self.learner
        idx, key = xs
        progress_frac = idx.astype(jnp.float32) / config.num_updates
        key_seat, key_env, key_roll, key_upd, key_sel = jax.random.split(key, 5)
        seating, games = carry.seating, carry.games
        if plan.dynamic:  # new seats, fresh games
            seating, games = self._seating_and_games(key_seat, key_env)
        seated = table(self.env, self.env_params, learner, plan, self.scripted, seating)
        with jax.named_scope("rollout"):  # the scopes name the ops in a profile (scripts/gpu_check.py)
            games, ro, seat_stats = rollout(seated, carry.learners, games, key_roll, progress_frac, config.rollout_len,
                                            self.shaping, h)
        with jax.named_scope("learn"):
            new_states, stats = self._learn(carry.learners, ro, seated, h, key_upd, progress_frac)
        carry = _halt(carry, new_states, stats, idx)
        carry, parents = self._select(carry, seat_stats["reward_rate"][: plan.num_learners], idx, key_sel)
        out = {**seat_stats, **stats, **{f"hparams/{k}": v for k, v in carry.learners.hparams.items()}}
        out.update(parents=parents, halted=carry.halted)
        if self.progress is not None and config.log_every:
            jax.lax.cond(
                (idx + 1) % config.log_every == 0,
                lambda: self.progress.report(idx, reward=jnp.nanmean(seat_stats["reward_rate"][: plan.num_learners]),
                                             ret=jnp.nanmean(seat_stats["return"][: plan.num_learners])),
                lambda: None,
            )
        return carry.replace(seating=seating, games=games), out

    def _learn(self, states, ro, seated, h, key, progress_frac):
        """Every learner prepares its batch, Advantage Alignment mixes the advantages
        (learners that have them), and every learner updates: ``(new states, stats)``."""
        learner = self.learner
        prep = jax.vmap(learner.prepare)(states, ro)
        if learner.ALIGNS:  # each learner's own discount, the one its advantages used
            prep = align(prep, ro, seated, states.hparams["gamma"], h["aa_beta"], self.config.rollout_len)
        keys = jax.random.split(key, self.plan.num_learners)
        return jax.vmap(learner.update, in_axes=(0, 0, 0, 0, None))(states, ro, prep, keys, progress_frac)

    def _select(self, carry: LoopState, reward_rate: jax.Array, idx, key):
        """Selection on the mean reward per step since the last selection, every
        ``select_every`` updates: ``(state, parents (L,))``."""
        config, L = self.config, self.plan.num_learners
        fit_sum = carry.fit_sum + reward_rate
        fit_count = carry.fit_count + 1.0
        do_select = ((idx + 1) % config.select_every == 0) & (config.selection != "none") & ~carry.halted
        selected, parents = select(config, carry.learners, fit_sum / fit_count, key)
        states = jax.tree_util.tree_map(lambda new, old: jnp.where(do_select, new, old), selected, carry.learners)
        parents = jnp.where(do_select, parents, jnp.arange(L, dtype=jnp.int32))
        fit_sum = jnp.where(do_select, 0.0, fit_sum)
        fit_count = jnp.where(do_select, 0.0, fit_count)
        return carry.replace(learners=states, fit_sum=fit_sum, fit_count=fit_count), parents

    def finish(self, state: LoopState, hparams: dict[str, Any] | None = None):
        """``(TrainState, metrics)`` after the last update: ``nan_update``, ``nan_member``
        and, with ``config.evaluate``, the evaluation."""
        metrics = {"nan_update": state.nan_update, "nan_member": state.nan_member}
        if self.evaluator is not None:
            key_eval, key_rows = jax.random.split(jax.random.fold_in(state.key, self.config.num_updates))
            # the training seating: its one row in the fixed modes, a few fresh draws otherwise
            rows = self.plan.seat(key_rows)[0][: EVAL_ROWS if self.plan.dynamic else 1]
            metrics.update(self.evaluator(state.learners, key_eval, rows))
        return TrainState(learners=state.learners, halted=state.halted), metrics


def _halt(carry: LoopState, new_states, stats, idx) -> LoopState:
    """A loss or parameter that is not finite halts the run's learning: the learners keep
    their last good states, and the first such update and member are recorded."""
    bad = ~jnp.isfinite(stats["loss"]) | ~_all_finite(new_states.params)
    newly = jnp.any(bad) & ~carry.halted
    halted = carry.halted | jnp.any(bad)
    states = jax.tree_util.tree_map(lambda new, old: jnp.where(halted, old, new), new_states, carry.learners)
    return carry.replace(
        learners=states, halted=halted, nan_update=jnp.where(newly, idx, carry.nan_update),
        nan_member=jnp.where(newly, jnp.argmax(bad).astype(jnp.int32), carry.nan_member),
    )


def _scalars(config: TrainConfig) -> dict[str, float]:
    """The config's hyperparameters, taking the first value of swept ones (overridden)."""
    return {k: float(v[0]) for k, v in config.hparam_grid().items()}


def _all_finite(tree) -> jax.Array:
    """``(L,)``: every leaf of member ``l`` is finite."""
    leaves = jax.tree_util.tree_leaves(tree)
    return jnp.stack([jnp.all(jnp.isfinite(x.reshape(x.shape[0], -1)), axis=1) for x in leaves]).all(axis=0)
