"""``socialjax reproduce``: published experiments as data, rerun at a pipeline-check, a
CPU, a GPU or the published scale, with the published values beside ours and a verdict computed from
the numbers. :data:`ENTRIES` lists them; :func:`reproduce` runs one."""

from socialjax.reproduce.core import (
    DEFAULT_SCALE,
    SCALES,
    VERDICTS,
    Condition,
    Entry,
    Measure,
    Reference,
    Reproduction,
    reproduce,
)
from socialjax.reproduce.entries import ENTRIES, get_entry

__all__ = ["DEFAULT_SCALE", "ENTRIES", "SCALES", "VERDICTS", "Condition", "Entry", "Measure", "Reference",
           "Reproduction", "get_entry", "reproduce"]
