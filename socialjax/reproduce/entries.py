"""The registry of ``socialjax reproduce`` entries."""

from __future__ import annotations

import difflib

from socialjax.reproduce.core import Entry
from socialjax.reproduce.gridworlds import CLEANUP_REWARD, HARVEST_REWARD

ENTRIES: dict[str, Entry] = {e.name: e for e in (CLEANUP_REWARD, HARVEST_REWARD)}


def get_entry(name: str) -> Entry:
    """The entry called ``name``; ``KeyError`` with the closest name and the list."""
    if name not in ENTRIES:
        close = difflib.get_close_matches(str(name), ENTRIES, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise KeyError(f"unknown experiment {name!r}.{hint} Experiments: {', '.join(ENTRIES)}")
    return ENTRIES[name]
