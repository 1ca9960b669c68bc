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
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
from flax import struct

from socialjax import metrics as social
from socialjax.agents.learner import Learner, LearnerState, Rollout
from socialjax.agents.networks import encoder_spec, resolve_conv
from socialjax.agents.ppo import ActorCriticLearner, advantage_alignment
from socialjax.agents.scripted import Scripted, make_scripted, raw_reward
from socialjax.core.spaces import Discrete
from socialjax.train.config import TrainConfig
from socialjax.train.progress import Progress
from socialjax.train.rewards import SeatShaping, make_shaping
from socialjax.train.seating import SeatPlan, make_plan
from socialjax.train.seated import act_and_step, coplayer_view, learner_obs
from socialjax.train.selection import select

EVAL_ROWS = 4  # random seating: seatings sampled for the population evaluation
SOCIAL_KEYS = ("collective_return", "efficiency", "equality", "sustainability", "peace")


@struct.dataclass
class TrainState:
    """What ``train`` returns besides metrics: the learners (stacked on axis ``L``) and
    whether the run halted on a non-finite loss."""

    learners: LearnerState
    halted: jax.Array  # () bool


def make_learner(env, config: TrainConfig, seats_per_learner: int, params=None) -> Learner:
    """The learner object for ``config.algo`` on ``env``'s observation and action spaces.
    ``config.conv="auto"`` is resolved for ``jax.default_backend()`` (patch convolutions on
    the CPU, XLA's elsewhere)."""
    params = env.default_params if params is None else params
    space = env.observation_space(params)
    if config.coplayer_id:  # every scripted member, held-out bots too, must be describable
        from socialjax.train.seated import coplayer_space

        members = tuple(make_scripted(n, env) for n in dict.fromkeys(config.scripted + config.background))
        space = coplayer_space(space, members, env.num_agents)
    action_space = env.action_space(params)
    if not isinstance(action_space, Discrete):
        raise ValueError(f"the learners need a Discrete action space; {env!r} has {action_space}")
    spec = encoder_spec(space, config.network)
    # "auto" becomes a concrete convolution here, for the backend the program will run on
    common = dict(hidden=config.hidden, recurrent=config.recurrent, embed_dim=config.embed_dim,
                  channels=config.channels,
                  conv=resolve_conv(config.conv), precision=config.precision)
    if config.algo in ("ppo", "a2c"):
        return ActorCriticLearner(
            space, spec, action_space.n, algo=config.algo, update_epochs=config.update_epochs,
            num_minibatches=config.num_minibatches, anneal_lr=config.anneal_lr, **common,
        )
    from socialjax.agents.dqn import DQNLearner

    common.pop("recurrent")
    return DQNLearner(
        space, spec, action_space.n, buffer_rollouts=config.buffer_rollouts, updates_per_rollout=config.dqn_updates,
        batch_size=config.dqn_batch, n_step=config.n_step, exploration=config.exploration,
        target_update_every=config.target_update_every, anneal_lr=config.anneal_lr,
        rollout_len=config.rollout_len, seats=seats_per_learner, **common,
    )


