"""Scripted bots of the gridworlds: the one home of every game's bots.

A bot is an act function ``act(key, slot, obs) -> (B,) int32`` that reads only its own
observation (a batch of ``B`` seats' observations). Games name their bots by string in a
``scripted_bots`` attribute (``tuple[str, ...]``) and keep the plain data the bots read
(targets, action indices); the bots live here, one module per game family, and import
the games' constants (never the other way round):

- :mod:`~socialjax.agents.bots.grid`: ``harvester`` and ``cleaner`` for any gridworld with
  code observations, and :func:`~socialjax.agents.bots.grid.beam_bot`, the movement the
  mining and Territory bots share;
- :mod:`~socialjax.agents.bots.coins`, :mod:`~socialjax.agents.bots.coop_mining`,
  :mod:`~socialjax.agents.bots.gift_refinements`, :mod:`~socialjax.agents.bots.in_the_matrix`,
  :mod:`~socialjax.agents.bots.mushrooms`, :mod:`~socialjax.agents.bots.territory`: the
  games' own bots.

:func:`bot_names` lists the bots of an environment and :func:`make_bot` builds one;
:func:`socialjax.agents.scripted.make_scripted` seats them as population members.
"""

from __future__ import annotations

from collections.abc import Callable

from socialjax.agents.bots import coins, coop_mining, gift_refinements, in_the_matrix, mushrooms, territory
from socialjax.agents.bots.grid import GRID_BOTS, grid_bot
from socialjax.envs.coins import CoinGameLOLA, Coins
from socialjax.envs.coop_mining import CoopMining
from socialjax.envs.gift_refinements import GiftRefinements
from socialjax.envs.grid.base import GridEnv
from socialjax.envs.in_the_matrix import InTheMatrix
from socialjax.envs.mushrooms import Mushrooms
from socialjax.envs.territory import Territory

#: game class -> ``build(env, name) -> act``, the builder of that game's own bots (the
#: names in its ``scripted_bots``); a builder rejects a name it does not know
GAME_BOTS: dict[type, Callable] = {
    Coins: coins.coin_bot,
    CoinGameLOLA: coins.coin_bot,
    CoopMining: coop_mining.miner_bot,
    GiftRefinements: gift_refinements.gift_bot,
    InTheMatrix: in_the_matrix.specialist_bot,
    Mushrooms: mushrooms.mushroom_bot,
    Territory: territory.territory_bot,
}


def _game(env):
    return getattr(env, "unwrapped", env)


def bot_names(env) -> tuple[str, ...]:
    """The scripted bots of ``env`` (or of the game a wrapper wraps): ``harvester`` on a
    gridworld with code observations, ``cleaner`` where it also has a cleaning beam,
    then the game's own ``scripted_bots``."""
    game = _game(env)
    names = []
    if isinstance(game, GridEnv) and game.obs_mode == "codes":
        names.append("harvester")
        if game.clean_rays is not None:
            names.append("cleaner")
    return (*names, *game.scripted_bots)


def make_bot(env, name: str) -> Callable:
    """``act(key, slot, obs) -> (B,) int32`` of the scripted bot ``name`` for ``env``
    (or for the game a wrapper wraps); a ``ValueError`` for a bot ``env`` does not have."""
    game = _game(env)
    if name in GRID_BOTS:
        if name not in bot_names(game):
            raise ValueError(f"scripted bot {name!r} is not available for {env!r}; available: {bot_names(env)}")
        return grid_bot(game, name)
    for cls in type(game).__mro__:
        if cls in GAME_BOTS:
            return GAME_BOTS[cls](game, name)
    raise ValueError(f"unknown scripted bot {name!r} for {env!r}; available: {bot_names(env)}")
