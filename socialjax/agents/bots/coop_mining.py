"""Scripted bots of Cooperative Mining (``socialjax/envs/coop_mining.py``): ``iron_miner``
mines only iron, ``gold_miner`` only gold (raw or partly mined), each a
:func:`socialjax.agents.bots.grid.beam_bot` aimed at the ores of the game's
``CoopMining.BOT_TARGETS``.
"""

from __future__ import annotations

from collections.abc import Callable

from socialjax.agents.bots.grid import beam_bot
from socialjax.envs.coop_mining import CoopMining


def miner_bot(env: CoopMining, name: str) -> Callable:
    """The act function of the miner ``name`` (one of ``env.scripted_bots``)."""
    if name not in env.BOT_TARGETS:
        raise ValueError(f"unknown coop_mining bot {name!r}; known: {env.scripted_bots}")
    return beam_bot(env, env.BOT_TARGETS[name])
