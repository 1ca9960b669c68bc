"""Partner selection, reputation and punishment (``partner_punishment``; Dasgupta &
Musolesi 2023/2025, "Investigating the impact of direct punishment on the emergence of
cooperation in multi-agent reinforcement learning systems").

Rules (the paper; docs/environments.md, "Partner selection, reputation and
punishment"); where the paper is silent we follow the authors' released code
(github.com/nayanadasgupta/Understanding_Punishment_In_MAS_With_RL):

- ``N`` agents (static ``num_agents``, 5). An episode is ``K`` *cycles* (static
  ``num_cycles``, 1), each of ``N`` games of ``R`` rounds (static ``num_rounds``, 10) of
  the prisoner's dilemma with (R, S, T, P) = (3, 0, 4, 1). A cycle is one "episode" of
  the authors' code; several cycles per episode let reputation, kept across cycles,
  inform the next cycle's selection, as the authors' reputation kept across episodes
  does. Game ``g`` is agent ``g`` (its *selector*) against ``partner[g]``: every agent
  heads exactly one game per cycle and may also be the partner in any number of
  others (popular agents play more), as in the authors' code, where each agent plays
  ``num_rounds`` rounds with its pick.
- Partner selection (static ``partner_selection=True``): the first step of each cycle
  is the *select* step: every agent picks one of the others (head 0, an index among the
  others in increasing agent order, skipping itself), seeing the public reputations.
  Picks are fixed for the cycle. Without selection there is no select step and each
  agent's partner is drawn uniformly from the others at the start of each cycle.
- Games are played one after another (game-major, as in the authors' code) in a
  uniformly random order drawn at the start of each cycle (``top_k`` of uniforms), so
  no agent index is always first. Each round of a game is one *play* step (the two players choose C/D,
  head 1) followed, when any punishment is on, by one *punish* step: each player's
  punisher sees what its target just played and decides (head 2). All other agents'
  actions are ignored at that step (the observation's ``active`` flag says who acts).
- Direct punishment (static ``direct_punishment``): each player may punish its partner.
  Third-party punishment (static ``third_party_punishment``): for each of the two
  players a bystander is drawn uniformly from the ``N - 2`` non-players (two *distinct*
  bystanders, so each has one target; the authors' code lets them coincide) and may
  punish that player. A punishment costs the target ``punish_loss`` (3); the punisher
  gets the intrinsic reward ``just_reward`` (+2) if the target defected (just) or
  ``unjust_reward`` (-10) if it cooperated (unjust); with static ``costly=True`` a just
  punishment also costs the punisher ``punish_cost`` (3) (net -1 with the defaults; only
  just punishments are charged, so an unjust one costs -10 either way).
- Public reputation (reset to 0 each episode, kept across the cycles of an episode;
  the authors' code keeps it across all its episodes): ``+1`` for playing C, ``-1``
  for D, ``+2`` for a just punishment, ``-3`` for an unjust one (no change for not
  punishing).
- Rewards are paid at the step they accrue: PD payoffs at the play step, punishment
  losses, intrinsic rewards and costs at the punish step.

Action of each agent: int32 ``Box`` of shape ``(3,)``, low ``(0, 0, 0)``, high ``(N-2,
1, 1)``: ``[select (index among the others), play (0 = C, 1 = D), punish (0 = no, 1 =
yes)]``. Heads are read only at their own step and only from the agents that act there;
heads of disabled options are ignored. An out-of-range action (any head) is replaced by
the no-op ``(-1, 1, 0)``: a uniformly random pick at the select step, D at a play step
(not acting is not cooperating), no punishment; it is flagged in
``info["invalid_action"]``.

One action per step (static ``one_action=True``; ``partner_punishment_one_action``; ours,
for learners that pick one discrete action): ``Discrete(lcm(N - 1, 2))`` (4 with 5
agents), action ``a`` read as the select head ``a mod (N - 1)``, the play head ``a mod
2`` and the punish head ``a mod 2``. Every value of every head then has the same number
of actions, so a uniform policy is uniform over each phase's choices. An out-of-range
action is the no-op above, flagged.

Observation of agent i, float32 ``(13,)``, or ``(14 + N,)`` with static
``observe_reputation=True`` (see ``OBS_*``): ``[phase is select, phase is play, phase
is punish, active, is player (in the current game), is third-party punisher, own last
C, own last D, partner last C, partner last D, target C, target D, round]`` then
``[own reputation, partner reputation, reputations of the others (N - 1, in the select
head's order)]``. "Last" is the last action played in any game (both 0 before the
first); "partner" is the opponent in the current game (zeros when i is not playing);
"target" is what the agent i may punish played this round (punish step only); "round"
counts rounds within the current game.

``info`` per step: ``(N,)`` int32 event counts ``played``, ``cooperated``,
``punished`` (punishments inflicted), ``third_party_punished`` (of those, as a
bystander), ``was_punished``, ``just_punishments``, ``unjust_punishments``; ``(N,)``
``reputation`` (float32, after the step) and ``partner`` (int32, each agent's pick);
``phase`` (() int32: 0 select, 1 play, 2 punish).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from socialjax.core.environment import Environment
from socialjax.core.params import EnvParams, check_bool, param
from socialjax.core.spaces import Box, Discrete

# Dasgupta & Musolesi: 5 agents, 10 rounds per game, PD (R, S, T, P) = (3, 0, 4, 1).
NUM_AGENTS = 5
NUM_ROUNDS = 10
PD_PAYOFFS = (3.0, 0.0, 4.0, 1.0)
PUNISH_LOSS = 3.0  # punishment_victim_penalty = -3 (authors' Mechanisms/Punishment.py)
JUST_REWARD = 2.0  # just_punish_reward = 2
UNJUST_REWARD = -10.0  # unjust_punish_reward = -10
PUNISH_COST = 3.0  # costly=True: a just punishment costs the punisher 3 (docs/environments.md)
REP_COOPERATE, REP_DEFECT = 1.0, -1.0  # authors' Mechanisms/Reputation.py
REP_JUST, REP_UNJUST = 2.0, -3.0

COOPERATE, DEFECT = 0, 1
NO_ACTION = -1  # last action before an agent's first round
PHASE_SELECT, PHASE_PLAY, PHASE_PUNISH = 0, 1, 2
HEAD_SELECT, HEAD_PLAY, HEAD_PUNISH = 0, 1, 2
RANDOM_PICK = -1  # the no-op's select head: a uniformly random partner
NO_OP = (RANDOM_PICK, DEFECT, 0)

# Observation layout; the reputation block (own, partner, others) starts at OBS_REP.
(OBS_SELECT, OBS_PLAY, OBS_PUNISH, OBS_ACTIVE, OBS_PLAYER, OBS_THIRD, OBS_OWN_C, OBS_OWN_D,
 OBS_PARTNER_C, OBS_PARTNER_D, OBS_TARGET_C, OBS_TARGET_D, OBS_ROUND) = range(13)
OBS_REP = 13

BOOL_OPTIONS = ("partner_selection", "direct_punishment", "third_party_punishment", "costly", "observe_reputation",
                "one_action")


@struct.dataclass
class PartnerPunishmentParams(EnvParams):
    R: float = param(PD_PAYOFFS[0], doc="reward for mutual cooperation (3)")
    S: float = param(PD_PAYOFFS[1], doc="sucker's payoff (0)")
    T: float = param(PD_PAYOFFS[2], doc="temptation to defect (4)")
    P: float = param(PD_PAYOFFS[3], doc="punishment for mutual defection (1)")
    punish_loss: float = param(PUNISH_LOSS, 0.0, None, doc="reward lost by a punished agent")
    just_reward: float = param(JUST_REWARD, doc="intrinsic reward for punishing a defector")
    unjust_reward: float = param(UNJUST_REWARD, doc="intrinsic reward for punishing a cooperator")
    punish_cost: float = param(PUNISH_COST, 0.0, None, doc="cost of a just punishment (costly=True)")
    rep_cooperate: float = param(REP_COOPERATE, doc="reputation change for playing C")
    rep_defect: float = param(REP_DEFECT, doc="reputation change for playing D")
    rep_just: float = param(REP_JUST, doc="reputation change for a just punishment")
    rep_unjust: float = param(REP_UNJUST, doc="reputation change for an unjust punishment")


def episode_length(num_agents: int, num_rounds: int, num_cycles: int, partner_selection: bool,
                   punishment: bool) -> int:
    """Steps of an episode: per cycle a select step (with selection) and ``num_agents``
    games of ``num_rounds`` rounds, each a play step and (with any punishment) a punish
    step. Plain arithmetic, for configs made without building the game."""
    return num_cycles * (int(partner_selection) + num_agents * num_rounds * (2 if punishment else 1))


@struct.dataclass
class PartnerPunishmentState:
    partner: jax.Array  # (N,) int32: opponent in the game headed by each agent
    order: jax.Array  # (N,) int32: order[k] heads the k-th game of the episode
    step: jax.Array  # () int32, step within the episode
    reputation: jax.Array  # (N,) float32
    last_action: jax.Array  # (N,) int32, last action played (NO_ACTION before any)
    round_actions: jax.Array  # (2,) int32, this round's actions of the two players
    bystander: jax.Array  # (2,) int32, third-party punishers of the two players


class PartnerPunishment(Environment):
    """Repeated PD with optional partner selection, direct and third-party punishment
    and public reputation; see the module docstring for rules, options and shapes.

    Static options: ``num_agents`` (5), ``num_rounds`` (10 rounds per game),
    ``num_cycles`` (1 cycle of N games per episode), ``partner_selection`` (True),
    ``direct_punishment`` (True),
    ``third_party_punishment`` (False), ``costly`` (False), ``observe_reputation``
    (True), ``one_action`` (False).
    """

    params_cls = PartnerPunishmentParams
    noop_action = NO_OP  # one_action=True: -1, read as NO_OP (heads)
    # per-agent per-step counts totalled per episode by socialjax.metrics
    event_keys = (
        "played",
        "cooperated",
        "punished",
        "third_party_punished",
        "was_punished",
        "just_punishments",
        "unjust_punishments",
    )

    def __init__(
        self,
        num_agents: int = NUM_AGENTS,
        num_rounds: int = NUM_ROUNDS,
        num_cycles: int = 1,
        partner_selection: bool = True,
        direct_punishment: bool = True,
        third_party_punishment: bool = False,
        costly: bool = False,
        observe_reputation: bool = True,
        one_action: bool = False,
    ):
        if not isinstance(num_agents, int) or isinstance(num_agents, bool) or num_agents < 2:
            raise ValueError(f"num_agents must be an int >= 2, got {num_agents!r}")
        if not isinstance(num_rounds, int) or isinstance(num_rounds, bool) or num_rounds < 1:
            raise ValueError(f"num_rounds must be an int >= 1, got {num_rounds!r}")
        if not isinstance(num_cycles, int) or isinstance(num_cycles, bool) or num_cycles < 1:
            raise ValueError(f"num_cycles must be an int >= 1, got {num_cycles!r}")
        partner_selection = check_bool("partner_selection", partner_selection)
        direct_punishment = check_bool("direct_punishment", direct_punishment)
        third_party_punishment = check_bool("third_party_punishment", third_party_punishment)
        costly = check_bool("costly", costly)
        observe_reputation = check_bool("observe_reputation", observe_reputation)
        one_action = check_bool("one_action", one_action)
        if third_party_punishment and num_agents < 4:
            raise ValueError(
                f"third_party_punishment=True needs two bystanders besides the two players, so "
                f"num_agents >= 4, got num_agents={num_agents}"
            )
        if costly and not (direct_punishment or third_party_punishment):
            raise ValueError(
                "costly=True needs direct_punishment or third_party_punishment, got both False"
            )
        super().__init__(num_agents)
        self.num_rounds = num_rounds
        self.partner_selection = bool(partner_selection)
        self.direct_punishment = bool(direct_punishment)
        self.third_party_punishment = bool(third_party_punishment)
        self.costly = bool(costly)
        self.observe_reputation = bool(observe_reputation)
        self.one_action = bool(one_action)
        self.num_actions = (num_agents - 1) * 2 // math.gcd(num_agents - 1, 2)  # of one_action=True
        if self.one_action:
            self.noop_action = -1
        self.has_punish_step = self.direct_punishment or self.third_party_punishment
        self.steps_per_round = 2 if self.has_punish_step else 1
        self.select_steps = 1 if self.partner_selection else 0
        self.num_cycles = num_cycles
        self.cycle_length = self.select_steps + num_agents * num_rounds * self.steps_per_round
        self.episode_length = episode_length(num_agents, num_rounds, num_cycles, partner_selection,
                                             direct_punishment or third_party_punishment)
        self.obs_size = OBS_REP + (num_agents + 1 if self.observe_reputation else 0)

    # -- rules ---------------------------------------------------------------
    def schedule(self, step: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        """``(phase, game, round)`` () int32 at episode ``step`` (``game`` indexes
        ``state.order``, within the current cycle). Steps past the end are clamped to the
        last step."""
        within = jnp.clip(step, 0, self.episode_length - 1) % self.cycle_length
        k = jnp.maximum(within - self.select_steps, 0)
        per_game = self.num_rounds * self.steps_per_round
        game, rnd = k // per_game, (k // self.steps_per_round) % self.num_rounds
        sub = k % self.steps_per_round
        phase = jnp.where(within < self.select_steps, PHASE_SELECT, PHASE_PLAY + sub)
        return phase.astype(jnp.int32), game.astype(jnp.int32), rnd.astype(jnp.int32)

    def other_index_to_agent(self, choice: jax.Array) -> jax.Array:
        """Map ``(N,)`` indices among the others (skipping oneself) to agent ids."""
        me = jnp.arange(self.num_agents)
        return (choice + (choice >= me)).astype(jnp.int32)

    def random_partners(self, key: jax.Array) -> jax.Array:
        """``(N,) int32``: for each agent, one of the others uniformly at random."""
        choice = jax.random.randint(key, (self.num_agents,), 0, self.num_agents - 1)
        return self.other_index_to_agent(choice)

    def select_partners(self, key: jax.Array, picks: jax.Array) -> jax.Array:
        """Partners from the select head ``(N,)``; the no-op's ``RANDOM_PICK`` gets a
        uniformly random other agent."""
        return jnp.where(picks == RANDOM_PICK, self.random_partners(key), self.other_index_to_agent(picks))

    def draw_bystanders(self, key: jax.Array, a: jax.Array, b: jax.Array) -> jax.Array:
        """``(2,) int32``: two distinct non-players, uniformly at random (the ``top_k``
        of uniform draws with the players excluded); entry 0 judges ``a``, 1 judges
        ``b``. Meaningless (but harmless) with fewer than 4 agents."""
        u = jax.random.uniform(key, (self.num_agents,))
        me = jnp.arange(self.num_agents)
        u = jnp.where((me == a) | (me == b), -1.0, u)
        return jax.lax.top_k(u, 2)[1].astype(jnp.int32)

    def play_round(self, a, b, act_a, act_b, params) -> tuple[jax.Array, jax.Array]:
        """Payoffs and reputation changes of one PD round, ``(N,)`` float32 each."""
        table = jnp.array([[params.R, params.S], [params.T, params.P]], jnp.float32)
        n = self.num_agents
        reward = jnp.zeros(n, jnp.float32).at[a].add(table[act_a, act_b]).at[b].add(table[act_b, act_a])
        rep = lambda x: jnp.where(x == COOPERATE, params.rep_cooperate, params.rep_defect)  # noqa: E731
        d_rep = jnp.zeros(n, jnp.float32).at[a].add(rep(act_a)).at[b].add(rep(act_b))
        return reward, d_rep

    def punishers(self, state: PartnerPunishmentState, a, b) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
        """The (up to) four punishment opportunities of a punish step: ``punisher``,
        ``target``, ``target_action`` and ``enabled``, each ``(4,)``: direct on a, direct
        on b, third party on a, third party on b."""
        punisher = jnp.stack([b, a, state.bystander[0], state.bystander[1]]).astype(jnp.int32)
        target = jnp.stack([a, b, a, b]).astype(jnp.int32)
        target_action = state.round_actions[jnp.array([0, 1, 0, 1])]
        enabled = jnp.array([self.direct_punishment] * 2 + [self.third_party_punishment] * 2)
        return punisher, target, target_action, enabled

    def punish(self, punisher, target, target_action, enabled, decisions, params) -> dict[str, jax.Array]:
        """Apply punishments. ``decisions`` ``(4,)`` are the punishers' punish heads.
        Returns ``(N,)`` reward, reputation change and event counts."""
        n = self.num_agents
        done = enabled & (decisions == 1)
        just = done & (target_action == DEFECT)
        unjust = done & (target_action == COOPERATE)
        cost = params.punish_cost if self.costly else 0.0
        gain = jnp.where(just, params.just_reward - cost, 0.0) + jnp.where(unjust, params.unjust_reward, 0.0)
        rep = jnp.where(just, params.rep_just, 0.0) + jnp.where(unjust, params.rep_unjust, 0.0)
        reward = jnp.zeros(n, jnp.float32).at[punisher].add(gain).at[target].add(-params.punish_loss * done)
        count = lambda x, idx: jnp.zeros(n, jnp.int32).at[idx].add(x.astype(jnp.int32))  # noqa: E731
        third = jnp.array([False, False, True, True])
        return dict(
            reward=reward,
            d_rep=jnp.zeros(n, jnp.float32).at[punisher].add(rep),
            punished=count(done, punisher),
            third_party_punished=count(done & third, punisher),
            was_punished=count(done, target),
            just_punishments=count(just, punisher),
            unjust_punishments=count(unjust, punisher),
        )

    # -- contract ------------------------------------------------------------
    def random_order(self, key: jax.Array) -> jax.Array:
        """``(N,) int32``: a uniformly random game order (indices of sorted uniforms)."""
        n = self.num_agents
        return jax.lax.top_k(jax.random.uniform(key, (n,)), n)[1].astype(jnp.int32)

    def initial_state(self, key, params):
        key_order, key_partner = jax.random.split(key)
        n = self.num_agents
        return PartnerPunishmentState(
            # a placeholder until the select step when partner_selection is on
            partner=self.random_partners(key_partner),
            order=self.random_order(key_order),
            step=jnp.zeros((), jnp.int32),
            reputation=jnp.zeros(n, jnp.float32),
            last_action=jnp.full(n, NO_ACTION, jnp.int32),
            round_actions=jnp.zeros(2, jnp.int32),
            bystander=jnp.zeros(2, jnp.int32),
        )

    def heads(self, actions: jax.Array) -> jax.Array:
        """``(N, 3) int32`` head actions for ``(N,)`` actions of ``one_action=True``: ``a mod
        (N - 1)``, ``a mod 2``, ``a mod 2``; the no-op ``-1`` is :data:`NO_OP`."""
        a = jnp.asarray(actions).astype(jnp.int32)
        heads = jnp.stack([a % (self.num_agents - 1), a % 2, a % 2], axis=-1)
        return jnp.where((a >= 0)[..., None], heads, jnp.asarray(NO_OP, jnp.int32))

    def transition(self, key, state, actions, params):
        if self.one_action:
            actions = self.heads(actions)
        key_select, key_bystander = jax.random.split(key)
        n = self.num_agents
        phase, game, _ = self.schedule(state.step)
        is_select, is_play, is_punish = phase == PHASE_SELECT, phase == PHASE_PLAY, phase == PHASE_PUNISH

        # select step
        partner = state.partner
        if self.partner_selection:
            picked = self.select_partners(key_select, actions[:, HEAD_SELECT])
            partner = jnp.where(is_select, picked, partner)
        a = state.order[game]
        b = partner[a]
        played_partner = partner

        # play step
        act_a, act_b = actions[a, HEAD_PLAY], actions[b, HEAD_PLAY]
        play_reward, play_rep = self.play_round(a, b, act_a, act_b, params)
        played = jnp.zeros(n, jnp.int32).at[a].add(1).at[b].add(1)
        cooperated = jnp.zeros(n, jnp.int32).at[a].add(act_a == COOPERATE).at[b].add(act_b == COOPERATE)
        last_action = jnp.where(is_play, state.last_action.at[a].set(act_a).at[b].set(act_b), state.last_action)
        round_actions = jnp.where(is_play, jnp.stack([act_a, act_b]), state.round_actions)
        bystander = state.bystander
        if self.third_party_punishment:
            bystander = jnp.where(is_play, self.draw_bystanders(key_bystander, a, b), bystander)

        # punish step
        punisher, target, target_action, enabled = self.punishers(state, a, b)
        out = self.punish(punisher, target, target_action, enabled, actions[punisher, HEAD_PUNISH], params)

        reward = jnp.where(is_play, play_reward, 0.0) + jnp.where(is_punish, out["reward"], 0.0)
        d_rep = jnp.where(is_play, play_rep, 0.0) + jnp.where(is_punish, out["d_rep"], 0.0)
        order = state.order
        if self.num_cycles > 1:  # a new cycle: a new game order and new random partners (placeholders with selection)
            key_order, key_partner = jax.random.split(jax.random.fold_in(key, self.num_cycles))
            new_cycle = (state.step + 1) % self.cycle_length == 0
            partner = jnp.where(new_cycle, self.random_partners(key_partner), partner)
            order = jnp.where(new_cycle, self.random_order(key_order), order)
        new_state = PartnerPunishmentState(
            partner=partner,
            order=order,
            step=state.step + 1,
            reputation=state.reputation + d_rep,
            last_action=last_action,
            round_actions=round_actions,
            bystander=bystander,
        )
        done = new_state.step >= self.episode_length
        zero = jnp.zeros(n, jnp.int32)
        info = {
            "terminated": done,
            "truncated": jnp.zeros((), bool),
            "phase": phase,
            "partner": played_partner,
            "reputation": new_state.reputation,
            "played": jnp.where(is_play, played, zero),
            "cooperated": jnp.where(is_play, cooperated, zero),
        }
        for name in ("punished", "third_party_punished", "was_punished", "just_punishments", "unjust_punishments"):
            info[name] = jnp.where(is_punish, out[name], zero)
        return new_state, reward.astype(jnp.float32), done, info

    def get_obs(self, state, params):
        n = self.num_agents
        me = jnp.arange(n)
        live = state.step < self.episode_length
        phase, game, rnd = self.schedule(state.step)
        is_select, is_play, is_punish = (phase == p for p in (PHASE_SELECT, PHASE_PLAY, PHASE_PUNISH))
        a = state.order[game]
        b = state.partner[a]
        in_game = ~is_select & live
        player = in_game & ((me == a) | (me == b))
        opponent = jnp.where(me == a, b, a)
        third = jnp.zeros(n, bool)
        if self.third_party_punishment:
            third = in_game & is_punish & ((me == state.bystander[0]) | (me == state.bystander[1]))
        active = jnp.where(
            is_select,
            jnp.full(n, self.partner_selection),
            jnp.where(is_play, player, (player & self.direct_punishment) | third),
        ) & live
        # what this agent may punish played this round
        target_action = jnp.where(
            player,
            jnp.where(me == a, state.round_actions[1], state.round_actions[0]),
            jnp.where(me == state.bystander[0], state.round_actions[0], state.round_actions[1]),
        )
        has_target = is_punish & ((player & self.direct_punishment) | third)
        partner_last = state.last_action[opponent]
        f = lambda x: x.astype(jnp.float32)  # noqa: E731
        cols = [
            jnp.full(n, f(is_select & live)),
            jnp.full(n, f(is_play & live)),
            jnp.full(n, f(is_punish & live)),
            f(active),
            f(player),
            f(third),
            f(state.last_action == COOPERATE),
            f(state.last_action == DEFECT),
            f(player & (partner_last == COOPERATE)),
            f(player & (partner_last == DEFECT)),
            f(has_target & (target_action == COOPERATE)),
            f(has_target & (target_action == DEFECT)),
            jnp.full(n, f(rnd * in_game)),
        ]
        obs = jnp.stack(cols, axis=1)
        if not self.observe_reputation:
            return obs
        rep = state.reputation
        # others in the select head's order: row i lists agents 0..N-1 without i
        others = jnp.arange(n - 1)[None, :] + (jnp.arange(n - 1)[None, :] >= me[:, None])
        block = jnp.concatenate(
            [rep[:, None], jnp.where(player, rep[opponent], 0.0)[:, None], rep[others]], axis=1
        )
        return jnp.concatenate([obs, block], axis=1)

    def action_space(self, params=None):
        if self.one_action:
            return Discrete(self.num_actions)
        high = np.array([self.num_agents - 2, 1, 1], np.int32)
        return Box(np.zeros(3, np.int32), high, (3,), jnp.int32)

    def observation_space(self, params=None):
        low = np.zeros(self.obs_size, np.float32)
        high = np.ones(self.obs_size, np.float32)
        high[OBS_ROUND] = self.num_rounds - 1
        if self.observe_reputation:
            low[OBS_REP:] = -np.inf
            high[OBS_REP:] = np.inf
        return Box(low, high, (self.obs_size,), jnp.float32)
