"""The lattice prisoner's dilemma (``lattice_pd``; Weng & Lee 2026).

Rules (Weng & Lee 2026; docs/environments.md, "Lattice prisoner's dilemma"):

- A periodic ``L x L`` grid (static ``size``, 30 by default), one agent per cell:
  ``N = L * L`` agents on the agent axis, row-major (agent ``r * L + c`` sits at row
  ``r``, column ``c``; row 0 is the top, "north").
- Each step every agent chooses C (``0``) or D (``1``) once and plays that action
  against each of its 4 von Neumann neighbours (north, east, south, west; the grid wraps
  around at the edges and corners). Its reward is the mean of the 4 payoffs.
- Payoffs (the dilemma-strength parameterisation with ``Dg = Dr``; Wang et al. 2015):
  ``R = 1``, ``P = 0``, ``T = R + Dr``, ``S = P - Dr``; with the defaults that is
  ``T = 1 + Dr``, ``S = -Dr``. ``Dr`` (``dilemma_strength``) is swept over
  ``[0.1, 0.4]`` in the paper; the param accepts ``[0, 1]`` (0: no dilemma).
- Observation of agent i, ``(5,) int32`` bits: the previous actions of its neighbours
  north, east, south, west, then its own (``OBS_NORTH .. OBS_SELF``; 1 = defected).
  Before the first step the "previous actions" are drawn independently as D with
  probability ``initial_defect_prob`` (default 0: everyone is seen as having
  cooperated).
- Episode: ``episode_length`` steps (static, 100 by default), then ``truncated`` (the
  game itself has no end: bootstrap there); ``terminated`` is always False.
- An out-of-range action is treated as D (not acting is not cooperating) and flagged in
  ``info["invalid_action"]``.
- ``info``: ``cooperated`` ``(N,) bool`` (the event key), ``cooperation_rate`` ``()``
  float32, ``step`` (steps played in this episode).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from socialjax.core.environment import Environment
from socialjax.core.params import EnvParams, brief, param
from socialjax.core.spaces import Box, Discrete

COOPERATE, DEFECT = 0, 1
SIZE = 30  # Weng & Lee 2026: a 30 x 30 lattice
MAX_SIZE = 46340  # the largest size whose size * size agents fit int32
EPISODE_LENGTH = 100  # our default (the game has no natural end)
DILEMMA_STRENGTH = 0.2  # Dr; Weng & Lee 2026 sweep Dr in [0.1, 0.4]
REWARD = 1.0  # R, Weng & Lee 2026
PUNISHMENT = 0.0  # P, Weng & Lee 2026

# Observation layout: the neighbours' previous actions, then the agent's own.
OBS_NORTH, OBS_EAST, OBS_SOUTH, OBS_WEST, OBS_SELF = 0, 1, 2, 3, 4
NUM_NEIGHBOURS = 4


@struct.dataclass
class LatticePDParams(EnvParams):
    dilemma_strength: float = param(
        DILEMMA_STRENGTH, 0.0, 1.0, doc="Dr: T = R + Dr, S = P - Dr (Weng & Lee 2026 sweep [0.1, 0.4])"
    )
    reward: float = param(REWARD, None, None, doc="R, mutual cooperation (Weng & Lee 2026: 1)")
    punishment: float = param(PUNISHMENT, None, None, doc="P, mutual defection (Weng & Lee 2026: 0)")
    initial_defect_prob: float = param(
        0.0, 0.0, 1.0, doc="probability that an agent's 'previous action' at reset is D"
    )

    def check(self) -> None:
        r, p = self.reward, self.punishment
        if not isinstance(r, jax.core.Tracer) and not isinstance(p, jax.core.Tracer) and np.any(
                np.asarray(r) <= np.asarray(p)):
            raise ValueError(f"LatticePDParams needs reward > punishment (R > P), got R={brief(r)}, P={brief(p)}")


@struct.dataclass
class LatticePDState:
    last_actions: jax.Array  # (N,) int32, the actions of the previous step (row-major)
    step: jax.Array  # () int32, steps played in this episode


def payoff_matrix(params: LatticePDParams) -> jax.Array:
    """``(2, 2)`` float32 ``payoff[own, other]``: ``[[R, S], [T, P]]``."""
    r, p, dr = params.reward, params.punishment, params.dilemma_strength
    return jnp.array([[r, p - dr], [r + dr, p]], jnp.float32)


def neighbour_actions(actions: jax.Array, size: int) -> jax.Array:
    """The actions of each agent's 4 neighbours on the periodic grid.

    ``actions``: ``(N,)`` row-major, ``N = size * size``. Returns ``(N, 4)``, columns
    north (row - 1), east (column + 1), south (row + 1), west (column - 1), wrapping."""
    grid = actions.reshape(size, size)
    north = jnp.roll(grid, 1, axis=0)  # north[r, c] = grid[r - 1, c]
    east = jnp.roll(grid, -1, axis=1)  # east[r, c] = grid[r, c + 1]
    south = jnp.roll(grid, -1, axis=0)  # south[r, c] = grid[r + 1, c]
    west = jnp.roll(grid, 1, axis=1)  # west[r, c] = grid[r, c - 1]
    return jnp.stack([north, east, south, west], axis=-1).reshape(size * size, NUM_NEIGHBOURS)


def lattice_rewards(actions: jax.Array, size: int, params: LatticePDParams) -> jax.Array:
    """``(N,) float32``: each agent's mean payoff over its 4 pairwise games."""
    payoff = payoff_matrix(params)
    others = neighbour_actions(actions, size)
    return jnp.mean(payoff[actions[:, None], others], axis=1)


