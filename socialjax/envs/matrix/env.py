"""Iterated matrix games: 2x2 games (``ipd``, ``stag_hunt``, ``chicken``,
``matrix_game``) and the N-player game (``nplayer_matrix``).

Rules (docs/environments.md, "Iterated matrix games", with their sources):

- Actions: ``0`` = cooperate (C), ``1`` = defect (D). An out-of-range action is treated
  as an intended D (not acting is not cooperating), flagged in
  ``info["invalid_action"]``, and is then subject to execution noise like any other.
- Execution noise: each intended action is flipped with probability ``noise``; payoffs
  and observations use the executed actions.
- Episode: at most ``num_rounds`` rounds (static). After each round the game continues
  with probability ``continue_prob`` (a param; 1.0 gives a fixed-length game). An end by
  chance, or reaching ``num_rounds`` when ``continue_prob == 1``, is ``terminated``;
  reaching ``num_rounds`` when ``continue_prob < 1`` is ``truncated`` (bootstrap there).
- Observation of agent i, ``(memory,)`` int32 (or ``(memory + 1,)`` with
  ``observe_round``): the outcome codes of the last ``memory`` rounds, oldest first,
  each from i's own point of view, then optionally the round index::

      0 = start token (no round played yet)
      1 + N * own_action + (number of OTHER agents that defected)

  For two players that is ``1 = CC, 2 = CD, 3 = DC, 4 = DD`` (own action first).
- ``info``: ``intended`` and ``executed`` actions ``(N,) int32``, ``flipped`` ``(N,)
  bool``, ``cooperated`` ``(N,) bool`` (executed C), ``round`` (rounds played).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from socialjax.core.environment import Environment
from socialjax.core.params import EnvParams, check_bool, param
from socialjax.core.spaces import Box, Discrete

COOPERATE, DEFECT = 0, 1
START = 0  # the start token in the observation history

# Default stage games, (R, S, T, P) for the row player.
PRISONERS_DILEMMA = (3.0, 0.0, 5.0, 1.0)  # (T, R, P, S) = (5, 3, 1, 0), Axelrod 1984 ch. 1, Fig. 1
STAG_HUNT = (4.0, 0.0, 3.0, 1.0)  # R=4, T=3, P=1, S=0 (ours: R > T > P > S with small integers)
CHICKEN = (3.0, 1.0, 4.0, 0.0)  # (T, R, S, P) = (4, 3, 1, 0): T > R > S > P (ours, likewise)
GAMES = {"prisoners_dilemma": PRISONERS_DILEMMA, "stag_hunt": STAG_HUNT, "chicken": CHICKEN}


def symmetric_payoffs(R: float, S: float, T: float, P: float) -> np.ndarray:
    """``(2, 2, 2)`` payoff array of a symmetric 2x2 game: ``payoffs[i, a0, a1]`` is the
    reward of player i when player 0 plays ``a0`` and player 1 plays ``a1``."""
    row = np.array([[R, S], [T, P]], dtype=np.float32)
    return np.stack([row, row.T])


MAX_NPLAYER_AGENTS = 2**20  # our limit on nplayer_matrix's num_agents (its payoff table is (2, N))


def nplayer_pairwise_payoffs(num_agents: int, R: float, S: float, T: float, P: float) -> np.ndarray:
    """``(2, N)`` payoffs of an N-player game where each agent plays the 2x2 game with
    every other agent and receives the mean: ``payoffs[a, k]`` for own action ``a`` and
    ``k`` other cooperators."""
    k = np.arange(num_agents, dtype=np.float32)
    n_other = max(num_agents - 1, 1)
    coop = (R * k + S * (num_agents - 1 - k)) / n_other
    defect = (T * k + P * (num_agents - 1 - k)) / n_other
    return np.stack([coop, defect]).astype(np.float32)


@struct.dataclass
class MatrixParams(EnvParams):
    """Numbers of an iterated 2x2 game."""

    payoffs: jax.Array = param(symmetric_payoffs(*PRISONERS_DILEMMA), doc="(2, 2, 2) payoffs[i, a0, a1]")
    noise: float = param(0.0, 0.0, 1.0, doc="execution error: probability an action is flipped")
    continue_prob: float = param(1.0, 0.0, 1.0, doc="probability w that another round follows")

    def check(self) -> None:
        if not isinstance(self.payoffs, jax.core.Tracer) and np.shape(self.payoffs) != (2, 2, 2):
            raise ValueError(f"MatrixParams.payoffs must have shape (2, 2, 2), got {np.shape(self.payoffs)}")


@struct.dataclass
class NPlayerParams(EnvParams):
    """Numbers of an iterated N-player game."""

    payoffs: jax.Array = param(np.zeros((2, 2), np.float32), doc="(2, N) payoffs[own action, other cooperators]")
    noise: float = param(0.0, 0.0, 1.0, doc="execution error: probability an action is flipped")
    continue_prob: float = param(1.0, 0.0, 1.0, doc="probability w that another round follows")


@struct.dataclass
class MatrixState:
    history: jax.Array  # (N, memory) int32 outcome codes, oldest first
    round: jax.Array  # () int32, rounds played in this episode


class _IteratedGame(Environment):
    """Shared episode logic; subclasses define the stage-game payoff."""

    noop_action = DEFECT
    event_keys = ("cooperated",)  # totalled per episode by socialjax.metrics

    def __init__(self, num_agents: int, num_rounds: int, memory: int, observe_round: bool):
        super().__init__(num_agents)
        for name, value, low in (("num_rounds", num_rounds, 1), ("memory", memory, 1)):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
        self.num_rounds = num_rounds
        self.memory = memory
        self.observe_round = check_bool("observe_round", observe_round)

    def stage_payoffs(self, executed: jax.Array, params) -> jax.Array:
        raise NotImplementedError

    # -- rules ---------------------------------------------------------------
    def apply_noise(self, key: jax.Array, actions: jax.Array, noise: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Flip each intended action independently with probability ``noise``."""
        flipped = jax.random.uniform(key, (self.num_agents,)) < noise
        return jnp.where(flipped, 1 - actions, actions), flipped

    def outcome_codes(self, executed: jax.Array) -> jax.Array:
        """``(N,)`` codes ``1 + N * own + other defectors`` (see module docstring)."""
        defectors = jnp.sum(executed)
        return 1 + self.num_agents * executed + (defectors - executed)

    # -- contract ------------------------------------------------------------
    def initial_state(self, key, params):
        return MatrixState(
            history=jnp.full((self.num_agents, self.memory), START, jnp.int32),
            round=jnp.zeros((), jnp.int32),
        )

    def transition(self, key, state, actions, params):
        key_noise, key_end = jax.random.split(key)
        executed, flipped = self.apply_noise(key_noise, actions, params.noise)
        reward = self.stage_payoffs(executed, params).astype(jnp.float32)
        codes = self.outcome_codes(executed)
        history = jnp.concatenate([state.history[:, 1:], codes[:, None]], axis=1)
        rnd = state.round + 1
        ended_by_chance = jax.random.uniform(key_end) >= params.continue_prob
        at_cap = rnd >= self.num_rounds
        fixed_length = params.continue_prob >= 1.0
        terminated = ended_by_chance | (at_cap & fixed_length)
        truncated = at_cap & ~terminated
        done = terminated | truncated
        info = {
            "terminated": terminated,
            "truncated": truncated,
            "intended": actions,
            "executed": executed,
            "flipped": flipped,
            "cooperated": executed == COOPERATE,
            "round": rnd,
        }
        return MatrixState(history=history, round=rnd), reward, done, info

    def get_obs(self, state, params):
        if not self.observe_round:
            return state.history
        rnd = jnp.broadcast_to(state.round, (self.num_agents, 1)).astype(jnp.int32)
        return jnp.concatenate([state.history, rnd], axis=1)

    def action_space(self, params=None):
        return Discrete(2)

    def observation_space(self, params=None):
        high = [2 * self.num_agents] * self.memory + ([self.num_rounds] if self.observe_round else [])
        return Box(0, np.array(high), (len(high),), jnp.int32)


