"""The tabular learners of the ``partner-punishment`` entry (ours): independent
Q-learners for the play and punish steps of ``partner_punishment`` (one action per step:
``partner_punishment_one_action``) and,
with partner selection, a selection table per agent over who leads in reputation, learnt
from the rewards of the agent's own game as the authors' selection network is
(Dasgupta & Musolesi 2023/2025; their released code,
nayanadasgupta/Understanding_Punishment_In_MAS_With_RL). :func:`tabular_run` trains one
population online, pure and jittable."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from socialjax.envs.institutions.partner_punishment import (
    OBS_ACTIVE,
    OBS_OWN_C,
    OBS_OWN_D,
    OBS_PARTNER_C,
    OBS_PARTNER_D,
    OBS_PLAY,
    OBS_PUNISH,
    OBS_REP,
    OBS_TARGET_C,
    OBS_TARGET_D,
)

LR = 0.1  # ours
GAMMA = 0.9  # the paper's discount (authors' DQN agents)
EPS_START, EPS_END, EPS_SHARE = 1.0, 0.02, 0.6  # ours: linear decay over the first 60% of the episodes
STATE_SIZES = (3, 2, 3, 3, 3)  # phase, acting, own last move, partner's last move, target's move
NUM_STATES = int(np.prod(STATE_SIZES))


def select_state(obs: jax.Array) -> jax.Array:
    """``(..., N) int32`` state of each agent's selection table from its observation
    ``(..., N, obs)`` (with reputations): the index, among the others, of the one with the
    highest public reputation, or ``N - 1`` when the highest is shared (at the start of
    an episode, when every reputation is 0)."""
    others = obs[..., OBS_REP + 2:]  # (..., N, N - 1) in the select head's order
    top = others.max(axis=-1, keepdims=True)
    shared = (others == top).sum(axis=-1) > 1
    return jnp.where(shared, others.shape[-1], others.argmax(axis=-1)).astype(jnp.int32)


def state_index(obs: jax.Array) -> jax.Array:
    """``(..., N) int32`` tabular state of each agent from its observation ``(..., N,
    obs)``: phase, acting, own last move, partner's last move and target's move (each
    move 0 none, 1 C, 2 D)."""
    phase = obs[..., OBS_PLAY] + 2 * obs[..., OBS_PUNISH]  # 0 select, 1 play, 2 punish

    def move(c, d):
        return obs[..., c] + 2 * obs[..., d]

    parts = (phase, obs[..., OBS_ACTIVE], move(OBS_OWN_C, OBS_OWN_D), move(OBS_PARTNER_C, OBS_PARTNER_D),
             move(OBS_TARGET_C, OBS_TARGET_D))
    index = jnp.zeros(obs.shape[:-1], jnp.int32)
    for part, size in zip(parts, STATE_SIZES):
        index = index * size + part.astype(jnp.int32)
    return index


def epsilon_greedy(key: jax.Array, values: jax.Array, eps) -> jax.Array:
    """``(E, N) int32`` actions from ``(E, N, A)`` values: uniformly random with
    probability ``eps``, else the best (ties broken at random)."""
    key_explore, key_random, key_tie = jax.random.split(key, 3)
    values = values + 1e-6 * jax.random.uniform(key_tie, values.shape)
    explore = jax.random.uniform(key_explore, values.shape[:2]) < eps
    return jnp.where(explore, jax.random.randint(key_random, values.shape[:2], 0, values.shape[-1]),
                     values.argmax(-1))


def mean_update(q: jax.Array, where: tuple, delta: jax.Array, mask: jax.Array) -> jax.Array:
    """``q`` moved by ``LR`` times the mean of the ``delta`` ``(E, N)`` (where ``mask``)
    at each ``(agent, state, action)`` of ``where``."""
    total = jnp.zeros_like(q).at[where].add(delta * mask)
    count = jnp.zeros_like(q).at[where].add(mask.astype(jnp.float32))
    return q + LR * total / jnp.maximum(count, 1.0)


def head_of_game(env, state) -> jax.Array:
    """``(E,) int32``: the selector (head) of the game being played in each of ``E`` games."""
    _, game, _ = jax.vmap(env.schedule)(state.step)
    return jnp.take_along_axis(state.order, game[:, None], axis=1)[:, 0]


def _selecting(obs: jax.Array) -> jax.Array:
    """``(E,)``: whether each game's step is a select step."""
    return (obs[:, 0, OBS_PLAY] == 0) & (obs[:, 0, OBS_PUNISH] == 0)


def _emptied(obs: jax.Array, select, punish) -> jax.Array:
    """``(E,)``: whether each game's step belongs to a mechanism that is off (a punish
    step without punishment, a select step without selection)."""
    return jnp.where(obs[:, 0, OBS_PUNISH] > 0, ~punish, (obs[:, 0, OBS_PLAY] == 0) & ~select)


def _choose(keys: tuple, q: jax.Array, q_select: jax.Array, obs: jax.Array, agent: jax.Array, eps, select,
            punish) -> tuple[jax.Array, jax.Array, jax.Array]:
    """A step's ``(E, N)`` states of both tables and actions: epsilon-greedy on the
    play-and-punish table, on the selection table at a select step when selection is on;
    a mechanism that is off gives a uniformly random pick at the select step and "no"
    (0) at a punish step. ``keys``: acting, picking and the uniform draw."""
    key_act, key_pick, key_random = keys
    s, s_select = state_index(obs), select_state(obs)  # (E, N) each
    action = epsilon_greedy(key_act, q[agent, s], eps)
    pick = epsilon_greedy(key_pick, q_select[agent, s_select], eps)
    action = jnp.where(_selecting(obs)[:, None] & select, pick, action)
    uniform = jax.random.randint(key_random, agent.shape, 0, q.shape[-1])
    action = jnp.where(_emptied(obs, select, punish)[:, None], jnp.where(obs[:, :, OBS_PUNISH] > 0, 0, uniform), action)
    return s, s_select, action


