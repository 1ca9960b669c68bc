"""Agents: scripted strategies (and, as they land, networks, learners and reward
shaping).

Scripted strategies are pure functions of ``(key, strategy, observation)`` so they run
inside the same ``jit``/``vmap``/``lax.scan`` as the environments. Use the modules:

- :mod:`socialjax.agents.memory_one`: memory-one strategies for the iterated 2x2 games
  (ALLC, ALLD, TFT, WSLS, GRIM, RANDOM, GTFT, any ``memory_one(...)`` vector), ``act``,
  ``policy`` and their exact long-run payoffs (``stationary_payoffs``).
- :mod:`socialjax.agents.donor_strategies`: parametric donor-game strategies whose gift
  depends on the recipient's reputation trace.
- :mod:`socialjax.agents.bots`: the gridworlds' scripted bots (``make_bot(env, name)``),
  one module per game family; :mod:`socialjax.agents.scripted` seats any scripted
  strategy as a population member (``make_scripted(name, env)``).
- :mod:`socialjax.agents.shaping`: reward-shaping wrappers (common reward, reward
  exchange, inequity aversion with smoothed traces, social value orientation); each keeps
  the environment's own reward in ``info["raw_reward"]``.

The named memory-one vectors are re-exported here for convenience.
"""

from socialjax.agents import donor_strategies, memory_one, shaping
from socialjax.agents.memory_one import ALLC, ALLD, GRIM, GTFT, RANDOM, STRATEGIES, TFT, WSLS
from socialjax.agents.shaping import (
    CommonReward,
    InequityAversion,
    InequityAversionState,
    RewardExchange,
    SocialValueOrientation,
)

__all__ = [
    "ALLC",
    "CommonReward",
    "InequityAversion",
    "InequityAversionState",
    "RewardExchange",
    "SocialValueOrientation",
    "ALLD",
    "GRIM",
    "GTFT",
    "RANDOM",
    "STRATEGIES",
    "TFT",
    "WSLS",
    "donor_strategies",
    "memory_one",
    "shaping",
]
