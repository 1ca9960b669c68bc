"""The environment contract: base class, params, spaces, registry, wrappers.

``PettingZooAdapter`` (``socialjax.core.pettingzoo``) is imported on first access, so
``import socialjax`` works without pettingzoo installed.
"""

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


def __getattr__(name: str):
    # lazy: importing the adapter imports pettingzoo and gymnasium (an optional extra)
    if name == "PettingZooAdapter":
        from socialjax.core.pettingzoo import PettingZooAdapter

        return PettingZooAdapter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
