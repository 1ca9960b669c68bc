"""The learner a :class:`~socialjax.train.TrainConfig` describes, built for an
environment: the class for ``config.algo`` comes from the registry
(:func:`socialjax.agents.registry.learner_class`), the observation space (with the
co-player view under ``coplayer_id``; for a learner with a centralised critic, with the
game's global observation and the seat, :func:`~socialjax.agents.networks.central_space`)
and the action space from the environment. Training
(:mod:`socialjax.train.population`) and the evaluation of stored populations
(:mod:`socialjax.train.evaluation`) both build their learner here.
"""

from __future__ import annotations

from socialjax.agents.learner import Learner
from socialjax.agents.networks import central_space, encoder_spec
from socialjax.agents.registry import learner_class
from socialjax.agents.scripted import make_scripted
from socialjax.core.spaces import Discrete
from socialjax.train.config import TrainConfig
from socialjax.train.seated import coplayer_space


def make_learner(env, config: TrainConfig, seats_per_learner: int, params=None) -> Learner:
    """The learner object for ``config.algo`` on ``env``'s observation and action spaces,
    ``seats_per_learner`` seats each. ``config.conv="auto"`` is resolved for
    ``jax.default_backend()`` (the looped convolution on the CPU, XLA's elsewhere)."""
    params = env.default_params if params is None else params
    space = env.observation_space(params)
    if config.coplayer_id:  # every scripted member, held-out bots too, must be describable
        members = tuple(make_scripted(n, env) for n in dict.fromkeys(config.scripted + config.background))
        space = coplayer_space(space, members, env.num_agents)
    action_space = env.action_space(params)
    if not isinstance(action_space, Discrete):
        raise ValueError(f"the learners need a Discrete action space; {env!r} has {action_space}")
    spec = encoder_spec(space, config.network)  # the actor's
    cls = learner_class(config.algo)
    if cls.CENTRAL_CRITIC:
        space = central_space(space, env.global_observation_space(params), env.num_agents)
    return cls.from_config(space, spec, action_space.n, config, seats_per_learner)

