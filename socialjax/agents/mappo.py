"""MAPPO (Yu et al. 2022, "The Surprising Effectiveness of PPO in Cooperative Multi-Agent
Games", NeurIPS Datasets and Benchmarks): PPO whose critic is centralised.

Each seat's actor sees only its own observation; one critic sees the game's global
observation (:meth:`socialjax.core.environment.Environment.global_observation`: for the
grid games the whole map's codes with every player on it; elsewhere all players'
observations together) and the seat's one-hot index in its game, so that one critic
gives every seat its own value (the paper's agent-specific input, here the agent id
only). The critic is used only to learn: acting needs the actor alone (centralised
training, decentralised execution), and the evaluation scenarios act greedily on the
actor.

Everything else is :class:`~socialjax.agents.ppo.ActorCriticLearner`'s PPO: GAE, the
clipped surrogate and clipped value loss, the entropy bonus, one Adam over the actor and
critic together, minibatch epochs, and the value normalisation of the paper
(``TrainConfig.value_norm``, off by default as for PPO). Parameters are shared between
seats as the population's seating says (``seating="shared"``: one actor and one critic for
all seats, MAPPO's usual choice; ``"independent"``: one of each per seat). The reward is
the config's reward form: MAPPO in cooperative tasks (and SocialJax's MAPPO configs,
``shared_rewards: True``) trains on the team's common reward, ``reward="common"``.

A recurrent MAPPO (``recurrent=True``) has a GRU in the actor; the critic stays
feed-forward on the global observation.
"""

from __future__ import annotations

from socialjax.agents.networks import GLOBAL, SEAT, CentralActorCritic, EncoderSpec, critic_spec
from socialjax.agents.ppo import ActorCriticLearner
from socialjax.core.spaces import Dict


class MAPPOLearner(ActorCriticLearner):
    """PPO with a centralised critic (:class:`~socialjax.agents.networks.CentralActorCritic`).
    Its observation space is a :func:`~socialjax.agents.networks.central_space`; ``spec``
    reads the actor's part."""

    CENTRAL_CRITIC = True  # the seated loop passes the global observation (socialjax.train.seated)

    @classmethod
    def from_config(cls, obs_space: Dict, spec: EncoderSpec, num_actions: int, config, seats: int) -> MAPPOLearner:
        num_seats = int(obs_space.spaces[SEAT].shape[0])
        critic = critic_spec(obs_space.spaces[GLOBAL], config.network, num_seats)
        return cls(obs_space, spec, num_actions, critic=critic, **{**cls.options(config), "algo": "ppo"})

    def __init__(self, obs_space: Dict, spec: EncoderSpec, num_actions: int, *, critic: EncoderSpec, **options):
        self.critic = critic  # read by network(), which the base class's __init__ calls
        super().__init__(obs_space, spec, num_actions, **options)

    def network(self, spec: EncoderSpec, num_actions: int, **sizes) -> CentralActorCritic:
        return CentralActorCritic(spec, num_actions, critic_spec=self.critic, **sizes)
