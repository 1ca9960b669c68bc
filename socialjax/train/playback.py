"""Play a trained population: one compiled rollout of a chosen seating, with the
learners' recurrent state carried, and every state optionally rendered.

    train = sj.train.make_train(env, config)
    state, metrics = jax.jit(train)(jax.random.key(0))
    out = sj.train.play(train, state.learners, jax.random.key(1), num_steps=200, render=True)
    sj.viz.save_gif(out.frames, "trained.gif")
    out.rewards.sum(axis=0)              # (N,) return of each seat over the rollout
    sj.viz.Viewer.from_playback(out, train.env)   # step through it in Jupyter / HTML

A seating ``row`` ``(N,) int`` names the member in each seat: learners ``0 .. L-1``,
then the population's scripted members (``L ..``). By default it is the training
seating (fixed modes) or learner ``i mod L`` in seat ``i`` (random seating). Learners
act by sampling their policy (``greedy=False``) or by its most likely action
(actor-critic) / highest Q-value (DQN) with ``greedy=True``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from socialjax.train import seated
from socialjax.viz.video import (
    BOOKKEEPING,
    _render,
    can_render,
    game_quantities,
    in_event_order,
    in_table_order,
    player_events,
)


@dataclasses.dataclass
class Playback:
    """What :func:`play` returns (numpy arrays): ``rewards`` ``(T, N)``, ``actions``
    ``(T, N)``, ``dones`` ``(T,)``, and ``frames`` ``(T + 1, 8 H, 8 W, 3) uint8`` (the
    reset state, then the state after each step) when rendered, else ``None``;
    ``events`` ``{name: (T, N)}``: per seat, the environment's ``event_keys`` its ``info``
    carries (a rendered game), or every per-player ``info`` quantity, the ``event_keys``
    first (a game that does not render: a donor's ``reputation``, a partner choice);
    ``values`` ``{name: (T,)}``: the game-level ``info`` scalars of a game that does not
    render (a commons' ``stock``, the ``round``), else empty; ``members``: the member in
    each seat, ``"learner 0"`` or a scripted member's name."""

    row: np.ndarray
    rewards: np.ndarray
    actions: np.ndarray
    dones: np.ndarray
    frames: np.ndarray | None
    events: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    members: tuple[str, ...] = ()
    values: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)


def default_row(train) -> np.ndarray:
    """The seating :func:`play` uses when none is given (see the module docstring)."""
    plan = train.plan
    if not plan.dynamic:
        return np.asarray(plan.static_assign[0], np.int32)
    return (np.arange(plan.num_seats) % plan.num_learners).astype(np.int32)


def check_row(train, row: Sequence[int] | None) -> np.ndarray:
    """``row`` as an ``(N,) int32`` array of valid member indices (ValueError if not)."""
    plan = train.plan
    if row is None:
        return default_row(train)
    row = np.asarray(row)
    if row.shape != (plan.num_seats,) or not np.issubdtype(row.dtype, np.integer):
        raise ValueError(f"row must be {plan.num_seats} member indices (one per seat), got {row.tolist()}")
    if row.min() < 0 or row.max() >= plan.num_members:
        raise ValueError(
            f"row refers to members 0..{plan.num_members - 1} ({plan.num_learners} learners, "
            f"{plan.num_scripted} scripted), got {row.tolist()}"
        )
    return row.astype(np.int32)


def member_names(train, row: np.ndarray) -> tuple[str, ...]:
    """The member of each seat of ``row``: ``"learner m"``, or a scripted member's name."""
    L = train.plan.num_learners
    return tuple(f"learner {m}" if m < L else train.scripted[m - L].name for m in row.tolist())


def play(
    train,
    learners,
    key: jax.Array,
    num_steps: int,
    *,
    row: Sequence[int] | None = None,
    render: bool = False,
    greedy: bool = False,
    params=None,
) -> Playback:
    """Roll out ``num_steps`` steps of one game with the trained ``learners`` (the
    ``TrainState.learners`` of one run, leaves with a leading learner axis ``L``).

    ``train`` is the :class:`~socialjax.train.population.Trainer` returned by
    :func:`~socialjax.train.make_train` (it carries the environment, the learner and the
    scripted members). Rendering needs a
    grid game (``env.render``).
    """
    env = train.env
    if isinstance(num_steps, bool) or not isinstance(num_steps, (int, np.integer)) or num_steps < 1:
        raise ValueError(f"num_steps must be a positive int, got {num_steps!r}")
    if render and not can_render(env):
        raise TypeError(f"{getattr(env, 'name', type(env).__name__)} has no render(state): only the grid games render")
    params = env.resolve_single_params(params)
    row = check_row(train, row)
    leaves = jax.tree_util.tree_leaves(learners.params)
    if not leaves or leaves[0].shape[0] != train.plan.num_learners:
        raise ValueError(
            f"learners must be the states of one run, with a leading axis of {train.plan.num_learners} learners; "
            "index a batched result first (e.g. jax.tree.map(lambda x: x[g, s], result.states.learners))"
        )
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        key = jax.random.key(int(key))
    rewards, actions, dones, quantities, frames = _play(
        train, jax.tree_util.tree_map(jnp.asarray, learners), key, jnp.asarray(row), params, int(num_steps),
        bool(render), bool(greedy),
    )
    if render:
        events, values = in_event_order(env, quantities), {}
    else:
        events, values = in_table_order(env, *game_quantities(quantities, env.num_agents))
    return Playback(
        row=row,
        rewards=np.asarray(rewards),
        actions=np.asarray(actions),
        dones=np.asarray(dones),
        frames=None if frames is None else np.asarray(frames),
        events=events,
        members=member_names(train, row),
        values=values,
    )


@partial(jax.jit, static_argnames=("train", "num_steps", "render", "greedy"))
def _play(train, learners, key, row, params, num_steps: int, render: bool, greedy: bool):
    env, learner, scripted = train.env, train.learner, train.scripted
    N, L = env.num_agents, train.plan.num_learners
    seat_states = seated.seat_learners(learners, row, L)
    key_reset, key_slots, key_run = jax.random.split(key, 3)
    obs, state = env.reset(key_reset, params)
    slots = tuple(m.init_slot(k, N) for m, k in zip(scripted, jax.random.split(key_slots, max(len(scripted), 1))))
    one = lambda x: x[None]  # noqa: E731  (a batch of one game)
    first = _render(env, state)[None] if render else None
    table = seated.row_table(env, params, learner, scripted, L, row, slots, 1, train.config.coplayer_id)

    def step(games, key_t):
        key_act, key_script, key_env = jax.random.split(key_t, 3)
        games, (raw, actions, done, info) = seated.step(table, seat_states, games, key_act, key_script,
                                                        key_env[None], greedy=greedy)
        frame = _render(env, jax.tree_util.tree_map(lambda x: x[0], games.state)) if render else None
        # a rendered game's events; else every quantity of its info, sorted out after the scan
        quantities = player_events(env, info, N) if render else {k: v for k, v in info.items() if k not in BOOKKEEPING}
        return games, (raw[0], actions[0], done[0], {k: v[0] for k, v in quantities.items()}, frame)

    games = seated.start(jax.tree_util.tree_map(one, obs), jax.tree_util.tree_map(one, state), N, learner.hidden_size)
    _, (rewards, actions, dones, events, frames) = jax.lax.scan(step, games, jax.random.split(key_run, num_steps))
    if render:
        frames = jnp.concatenate([first, frames])
    return rewards, actions, dones, events, frames


def as_run(tree: Any, *index: int) -> Any:
    """Pick one run out of batched results: ``as_run(result.states.learners, g, s)``."""
    return jax.tree_util.tree_map(lambda x: np.asarray(x)[index], tree)
