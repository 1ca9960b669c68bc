"""socialjax: social dilemmas as compiled, vectorised JAX simulations."""

import importlib

from socialjax import core, metrics, testing, viz
from socialjax.core import (
    Box,
    Discrete,
    EpisodeStats,
    JaxMARLAdapter,
    checked,
    describe_envs,
    make,
    registered_envs,
)
from socialjax.envs import register_all as _register_all
from socialjax.metrics import SocialMetrics
from socialjax.rollout import rollout

_register_all()

__version__ = "0.1.0"

# the training side loads on first use (``sj.train.run``): it imports distrax and TensorFlow
# Probability, which would double the time ``import socialjax`` takes for environment users
_LAZY = ("train", "reproduce")


def __getattr__(name: str):
    if name in _LAZY:
        return importlib.import_module(f"socialjax.{name}")
    raise AttributeError(f"module 'socialjax' has no attribute {name!r}")

__all__ = [
    "Box",
    "Discrete",
    "EpisodeStats",
    "JaxMARLAdapter",
    "SocialMetrics",
    "checked",
    "core",
    "describe_envs",
    "make",
    "metrics",
    "registered_envs",
    "rollout",
    "testing",
    "train",
    "viz",
]