class MatrixGame(_IteratedGame):
    """Iterated two-player 2x2 game.

    Static options: ``game`` (the default payoffs: ``"prisoners_dilemma"``,
    ``"stag_hunt"`` or ``"chicken"``), ``num_rounds`` (cap, default 100), ``memory``
    (rounds of history observed, default 1), ``observe_round`` (append the round index).
    Params: :class:`MatrixParams` (``payoffs``, ``noise``, ``continue_prob``).
    """

    params_cls = MatrixParams

    def __init__(
        self,
        game: str = "prisoners_dilemma",
        num_rounds: int = 100,
        memory: int = 1,
        observe_round: bool = False,
    ):
        if game not in GAMES:
            raise ValueError(f"game must be one of {sorted(GAMES)}, got {game!r}")
        self.game = game
        super().__init__(2, num_rounds, memory, observe_round)

    def make_default_params(self):
        return MatrixParams(payoffs=symmetric_payoffs(*GAMES[self.game]))

    def stage_payoffs(self, executed, params):
        return params.payoffs[:, executed[0], executed[1]]


class NPlayerMatrixGame(_IteratedGame):
    """Iterated N-player game: an agent's payoff depends on its own action and on how
    many of the others cooperated.

    Static options: ``num_agents`` (default 3), ``num_rounds``, ``memory``,
    ``observe_round`` as for :class:`MatrixGame`. Params: :class:`NPlayerParams`, with
    ``payoffs[a, k]`` (shape ``(2, N)``) for own action ``a`` and ``k`` other
    cooperators. The default plays the ``(5, 3, 1, 0)`` prisoner's dilemma with every
    other agent and pays the mean.
    """

    params_cls = NPlayerParams

    def __init__(self, num_agents: int = 3, num_rounds: int = 100, memory: int = 1, observe_round: bool = False):
        if not isinstance(num_agents, int) or isinstance(num_agents, bool) or num_agents < 2:
            raise ValueError(f"num_agents must be an int >= 2, got {num_agents!r}")
        if num_agents > MAX_NPLAYER_AGENTS:  # the (2, N) payoff table is built on the host
            raise ValueError(f"num_agents={num_agents} is above the N-player game's limit {MAX_NPLAYER_AGENTS}")
        super().__init__(num_agents, num_rounds, memory, observe_round)

    def make_default_params(self):
        return NPlayerParams(payoffs=nplayer_pairwise_payoffs(self.num_agents, *PRISONERS_DILEMMA))

    def check_params(self, params):
        shape = np.shape(params.payoffs)
        if shape != (2, self.num_agents):
            raise ValueError(
                f"{self.name}: payoffs must have shape (2, num_agents)=(2, {self.num_agents}), got {shape}"
            )

    def stage_payoffs(self, executed, params):
        other_coop = jnp.sum(1 - executed) - (1 - executed)
        return params.payoffs[executed, other_coop]
