"""The donor game with reputation traces (``donor_game``; Vallinder & Hughes 2024).

Rules (Vallinder & Hughes 2024, arXiv:2412.10270; docs/environments.md, "Donor game"):

- ``N`` agents (static, even; 12 in the paper) start every game with
  ``initial_resources`` (10). Each round every agent is in exactly one pair, as donor or
  as recipient. The donor chooses a fraction ``f`` of its current resources ``w``: it
  gives ``x = f * w``, the recipient receives ``multiplier * x`` (``g = 2``; the paper's
  ablations use 1.5 and 3).
- Costly punishment (static option ``punishment=True``): a negative action ``f < 0``
  punishes instead of donating: the donor pays ``x = |f| * w`` and the recipient loses
  ``punish_fine * x`` (2, a 1:2 cost:fine ratio), floored so that resources never go
  below 0.
- Pairing: at the start of each generation (episode) the agents are shuffled and split
  into halves A and B of ``H = N / 2``. In round ``r`` of a game (``N`` rounds), A's
  i-th member meets B's ``(i + r mod H)``-th member. Who donates:

  * ``schedule="released"`` (the authors' released code, the default): rounds
    ``0..H-1`` alternate A, B, A, ...; rounds ``H..N-1`` repeat the same pairings with
    the roles reversed, so every A-B pair meets twice, once in each role (for N = 12:
    A,B,A,B,A,B,B,A,B,A,B,A).
  * ``schedule="alternating"`` (the paper's text): the donor half strictly alternates
    A, B, A, B, ... over all ``N`` rounds.

- A generation is ``games_per_generation`` games (2) with the same halves; every later
  odd-numbered game swaps donor and recipient in every pairing. Resources and traces
  reset between games. The episode is one generation: ``games_per_generation * N``
  steps, then ``done`` (terminated).
- Trace (indirect reciprocity): each agent carries a trace of depth ``trace_depth`` (3;
  ablation 1): entry 0 is the signed fraction it gave in its last donor turn, entry 1 is
  what that turn's recipient had given in its own last donor turn before it, and so on.
  When a donor acts, its trace becomes ``[f, recipient.trace[:depth - 1]]``. An entry
  with no history yet is marked unknown.

Actions, one per agent, used only when that agent is the donor this round (others are
ignored): a float fraction in ``[0, 1]`` (``[-1, 1]`` with punishment), or, with
``action_levels=L``, an integer level for the fractions ``linspace(0, 1, L)`` (with
punishment: ``linspace(-1, 1, 2L - 1)``). An out-of-range action (or NaN) gives
nothing: it is replaced by fraction 0 and flagged in ``info["invalid_action"]``.

Observation of agent i, ``(5 + 2 * trace_depth,)`` float32, about its partner this
round (see ``OBS_*``): ``[is_donor, own resources, partner resources, round in game,
game index, partner trace (depth), partner trace known (depth)]``. There is no private
history with the partner: everything is public.

Reward: the change of the agent's own resources this round (so a game's rewards sum to
``final - initial``). ``info`` per step: ``is_donor`` and ``partner`` ``(N,)``,
``donated`` (amount ``x`` given by each donor), ``received`` (``g * x`` per recipient),
``punish_cost``, ``fine`` (applied, after the floor), ``game_over`` (() bool: a game
ended this step), ``final_resources`` ``(N,)`` (resources at the end of the step,
before any reset; the game's result when ``game_over``), ``generation_final_resources``
``(G, N)`` (filled game by game; complete when ``done``), and ``game``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from socialjax.core.environment import Environment
from socialjax.core.params import EnvParams, check_bool, param
from socialjax.core.spaces import Box, Discrete

# Vallinder & Hughes 2024: 12 agents, 10 resources each, multiplier 2, trace depth 3,
# two games per generation.
NUM_AGENTS = 12
INITIAL_RESOURCES = 10.0
MULTIPLIER = 2.0
PUNISH_FINE = 2.0  # the recipient loses 2x for a punishment costing x (cost:fine 1:2)
TRACE_DEPTH = 3
GAMES_PER_GENERATION = 2
SCHEDULES = ("released", "alternating")

# Observation layout (the trace follows at OBS_TRACE, its known-mask after it).
OBS_IS_DONOR, OBS_OWN, OBS_PARTNER, OBS_ROUND, OBS_GAME, OBS_TRACE = 0, 1, 2, 3, 4, 5


@struct.dataclass
class DonorParams(EnvParams):
    initial_resources: float = param(INITIAL_RESOURCES, 0.0, None, doc="resources at the start of a game")
    multiplier: float = param(MULTIPLIER, 0.0, None, doc="g: the recipient gets g times the gift")
    punish_fine: float = param(PUNISH_FINE, 0.0, None, doc="fine per unit spent punishing")


@struct.dataclass
class DonorState:
    resources: jax.Array  # (N,) float32
    trace: jax.Array  # (N, D) float32, signed fractions given
    trace_known: jax.Array  # (N, D) bool
    order: jax.Array  # (N,) int32: order[:H] is half A, order[H:] half B
    step: jax.Array  # () int32, step within the generation
    generation_final: jax.Array  # (G, N) float32, final resources of finished games


class DonorGame(Environment):
    """Donor game; see the module docstring for the rules, options and shapes.

    Static options: ``num_agents`` (12), ``schedule`` ("released" | "alternating"),
    ``trace_depth`` (3), ``punishment`` (False), ``games_per_generation`` (2),
    ``action_levels`` (None: continuous fractions; an int >= 2: discrete levels).
    """

    params_cls = DonorParams
    # per-agent per-step amounts totalled per episode by socialjax.metrics
    event_keys = ("donated", "received", "punish_cost", "fine", "is_donor")

    def __init__(
        self,
        num_agents: int = NUM_AGENTS,
        schedule: str = "released",
        trace_depth: int = TRACE_DEPTH,
        punishment: bool = False,
        games_per_generation: int = GAMES_PER_GENERATION,
        action_levels: int | None = None,
    ):
        if not isinstance(num_agents, int) or num_agents < 2 or num_agents % 2:
            raise ValueError(
                f"donor_game pairs two halves, so num_agents must be an even int >= 2, got {num_agents!r}"
            )
        if schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
        if not isinstance(trace_depth, int) or trace_depth < 1:
            raise ValueError(f"trace_depth must be an int >= 1, got {trace_depth!r}")
        if not isinstance(games_per_generation, int) or games_per_generation < 1:
            raise ValueError(f"games_per_generation must be an int >= 1, got {games_per_generation!r}")
        if action_levels is not None and (not isinstance(action_levels, int) or action_levels < 2):
            raise ValueError(f"action_levels must be None or an int >= 2, got {action_levels!r}")
        punishment = check_bool("punishment", punishment)
        super().__init__(num_agents)
        self.schedule = schedule
        self.trace_depth = trace_depth
        self.punishment = punishment
        self.games_per_generation = games_per_generation
        self.action_levels = action_levels
        self.half = num_agents // 2
        self.rounds_per_game = num_agents
        self.episode_length = games_per_generation * num_agents
        if action_levels is None:
            self.noop_action = 0.0
        else:
            self.noop_action = action_levels - 1 if punishment else 0
        self.obs_size = OBS_TRACE + 2 * trace_depth

    # -- rules ---------------------------------------------------------------
    def pairing(self, order: jax.Array, step: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Who meets whom at ``step`` of the generation, and who donates.

        Returns ``partner (N,) int32`` and ``is_donor (N,) bool``."""
        H = self.half
        game, rnd = step // self.rounds_per_game, step % self.rounds_per_game
        offset = rnd % H
        donor_is_a = rnd % 2 == 0
        if self.schedule == "released":
            donor_is_a = donor_is_a ^ (rnd >= H)  # second pass: same pairs, roles reversed
        donor_is_a = donor_is_a ^ (game % 2 == 1)  # odd games swap every pairing's roles
        a_ids, b_ids = order[:H], order[H:]
        b_of_a = b_ids[(jnp.arange(H) + offset) % H]
        partner = jnp.zeros(self.num_agents, jnp.int32).at[a_ids].set(b_of_a).at[b_of_a].set(a_ids)
        is_donor = jnp.zeros(self.num_agents, bool).at[a_ids].set(donor_is_a).at[b_ids].set(~donor_is_a)
        return partner, is_donor

    def action_fractions(self, actions: jax.Array) -> jax.Array:
        """Signed fractions of own resources, ``(N,) float32``."""
        if self.action_levels is None:
            return actions.astype(jnp.float32)
        top = self.action_levels - 1
        levels = actions.astype(jnp.float32)
        return (levels - top) / top if self.punishment else levels / top

    def transfer(
        self, resources: jax.Array, fractions: jax.Array, partner: jax.Array, is_donor: jax.Array, params: DonorParams
    ) -> dict[str, jax.Array]:
        """Donations and punishments of one round. Every agent is in exactly one pair,
        so each recipient is the target of exactly one donor."""
        amount = jnp.abs(fractions) * resources * is_donor
        punishing = fractions < 0
        donated = jnp.where(punishing, 0.0, amount)
        punish_cost = jnp.where(punishing, amount, 0.0)
        # the recipient of donor i is partner[i]; scatter each donor's effect onto it
        received = jnp.zeros_like(resources).at[partner].add(params.multiplier * donated)
        fine_due = jnp.zeros_like(resources).at[partner].add(params.punish_fine * punish_cost)
        fine = jnp.minimum(fine_due, resources)  # resources never go below 0
        new = resources - donated - punish_cost + received - fine
        return dict(resources=new, donated=donated, received=received, punish_cost=punish_cost, fine=fine)

    def update_traces(self, state: DonorState, fractions, partner, is_donor):
        """A donor's trace becomes ``[f, recipient's trace[:D-1]]``."""
        new_trace = jnp.concatenate([fractions[:, None], state.trace[partner, :-1]], axis=1)
        new_known = jnp.concatenate([jnp.ones_like(is_donor)[:, None], state.trace_known[partner, :-1]], axis=1)
        trace = jnp.where(is_donor[:, None], new_trace, state.trace)
        known = jnp.where(is_donor[:, None], new_known, state.trace_known)
        return trace, known

    def _fresh_game(self, params) -> tuple[jax.Array, jax.Array, jax.Array]:
        n, d = self.num_agents, self.trace_depth
        resources = jnp.full((n,), params.initial_resources, jnp.float32)
        return resources, jnp.zeros((n, d), jnp.float32), jnp.zeros((n, d), bool)

    # -- contract ------------------------------------------------------------
    def initial_state(self, key, params):
        resources, trace, known = self._fresh_game(params)
        return DonorState(
            resources=resources,
            trace=trace,
            trace_known=known,
            # a uniformly random order: indices of the sorted uniform draws (top_k is
            # much cheaper than jax.random.permutation on the CPU, same distribution)
            order=jax.lax.top_k(jax.random.uniform(key, (self.num_agents,)), self.num_agents)[1].astype(jnp.int32),
            step=jnp.zeros((), jnp.int32),
            generation_final=jnp.zeros((self.games_per_generation, self.num_agents), jnp.float32),
        )

    def transition(self, key, state, actions, params):
        partner, is_donor = self.pairing(state.order, state.step)
        fractions = jnp.where(is_donor, self.action_fractions(actions), 0.0)
        out = self.transfer(state.resources, fractions, partner, is_donor, params)
        trace, known = self.update_traces(state, fractions, partner, is_donor)
        reward = out["resources"] - state.resources

        game = state.step // self.rounds_per_game
        game_over = state.step % self.rounds_per_game == self.rounds_per_game - 1
        generation_final = jnp.where(
            game_over, state.generation_final.at[game].set(out["resources"]), state.generation_final
        )
        fresh_res, fresh_trace, fresh_known = self._fresh_game(params)
        new_state = DonorState(
            resources=jnp.where(game_over, fresh_res, out["resources"]),
            trace=jnp.where(game_over, fresh_trace, trace),
            trace_known=jnp.where(game_over, fresh_known, known),
            order=state.order,
            step=state.step + 1,
            generation_final=generation_final,
        )
        done = new_state.step >= self.episode_length
        info = {
            "terminated": done,
            "truncated": jnp.zeros((), bool),
            "is_donor": is_donor,
            "partner": partner,
            "donated": out["donated"],
            "received": out["received"],
            "punish_cost": out["punish_cost"],
            "fine": out["fine"],
            "game_over": game_over,
            "game": game,
            "final_resources": out["resources"],
            "generation_final_resources": generation_final,
        }
        return new_state, reward, done, info

    def get_obs(self, state, params):
        # a finished generation (only ever seen as info["final_obs"]) is observed as
        # its last round
        step = jnp.minimum(state.step, self.episode_length - 1)
        partner, is_donor = self.pairing(state.order, step)
        game, rnd = step // self.rounds_per_game, step % self.rounds_per_game
        n = self.num_agents
        scalars = jnp.stack(
            [
                is_donor.astype(jnp.float32),
                state.resources,
                state.resources[partner],
                jnp.full(n, rnd, jnp.float32),
                jnp.full(n, game, jnp.float32),
            ],
            axis=1,
        )
        return jnp.concatenate(
            [scalars, state.trace[partner], state.trace_known[partner].astype(jnp.float32)], axis=1
        )

    def action_space(self, params=None):
        if self.action_levels is None:
            return Box(-1.0 if self.punishment else 0.0, 1.0, (), jnp.float32)
        return Discrete(2 * self.action_levels - 1 if self.punishment else self.action_levels)

    def observation_space(self, params=None):
        d = self.trace_depth
        low = np.array([0, 0, 0, 0, 0] + [-1.0 if self.punishment else 0.0] * d + [0] * d, np.float32)
        high = np.array(
            [1, np.inf, np.inf, self.rounds_per_game - 1, self.games_per_generation - 1] + [1.0] * d + [1] * d,
            np.float32,
        )
        return Box(low, high, (self.obs_size,), jnp.float32)
