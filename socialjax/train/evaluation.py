"""Evaluation after training, inside the same compiled ``train``.

A *scenario* is one row of ``N`` member indices, the same in each of ``eval_envs``
games played for ``eval_steps`` steps (members: the ``L`` learners, then the training
population's scripted members, then the held-out ``background`` bots). Each seat's
member is gathered once per scenario (not per step), so a scenario costs one forward
pass per seat, like training. Results are mean rewards per step (a scenario need not
finish an episode) and the social metrics of the episodes that did finish.

Outputs of :func:`make_evaluator` (``L`` learners, ``P`` training members):

- ``eval/crossplay`` ``(L, L)``: reward per step of learner ``i`` in seat 0 when every
  other seat holds learner ``j`` (the diagonal is self-play); only for ``N >= 2``.
- ``eval/reward_rate`` ``(P,)`` and ``eval/<social metric>``: the training seating
  (fixed modes: its seats; random seating: a fresh draw per game row).
- with ``background``: ``eval/focal_reward_rate`` ``(L,)``, scenario ``l`` seating
  learners ``l, l+1, ...`` (mod ``L``) in the first ``num_focal`` seats and the
  background bots (cycling) in the rest; ``eval/background_reward_rate`` ``(L,)``; and
  ``eval/focal/<social metric>`` averaged over those scenarios.

``evaluator.play_rows(states, rows, key)`` (:class:`Evaluator`) plays any scenarios, ``rows`` ``(R, N)``, and
returns each seat's reward per step ``(R, N)`` and the social metrics ``(R,)``;
:func:`play_seatings` does it for many trained populations at once (the Schelling
diagrams and the weis-incontext analysis of ``socialjax reproduce`` are made this way).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from socialjax import metrics as social
from socialjax.agents.scripted import make_scripted
from socialjax.train import seated
from socialjax.train.config import TrainConfig
from socialjax.train.learners import make_learner

SOCIAL_KEYS = ("collective_return", "efficiency", "equality", "sustainability", "peace")
MAX_CROSSPLAY = 32  # learners; above this the L x L matrix is skipped


@dataclasses.dataclass(frozen=True, eq=False)
class Evaluator:
    """The evaluation scenarios of a population (built by :func:`make_evaluator`): call
    it with the stacked learner states, a key and the training seating's rows for the
    ``eval/...`` metrics; :meth:`play_rows` plays any scenarios."""

    env: Any
    params: Any
    config: TrainConfig
    learner: Any
    num_learners: int  # L
    scripted: tuple  # the training population's scripted members (L, L + 1, ...)
    background: tuple  # the held-out bots, after them
    num_focal: int

    @property
    def members(self) -> tuple:
        return tuple(self.scripted) + self.background

    def play(self, states, row: jax.Array, key: jax.Array):
        """One scenario: ``row`` ``(N,) int32`` member per seat; returns each seat's reward
        per step ``(N,)`` and the social metrics ``()`` of the episodes that ended."""
        env, params, config, L, members = self.env, self.params, self.config, self.num_learners, self.members
        N = env.num_agents
        Ee = config.eval_envs or config.num_envs
        Te = config.eval_steps or config.rollout_len
        event_keys = tuple(getattr(env, "event_keys", ()))
        seat_states = seated.seat_learners(states, row, L)
        key_reset, key_slots, key_run = jax.random.split(key, 3)
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(key_reset, Ee), params)
        slots = tuple(m.init_slot(k, Ee * N) for m, k in zip(members, jax.random.split(key_slots, max(len(members),
                                                                                                      1))))
        table = seated.row_table(env, params, self.learner, members, L, row, slots, Ee, config.coplayer_id)

        def step(carry, key):
            games, total, sums, counts = carry
            key_act, key_script, key_env = jax.random.split(key, 3)
            new, (raw, _, done, info) = seated.step(table, seat_states, games, key_act, key_script,
                                                    jax.random.split(key_env, Ee))
            acc, last, ended = jax.vmap(social.update)(games.acc, raw, done, info)
            for_metric = {k: jnp.where(ended & jnp.isfinite(last[k]), last[k], 0.0).sum() for k in SOCIAL_KEYS}
            n_metric = {k: (ended & jnp.isfinite(last[k])).sum() for k in SOCIAL_KEYS}
            sums = {k: sums[k] + for_metric[k] for k in SOCIAL_KEYS}
            counts = {k: counts[k] + n_metric[k] for k in SOCIAL_KEYS}
            return (new.replace(acc=acc), total + raw.sum(axis=0), sums, counts), None

        games = seated.start(obs, state, N, self.learner.hidden_size)
        games = games.replace(acc=jax.vmap(lambda _: social.init(N, event_keys))(jnp.arange(Ee)))
        zeros = {k: jnp.zeros((), jnp.float32) for k in SOCIAL_KEYS}
        init = (games, jnp.zeros((N,), jnp.float32), zeros, {k: jnp.zeros((), jnp.int32) for k in SOCIAL_KEYS})
        (_, total, sums, counts), _ = jax.lax.scan(step, init, jax.random.split(key_run, Te))
        rate = total / (Ee * Te)  # (N,) reward per step per seat
        metrics = {k: sums[k] / jnp.where(counts[k] > 0, counts[k], jnp.nan) for k in SOCIAL_KEYS}
        return rate, metrics

    def play_rows(self, states, rows: jax.Array, key: jax.Array):
        """Any scenarios, ``rows`` ``(R, N)`` member per seat: each seat's reward per step
        ``(R, N)`` and the social metrics ``(R,)``."""
        return jax.vmap(self.play, in_axes=(None, 0, 0))(states, rows, jax.random.split(key, rows.shape[0]))

    def scenarios(self, seating_rows) -> list[tuple[str, jax.Array]]:
        """``[(kind, rows (R, N))]``: crossplay, the training seating, focal-vs-background."""
        N, L, B0 = self.env.num_agents, self.num_learners, self.num_learners + len(self.scripted)
        blocks = []
        if N >= 2 and L <= MAX_CROSSPLAY:
            i, j = np.meshgrid(np.arange(L), np.arange(L), indexing="ij")
            cross = np.concatenate([i.reshape(-1, 1), np.repeat(j.reshape(-1, 1), N - 1, axis=1)], axis=1)
            blocks.append(("cross", jnp.asarray(cross, jnp.int32)))
        blocks.append(("population", jnp.asarray(seating_rows, jnp.int32)))
        if self.background:
            focal = (np.arange(L)[:, None] + np.arange(self.num_focal)[None, :]) % L
            bg = B0 + (np.arange(N - self.num_focal) % len(self.background))
            blocks.append(("focal", jnp.asarray(np.concatenate([focal, np.tile(bg, (L, 1))], axis=1), jnp.int32)))
        return blocks

    def __call__(self, states, key: jax.Array, seating_rows) -> dict[str, jax.Array]:
        """All scenarios in one batch (one compiled scan, not one per kind)."""
        L, num_focal = self.num_learners, self.num_focal
        blocks = self.scenarios(seating_rows)
        rows = jnp.concatenate([r for _, r in blocks])
        rate, m = self.play_rows(states, rows, key)
        out, start = {}, 0
        for name, r in blocks:
            stop = start + r.shape[0]
            rate_b, m_b = rate[start:stop], {k: v[start:stop] for k, v in m.items()}
            start = stop
            if name == "cross":
                out["eval/crossplay"] = rate_b[:, 0].reshape(L, L)
            elif name == "population":
                P = L + len(self.scripted)
                flat_rows = r.reshape(-1)
                per_member = jax.ops.segment_sum(rate_b.reshape(-1), flat_rows, P)
                held = jax.ops.segment_sum(jnp.ones_like(rate_b.reshape(-1)), flat_rows, P)
                out["eval/reward_rate"] = per_member / jnp.where(held > 0, held, jnp.nan)
                out.update({f"eval/{k}": jnp.nanmean(v) for k, v in m_b.items()})
            else:
                out["eval/focal_reward_rate"] = rate_b[:, :num_focal].mean(axis=1)
                out["eval/background_reward_rate"] = rate_b[:, num_focal:].mean(axis=1)
                out.update({f"eval/focal/{k}": jnp.nanmean(v) for k, v in m_b.items()})
        return out


def make_evaluator(env, params, config: TrainConfig, learner, num_learners: int, scripted) -> Evaluator:
    """The :class:`Evaluator` of ``num_learners`` learners and the training population's
    ``scripted`` members, with ``config``'s background bots and evaluation sizes
    (``ValueError`` for a ``num_focal`` that leaves no focal or no background seat)."""
    N = env.num_agents
    background = tuple(_named("background", name, env) for name in config.background)
    num_focal = config.num_focal if config.num_focal is not None else max(1, N // 2)
    if background and not 1 <= num_focal < N:
        raise ValueError(f"num_focal must be between 1 and {N - 1} (the game has {N} seats), got {num_focal}")
    return Evaluator(env, params, config, learner, num_learners, tuple(scripted), background, num_focal)


def _named(field: str, name: str, env):
    """``make_scripted(name, env)``, its error naming the config ``field``."""
    try:
        return make_scripted(name, env)
    except ValueError as err:
        raise ValueError(f"{field}: {err}") from None


def play_seatings(env, config: TrainConfig, learners, rows, key: jax.Array, *, eval_envs: int, steps: int,
                  scripted: tuple[str, ...] = ()) -> np.ndarray:
    """Each seat's reward per step ``(S, R, N)`` when the seatings ``rows`` ``(R, N)`` are
    played by ``S`` populations: ``learners`` are ``S`` stacks of learner states (leaves
    ``(S, L, ...)``, networks built from ``config``), members ``L, L + 1, ...`` the
    ``scripted`` strategies by name; ``eval_envs`` games of ``steps`` steps per seating,
    all populations and seatings in one compiled call."""
    L = jax.tree_util.tree_leaves(learners)[0].shape[1]
    learner = make_learner(env, config, 1)
    settings = config.replace(eval_envs=eval_envs, eval_steps=steps, background=())
    evaluate = make_evaluator(env, env.default_params, settings, learner, L,
                              tuple(make_scripted(name, env) for name in scripted))
    S = jax.tree_util.tree_leaves(learners)[0].shape[0]
    play = jax.jit(jax.vmap(evaluate.play_rows, in_axes=(0, None, 0)))
    rate, _ = play(learners, jnp.asarray(rows, jnp.int32), jax.random.split(key, S))
    return np.asarray(rate, np.float64)
