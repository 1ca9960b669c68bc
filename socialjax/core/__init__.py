"""The environment contract: base class, params, spaces, registry, wrappers."""

from socialjax.core.checked import checked
from socialjax.core.environment import Environment
from socialjax.core.params import EnvParams, param
from socialjax.core.registry import describe_envs, make, register, registered_envs
from socialjax.core.spaces import Box, Dict, Discrete, Space
from socialjax.core.wrappers import EpisodeStats, EpisodeStatsState, JaxMARLAdapter, Wrapper

__all__ = [
    "Box",
    "Dict",
    "Discrete",
    "EnvParams",
    "Environment",
    "EpisodeStats",
    "EpisodeStatsState",
    "JaxMARLAdapter",
    "Space",
    "Wrapper",
    "checked",
    "describe_envs",
    "make",
    "param",
    "register",
    "registered_envs",
]
