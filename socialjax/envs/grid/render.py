"""Sprites: cell codes to RGB, jitted and vmappable.

Every code gets an 8x8 sprite from a static atlas built with numpy at ``make``. Agent
``j`` facing ``h`` is a body in agent ``j``'s colour with a dark band on the side it
faces. Colours (the legend in docs/gridworlds.md):

floor sand, wall grey, outside black, apple red on grass, apple cell (empty) grass
green, dirt brown, river / stream blue.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from socialjax.envs.grid import constants as C

SPRITE = 8  # pixels per cell (Melting Pot uses 8)

COLOURS = {
    C.FLOOR: (220, 205, 185),
    C.WALL: (110, 110, 110),
    C.OUTSIDE: (0, 0, 0),
    C.APPLE: (214, 88, 88),
    C.APPLE_CELL: (158, 194, 101),
    C.DIRT: (110, 90, 40),
    C.RIVER: (60, 120, 200),
    C.STREAM: (90, 150, 220),
}
# distinct agent colours (cycled beyond 12 agents)
AGENT_COLOURS = [
    (45, 110, 220), (245, 130, 50), (120, 60, 180), (40, 170, 160), (230, 60, 150), (200, 200, 40),
    (20, 20, 120), (150, 80, 40), (255, 215, 0), (90, 200, 90), (130, 0, 80), (0, 90, 60),
]


def _fill(colour) -> np.ndarray:
    return np.broadcast_to(np.asarray(colour, np.uint8), (SPRITE, SPRITE, 3)).copy()


def _apple() -> np.ndarray:
    s = _fill(COLOURS[C.APPLE_CELL])
    yy, xx = np.mgrid[:SPRITE, :SPRITE]
    disc = (yy - 4.5) ** 2 + (xx - 3.5) ** 2 <= 7
    s[disc] = COLOURS[C.APPLE]
    s[0:2, 3:5] = (60, 120, 40)  # stalk and leaf
    return s


def _agent(colour, heading: int) -> np.ndarray:
    s = _fill(COLOURS[C.FLOOR])
    s[1:7, 1:7] = colour
    dark = (np.asarray(colour) * 0.45).astype(np.uint8)
    band = np.zeros((SPRITE, SPRITE), bool)
    band[1:3, 1:7] = True  # facing up
    band = np.rot90(band, -heading)  # rotate clockwise to N, E, S, W
    s[band] = dark
    return s


#: codes drawn with an 8x8 picture rather than their flat colour (the legend gives the colour)
SPRITES: dict[int, np.ndarray] = {C.APPLE: _apple()}


def define_object(block: str, code: int, name: str, colour, sprite: np.ndarray | None = None) -> int:
    """Give a game's object a cell code from its block (``constants.CODE_BLOCKS``), a
    name, a colour and optionally a picture ``(8, 8, 3) uint8``; returns ``code``. Called
    once per object when the game's module is imported; defining a code twice with a
    different name, or outside the block, is an error."""
    if block not in C.CODE_BLOCKS:
        raise ValueError(f"unknown code block {block!r}; blocks: {sorted(C.CODE_BLOCKS)}")
    if code not in C.CODE_BLOCKS[block]:
        raise ValueError(f"code {code} for {name!r} is outside block {block!r} ({C.CODE_BLOCKS[block]})")
    if C.CODE_NAMES.get(code, name) != name:
        raise ValueError(f"code {code} is already {C.CODE_NAMES[code]!r}, cannot also be {name!r}")
    if sprite is not None and np.asarray(sprite).shape != (SPRITE, SPRITE, 3):
        raise ValueError(f"sprite of {name!r} must be ({SPRITE}, {SPRITE}, 3), got {np.asarray(sprite).shape}")
    C.CODE_NAMES[code] = name
    COLOURS[code] = tuple(int(c) for c in colour)
    if sprite is not None:
        SPRITES[code] = np.asarray(sprite, np.uint8)
    return code


def sprite_atlas(num_agents: int) -> np.ndarray:
    """``(AGENT_BASE + 4 N, 8, 8, 3) uint8``: one sprite per code."""
    missing = sorted(set(C.CODE_NAMES) - set(COLOURS))
    if missing:
        raise ValueError(f"cell codes without a colour: {[C.CODE_NAMES[c] for c in missing]}")
    atlas = np.zeros((C.AGENT_BASE + 4 * num_agents, SPRITE, SPRITE, 3), np.uint8)
    for code, colour in COLOURS.items():
        atlas[code] = SPRITES[code] if code in SPRITES else _fill(colour)
    for j in range(num_agents):
        for h in range(4):
            atlas[C.AGENT_BASE + 4 * j + h] = _agent(AGENT_COLOURS[j % len(AGENT_COLOURS)], h)
    return atlas


def sprite_alpha(num_agents: int) -> np.ndarray:
    """``(AGENT_BASE + 4 N, 8, 8) bool``: which pixels of each sprite are opaque. Cell
    sprites are opaque everywhere; an agent covers only its body, so the cell it stands
    on (an apple, dirt, river) shows around it."""
    alpha = np.ones((C.AGENT_BASE + 4 * num_agents, SPRITE, SPRITE), bool)
    alpha[C.AGENT_BASE:] = False
    alpha[C.AGENT_BASE:, 1:7, 1:7] = True
    return alpha


def codes_to_rgb(codes: jnp.ndarray, atlas: np.ndarray, under: jnp.ndarray | None = None,
                 alpha: np.ndarray | None = None) -> jnp.ndarray:
    """``(..., H, W)`` codes -> ``(..., 8 H, 8 W, 3) uint8``. With ``under`` (the cell
    codes beneath, same shape) and ``alpha`` (:func:`sprite_alpha`), transparent pixels
    of a sprite show the sprite of the cell beneath."""
    codes = codes.astype(jnp.int32)
    tiles = jnp.asarray(atlas)[codes]  # (..., H, W, 8, 8, 3)
    if under is not None:
        opaque = jnp.asarray(alpha)[codes][..., None]
        tiles = jnp.where(opaque, tiles, jnp.asarray(atlas)[under.astype(jnp.int32)])
    *lead, h, w = codes.shape
    tiles = jnp.moveaxis(tiles, -4, -3)  # (..., H, 8, W, 8, 3)
    return tiles.reshape(*lead, h * SPRITE, w * SPRITE, 3)