class LatticePD(Environment):
    """Prisoner's dilemma on a periodic lattice; see the module docstring for the rules.

    Static options: ``size`` (L >= 3, default 30; ``num_agents = L * L``),
    ``episode_length`` (default 100). Params: :class:`LatticePDParams`.
    """

    params_cls = LatticePDParams
    noop_action = DEFECT
    event_keys = ("cooperated",)

    def __init__(self, size: int = SIZE, episode_length: int = EPISODE_LENGTH):
        # size >= 3 keeps the 4 neighbours distinct cells; size * size agents must fit int32
        if not isinstance(size, int) or isinstance(size, bool) or not 3 <= size <= MAX_SIZE:
            raise ValueError(f"size must be an int in [3, {MAX_SIZE}], got {size!r}")
        if not isinstance(episode_length, int) or isinstance(episode_length, bool) or episode_length < 1:
            raise ValueError(f"episode_length must be an int >= 1, got {episode_length!r}")
        super().__init__(size * size)
        self.size = size
        self.episode_length = episode_length

    # -- contract ------------------------------------------------------------
    def initial_state(self, key, params):
        defect = jax.random.uniform(key, (self.num_agents,)) < params.initial_defect_prob
        return LatticePDState(last_actions=defect.astype(jnp.int32), step=jnp.zeros((), jnp.int32))

    def transition(self, key, state, actions, params):
        actions = actions.astype(jnp.int32)
        reward = lattice_rewards(actions, self.size, params)
        step = state.step + 1
        truncated = step >= self.episode_length
        cooperated = actions == COOPERATE
        info = {
            "terminated": jnp.zeros((), bool),
            "truncated": truncated,
            "cooperated": cooperated,
            "cooperation_rate": jnp.mean(cooperated.astype(jnp.float32)),
            "step": step,
        }
        return LatticePDState(last_actions=actions, step=step), reward, truncated, info

    def get_obs(self, state, params):
        own = state.last_actions[:, None]
        return jnp.concatenate([neighbour_actions(state.last_actions, self.size), own], axis=1)

    def action_space(self, params=None):
        return Discrete(2)

    def observation_space(self, params=None):
        return Box(0, 1, (NUM_NEIGHBOURS + 1,), jnp.int32)

    def __repr__(self):
        return f"LatticePD(size={self.size}, num_agents={self.num_agents}, episode_length={self.episode_length})"
