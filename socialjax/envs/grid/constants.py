"""Codes, headings and action tables shared by every gridworld.

Cell codes (one ``uint8`` per cell in the compact observation): terrain and objects
below ``AGENT_BASE``; an agent ``j`` facing ``h`` (relative to the observer) is
``AGENT_BASE + 4 * j + h``.
"""

import numpy as np

# -- cell codes ---------------------------------------------------------------------
FLOOR = 0  # walkable, nothing on it (sand, grass, shadows and spawn points render as decoration)
WALL = 1
OUTSIDE = 2  # beyond the map edge; also every cell of a removed agent's view
APPLE = 3  # a live apple on an apple cell
APPLE_CELL = 4  # an apple cell with no apple (grass / orchard)
DIRT = 5  # river cell covered in dirt / waste (walkable, as in Melting Pot and SSD)
RIVER = 6  # clean river cell that can get dirty
STREAM = 7  # river that never gets dirty
AGENT_BASE = 96
CODE_NAMES = {FLOOR: "floor", WALL: "wall", OUTSIDE: "outside", APPLE: "apple", APPLE_CELL: "apple cell",
              DIRT: "dirt", RIVER: "river", STREAM: "stream"}
# Codes 8 .. AGENT_BASE - 1 hold the objects of the other games, a block per game so that no
# two games share a code (a game defines its codes with ``render.define_object``).
CODE_BLOCKS = {
    "coins": range(8, 16),
    "coop_mining": range(16, 24),
    "mushrooms": range(24, 32),
    "gift_refinements": range(32, 40),
    "in_the_matrix": range(40, 48),
    "territory": range(48, AGENT_BASE),
}

# -- headings -----------------------------------------------------------------------
NORTH, EAST, SOUTH, WEST = 0, 1, 2, 3
# (row, col) step of each heading; row grows downwards
DIRECTIONS = np.array([[-1, 0], [0, 1], [1, 0], [0, -1]], np.int32)

# -- relative moves -----------------------------------------------------------------
NO_MOVE, FORWARD, RIGHT, BACKWARD, LEFT = -1, 0, 1, 2, 3  # FORWARD..LEFT add to heading
NO_BEAM, ZAP, CLEAN, CLAIM = 0, 1, 2, 3  # CLAIM: Territory's claim beam (fired by the game itself)

# Melting Pot action set (ACTION_SET of meltingpot/configs/substrates/clean_up.py):
# 0 no-op, 1 forward, 2 backward, 3 step left, 4 step right, 5 turn left, 6 turn right,
# 7 zap, 8 clean (Clean Up only).
# Each table maps an action index to (relative move, turn, beam).
MELTINGPOT_ACTIONS = np.array(
    [
        [NO_MOVE, 0, NO_BEAM],
        [FORWARD, 0, NO_BEAM],
        [BACKWARD, 0, NO_BEAM],
        [LEFT, 0, NO_BEAM],
        [RIGHT, 0, NO_BEAM],
        [NO_MOVE, -1, NO_BEAM],
        [NO_MOVE, 1, NO_BEAM],
        [NO_MOVE, 0, ZAP],
        [NO_MOVE, 0, CLEAN],
    ],
    np.int32,
)
MELTINGPOT_ACTION_NAMES = ("noop", "forward", "backward", "step_left", "step_right", "turn_left",
                           "turn_right", "zap", "clean")

# SSD action set (original Harvest/Cleanup): left, right, up, down (egocentric), stay,
# turn clockwise, turn counter-clockwise, fire, clean.
SSD_ACTIONS = np.array(
    [
        [LEFT, 0, NO_BEAM],
        [RIGHT, 0, NO_BEAM],
        [FORWARD, 0, NO_BEAM],
        [BACKWARD, 0, NO_BEAM],
        [NO_MOVE, 0, NO_BEAM],
        [NO_MOVE, 1, NO_BEAM],
        [NO_MOVE, -1, NO_BEAM],
        [NO_MOVE, 0, ZAP],
        [NO_MOVE, 0, CLEAN],
    ],
    np.int32,
)
SSD_ACTION_NAMES = ("left", "right", "up", "down", "stay", "turn_cw", "turn_ccw", "fire", "clean")
SSD_NOOP = 4

# Gathering (Leibo et al. 2017): 4 egocentric moves, 2 turns, beam, stay.
GATHERING_ACTIONS = np.array(
    [
        [FORWARD, 0, NO_BEAM],
        [BACKWARD, 0, NO_BEAM],
        [LEFT, 0, NO_BEAM],
        [RIGHT, 0, NO_BEAM],
        [NO_MOVE, -1, NO_BEAM],
        [NO_MOVE, 1, NO_BEAM],
        [NO_MOVE, 0, ZAP],
        [NO_MOVE, 0, NO_BEAM],
    ],
    np.int32,
)
GATHERING_ACTION_NAMES = ("forward", "backward", "step_left", "step_right", "turn_left", "turn_right",
                          "beam", "stay")
GATHERING_NOOP = 7