def _play_target(q: jax.Array, agent: jax.Array, obs2: jax.Array, reward: jax.Array, done: jax.Array, select,
                 punish) -> jax.Array:
    """``(E, N)`` Q-learning targets of a step: its reward and the discounted value of
    the next step (``obs2``), that step's best action, or "no" at an emptied punish step;
    an emptied step is looked through (no discount across it)."""
    following = q[agent, state_index(obs2)]
    emptied = _emptied(obs2, select, punish)
    value = jnp.where(emptied[:, None], following[..., 0], following.max(-1))
    discount = jnp.where(emptied, 1.0, GAMMA)
    return reward + jnp.where(done, 0.0, discount)[:, None] * value


def tabular_run(env, key: jax.Array, select: jax.Array, punish: jax.Array, games: int,
                episodes: int) -> dict[str, jax.Array]:
    """One population of independent tabular Q-learners trained online over
    ``episodes`` episodes of ``games`` parallel games of ``env`` (the one-action game
    with partner selection, direct punishment and observed reputation,
    any number of cycles), with the mechanisms ``select`` and ``punish`` (traced bools)
    on or off. Play and punishment: one Q-table per agent over :func:`state_index`,
    discount ``GAMMA`` per step. Selection (when on): a second table per agent over
    :func:`select_state` (who leads in reputation), learnt as the authors' selection
    network is, from the agent's rewards in the rounds of its own game (their select
    model stores each round's play reward with the selection; ours adds the punish step's): at the end of each cycle
    the pick's value moves towards the mean payoff per round of that game. A mechanism
    that is off leaves its steps in the game but empties them: without selection each
    agent's pick is uniformly random (the environment's draw without selection), without
    punishment every punish head is "no" (nothing happens, no reward), and the learners
    look through such a step: no discount is applied across it, so their returns are
    those of the game without that step (its value, learned too, passes them on). Per
    episode ``(episodes,)`` totals over the games and agents of ``played``,
    ``cooperated``, ``punished``, ``unjust_punishments`` and ``reward``, each divided by
    ``games`` and by the cycles per episode (per game-cycle). Pure."""
    N, A, T = env.num_agents, env.num_actions, env.episode_length
    key_reset, key_run = jax.random.split(key)
    obs, state = jax.vmap(env.reset)(jax.random.split(key_reset, games))
    q, q_select = jnp.zeros((N, NUM_STATES, A), jnp.float32), jnp.zeros((N, N, A), jnp.float32)
    agent = jnp.broadcast_to(jnp.arange(N)[None, :], (games, N))
    zeros = jnp.zeros((games, N), jnp.int32)

    def step(carry, key):
        q, q_select, obs, state, picked, gain, eps = carry
        key_act, key_pick, key_random, key_env = jax.random.split(key, 4)
        s, s_select, action = _choose((key_act, key_pick, key_random), q, q_select, obs, agent, eps, select, punish)
        is_select = _selecting(obs)[:, None]
        picked = jnp.where(is_select[..., None], jnp.stack([s_select, action], -1), picked)  # (E, N, 2)
        head = head_of_game(env, state)
        obs2, state2, reward, done, info = jax.vmap(env.step)(jax.random.split(key_env, games), state, action)
        gain = jnp.where(is_select, 0.0, gain) + jnp.where(agent == head[:, None], reward, 0.0)
        target = _play_target(q, agent, obs2, reward, done, select, punish)
        q = mean_update(q, (agent, s, action), target - q[agent, s, action], jnp.ones((games, N)))
        # a cycle ends: each selector's pick moves towards the mean payoff per round of its game
        where = (agent, picked[..., 0], picked[..., 1])
        ends = jnp.broadcast_to((_selecting(obs2) & select)[:, None], (games, N))
        q_select = mean_update(q_select, where, gain / env.num_rounds - q_select[where], ends)
        events = jnp.stack([info["played"].sum(), info["cooperated"].sum(), info["punished"].sum(),
                            info["unjust_punishments"].sum()]).astype(jnp.float32)
        return (q, q_select, obs2, state2, picked, gain, eps), jnp.concatenate([events, reward.sum()[None]])

    def episode(carry, xs):
        (k, eps), norm = xs, games * env.num_cycles
        carry, per_step = jax.lax.scan(step, carry + (eps,), jax.random.split(k, T))
        return carry[:-1], per_step.sum(axis=0) / norm

    frac = jnp.arange(episodes, dtype=jnp.float32) / episodes
    eps = jnp.maximum(EPS_END, EPS_START - (EPS_START - EPS_END) * frac / EPS_SHARE)
    init = (q, q_select, obs, state, jnp.stack([zeros, zeros], -1), jnp.zeros((games, N), jnp.float32))
    _, totals = jax.lax.scan(episode, init, (jax.random.split(key_run, episodes), eps))
    names = ("played", "cooperated", "punished", "unjust_punishments", "reward")
    return {name: totals[:, i] for i, name in enumerate(names)}
