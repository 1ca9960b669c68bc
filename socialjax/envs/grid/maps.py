"""ASCII maps parsed once, at ``make``, into static numpy arrays.

A legend maps each character to a cell code (see :mod:`constants`) and optional roles
(spawn point, inside spawn point, potential dirt, ...). An unknown character is an
error naming the character and where it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Tile:
    """What a map character means: its initial cell code and the roles it plays."""

    code: int
    roles: frozenset = field(default_factory=frozenset)


def tile(code: int, *roles: str) -> Tile:
    return Tile(code, frozenset(roles))


@dataclass(frozen=True)
class GridMap:
    """A parsed map. ``cells`` holds the initial code of every cell ``(H, W) uint8``;
    ``roles[name]`` is an ``(H, W) bool`` mask; ``chars`` keeps the ASCII for rendering."""

    name: str
    cells: np.ndarray
    roles: dict
    chars: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        return self.cells.shape

    def role(self, name: str) -> np.ndarray:
        return self.roles.get(name, np.zeros(self.shape, bool))

    def points(self, name: str) -> np.ndarray:
        """``(K, 2) int32`` row/col coordinates of the cells with role ``name``, row-major."""
        return np.argwhere(self.role(name)).astype(np.int32)


def parse_map(name: str, text: str, legend: dict[str, Tile]) -> GridMap:
    """Parse ``text`` (rows separated by newlines; leading/trailing blank lines ignored)."""
    rows = [r for r in text.split("\n")]
    while rows and not rows[0].strip():
        rows.pop(0)
    while rows and not rows[-1].strip():
        rows.pop()
    if not rows:
        raise ValueError(f"map {name!r} is empty")
    width = max(len(r) for r in rows)
    rows = [r.ljust(width) for r in rows]
    cells = np.zeros((len(rows), width), np.uint8)
    roles: dict[str, np.ndarray] = {}
    for i, row in enumerate(rows):
        for j, ch in enumerate(row):
            if ch not in legend:
                raise ValueError(
                    f"map {name!r}: unknown character {ch!r} at row {i}, column {j}; "
                    f"known characters: {''.join(sorted(legend))!r}"
                )
            t = legend[ch]
            cells[i, j] = t.code
            for role in t.roles:
                roles.setdefault(role, np.zeros(cells.shape, bool))[i, j] = True
    return GridMap(name, cells, roles, np.array([list(r) for r in rows]))


def game_map(name: str, ascii_map: str | None, default: str, legend: dict[str, Tile],
             required: tuple[tuple[str, str], ...] = ()) -> GridMap:
    """A game's map: ``default``, or the user's ``ascii_map`` with the same ``legend``
    (its errors then name the option). ``required``: ``(role, what)`` pairs, each role a
    map must have, ``what`` saying why in the error."""
    if ascii_map is not None:
        name = f"{name} ascii_map"
    grid_map = parse_map(name, default if ascii_map is None else ascii_map, legend)
    for role, what in required:
        if not grid_map.role(role).any():
            raise ValueError(f"map {name!r} has no {what}")
    return grid_map
