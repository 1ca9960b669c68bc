"""The registry of ``socialjax reproduce`` entries."""

from __future__ import annotations

from socialjax.core.registry import unknown_name
from socialjax.reproduce.baselines import BASELINES
from socialjax.reproduce.commons import COMMONS_METRICS
from socialjax.reproduce.commons_institutions import COMMONS_INSTITUTIONS
from socialjax.reproduce.core import Entry
from socialjax.reproduce.donor_evolution import DONOR_EVOLUTION
from socialjax.reproduce.gathering import GATHERING_SCARCITY
from socialjax.reproduce.gridworlds import CLEANUP_REWARD, HARVEST_REWARD
from socialjax.reproduce.inequity import INEQUITY_AVERSION
from socialjax.reproduce.lattice import LATTICE_COLLAPSE
from socialjax.reproduce.norms import NORMS
from socialjax.reproduce.partner_punishment import PARTNER_PUNISHMENT
from socialjax.reproduce.punishment import PUNISHMENT
from socialjax.reproduce.punishment_learners import PUNISHMENT_LEARNERS
from socialjax.reproduce.schelling import SCHELLING
from socialjax.reproduce.weis import WEIS_INCONTEXT

ENTRIES: dict[str, Entry] = {e.name: e for e in (CLEANUP_REWARD, HARVEST_REWARD, INEQUITY_AVERSION, GATHERING_SCARCITY,
                                                 COMMONS_METRICS, SCHELLING, NORMS, WEIS_INCONTEXT, DONOR_EVOLUTION,
                                                 PUNISHMENT, PUNISHMENT_LEARNERS, COMMONS_INSTITUTIONS,
                                                 LATTICE_COLLAPSE, PARTNER_PUNISHMENT, BASELINES)}


def get_entry(name: str) -> Entry:
    """The entry called ``name``; ``ValueError`` with the closest name and the list."""
    if name not in ENTRIES:
        raise unknown_name("experiment", name, ENTRIES)
    return ENTRIES[name]
