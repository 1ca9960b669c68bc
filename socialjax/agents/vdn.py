"""Value-Decomposition Networks (Sunehag et al. 2018, "Value-Decomposition Networks For
Cooperative Multi-Agent Learning", AAMAS): Q-learning of a team whose joint Q-value is
the sum of its players' own.

One class, :class:`VDNLearner`, a :class:`~socialjax.agents.dqn.DQNLearner` whose
regression is on whole games instead of single seats. One Q-network, shared by every seat
(parameter sharing, as in SocialJax's and JaxMARL's VDN), reads each player's own
observation; the team's value of a game's joint action is::

    Q_tot(s, a) = sum_n Q(o_n, a_n)

over the game's ``N`` seats, and it is trained by TD on the team reward
``R = sum_n r_n``, with the n-step double-DQN target of :mod:`socialjax.agents.dqn` on
the team's rewards, bootstrapped from the seats' own double-Q values summed::

    G_t = sum_{k<L} gamma^k R_{t+k}  [+ gamma^L sum_n Q_target(o_n', argmax_a Q_online(o_n', a))]

(window, truncation and episode ends as in DQN; a game's seats end their episodes
together, so ``G_t`` is the sum of the seats' own n-step targets, which is how it is
computed: :meth:`VDNLearner.sample`). The loss is the Huber loss (``delta = 1``) between
``Q_tot(s_t, a_t)`` and ``G_t``. Acting is each seat's own epsilon-greedy or Boltzmann
choice on its own ``Q(o_n, .)`` (decentralised execution), as in DQN, and so are the
replay buffer (whole rollouts), the target network, the optimiser and the
hyperparameters (:data:`socialjax.agents.hparams.DQN`).

Seats and games: the learner must hold every seat of each of the ``num_envs`` games, game
by game (seat ``e * N + n`` is player ``n`` of game ``e``), which is what
``TrainConfig(seating="shared")`` (one learner, no scripted members) gives it; anything
else is refused by :meth:`VDNLearner.check_batch` before compiling. A replay sample is a
game step ``(slot, t, e)`` with all its ``N`` seats, and ``batch_size``
(``TrainConfig.dqn_batch``) counts game steps, not seats.

The team reward is the sum of the rollout's rewards over a game's seats, and those are in
the config's reward form (``TrainConfig.reward``): with ``"individual"`` (the default)
it is the sum of the players' own rewards, the paper's team reward; with ``"common"``
every seat already holds that sum, so the team reward is ``N`` times it (what SocialJax's
VDN learns from, ``shared_rewards: True``); with ``"exchange"`` it is again the sum of
the players' own rewards (the exchange only moves reward between the players); with
``"inequity_aversion"`` or ``"svo"`` it is the sum of the players' shaped utilities.

Recurrent agents (the paper's LSTMs) are not implemented: the network is feed-forward,
as in DQN.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from socialjax.agents.dqn import DQNLearner, ReplayBuffer, TDBatch, _positive_int


class VDNLearner(DQNLearner):
    """VDN on a shared :class:`~socialjax.agents.networks.QNetwork`: the seats are
    ``num_envs`` games of ``N = seats // num_envs`` players, game by game.

    The constructor takes :class:`~socialjax.agents.dqn.DQNLearner`'s options and
    ``num_envs``; ``batch_size`` counts game steps. A learner built with other seats (one
    seat, to play a stored population in :mod:`socialjax.train.evaluation`) acts, but
    cannot :meth:`update`.
    """

    @classmethod
    def options(cls, config, seats: int) -> dict[str, Any]:
        return {**super().options(config, seats), "num_envs": config.num_envs}

    def __init__(self, obs_space, spec, num_actions: int, *, num_envs: int, **options):
        super().__init__(obs_space, spec, num_actions, **options)
        self.num_envs = _positive_int("num_envs", num_envs)

    def check_batch(self, config, seats: int) -> None:
        """``ValueError`` unless the learner holds every seat of every game, game by game:
        ``seating="shared"`` without scripted members (``N = seats // num_envs``)."""
        if config.seating != "shared" or config.scripted:
            raise ValueError(
                f"algo={config.algo!r} sums the Q-values of all the players of a game, so one learner must hold "
                f"every seat of every game: set seating='shared' and no scripted members (got "
                f"seating={config.seating!r}, scripted={tuple(config.scripted)})"
            )
        if seats % config.num_envs:
            raise ValueError(f"algo={config.algo!r} needs the seats of whole games: {seats} seats are not "
                             f"num_envs={config.num_envs} games")

    @property
    def num_seats(self) -> int:
        """``N``, the players of each game."""
        if self.seats % self.num_envs:
            raise ValueError(f"VDNLearner's {self.seats} seats are not num_envs={self.num_envs} whole games")
        return self.seats // self.num_envs

    def sample(self, params, target_params, buffer: ReplayBuffer, key: jax.Array, gamma) -> TDBatch:
        """``batch_size`` stored game steps ``(slot, t, e)``, each with its ``N`` seats
        ``e * N + n``: ``obs`` ``(B, N, ...)``, ``action`` ``(B, N)`` and the team's target
        ``(B,)``, the sum of the seats' n-step double-DQN targets (their rewards summed
        are the team reward, their bootstrap values summed the team's)."""
        N = self.num_seats
        slot, t, e = self.draw(buffer, key, self.num_envs)
        m = e[:, None] * N + jnp.arange(N)  # (B, N): the game's seats
        slot, t = (jnp.broadcast_to(x[:, None], m.shape) for x in (slot, t))
        seat_targets = self.targets(params, target_params, buffer, slot.ravel(), t.ravel(), m.ravel(), gamma)
        obs = jax.tree_util.tree_map(lambda x: x[slot, t, m], buffer.obs)
        return TDBatch(obs=obs, action=buffer.action[slot, t, m], target=seat_targets.reshape(m.shape).sum(axis=-1))

    def q_taken(self, params, obs, action: jax.Array) -> jax.Array:
        """``Q_tot = sum_n Q(o_n, a_n)`` ``(B,)`` of ``B`` game steps (``obs`` ``(B, N,
        ...)``, ``action`` ``(B, N)``)."""
        seats = jax.tree_util.tree_map(lambda x: x.reshape(-1, *x.shape[2:]), obs)
        return super().q_taken(params, seats, action.reshape(-1)).reshape(action.shape).sum(axis=-1)
