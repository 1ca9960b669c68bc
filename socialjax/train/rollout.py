"""One update's rollout in the population loop (:mod:`socialjax.train.population`):
seat the members, reset the games, play ``rollout_len`` steps of every game, and hand
each learner its :class:`~socialjax.agents.learner.Rollout` with the update's
per-member statistics; then, for learners whose ``prepare`` gives advantages,
Advantage Alignment across the seats of each game (:func:`align`).

The training seating is a :class:`~socialjax.train.seated.Seating` drawn from the
:class:`~socialjax.train.seating.SeatPlan` (:func:`draw_seating`); the games are a
:class:`~socialjax.train.seated.Games` with the training extras (social-metric
accumulators, returns so far, shaping traces).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from socialjax import metrics as social
from socialjax.agents.learner import Rollout
from socialjax.agents.ppo import advantage_alignment
from socialjax.agents.scripted import Scripted, raw_reward
from socialjax.agents.shaping import common_reward
from socialjax.train.rewards import SeatShaping
from socialjax.train.seated import Games, Seating, Table, act_and_step, coplayer_view, learner_obs, next_games
from socialjax.train.seating import SeatPlan

SOCIAL_KEYS = ("collective_return", "efficiency", "equality", "sustainability", "peace")


def draw_seating(plan: SeatPlan, scripted: tuple[Scripted, ...], key: jax.Array, coplayer_id: bool) -> Seating:
    """A seating of the plan's ``E`` games, the scripted members' fresh slots and, with
    ``coplayer_id``, the seats' view of their co-players (fixed for the seating's games)."""
    key_seat, key_slot = jax.random.split(key)
    assign, order = plan.seat(key_seat)
    keys = jax.random.split(key_slot, max(len(scripted), 1))
    slots = tuple(s.init_slot(k, plan.num_envs * plan.num_seats) for s, k in zip(scripted, keys))
    view = None
    if coplayer_id:
        view = coplayer_view(scripted, plan.num_learners, assign.reshape(-1), slots, plan.num_seats)
    return Seating(assign=assign, order=order, slots=slots, view=view)


def reset_games(env, params, key: jax.Array, num_envs: int, hidden_size: int, event_keys: tuple[str, ...],
                shaping: SeatShaping) -> Games:
    """``num_envs`` freshly reset games with the training extras at zero."""
    E, N = num_envs, env.num_agents
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(key, E), params)
    return Games(
        acc=jax.vmap(lambda _: social.init(N, event_keys))(jnp.arange(E)),
        ep_return=jnp.zeros((E, N), jnp.float32),
        hidden=jnp.zeros((E * N, hidden_size), jnp.float32),
        obs=obs,
        reset=jnp.ones((E, N), bool),
        state=state,
        traces=jnp.zeros((E, N), jnp.float32) if shaping.traces else None,
    )


def table(env, params, learner, plan: SeatPlan, scripted: tuple[Scripted, ...], seating: Seating) -> Table:
    """The :class:`~socialjax.train.seated.Table` of a training seating."""
    return Table(env, params, learner, plan.learner_seats(seating.order), scripted, plan.num_learners, seating)


def _flat(x):
    return x.reshape(x.shape[0] * x.shape[1], *x.shape[2:])


def _train_step(table: Table, states, shaping: SeatShaping, h, progress_frac, event_metrics):
    """The scan step of :func:`rollout`: ``(games, key) -> (games, record)``."""
    E, N = table.seats.num_envs, table.seats.num_seats
    assign = table.seat_member

    def gather(x):  # (E, N, ...) -> (L, M, ...)
        return table.seats.gather(_flat(x))

    def step(games: Games, key):
        key_act, key_script, key_env = jax.random.split(key, 3)
        out = act_and_step(table, states, games, key_act, key_script, jax.random.split(key_env, E),
                           training=True, progress_frac=progress_frac)
        raw = raw_reward(out.info, out.reward)
        shaped, traces = shaping.shape(out.reward, games.traces, assign, h)
        acc, last, ended = jax.vmap(social.update)(games.acc, raw, out.done, out.info)
        ep_return = games.ep_return + raw
        seat_done = jnp.broadcast_to(out.done[:, None], (E, N))
        new_games = next_games(games, table, out).replace(
            acc=acc,
            ep_return=jnp.where(seat_done, 0.0, ep_return),
            # the smoothed rewards restart with every episode
            traces=jnp.where(seat_done, 0.0, traces) if shaping.traces else None,
        )
        record = {
            "obs": out.obs_l,
            "reset": out.reset_l,
            "action": out.action,
            "reward": gather(shaped),
            "team_reward": gather(common_reward(raw)),
            "done": gather(seat_done),
            "aux": out.aux,
            "seat_reward": raw,
            "finished_return": jnp.where(seat_done, ep_return, 0.0),
            "seat_done": seat_done,
            "social": {k: jnp.where(ended, last[k], jnp.nan) for k in SOCIAL_KEYS},
            # each event's total over the episode, summed over the players
            "events": {k: jnp.where(ended, last[k].sum(axis=-1), jnp.nan) for k in event_metrics},
            "ended": ended,
        }
        return new_games, record

    return step


def rollout(table: Table, states, games: Games, key: jax.Array, progress_frac, T: int, shaping: SeatShaping, h):
    """``T`` steps of all games; returns the games, the learners' :class:`Rollout`
    ``(L, T, M, ...)`` (on the shaped reward) and per-member statistics for this update
    (on the environment's own, :func:`member_stats`)."""
    seats = table.seats
    event_metrics = tuple(social.EVENT_PREFIX + k for k in getattr(table.env, "event_keys", ()))
    hidden0 = seats.gather(games.hidden)
    step = _train_step(table, states, shaping, h, progress_frac, event_metrics)
    games, rec = jax.lax.scan(step, games, jax.random.split(key, T))
    swap = lambda x: jnp.swapaxes(x, 0, 1)  # (T, L, M, ...) -> (L, T, M, ...)
    ro = Rollout(
        obs=jax.tree_util.tree_map(swap, rec["obs"]),
        reset=swap(rec["reset"]),
        action=swap(rec["action"]),
        reward=swap(rec["reward"]),
        team_reward=swap(rec["team_reward"]),
        done=swap(rec["done"]),
        aux=jax.tree_util.tree_map(swap, rec["aux"]),
        hidden0=hidden0,
        last_obs=learner_obs(table, games, jax.tree_util.tree_map(_flat, games.obs)),
        last_reset=seats.gather(_flat(games.reset)),
        last_hidden=seats.gather(games.hidden),
    )
    return games, ro, member_stats(table, rec, T)


def member_stats(table: Table, rec: dict[str, Any], T: int) -> dict[str, jax.Array]:
    """Per-member statistics ``(P,)`` and the social and event metrics ``()`` of one
    rollout's records (see :func:`~socialjax.train.population.make_train`)."""
    E, N, L = table.seats.num_envs, table.seats.num_seats, table.seats.num_learners
    P = L + len(table.members)
    assign = table.seat_member
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
    if table.members:  # reward per step split by who the co-players are
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
    return stats


def align(prep: dict[str, jax.Array], ro: Rollout, table: Table, gamma: jax.Array, beta: jax.Array, T: int):
    """Advantage Alignment across the seats of each game (a no-op when ``beta`` is 0:
    the extra term is multiplied by it). ``gamma`` ``(L,)``: each learner's own discount
    (its ``state.hparams["gamma"]``, the one its GAE used), applied on its seats."""
    seats = table.seats
    E, N = seats.num_envs, seats.num_seats
    adv = prep["adv"]  # (L, T, M)
    to_seats = lambda x, dtype: seats.scatter(jnp.zeros((E * N, T), dtype), jnp.swapaxes(x, 1, 2)).T  # (T, E * N)
    flat = to_seats(adv, adv.dtype)
    done = to_seats(ro.done, bool)
    # each seat's discount: its learner's (scripted seats: 0, their advantages are 0 and unused)
    seat_gamma = seats.scatter(jnp.zeros((E * N,), gamma.dtype), jnp.broadcast_to(gamma[:, None], adv.shape[::2]))
    # a game's seats all end together; scripted seats are False here, so take any seat
    aligned = advantage_alignment(flat.reshape(T, E, N), done.reshape(T, E, N).any(axis=-1),
                                  seat_gamma.reshape(E, N), beta)
    back = seats.gather(aligned.reshape(T, E * N).T)  # (L, M, T)
    return {**prep, "adv": jnp.swapaxes(back, 1, 2)}
