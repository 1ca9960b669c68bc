"""Indirect reciprocity under social norms (``indirect_reciprocity``; Nowak & Sigmund
1998, Ohtsuki & Iwasa 2004).

Rules (docs/environments.md, "Indirect reciprocity", with their sources):

- ``N`` agents (static, even, >= 2). Each round they are split into ``N / 2`` random
  donor-recipient pairs: a uniformly random permutation (``top_k`` of uniforms, so no
  index is favoured) is cut into consecutive pairs ``(order[0], order[1]), (order[2],
  order[3]), ...`` and the first of each pair donates. So every agent is in exactly one
  pair per round and is the donor with probability 1/2, independently of its index. The
  pairing of the coming round is drawn at the end of the previous one (or at reset), so
  the observation shows it before the agents act.
- Donor game: a donor that cooperates pays ``cost`` (c = 0.1) and its recipient gets
  ``benefit`` (b = 1); a defecting donor pays nothing. Reward: ``b * received - c *
  given`` this round.
- Execution error ``execution_error`` (e): a donor's intended C becomes D with
  probability e (an intended D stays D).
- Reputation: a binary label, ``GOOD = 1`` / ``BAD = 0``. After each donation every
  observer assesses the donor by the static ``norm`` from the executed action and the
  observer's view of the recipient's label (``NORMS[norm][action, recipient label]``):

      | norm            | C to G | D to G | C to B | D to B |
      | image_scoring   |   G    |   B    |   G    |   B    |
      | simple_standing |   G    |   B    |   G    |   G    |
      | stern_judging   |   G    |   B    |   B    |   G    |
      | shunning        |   G    |   B    |   B    |   B    |

  then flips the label with probability ``assessment_error`` (mu). With probability
  ``1 - observation_prob`` an observer misses the donation and keeps its old label of
  the donor. Public assessment (default): one observer, the public, whose labels every
  agent sees (state ``reputation`` of shape ``(1, N)``). ``private_assessment=True``:
  every agent is an observer with its own view (``(N, N)``, ``reputation[o, s]`` is o's
  label of s), drawing its own assessment errors and using its own view of the
  recipient. Labels start GOOD with probability ``initial_good_prob`` (1), independently
  per (observer, subject).
- Image score (Nowak & Sigmund 1998), kept alongside the labels under every norm: a
  public integer in ``[-5, 5]`` that starts at 0, rises by 1 when the agent donates
  (executed C) and falls by 1 when it refuses (executed D), clipped. It records executed
  actions, so assessment and observation errors do not touch it. The ``image_scoring``
  *norm* is the binary label above (the last action alone); the score is what the
  image-score threshold strategies use.
- Episode: ``episode_length`` rounds (static, 100), then ``truncated`` (no natural end).

Actions: ``0`` = cooperate (donate), ``1`` = defect, used only from this round's donors
(a recipient's action is ignored). An out-of-range action is an intended D and is
flagged in ``info["invalid_action"]``.

Observation of agent i, ``(4,) float32`` (``OBS_*``), about its partner this round:
``[partner's label in i's view (1 = G), partner's image score, own label, is_donor]``.
"Own label" is the public label, or under private assessment the fraction of the other
agents that see i as GOOD.

``info``: ``is_donor``, ``partner`` (the round just played), ``cooperated`` /
``defected`` (donors' executed actions), ``execution_error`` (intended C executed as D),
``donated`` (cost paid), ``received`` (benefit got), ``good_fraction`` (() mean of all
labels after the round), ``step``.

Scripted strategies and their evolution are in
:mod:`socialjax.envs.institutions.ir_strategies`.
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
BAD, GOOD = 0, 1
NUM_AGENTS = 20  # our default
EPISODE_LENGTH = 100  # rounds; our default
BENEFIT, COST = 1.0, 0.1  # b, c of Nowak & Sigmund 1998
MIN_SCORE, MAX_SCORE = -5, 5  # Nowak & Sigmund 1998: image scores in [-5, 5]

# NORMS[norm][action, recipient label] -> the donor's new label (before assessment error).
# Rows: action C, D; columns: recipient BAD, GOOD. Ohtsuki & Iwasa 2004 (second-order norms).
NORMS = {
    "image_scoring": np.array([[GOOD, GOOD], [BAD, BAD]], np.int32),
    "simple_standing": np.array([[GOOD, GOOD], [GOOD, BAD]], np.int32),
    "stern_judging": np.array([[BAD, GOOD], [GOOD, BAD]], np.int32),
    "shunning": np.array([[BAD, GOOD], [BAD, BAD]], np.int32),
}

# Observation layout
OBS_PARTNER_GOOD, OBS_PARTNER_SCORE, OBS_OWN_GOOD, OBS_IS_DONOR = 0, 1, 2, 3
OBS_SIZE = 4

@struct.dataclass
class IndirectReciprocityParams(EnvParams):
    benefit: float = param(BENEFIT, 0.0, None, doc="b, the recipient's gain (Nowak & Sigmund 1998: 1)")
    cost: float = param(COST, 0.0, None, doc="c, the donor's cost (Nowak & Sigmund 1998: 0.1)")
    execution_error: float = param(0.0, 0.0, 1.0, doc="e: an intended C becomes D")
    assessment_error: float = param(0.0, 0.0, 1.0, doc="mu: an assigned label flips")
    observation_prob: float = param(1.0, 0.0, 1.0, doc="probability an observer sees a donation")
    initial_good_prob: float = param(1.0, 0.0, 1.0, doc="probability a label starts GOOD")


@struct.dataclass
class IndirectReciprocityState:
    reputation: jax.Array  # (V, N) int32 labels; V = 1 (public) or N (private); [observer, subject]
    image_score: jax.Array  # (N,) int32 in [-5, 5]
    partner: jax.Array  # (N,) int32, partner in the coming round
    is_donor: jax.Array  # (N,) bool, donor in the coming round
    step: jax.Array  # () int32, rounds played in this episode


def draw_pairing(key: jax.Array, num_agents: int) -> tuple[jax.Array, jax.Array]:
    """Random donor-recipient pairs: ``partner (N,) int32``, ``is_donor (N,) bool``.

    A uniform random order (indices of sorted uniforms) cut into consecutive pairs, the
    first of each donating."""
    order = jax.lax.top_k(jax.random.uniform(key, (num_agents,)), num_agents)[1].astype(jnp.int32)
    donors, recipients = order[0::2], order[1::2]
    partner = jnp.zeros(num_agents, jnp.int32).at[donors].set(recipients).at[recipients].set(donors)
    is_donor = jnp.zeros(num_agents, bool).at[donors].set(True)
    return partner, is_donor


def execute(key: jax.Array, intended: jax.Array, is_donor: jax.Array, execution_error) -> tuple[jax.Array, jax.Array]:
    """Donors' executed actions ``(N,) int32`` (non-donors: D) and the execution errors
    ``(N,) bool`` (an intended C that became D)."""
    intends_c = is_donor & (intended == COOPERATE)
    error = intends_c & (jax.random.uniform(key, intended.shape) < execution_error)
    executed = jnp.where(intends_c & ~error, COOPERATE, DEFECT).astype(jnp.int32)
    return executed, error


def donor_payoffs(cooperated: jax.Array, partner: jax.Array, params: IndirectReciprocityParams):
    """``(received, given)``, ``(N,) float32``: b per recipient of a cooperating donor,
    c per cooperating donor. The pairing is a bijection donors <-> recipients, so a
    recipient's donor is its partner (and a donor's partner never cooperated)."""
    received = params.benefit * cooperated[partner].astype(jnp.float32)
    given = params.cost * cooperated.astype(jnp.float32)
    return received, given


def assess(
    key: jax.Array,
    reputation: jax.Array,
    executed: jax.Array,
    partner: jax.Array,
    is_donor: jax.Array,
    table: jax.Array,
    params: IndirectReciprocityParams,
) -> jax.Array:
    """Every observer (row of ``reputation (V, N)``) relabels each donor by the norm
    ``table[action, recipient label in its own view]``, flips it with probability
    ``assessment_error`` and keeps it only if it observed the donation (probability
    ``observation_prob``). Returns the new ``(V, N) int32`` labels."""
    key_flip, key_seen = jax.random.split(key)
    recipient_view = reputation[:, partner]  # (V, N): each observer's label of each donor's recipient
    label = table[executed[None, :], recipient_view]
    flip = jax.random.uniform(key_flip, reputation.shape) < params.assessment_error
    seen = jax.random.uniform(key_seen, reputation.shape) < params.observation_prob
    new = jnp.where(flip, 1 - label, label)
    return jnp.where(is_donor[None, :] & seen, new, reputation).astype(jnp.int32)


def update_image_scores(image_score: jax.Array, cooperated: jax.Array, is_donor: jax.Array) -> jax.Array:
    """+1 for a donation, -1 for a refusal, clipped to ``[-5, 5]``; non-donors keep theirs."""
    delta = jnp.where(is_donor, jnp.where(cooperated, 1, -1), 0)
    return jnp.clip(image_score + delta, MIN_SCORE, MAX_SCORE).astype(jnp.int32)


class IndirectReciprocity(Environment):
    """Donor game with reputations under a social norm; see the module docstring.

    Static options: ``num_agents`` (even, default 20), ``norm`` (one of :data:`NORMS`,
    default ``"stern_judging"``), ``private_assessment`` (False), ``episode_length``
    (100 rounds). Params: :class:`IndirectReciprocityParams`.
    """

    params_cls = IndirectReciprocityParams
    noop_action = DEFECT
    event_keys = ("cooperated", "defected", "execution_error", "is_donor", "donated", "received")

    def __init__(
        self,
        num_agents: int = NUM_AGENTS,
        norm: str = "stern_judging",
        private_assessment: bool = False,
        episode_length: int = EPISODE_LENGTH,
    ):
        if not isinstance(num_agents, int) or isinstance(num_agents, bool) or num_agents < 2 or num_agents % 2:
            raise ValueError(f"num_agents must be an even int >= 2 (agents are paired), got {num_agents!r}")
        if norm not in NORMS:
            raise ValueError(f"norm must be one of {sorted(NORMS)}, got {norm!r}")
        private_assessment = check_bool("private_assessment", private_assessment)
        if not isinstance(episode_length, int) or isinstance(episode_length, bool) or episode_length < 1:
            raise ValueError(f"episode_length must be an int >= 1, got {episode_length!r}")
        super().__init__(num_agents)
        self.norm = norm
        self.private_assessment = private_assessment
        self.episode_length = episode_length
        self.num_views = num_agents if private_assessment else 1

    # -- views -----------------------------------------------------------------
    def view_of(self, reputation: jax.Array, partner: jax.Array) -> jax.Array:
        """``(N,)`` each agent's label of its partner (its own row when private)."""
        if self.private_assessment:
            return reputation[jnp.arange(self.num_agents), partner]
        return reputation[0, partner]

    def own_label(self, reputation: jax.Array) -> jax.Array:
        """``(N,) float32``: the public label, or the fraction of the others that see
        each agent as GOOD (private)."""
        if not self.private_assessment:
            return reputation[0].astype(jnp.float32)
        n = self.num_agents
        others = jnp.sum(reputation, axis=0) - jnp.diagonal(reputation)
        return others.astype(jnp.float32) / (n - 1)

    # -- contract ------------------------------------------------------------
    def initial_state(self, key, params):
        key_rep, key_pair = jax.random.split(key)
        shape = (self.num_views, self.num_agents)
        reputation = (jax.random.uniform(key_rep, shape) < params.initial_good_prob).astype(jnp.int32)
        partner, is_donor = draw_pairing(key_pair, self.num_agents)
        return IndirectReciprocityState(
            reputation=reputation,
            image_score=jnp.zeros(self.num_agents, jnp.int32),
            partner=partner,
            is_donor=is_donor,
            step=jnp.zeros((), jnp.int32),
        )

    def transition(self, key, state, actions, params):
        key_exec, key_assess, key_pair = jax.random.split(key, 3)
        executed, error = execute(key_exec, actions, state.is_donor, params.execution_error)
        cooperated = state.is_donor & (executed == COOPERATE)
        defected = state.is_donor & (executed == DEFECT)
        received, given = donor_payoffs(cooperated, state.partner, params)
        table = jnp.asarray(NORMS[self.norm])
        reputation = assess(key_assess, state.reputation, executed, state.partner, state.is_donor, table, params)
        image_score = update_image_scores(state.image_score, cooperated, state.is_donor)
        partner, is_donor = draw_pairing(key_pair, self.num_agents)
        step = state.step + 1
        truncated = step >= self.episode_length
        new_state = IndirectReciprocityState(
            reputation=reputation, image_score=image_score, partner=partner, is_donor=is_donor, step=step
        )
        info = {
            "terminated": jnp.zeros((), bool),
            "truncated": truncated,
            "is_donor": state.is_donor,
            "partner": state.partner,
            "cooperated": cooperated,
            "defected": defected,
            "execution_error": error,
            "donated": given,
            "received": received,
            "good_fraction": jnp.mean(reputation.astype(jnp.float32)),
            "step": step,
        }
        return new_state, (received - given).astype(jnp.float32), truncated, info

    def get_obs(self, state, params):
        return jnp.stack(
            [
                self.view_of(state.reputation, state.partner).astype(jnp.float32),
                state.image_score[state.partner].astype(jnp.float32),
                self.own_label(state.reputation),
                state.is_donor.astype(jnp.float32),
            ],
            axis=1,
        )

    def action_space(self, params=None):
        return Discrete(2)

    def observation_space(self, params=None):
        low = np.array([0, MIN_SCORE, 0, 0], np.float32)
        high = np.array([1, MAX_SCORE, 1, 1], np.float32)
        return Box(low, high, (OBS_SIZE,), jnp.float32)

    def __repr__(self):
        return (
            f"IndirectReciprocity(num_agents={self.num_agents}, norm={self.norm!r}, "
            f"private_assessment={self.private_assessment}, episode_length={self.episode_length})"
        )
