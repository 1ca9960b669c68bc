"""Scripted memory-one strategies for the iterated 2x2 games (``ipd``, ``stag_hunt``,
``chicken``, ``matrix_game``).

A strategy is a ``(5,) float32`` vector of cooperation probabilities indexed by the
outcome code of the last round, as the matrix environments encode it from the player's
own point of view (own action first)::

    [p_first, p_CC, p_CD, p_DC, p_DD]
       0        1     2     3     4      <- observation code (0 = start token)

so ``strategy[code]`` is the probability of cooperating. docs/environments.md
("Scripted memory-one strategies") lists the named strategies with their sources.

Acting is a pure function usable inside ``jit``/``vmap``/``lax.scan``::

    code = last_outcome(obs, env.memory)            # (N,) most recent codes
    actions = act(key, jnp.stack([TFT, WSLS]), code)  # (N,) int32, 0 = C, 1 = D

and :func:`policy` wraps a strategy as ``fn(key, obs) -> action``.

The long-run payoffs of two memory-one strategies follow from a Markov chain over the
four outcomes ``CC, CD, DC, DD``; :func:`stationary_payoffs` computes them with numpy
(exact, not for use inside ``jit``), including execution noise.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

COOPERATE, DEFECT = 0, 1  # the matrix environments' actions
NUM_CODES = 5  # start token + CC, CD, DC, DD

# Default stage game, (R, S, T, P) for the row player: the prisoner's dilemma
# (T, R, P, S) = (5, 3, 1, 0) of Axelrod 1984 (ch. 1, Fig. 1).
PD_PAYOFFS = (3.0, 0.0, 5.0, 1.0)

# Outcome order of the Markov chain, from player 1's point of view (codes 1..4).
OUTCOMES = ("CC", "CD", "DC", "DD")
# The same outcome seen by the co-player: CD and DC swap.
_SWAP = np.array([0, 2, 1, 3])


# --------------------------------------------------------------------------- vectors
def _is_traced(x) -> bool:
    return isinstance(x, jax.core.Tracer)


def _frozen(values) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float32)
    arr.setflags(write=False)
    return arr


def memory_one(p_cc, p_cd, p_dc, p_dd, p_first=None):
    """The strategy vector ``[p_first, p_cc, p_cd, p_dc, p_dd]``.

    Each argument is the probability of cooperating after that outcome of the last
    round (own action first); ``p_first`` is the first move and defaults to ``p_cc``
    (play as if the previous round was mutual cooperation).

    Returns a read-only ``(5,) float32`` numpy array for concrete numbers (raising
    ``ValueError`` for a value that is not a probability), or a ``jax.Array`` when any
    argument is traced (inside ``jit``/``vmap``; no check is possible there).
    """
    if p_first is None:
        p_first = p_cc
    values = (p_first, p_cc, p_cd, p_dc, p_dd)
    if any(_is_traced(v) for v in values):
        return jnp.stack([jnp.asarray(v, jnp.float32) for v in values])
    names = ("p_first", "p_cc", "p_cd", "p_dc", "p_dd")
    for name, value in zip(names, values):
        arr = np.asarray(value, dtype=np.float64)
        if arr.shape != ():
            raise ValueError(f"memory_one: {name} must be a scalar probability, got shape {arr.shape}")
        if not 0.0 <= float(arr) <= 1.0:  # also rejects NaN
            raise ValueError(f"memory_one: {name}={value!r} is not a probability in [0, 1]")
    return _frozen(values)


def gtft(R: float = PD_PAYOFFS[0], S: float = PD_PAYOFFS[1], T: float = PD_PAYOFFS[2], P: float = PD_PAYOFFS[3]):
    """Generous tit-for-tat for the stage game ``(R, S, T, P)`` (default: the PD).

    Cooperates first and after the co-player cooperated; after the co-player defected
    it still cooperates with probability (Nowak & Sigmund 1992, Nature 355)::

        q = min(1 - (T - R) / (R - S), (R - P) / (T - P))

    clipped to ``[0, 1]`` (outside a prisoner's dilemma the formula can leave it). For
    the default PD, ``q = min(1 - 2/3, 2/4) = 1/3``. Raises ``ValueError`` when
    ``R == S`` or ``T == P`` (the formula divides by them).
    """
    values = (R, S, T, P)
    if not any(_is_traced(v) for v in values):
        R, S, T, P = (float(v) for v in values)
        if R == S or T == P:
            raise ValueError(f"gtft: needs R != S and T != P, got (R, S, T, P)={values}")
        q = min(1.0 - (T - R) / (R - S), (R - P) / (T - P))
        q = min(max(q, 0.0), 1.0)
        return memory_one(1.0, q, 1.0, q, p_first=1.0)
    q = jnp.clip(jnp.minimum(1.0 - (T - R) / (R - S), (R - P) / (T - P)), 0.0, 1.0)
    return memory_one(1.0, q, 1.0, q, p_first=1.0)


#: always cooperate
ALLC = memory_one(1.0, 1.0, 1.0, 1.0, p_first=1.0)
#: always defect
ALLD = memory_one(0.0, 0.0, 0.0, 0.0, p_first=0.0)
#: tit-for-tat: cooperate first, then copy the co-player's last action (1, 0, 1, 0)
TFT = memory_one(1.0, 0.0, 1.0, 0.0, p_first=1.0)
#: win-stay lose-shift / Pavlov: cooperate first, then cooperate iff both played the
#: same action last round (1, 0, 0, 1)
WSLS = memory_one(1.0, 0.0, 0.0, 1.0, p_first=1.0)
#: grim trigger as a memory-one strategy (1, 0, 0, 0), cooperating first. It only
#: remembers the last round, so it cooperates only after mutual cooperation: once
#: anyone defects, its own accidental (noise-flipped) defections included, it keeps
#: defecting, and returns to cooperation only if a round of mutual cooperation
#: happens anyway (with noise, when both actions are flipped to C at once).
GRIM = memory_one(1.0, 0.0, 0.0, 0.0, p_first=1.0)
#: cooperate with probability 1/2 whatever happened
RANDOM = memory_one(0.5, 0.5, 0.5, 0.5, p_first=0.5)
#: generous tit-for-tat for the default PD (q = 1/3)
GTFT = gtft()

#: name -> strategy vector
STRATEGIES: dict[str, np.ndarray] = {
    "allc": ALLC,
    "alld": ALLD,
    "tft": TFT,
    "wsls": WSLS,
    "grim": GRIM,
    "random": RANDOM,
    "gtft": GTFT,
}


def random_memory_one(key: jax.Array, batch_shape=()) -> jax.Array:
    """Random memory-one strategies: every entry of ``[p_first, p_CC, p_CD, p_DC,
    p_DD]`` drawn uniformly from ``[0, 1]``; ``(*batch_shape, 5) float32``. These are the
    "random memory-one tabular" co-players of the Weis et al. (2026) pool. Pure: works
    under ``jit`` and ``vmap``."""
    return jax.random.uniform(key, tuple(batch_shape) + (NUM_CODES,), jnp.float32)


# --------------------------------------------------------------------------- acting
def act(key: jax.Array, strategy, last_code) -> jax.Array:
    """Draw actions: cooperate (``0``) when a uniform draw is below
    ``strategy[..., last_code]``, else defect (``1``).

    ``strategy`` is ``(..., K) float`` (``K = 5`` for two players; any ``K`` works,
    e.g. ``1 + 2N`` vectors for the N-player codes) and ``last_code`` an int array; their
    batch shapes broadcast (e.g. ``(2, 5)`` strategies with ``(2,)`` codes for both
    players of one game). One uniform is drawn per output element from ``key``. Codes
    outside ``0..K-1`` are clipped into range. Returns ``int32`` of the broadcast batch
    shape. Pure: works under ``jit`` and ``vmap``.
    """
    strategy = jnp.asarray(strategy, jnp.float32)
    if strategy.ndim == 0:
        raise ValueError("act: strategy must have a trailing axis of cooperation probabilities, got a scalar")
    code = jnp.asarray(last_code)
    if not jnp.issubdtype(code.dtype, jnp.integer):
        raise TypeError(f"act: last_code must be an integer array, got dtype {code.dtype}")
    batch = jnp.broadcast_shapes(strategy.shape[:-1], code.shape)
    strategy = jnp.broadcast_to(strategy, batch + strategy.shape[-1:])
    code = jnp.broadcast_to(code.astype(jnp.int32), batch)
    p_coop = jnp.take_along_axis(strategy, code[..., None], axis=-1, mode="clip")[..., 0]
    cooperate = jax.random.uniform(key, batch) < p_coop
    return jnp.where(cooperate, COOPERATE, DEFECT).astype(jnp.int32)


LOG_FLOOR = float(np.log(1e-6))  # log-probabilities of 0 (e.g. ALLD's cooperation) read as this


def log_policy(strategy) -> jax.Array:
    """The strategy as the flattened log-probabilities of its actions after each of the
    five observations, ``[log p_0, log(1 - p_0), log p_1, ...]`` ``(..., 10) float32``
    (floored at ``LOG_FLOOR``). This is the conditioning vector that describes a tabular
    co-player in the "Opponent ID" ablation of Weis et al. (2026)."""
    p = jnp.asarray(strategy, jnp.float32)
    both = jnp.stack([p, 1.0 - p], axis=-1)
    return jnp.maximum(jnp.log(jnp.maximum(both, 0.0)), LOG_FLOOR).reshape(*p.shape[:-1], -1)


def last_outcome(obs, memory: int) -> jax.Array:
    """The most recent outcome code in a matrix-game observation.

    ``obs`` is ``(..., memory)`` (the history, oldest first) or ``(..., memory + 1)``
    (history then the round index, with ``observe_round``); ``memory`` is the
    environment's static ``memory`` (``env.memory``). Returns ``(...) int32``.
    """
    if not isinstance(memory, int) or isinstance(memory, bool) or memory < 1:
        raise ValueError(f"last_outcome: memory must be an int >= 1, got {memory!r}")
    obs = jnp.asarray(obs)
    if obs.ndim == 0 or obs.shape[-1] not in (memory, memory + 1):
        raise ValueError(
            f"last_outcome: obs must end in an axis of length memory={memory} or memory+1, got shape {obs.shape}"
        )
    return obs[..., memory - 1].astype(jnp.int32)


def policy(strategy, *, observe_round: bool = False) -> Callable[[jax.Array, jax.Array], jax.Array]:
    """Wrap a strategy as ``fn(key, obs) -> action`` for one agent's observation.

    ``obs`` is ``(memory,)`` (or ``(memory + 1,)`` from an environment built with
    ``observe_round=True``: say so here, since the shape alone cannot tell). Any leading
    batch axes are kept. The action is ``() int32`` per observation.
    """
    index = -2 if observe_round else -1

    def fn(key: jax.Array, obs: jax.Array) -> jax.Array:
        obs = jnp.asarray(obs)
        if obs.ndim == 0 or obs.shape[-1] < (2 if observe_round else 1):
            raise ValueError(f"policy: obs has shape {obs.shape}, too short for observe_round={observe_round}")
        return act(key, strategy, obs[..., index])

    return fn


# --------------------------------------------------------------------------- analysis
def _as_strategy(x, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.shape != (NUM_CODES,):
        raise ValueError(f"{name} must be a ({NUM_CODES},) memory-one vector [p_first, p_CC, p_CD, p_DC, p_DD], "
                         f"got shape {arr.shape}")
    if np.any(np.isnan(arr)) or np.any(arr < 0) or np.any(arr > 1):
        raise ValueError(f"{name} must hold probabilities in [0, 1], got {arr}")
    return arr


def _as_noise(noise) -> float:
    noise = float(noise)
    if not 0.0 <= noise <= 1.0:
        raise ValueError(f"noise must be a probability in [0, 1], got {noise}")
    return noise


def _with_noise(p: np.ndarray, noise: float) -> np.ndarray:
    """Probability that the executed action is C when C is intended with prob ``p``."""
    return p * (1.0 - noise) + (1.0 - p) * noise


def _joint(p1: np.ndarray, p2: np.ndarray) -> np.ndarray:
    """``(..., 4)`` probabilities of CC, CD, DC, DD for independent C-probabilities."""
    return np.stack([p1 * p2, p1 * (1 - p2), (1 - p1) * p2, (1 - p1) * (1 - p2)], axis=-1)


def transition_matrix(p, q, noise: float = 0.0) -> np.ndarray:
    """``(4, 4)`` transition matrix over ``CC, CD, DC, DD`` (player 1's point of view)
    when player 1 plays ``p`` and player 2 plays ``q``, each intended action flipped
    with probability ``noise``. Player 2 reads the outcome from its own point of view,
    so it uses ``q`` with CD and DC swapped."""
    p, q, noise = _as_strategy(p, "p"), _as_strategy(q, "q"), _as_noise(noise)
    p_next = _with_noise(p[1:], noise)  # player 1's C-probability after each outcome
    q_next = _with_noise(q[1:][_SWAP], noise)  # player 2's, indexed by player 1's outcome
    return _joint(p_next, q_next)


def initial_distribution(p, q, noise: float = 0.0) -> np.ndarray:
    """``(4,)`` distribution of the first round's outcome (player 1's point of view)."""
    p, q, noise = _as_strategy(p, "p"), _as_strategy(q, "q"), _as_noise(noise)
    return _joint(_with_noise(p[0], noise), _with_noise(q[0], noise))


NEGLIGIBLE = 1e-12  # a transition this unlikely is taken as impossible (1 - it is 1 to float64's precision)


def _long_run(M: np.ndarray, v0: np.ndarray) -> np.ndarray:
    """Cesaro limit ``lim (1/T) sum_t v0 M^t`` of a finite Markov chain, exactly: the
    stationary distribution of each closed class, weighted by the probability of
    being absorbed into it from ``v0``. Handles reducible and periodic chains. A
    transition of probability below :data:`NEGLIGIBLE` does not connect two states (a
    state left with probability 1e-193 per round is, in float64, never left: its
    expected visits before leaving cannot be computed)."""
    n = M.shape[0]
    reach = (M > NEGLIGIBLE) | np.eye(n, dtype=bool)
    for _ in range(n):  # transitive closure
        reach = reach | ((reach.astype(np.int64) @ reach.astype(np.int64)) > 0)
    recurrent = [i for i in range(n) if all(reach[j, i] for j in range(n) if reach[i, j])]
    transient = [i for i in range(n) if i not in recurrent]
    classes = sorted({tuple(j for j in range(n) if reach[i, j]) for i in recurrent})

    if transient:
        Q = M[np.ix_(transient, transient)]
        # expected visits to transient states before absorption, from v0
        visits = np.linalg.solve((np.eye(len(transient)) - Q).T, v0[transient])
    out = np.zeros(n)
    for cls in classes:
        cls = list(cls)
        k = len(cls)
        A = np.vstack([M[np.ix_(cls, cls)].T - np.eye(k), np.ones((1, k))])
        b = np.zeros(k + 1)
        b[-1] = 1.0
        pi = np.linalg.lstsq(A, b, rcond=None)[0]
        mass = v0[cls].sum()
        if transient:
            mass += visits @ M[np.ix_(transient, cls)].sum(axis=1)
        out[cls] += mass * pi
    out = np.clip(out, 0.0, None)
    return out / out.sum()


def stationary_distribution(p, q, noise: float = 0.0) -> np.ndarray:
    """``(4,)`` long-run fraction of rounds in ``CC, CD, DC, DD`` (player 1's point of
    view) of the infinitely repeated game between ``p`` (player 1) and ``q``.

    With ``noise > 0`` (and whenever the chain is irreducible) this is the unique
    stationary distribution; otherwise it is the time average from the first round
    (which the first-move probabilities decide), e.g. TFT against a TFT that opens with
    D alternates CD, DC: ``[0, 0.5, 0.5, 0]``. numpy, float64; not for use in ``jit``.
    """
    return _long_run(transition_matrix(p, q, noise), initial_distribution(p, q, noise))


def stationary_payoffs(p, q, payoffs=PD_PAYOFFS, noise: float = 0.0) -> tuple[float, float]:
    """Long-run average payoff per round ``(player 1, player 2)`` when player 1 plays the
    memory-one strategy ``p`` and player 2 plays ``q`` in the symmetric 2x2 game
    ``payoffs = (R, S, T, P)`` (row player's; default the PD (3, 0, 5, 1)), each
    intended action flipped with probability ``noise``.

    It is ``pi . (R, S, T, P)`` for player 1 and ``pi . (R, T, S, P)`` for player 2 with
    ``pi = stationary_distribution(p, q, noise)``. For example ALLD against ALLC gives
    ``(T, S)`` and TFT against TFT with any noise in (0, 1) gives ``(R+S+T+P)/4`` each.
    """
    R, S, T, P = (float(x) for x in np.asarray(payoffs, dtype=np.float64).reshape(4))
    pi = stationary_distribution(p, q, noise)
    return float(pi @ np.array([R, S, T, P])), float(pi @ np.array([R, T, S, P]))