def make_train(env, config: TrainConfig, params=None, progress: Progress | None = None) -> Callable:
    """Build ``train(key, hparams=None) -> (TrainState, metrics)``.

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
    N = env.num_agents
    plan = make_plan(config, N)
    learner = make_learner(env, config, plan.seats_per_learner, env_params)
    scripted = tuple(make_scripted(name, env) for name in config.scripted)
    L, E, T, U = plan.num_learners, plan.num_envs, config.rollout_len, config.num_updates
    M, H = plan.seats_per_learner, learner.hidden_size
    if config.selection != "none" and L < 2:
        raise ValueError(f"selection={config.selection!r} needs at least 2 learners, the population has {L}")
    if config.algo != "dqn" and not learner.recurrent and (T * M) % config.num_minibatches:
        raise ValueError(f"{T * M} samples per learner (rollout_len x {M} seats) do not split into "
                         f"{config.num_minibatches} minibatches")
    if config.algo != "dqn" and learner.recurrent and M % config.num_minibatches:
        raise ValueError(f"recurrent learners split their {M} seats into {config.num_minibatches} minibatches: "
                         "not divisible")
    event_keys = tuple(getattr(env, "event_keys", ()))
    shaping = make_shaping(config, L, plan.num_members, N)
    hp_names = config.hparam_names()
    evaluator = None
    if config.evaluate:
        from socialjax.train.evaluation import make_evaluator

        evaluator = make_evaluator(env, env_params, config, learner, L, scripted)

    def resolve(hparams):
        h = config.scalar_hparams() if hparams is None else {**_scalars(config), **hparams}
        return {k: jnp.asarray(v, jnp.float32) for k, v in h.items()}

    def init(key: jax.Array, hparams: dict[str, Any] | None = None) -> dict[str, Any]:
        """The run's state before its first update (``train.updates`` carries it on)."""
        h = resolve(hparams)
        member_h = {k: jnp.broadcast_to(h[k], (L,)) for k in hp_names if k in learner.hparams}
        key, key_init, key_seat, key_env = jax.random.split(key, 4)
        states = jax.vmap(learner.init)(jax.random.split(key_init, L), member_h)
        seating = _seat(plan, scripted, key_seat, config.coplayer_id)
        env_carry = _reset_games(env, env_params, key_env, E, N, H, event_keys, shaping)
        carry = dict(
            states=states, seating=seating, games=env_carry, halted=jnp.zeros((), bool),
            nan_update=jnp.full((), -1, jnp.int32), nan_member=jnp.full((), -1, jnp.int32),
            fit_sum=jnp.zeros((L,), jnp.float32), fit_count=jnp.zeros((), jnp.float32),
        )
        return {"key": key, "carry": carry}

    def updates(state: dict[str, Any], start, hparams: dict[str, Any] | None = None, *, length: int = U):
        """Updates ``start .. start + length - 1`` of the run: ``(state, metrics)`` with a
        leading ``length`` axis on the per-update metrics. Update ``i`` draws its key from
        the run's key and ``i`` alone, so any split into segments gives the same run."""
        h = resolve(hparams)

        def one_update(carry, xs):
            idx, key = xs
            progress_frac = idx.astype(jnp.float32) / U
            key_seat, key_env, key_roll, key_upd, key_sel = jax.random.split(key, 5)
            seating, games = carry["seating"], carry["games"]
            if plan.dynamic:  # new seats, fresh games
                seating = _seat(plan, scripted, key_seat, config.coplayer_id)
                games = _reset_games(env, env_params, key_env, E, N, H, event_keys, shaping)
            with jax.named_scope("rollout"):  # the scopes name the ops in a profile (scripts/gpu_check.py)
                games, rollout, seat_stats = _rollout(
                    env, env_params, learner, scripted, plan, carry["states"], seating, games, key_roll,
                    progress_frac, T, shaping, h,
                )
            states = carry["states"]
            with jax.named_scope("learn"):
                prep = jax.vmap(learner.prepare)(states, rollout)
                if config.algo != "dqn":
                    prep = _align(prep, rollout, seating, plan, h, T)
                keys = jax.random.split(key_upd, L)
                new_states, stats = jax.vmap(learner.update, in_axes=(0, 0, 0, 0, None))(states, rollout, prep, keys,
                                                                                         progress_frac)
            bad = ~jnp.isfinite(stats["loss"]) | ~_all_finite(new_states.params)
            newly = jnp.any(bad) & ~carry["halted"]
            halted = carry["halted"] | jnp.any(bad)
            states = jax.tree_util.tree_map(lambda new, old: jnp.where(halted, old, new), new_states, states)
            nan_update = jnp.where(newly, idx, carry["nan_update"])
            nan_member = jnp.where(newly, jnp.argmax(bad).astype(jnp.int32), carry["nan_member"])
            # selection on mean reward per step since the last selection
            fit_sum = carry["fit_sum"] + seat_stats["reward_rate"][:L]
            fit_count = carry["fit_count"] + 1.0
            do_select = ((idx + 1) % config.select_every == 0) & (config.selection != "none") & ~halted
            selected, parents = select(config, states, fit_sum / fit_count, key_sel)
            states = jax.tree_util.tree_map(lambda new, old: jnp.where(do_select, new, old), selected, states)
            parents = jnp.where(do_select, parents, jnp.arange(L, dtype=jnp.int32))
            fit_sum = jnp.where(do_select, 0.0, fit_sum)
            fit_count = jnp.where(do_select, 0.0, fit_count)
            out = dict(seat_stats)
            out.update({k: v for k, v in stats.items()})
            out.update({f"hparams/{k}": v for k, v in states.hparams.items()})
            out.update(parents=parents, halted=halted)
            if progress is not None and config.log_every:
                jax.lax.cond(
                    (idx + 1) % config.log_every == 0,
                    lambda: progress.report(idx, reward=jnp.nanmean(seat_stats["reward_rate"][:L]),
                                            ret=jnp.nanmean(seat_stats["return"][:L])),
                    lambda: None,
                )
            carry = dict(
                states=states, seating=seating, games=games, halted=halted, nan_update=nan_update,
                nan_member=nan_member, fit_sum=fit_sum, fit_count=fit_count,
            )
            return carry, out

        start = jnp.asarray(start, jnp.int32)
        keys = jax.random.split(state["key"], U)
        if length != U:
            keys = jax.lax.dynamic_slice_in_dim(keys, start, length)
        carry, metrics = jax.lax.scan(one_update, state["carry"], (start + jnp.arange(length, dtype=jnp.int32), keys))
        return {"key": state["key"], "carry": carry}, metrics

    def finish(state: dict[str, Any], hparams: dict[str, Any] | None = None):
        """``(TrainState, metrics)`` after the last update: ``nan_update``, ``nan_member``
        and, with ``config.evaluate``, the evaluation."""
        key, carry = state["key"], state["carry"]
        metrics = {"nan_update": carry["nan_update"], "nan_member": carry["nan_member"]}
        if evaluator is not None:
            key_eval, key_rows = jax.random.split(jax.random.fold_in(key, U))
            # the training seating: its one row in the fixed modes, a few fresh draws otherwise
            rows = plan.seat(key_rows)[0][: EVAL_ROWS if plan.dynamic else 1]
            metrics.update(evaluator(carry["states"], key_eval, rows))
        return TrainState(learners=carry["states"], halted=carry["halted"]), metrics

    def train(key: jax.Array, hparams: dict[str, Any] | None = None):
        state, metrics = updates(init(key, hparams), 0, hparams)
        final, extra = finish(state, hparams)
        return final, {**metrics, **extra}

    train.init, train.updates, train.finish = init, updates, finish
    train.config = config
    train.env = env
    train.plan = plan
    train.learner = learner
    train.scripted = scripted
    return train


