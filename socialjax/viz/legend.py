"""The colour legend of the grid sprites (``socialjax.envs.grid.render``), as Markdown.

``docs/gridworlds.md`` carries the table this returns; a test keeps them in step::

    python -c "import socialjax as sj; print(sj.viz.colour_legend())"
"""

from __future__ import annotations

from socialjax.core.registry import load_all
from socialjax.envs.grid import constants as C
from socialjax.envs.grid import render as R


def _hex(rgb) -> str:
    return "#" + "".join(f"{int(c):02x}" for c in rgb)


def colour_legend() -> str:
    """Markdown table of every cell code's colour, then the agent colours (agent ``j``
    facing ``h`` is code ``AGENT_BASE + 4 j + h``, drawn as a square with a darker band
    on the side it faces; agent ``j`` has colour ``j % len(AGENT_COLOURS)``). Every
    registered game's module is imported first, so that the table lists all their
    objects whatever was imported before."""
    load_all()
    rows = ["| code | name | RGB | hex |", "|---|---|---|---|"]
    for code, rgb in sorted(R.COLOURS.items()):
        name = C.CODE_NAMES.get(code, "?")
        if code == C.APPLE:
            name += f" (on {C.CODE_NAMES[C.APPLE_CELL]}, with a green stalk)"
        elif code in R.SPRITES:
            name += " (a picture; its main colour)"
        rows.append(f"| {code} | {name} | {tuple(rgb)} | `{_hex(rgb)}` |")
    for j, rgb in enumerate(R.AGENT_COLOURS):
        first = C.AGENT_BASE + 4 * j
        rows.append(f"| {first}-{first + 3} | agent {j} (facing N, E, S, W) | {tuple(rgb)} | `{_hex(rgb)}` |")
    return "\n".join(rows) + "\n"
