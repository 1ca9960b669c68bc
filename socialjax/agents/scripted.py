"""Scripted population members: fixed strategies that sit in seats and never learn.

A :class:`Scripted` member acts on a batch of seats. Some strategies have per-seat
parameters drawn when the seat is filled (a *random* memory-one co-player draws its
five probabilities once per seating and keeps them for the episode), so a member is a
pair of pure functions::

    slot = member.init_slot(key, B)        # per-seat parameters, leading axis B
    actions = member.act(key, slot, obs)   # obs (B, ...) -> (B,) int32

and, for members that can be described to a learner (``TrainConfig.coplayer_id``),
``member.describe(slot) -> (B, D) float32``: the memory-one strategies give their
log-probabilities (:func:`socialjax.agents.memory_one.log_policy`, ``D = 10``).

Names understood by :func:`make_scripted` (``socialjax train ... --scripted NAME``):

- any environment with a ``Discrete`` action space: ``random`` (uniform actions),
  ``noop`` (the environment's no-op action);
- two-player iterated matrix games (``ipd``, ``stag_hunt``, ``chicken``, ``matrix_game``):
  the memory-one strategies ``allc``, ``alld``, ``tft``, ``wsls``, ``grim``, ``gtft``,
  ``random_strategy`` (a coin flip each round) and ``random_memory_one`` (a memory-one
  strategy drawn uniformly per seating, the co-players of Weis et al.).
- gridworlds (Harvest, Clean Up, Gathering): ``harvester`` walks towards the nearest
  apple in its view and eats it (a greedy harvester that never zaps); in Clean Up,
  ``cleaner`` walks towards the nearest dirt and fires its cleaning beam whenever some
  dirt lies in the beam's footprint (an "always clean" bot). Both read only
  their own egocentric code observation; with nothing in view they walk forward or
  turn at random.
- Cooperative Mining (``coop_mining``): ``iron_miner`` mines only iron, ``gold_miner``
  only gold (raw or partly mined): each walks and turns until the nearest such ore in
  its view lies straight ahead within the mining beam's reach, then mines (a
  "defector" and a "cooperator" with the goals of Melting Pot's ``EXTRACT_IRON`` and
  ``EXTRACT_GOLD`` puppet bots, ``coop_mining__defector_0`` and
  ``coop_mining__cooperator_0``; those are trained policies steered by a puppeteer,
  ours are scripted: :func:`beam_bot`).
- Coins (``coins``, both variants): ``coin_cooperator`` walks to the nearest coin of its
  own colour, ``coin_defector`` to the nearest coin of either colour (the goals of
  Melting Pot's coins puppeteer, ``meltingpot/utils/puppeteers/coins.py``, whose bots
  are trained policies; ours are scripted: :func:`socialjax.envs.coins.coin_bot`).
- Gift Refinements (``gift_refinements``): ``gift_cooperator`` collects while its
  inventory is empty, gifts while it holds only raw tokens and consumes once it holds a
  refined one; ``gift_extreme_cooperator`` consumes only once it holds a twice-refined
  token; ``gift_defector`` collects and consumes, never gifts (the goals of Melting Pot's
  ``GiftRefinementsCooperator`` / ``GiftRefinementsExtremeCooperator`` puppeteers,
  ``meltingpot/utils/puppeteers/gift_refinements.py``, and its ``FORAGE`` bot, all trained
  policies; ours are scripted: :func:`socialjax.envs.gift_refinements.gift_bot`).
- *In the Matrix* (``prisoners_dilemma_in_the_matrix``, ``stag_hunt_in_the_matrix``,
  ``chicken_in_the_matrix``): ``collect_cooperate`` / ``collect_defect`` (and the
  aliases ``collect_stag`` / ``collect_hare``, ``collect_dove`` / ``collect_hawk``)
  gather the first / second resource until they hold at least one more of it than of
  the other, then seek a player and interact (:func:`matrix_bot`; the goal of Melting
  Pot's ``Specialist`` puppeteer, ``meltingpot/utils/puppeteers/in_the_matrix.py``,
  whose bots are trained policies; ours are scripted).
- Externality Mushrooms (``mushrooms``): ``collect_red`` walks to the nearest red
  mushroom (it pays only the eater), ``collect_green`` to the nearest green one (it pays
  everyone); both avoid stepping on other mushrooms and never zap (the goals
  ``COLLECT_MUSHROOM_FIZE`` / ``COLLECT_MUSHROOM_HIHE`` of Melting Pot's
  ``externality_mushrooms__dense__puppet_fize_0`` / ``__puppet_hihe_0`` bots, trained
  policies steered by a ``FixedGoal`` puppeteer; ours are scripted:
  :func:`socialjax.envs.mushrooms.mushroom_bot`).

A game lists bots of its own in a ``scripted_bots`` attribute (their names) and builds
each with its ``scripted_bot(name)`` (the act function); :func:`make_scripted` and
:func:`scripted_names` ask every environment for them.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from socialjax.agents import memory_one
from socialjax.core.spaces import Discrete

MEMORY_ONE = {
    "allc": memory_one.ALLC,
    "alld": memory_one.ALLD,
    "tft": memory_one.TFT,
    "wsls": memory_one.WSLS,
    "grim": memory_one.GRIM,
    "gtft": memory_one.GTFT,
    "random_strategy": memory_one.RANDOM,
}
GENERIC = ("random", "noop")
GRID_BOTS = ("harvester", "cleaner")


@dataclasses.dataclass(frozen=True)
class Scripted:
    """A fixed strategy: ``init_slot(key, B) -> slot`` and ``act(key, slot, obs) -> (B,)``;
    ``describe(slot) -> (B, D)`` when the strategy can be shown to a learner (else None)."""

    name: str
    init_slot: Callable[[jax.Array, int], Any]
    act: Callable[[jax.Array, Any, Any], jax.Array]
    describe: Callable[[Any], jax.Array] | None = None


def scripted_actions(members, first: int, seat_member: jax.Array, slots, obs, key: jax.Array,
                     actions: jax.Array) -> jax.Array:
    """``actions`` with every seat held by a scripted member replaced by that member's
    action. ``members`` are population members ``first, first + 1, ...``;
    ``seat_member`` ``(B,)`` names each seat's member; ``slots`` holds each member's
    per-seat parameters and ``obs`` ``(B, ...)`` the seats' observations. Every member
    acts on every seat (one batched call each) and ``where`` keeps its own seats."""
    for s, (member, k) in enumerate(zip(members, jax.random.split(key, max(len(members), 1)))):
        actions = jnp.where(seat_member == first + s, member.act(k, slots[s], obs), actions)
    return actions


def raw_reward(info, reward: jax.Array) -> jax.Array:
    """The environment's own reward: ``info["raw_reward"]`` when a reward-shaping
    wrapper (:mod:`socialjax.agents.shaping`) changed the learners' reward, else
    ``reward``. Metrics and returns are reported on it."""
    return info.get("raw_reward", reward) if isinstance(info, dict) else reward


def scripted_names(env) -> tuple[str, ...]:
    """The scripted members available for ``env``."""
    names = list(GENERIC)
    if _is_two_player_matrix(env):
        names += [*MEMORY_ONE, "random_memory_one"]
    if _is_grid(env):
        names.append("harvester")
        if _grid_base(env).clean_rays is not None:
            names.append("cleaner")
    names += list(getattr(_grid_base(env), "scripted_bots", ()))  # a game's own bots
    return tuple(names)


def _grid_base(env):
    return getattr(env, "unwrapped", env)


def _is_grid(env) -> bool:
    from socialjax.envs.grid.base import GridEnv

    base = _grid_base(env)
    return isinstance(base, GridEnv) and base.obs_mode == "codes"


def _is_two_player_matrix(env) -> bool:
    from socialjax.envs.matrix.env import MatrixGame

    return isinstance(getattr(env, "unwrapped", env), MatrixGame)


def _no_slot(key, batch):
    return jnp.zeros((batch,), jnp.float32)


def make_scripted(name: str, env) -> Scripted:
    """A scripted member by name for ``env`` (see the module docstring)."""
    space = env.action_space(env.default_params)
    if not isinstance(space, Discrete):
        raise ValueError(f"scripted members need a Discrete action space, {env!r} has {space}")
    if name == "random":
        n = space.n
        return Scripted(name, _no_slot, lambda key, slot, obs: jax.random.randint(key, slot.shape, 0, n, jnp.int32))
    if name == "noop":
        noop = int(env.unwrapped.noop_action if hasattr(env, "unwrapped") else env.noop_action)
        return Scripted(name, _no_slot, lambda key, slot, obs: jnp.full(slot.shape, noop, jnp.int32))
    if name in MEMORY_ONE or name == "random_memory_one":
        if not _is_two_player_matrix(env):
            raise ValueError(f"scripted member {name!r} needs a two-player matrix game; "
                             f"available: {scripted_names(env)}")
        base = env.unwrapped if hasattr(env, "unwrapped") else env
        memory = base.memory

        def act(key, slot, obs):
            return memory_one.act(key, slot, memory_one.last_outcome(obs, memory))

        if name == "random_memory_one":
            return Scripted(name, lambda key, batch: memory_one.random_memory_one(key, (batch,)), act,
                            memory_one.log_policy)
        strategy = jnp.asarray(MEMORY_ONE[name], jnp.float32)
        return Scripted(name, lambda key, batch: jnp.broadcast_to(strategy, (batch, strategy.shape[0])), act,
                        memory_one.log_policy)
    if name in GRID_BOTS:
        if name not in scripted_names(env):
            raise ValueError(
                f"scripted member {name!r} needs a gridworld with code observations"
                f"{' and a cleaning beam (Clean Up)' if name == 'cleaner' else ''}; available for {env!r}: "
                f"{scripted_names(env)}"
            )
        return Scripted(name, _no_slot, _grid_bot(_grid_base(env), name))
    if name in getattr(_grid_base(env), "scripted_bots", ()):
        return Scripted(name, _no_slot, _grid_base(env).scripted_bot(name))
    raise ValueError(f"unknown scripted member {name!r} for {env!r}; available: {scripted_names(env)}")


def _action_finder(env) -> Callable[..., int]:
    """``action_of(move, turn=0, beam=NO_BEAM)``: the first index of ``env``'s action
    table with that (relative move, turn, beam); an error naming the env if none."""
    from socialjax.envs.grid import constants as C

    table = np.asarray(env.action_table)

    def action_of(move: int, turn: int = 0, beam: int = C.NO_BEAM) -> int:
        hits = np.flatnonzero((table[:, 0] == move) & (table[:, 1] == turn) & (table[:, 2] == beam))
        if hits.size == 0:
            raise ValueError(f"{env!r} has no action for move={move}, turn={turn}, beam={beam}")
        return int(hits[0])

    return action_of


def _grid_bot(env, name: str) -> Callable:
    """The act function of a greedy gridworld bot (see the module docstring).

    In the egocentric window the bot stands on row ``ahead``, column ``side``, facing
    up. It picks the nearest target cell (Manhattan distance; ties go to the first in
    row-major order, i.e. the farthest ahead), and steps along the longer axis of the
    offset: forward/backward, else strafe left/right. The cleaner fires instead when any
    dirt cell in view lies on the cleaning beam's rays (walls and agents that would
    stop the beam are not checked).
    """
    from socialjax.envs.grid import constants as C

    ahead, _, side = env.view

    action_of = _action_finder(env)

    forward, backward = action_of(C.FORWARD), action_of(C.BACKWARD)
    left, right = action_of(C.LEFT), action_of(C.RIGHT)
    wander = jnp.asarray([forward, forward, action_of(C.NO_MOVE, -1), action_of(C.NO_MOVE, 1)], jnp.int32)
    target = C.DIRT if name == "cleaner" else C.APPLE
    clean = action_of(C.NO_MOVE, 0, C.CLEAN) if name == "cleaner" else -1
    V, W = env.offsets.shape[1:3]
    footprint = np.zeros((V, W), bool)  # window cells the cleaning beam can reach
    if name == "cleaner":
        for (f, lateral), ok in zip(env.clean_rays.frame.reshape(-1, 2), env.clean_rays.valid.reshape(-1)):
            if ok and 0 <= ahead - f < V and 0 <= side + lateral < W:
                footprint[ahead - f, side + lateral] = True
    footprint = jnp.asarray(footprint.reshape(-1))
    dr = jnp.arange(V)[:, None] - ahead + 0 * jnp.arange(W)[None, :]  # < 0: ahead
    dc = jnp.arange(W)[None, :] - side + 0 * jnp.arange(V)[:, None]  # > 0: to the right
    dist = (jnp.abs(dr) + jnp.abs(dc)).reshape(-1)

    def act(key, slot, obs):
        grid = obs["grid"].reshape(obs["grid"].shape[0], -1)  # (B, V * W)
        found = grid == target
        best = jnp.argmin(jnp.where(found, dist[None, :], jnp.iinfo(jnp.int32).max), axis=1)
        any_found = found.any(axis=1)
        r, c = dr.reshape(-1)[best], dc.reshape(-1)[best]
        move = jnp.where(
            jnp.abs(r) >= jnp.abs(c),
            jnp.where(r < 0, forward, backward),
            jnp.where(c > 0, right, left),
        )
        if name == "cleaner":
            move = jnp.where(jnp.any(found & footprint[None, :], axis=1), clean, move)
        roam = wander[jax.random.randint(key, (grid.shape[0],), 0, wander.shape[0])]
        return jnp.where(any_found, move, roam).astype(jnp.int32)

    return act


def beam_bot(env, targets, explore: float = 0.1, prefer: int = 6, fire: int | None = None,
             reach: int | None = None) -> Callable:
    """The act function of a bot that fires its zap-slot beam (coop_mining: the mining
    beam, one ray ``env.zap_rays.length`` cells straight ahead) at the nearest cell in
    view whose code is in ``targets`` (a code earlier in ``targets`` counts as ``prefer``
    cells nearer than a later one: the gold miner goes to gold another player has
    started before raw gold). ``targets`` may instead be a function of the flattened
    code window ``(B, V * W) int32 -> (B, V * W) bool`` marking the target cells (a bot
    that reads its own index from the window, as Territory's do). ``fire`` (an action
    index; default the zap-slot beam) is taken when the target is straight ahead within
    ``reach`` cells (default the zap beam's length).

    In the egocentric window the bot stands on row ``ahead``, column ``side``, facing
    up. Target ahead in its own column within reach: fire; farther ahead: forward; ahead
    in another column: strafe towards it; level with the bot: turn towards it; behind:
    turn right; under the bot: step back. With probability ``explore``, or with no
    target in view, it walks forward or turns at random (which also frees it when a
    wall stands between it and the target).
    """
    from socialjax.envs.grid import constants as C

    ahead, _, side = env.view

    action_of = _action_finder(env)

    forward, backward = action_of(C.FORWARD), action_of(C.BACKWARD)
    left, right = action_of(C.LEFT), action_of(C.RIGHT)
    turn_left, turn_right = action_of(C.NO_MOVE, -1), action_of(C.NO_MOVE, 1)
    fire = action_of(C.NO_MOVE, 0, C.ZAP) if fire is None else int(fire)
    reach = int(env.zap_rays.length) if reach is None else int(reach)
    wander = jnp.asarray([forward, forward, turn_left, turn_right], jnp.int32)
    V, W = env.offsets.shape[1:3]
    dr = (jnp.arange(V)[:, None] - ahead + 0 * jnp.arange(W)[None, :]).reshape(-1)  # < 0: ahead
    dc = (jnp.arange(W)[None, :] - side + 0 * jnp.arange(V)[:, None]).reshape(-1)  # > 0: to the right
    dist = jnp.abs(dr) + jnp.abs(dc)
    if callable(targets):
        def scored(grid):
            return targets(grid), dist[None, :]
    else:
        codes = jnp.asarray(targets)
        handicap = prefer * jnp.arange(len(targets))

        def scored(grid):
            match = grid[..., None] == codes  # (B, V * W, K)
            return jnp.any(match, axis=-1), dist[None, :] + jnp.sum(jnp.where(match, handicap, 0), axis=-1)

    def act(key, slot, obs):
        grid = obs["grid"].reshape(obs["grid"].shape[0], -1).astype(jnp.int32)  # (B, V * W)
        found, score = scored(grid)
        best = jnp.argmin(jnp.where(found, score, jnp.iinfo(jnp.int32).max), axis=1)
        r, c = dr[best], dc[best]
        move = jnp.where(
            r < 0,
            jnp.where(c == 0, jnp.where(-r <= reach, fire, forward), jnp.where(c > 0, right, left)),
            jnp.where(r == 0, jnp.where(c > 0, turn_right, jnp.where(c < 0, turn_left, backward)), turn_right),
        )
        k_roam, k_explore = jax.random.split(key)
        batch = grid.shape[0]
        roam = wander[jax.random.randint(k_roam, (batch,), 0, wander.shape[0])]
        explore_now = jax.random.uniform(k_explore, (batch,)) < explore
        return jnp.where(found.any(axis=1) & ~explore_now, move, roam).astype(jnp.int32)

    return act


def matrix_bot(env, target: int, margin: int = 1, explore: float = 0.1) -> Callable:
    """The act function of an *in the Matrix* bot (``socialjax/envs/in_the_matrix.py``)
    with the goal of Melting Pot's ``Specialist`` puppeteer
    (``meltingpot/utils/puppeteers/in_the_matrix.py``): collect resource ``target`` (0:
    the first resource, cooperate / stag / dove; 1: the second) until the inventory holds
    at least ``margin`` more of it than of the other, then seek a player and interact.

    Reads only its own observation: ``inventory`` and the egocentric ``grid`` (the bot
    stands on row ``ahead``, column ``side``, facing up). Collecting: step towards the
    nearest resource of the target class in view (along the longer axis of the offset).
    Interacting: fire when a player stands in the beam's footprint; else, with a player
    ahead, walk forward or strafe towards it; level with the bot or behind, turn towards
    it. With probability ``explore``, or with nothing to go to in view, it walks forward
    or turns at random.
    """
    from socialjax.envs.grid import constants as C
    from socialjax.envs.in_the_matrix import INTERACT, RESOURCE_1

    ahead, _, side = env.view

    action_of = _action_finder(env)

    forward, backward = action_of(C.FORWARD), action_of(C.BACKWARD)
    left, right = action_of(C.LEFT), action_of(C.RIGHT)
    turn_left, turn_right = action_of(C.NO_MOVE, -1), action_of(C.NO_MOVE, 1)
    wander = jnp.asarray([forward, forward, turn_left, turn_right], jnp.int32)
    V, W = env.offsets.shape[1:3]
    footprint = np.zeros((V, W), bool)  # window cells the interaction beam covers
    for (f, lateral), ok in zip(env.zap_rays.frame.reshape(-1, 2), env.zap_rays.valid.reshape(-1)):
        if ok and 0 <= ahead - f < V and 0 <= side + lateral < W:
            footprint[ahead - f, side + lateral] = True
    footprint = jnp.asarray(footprint.reshape(-1))
    dr = (jnp.arange(V)[:, None] - ahead + 0 * jnp.arange(W)[None, :]).reshape(-1)  # < 0: ahead
    dc = (jnp.arange(W)[None, :] - side + 0 * jnp.arange(V)[:, None]).reshape(-1)  # > 0: to the right
    dist = jnp.abs(dr) + jnp.abs(dc)
    me = ahead * W + side

    def nearest(found):
        best = jnp.argmin(jnp.where(found, dist[None, :], jnp.iinfo(jnp.int32).max), axis=1)
        return dr[best], dc[best], found.any(axis=1)

    def act(key, slot, obs):
        grid = obs["grid"].reshape(obs["grid"].shape[0], -1).astype(jnp.int32)  # (B, V * W)
        inv = obs["inventory"]
        others = jnp.where(jnp.arange(inv.shape[1]) == target, -jnp.inf, inv)
        enough = inv[:, target] - jnp.max(others, axis=1) >= margin
        # collect
        r, c, seen_res = nearest(grid == RESOURCE_1 + target)
        collect = jnp.where(jnp.abs(r) >= jnp.abs(c), jnp.where(r < 0, forward, backward),
                            jnp.where(c > 0, right, left))
        # interact
        player = (grid >= C.AGENT_BASE) & (jnp.arange(grid.shape[1]) != me)[None, :]
        in_reach = jnp.any(player & footprint[None, :], axis=1)
        r, c, seen_player = nearest(player)
        seek = jnp.where(r < 0, jnp.where(c == 0, forward, jnp.where(c > 0, right, left)),
                         jnp.where(c > 0, turn_right, jnp.where(c < 0, turn_left, turn_right)))
        seek = jnp.where(in_reach, INTERACT, seek)
        move = jnp.where(enough, seek, collect)
        seen = jnp.where(enough, seen_player, seen_res)
        k_roam, k_explore = jax.random.split(key)
        batch = grid.shape[0]
        roam = wander[jax.random.randint(k_roam, (batch,), 0, wander.shape[0])]
        explore_now = (jax.random.uniform(k_explore, (batch,)) < explore) & ~(enough & in_reach)
        return jnp.where(seen & ~explore_now, move, roam).astype(jnp.int32)

    return act