def learner_hparams(config: TrainConfig) -> tuple[str, ...]:
    from socialjax.train.config import ACTOR_CRITIC_HPARAMS, DQN_HPARAMS

    return DQN_HPARAMS if config.algo == "dqn" else ACTOR_CRITIC_HPARAMS


def _scalars(config: TrainConfig) -> dict[str, float]:
    """The config's hyperparameters, taking the first value of swept ones (overridden)."""
    return {k: float(v[0]) for k, v in config.hparam_grid().items()}


def _all_finite(tree) -> jax.Array:
    """``(L,)``: every leaf of member ``l`` is finite."""
    leaves = jax.tree_util.tree_leaves(tree)
    return jnp.stack([jnp.all(jnp.isfinite(x.reshape(x.shape[0], -1)), axis=1) for x in leaves]).all(axis=0)


# ------------------------------------------------------------------------------- seating
def _seat(plan: SeatPlan, scripted: tuple[Scripted, ...], key: jax.Array, coplayer_id: bool) -> dict[str, Any]:
    key_seat, key_slot = jax.random.split(key)
    assign, order = plan.seat(key_seat)
    keys = jax.random.split(key_slot, max(len(scripted), 1))
    slots = tuple(s.init_slot(k, plan.num_envs * plan.num_seats) for s, k in zip(scripted, keys))
    out = {"assign": assign, "order": order, "slots": slots}
    if coplayer_id:  # the seats' view of their co-players, fixed for the seating's games
        out["view"] = coplayer_view(scripted, plan.num_learners, assign.reshape(-1), slots, plan.num_seats)
    return out


def _reset_games(env, params, key, E, N, H, event_keys, shaping: SeatShaping) -> dict[str, Any]:
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(key, E), params)
    traces = {"traces": jnp.zeros((E, N), jnp.float32)} if shaping.traces else {}
    return {
        **traces,
        "obs": obs,
        "state": state,
        "reset": jnp.ones((E, N), bool),
        "hidden": jnp.zeros((E * N, H), jnp.float32),
        "ep_return": jnp.zeros((E, N), jnp.float32),
        "acc": jax.vmap(lambda _: social.init(N, event_keys))(jnp.arange(E)),
    }


# ------------------------------------------------------------------------------- rollout
def _flat(x):
    return x.reshape(x.shape[0] * x.shape[1], *x.shape[2:])


def _rollout(env, params, learner, scripted, plan: SeatPlan, states, seating, games, key, progress_frac, T,
             shaping: SeatShaping, h):
    """``T`` steps of all games; returns the games, the learners' :class:`Rollout`
    ``(L, T, M, ...)`` (on the shaped reward) and per-member statistics for this update
    (on the environment's own)."""
    E, N, L = plan.num_envs, plan.num_seats, plan.num_learners
    P = plan.num_members
    assign = seating["assign"].reshape(-1)
    seats = plan.learner_seats(seating["order"])
    event_metrics = tuple(social.EVENT_PREFIX + k for k in getattr(env, "event_keys", ()))

    view = seating.get("view")

    def gather(x):  # (E, N, ...) -> (L, M, ...)
        return seats.gather(_flat(x))

    def step(games, key):
        key_act, key_script, key_env = jax.random.split(key, 3)
        reset_l = gather(games["reset"])
        out = act_and_step(env, params, learner, states, seats, scripted, L, assign, seating["slots"], games["obs"],
                           games["state"], reset_l, seats.gather(games["hidden"]), key_act, key_script,
                           jax.random.split(key_env, E), progress_frac, view=view)
        obs, state, reward, done, info = out.obs, out.state, out.reward, out.done, out.info
        raw = raw_reward(info, reward)
        shaped, traces = shaping.shape(reward, games.get("traces"), assign, h)
        acc, last, ended = jax.vmap(social.update)(games["acc"], raw, done, info)
        ep_return = games["ep_return"] + raw
        seat_done = jnp.broadcast_to(done[:, None], (E, N))
        finished_return = jnp.where(seat_done, ep_return, 0.0)
        new_games = {
            "obs": obs,
            "state": state,
            "reset": seat_done,
            "hidden": seats.scatter(games["hidden"], out.hidden),
            "ep_return": jnp.where(seat_done, 0.0, ep_return),
            "acc": acc,
        }
        if shaping.traces:  # the smoothed rewards restart with every episode
            new_games["traces"] = jnp.where(seat_done, 0.0, traces)
        record = {
            "obs": out.obs_l,
            "reset": reset_l,
            "action": out.action,
            "reward": gather(shaped),
            "done": gather(seat_done),
            "aux": out.aux,
            "seat_reward": raw,
            "finished_return": finished_return,
            "seat_done": seat_done,
            "social": {k: jnp.where(ended, last[k], jnp.nan) for k in SOCIAL_KEYS},
            # each event's total over the episode, summed over the players
            "events": {k: jnp.where(ended, last[k].sum(axis=-1), jnp.nan) for k in event_metrics},
            "ended": ended,
        }
        return new_games, record

    hidden0 = seats.gather(games["hidden"])
    games, rec = jax.lax.scan(step, games, jax.random.split(key, T))
    swap = lambda x: jnp.swapaxes(x, 0, 1)  # (T, L, M, ...) -> (L, T, M, ...)
    rollout = Rollout(
        obs=jax.tree_util.tree_map(swap, rec["obs"]),
        reset=swap(rec["reset"]),
        action=swap(rec["action"]),
        reward=swap(rec["reward"]),
        done=swap(rec["done"]),
        aux=jax.tree_util.tree_map(swap, rec["aux"]),
        hidden0=hidden0,
        last_obs=jax.tree_util.tree_map(seats.gather, learner_obs(jax.tree_util.tree_map(_flat, games["obs"]), view)),
        last_reset=gather(games["reset"]),
        last_hidden=seats.gather(games["hidden"]),
    )
    # per-member statistics over the rollout
    seg = lambda x: jax.ops.segment_sum(x.reshape(-1), assign, P)
    seat_count = seg(jnp.ones((E * N,), jnp.float32))
    reward_sum = seg(rec["seat_reward"].sum(axis=0))
    ret_sum = seg(rec["finished_return"].sum(axis=0))
    ep_count = seg(rec["seat_done"].sum(axis=0).astype(jnp.float32))
    ended = rec["ended"].astype(jnp.float32)
    stats = {
        "return": ret_sum / jnp.where(ep_count > 0, ep_count, jnp.nan),
        "reward_rate": reward_sum / jnp.maximum(seat_count * T, 1.0),
        "seat_count": seat_count.astype(jnp.int32),
        "episodes": ended.sum(),
    }
    if plan.num_scripted:  # reward per step split by who the co-players are
        is_learner = (assign < L).reshape(E, N)
        others = is_learner.sum(axis=1, keepdims=True) - is_learner  # learners among each seat's co-players
        seat_reward = rec["seat_reward"].sum(axis=0).reshape(-1)
        for name, mask in (("vs_learners", others == N - 1), ("vs_scripted", others == 0)):
            held = seg(mask.reshape(-1).astype(jnp.float32))
            stats[f"reward_rate_{name}"] = seg(jnp.where(mask.reshape(-1), seat_reward, 0.0)) / jnp.where(
                held > 0, held * T, jnp.nan)
    for k, v in (*rec["social"].items(), *rec["events"].items()):
        ok = jnp.isfinite(v)
        stats[k] = jnp.where(ok, v, 0.0).sum() / jnp.where(ok.sum() > 0, ok.sum(), jnp.nan)
    return games, rollout, stats


def _align(prep, rollout: Rollout, seating, plan: SeatPlan, h, T):
    """Advantage Alignment across the seats of each game (a no-op when ``aa_beta`` is 0:
    the extra term is multiplied by it)."""
    E, N = plan.num_envs, plan.num_seats
    seats = plan.learner_seats(seating["order"])
    adv = prep["adv"]  # (L, T, M)
    to_seats = lambda x, dtype: seats.scatter(jnp.zeros((E * N, T), dtype), jnp.swapaxes(x, 1, 2)).T  # (T, E * N)
    flat = to_seats(adv, adv.dtype)
    done = to_seats(rollout.done, bool)
    # a game's seats all end together; scripted seats are False here, so take any seat
    aligned = advantage_alignment(flat.reshape(T, E, N), done.reshape(T, E, N).any(axis=-1), h["gamma"], h["aa_beta"])
    back = seats.gather(aligned.reshape(T, E * N).T)  # (L, M, T)
    return {**prep, "adv": jnp.swapaxes(back, 1, 2)}
