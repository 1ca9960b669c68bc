"""Render the measurement tables of BENCHMARKS.md, REPRODUCTIONS.md and docs/testing.md
from the JSON records in ``measurements/``.

Every measurement table in those files is generated: it sits between the markers

    <!-- table:NAME start -->
    ...
    <!-- table:NAME end -->

and is rewritten from the records of one family file, ``measurements/<kind>/<family>.json``
(``kind`` is ``benchmarks`` or ``reproductions``). Prose outside the markers is kept as
it is. A family file holds::

    {
      "family": "env_throughput",
      "description": "what its records measure",
      "tables": {"NAME": {"document": "BENCHMARKS.md", "intro": "...",
                          "columns": [{"header": "env", "cell": "{env}"}, ...]}},
      "records": [{"table": "NAME", ...the values a row shows..., "provenance": {...}}, ...]
    }

A record holds the values its row shows and its provenance (:data:`PROVENANCE_KEYS`:
the exact command, machine, device, software, date, commit, batch sizes, repeats, load,
notes). A provenance field the measurement's text did not state is ``null``; the rendered
row then says so in its ``source`` cell ("not recorded: commit"), and the lines under the
table spell out each source. Records render in file order.

A column's ``cell`` is a template, or a list of templates tried in order: ``{key}`` or
``{key:spec}`` with a Python format spec (``{env_steps_per_s:,}``, ``{median_call_s:.3f}``)
or one of the specs of :class:`CellFormatter` (``num``: a number as short as it is
written, ``ci``: ``{"mean", "low", "high", "bold"}`` as ``mean [low, high]``). A
template whose keys are null is skipped; a string value is printed as it is whatever
the spec. When no template applies the cell is empty.

    python scripts/render_tables.py           # rewrite the tables
    python scripts/render_tables.py --check   # exit 1 naming the stale tables

Tools append a measurement with :func:`add_record`::

    import sys; sys.path.insert(0, "scripts")
    from render_tables import add_record

    add_record("env_throughput", {
        "table": "env-matrix-cpu", "env": "ipd", "agents": 2, "batch": 64, "steps": 10000,
        "env_steps_per_s": 2594970, "agent_steps_per_s": 5189940, "median_call_s": 0.247,
        "min_call_s": 0.199, "max_call_s": 0.273, "compile_s": 1.12,
        "provenance": {"command": "python scripts/bench_envs.py --json bench.json", "date": "2026-12-01",
                       "commit": "abc1234", "machine": "2-core AMD EPYC VM", "load": "0.3 at the start"},
    })

which checks the record against the table's columns, appends it to the family file and
renders the documents again. ``scripts/record_bench.py`` does it for the file
``socialjax bench --json`` writes.
"""

from __future__ import annotations

import argparse
import json
import re
import string
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MEASUREMENTS = ROOT / "measurements"
DOCUMENTS = ("BENCHMARKS.md", "REPRODUCTIONS.md", "docs/testing.md")
# what a record's provenance holds, in the order the lines under a table list them
PROVENANCE_KEYS = ("command", "machine", "device", "software", "date", "commit", "batch_sizes", "repeats", "load",
                   "notes")
# the fields a rendered row flags as "not recorded" when null
REQUIRED_PROVENANCE = ("command", "machine", "date", "commit", "load")
START = re.compile(r"<!-- table:(?P<name>[A-Za-z0-9_.-]+) start -->")
END = "<!-- table:{name} end -->"
ALIGN = {"left": "---", "right": "---:", "center": ":---:"}


class CellFormatter(string.Formatter):
    """``str.format`` for table cells: a null value skips the template
    (:class:`_Skip`), a string is printed as it is, and two specs of its own: ``num`` (a
    number as written: an integral value without decimals, otherwise Python's shortest
    repr) and ``ci`` (a dict ``{"mean", "low", "high"}`` as ``mean [low, high]``, the
    mean in bold when ``"bold"`` is true)."""

    def get_value(self, key, args, kwargs):
        value = kwargs[key]  # a key the record lacks is an error, not a skipped template
        if value is None:
            raise _Skip(key)
        return value

    def format_field(self, value, format_spec):
        if isinstance(value, str):
            return value
        if format_spec == "num":
            return number(value)
        if format_spec == "ci":
            mean = f"**{number(value['mean'])}**" if value.get("bold") else number(value["mean"])
            return f"{mean} [{number(value['low'])}, {number(value['high'])}]"
        return super().format_field(value, format_spec)


class _Skip(Exception):
    """A template refers to a null value: try the next one."""


FORMATTER = CellFormatter()


def number(value: float | int) -> str:
    """``value`` as it is written: ``-1030`` for -1030.0, ``0.00329``, ``5.96e-08``."""
    if isinstance(value, bool):
        raise TypeError(f"a number, not a bool: {value!r}")
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


def render_cell(column: dict, record: dict) -> str:
    """The cell of ``record`` in ``column``: the first template whose values are all
    present; ``KeyError`` when a template names a key the record does not have."""
    templates = column["cell"] if isinstance(column["cell"], list) else [column["cell"]]
    for template in templates:
        try:
            return FORMATTER.format(template, **record).replace("|", "\\|").replace("\n", " ")
        except _Skip:
            continue
    return ""


def render_row(cells: list[str]) -> str:
    """A markdown row (an empty cell as ``| |``)."""
    return "|" + "|".join(f" {c} " if c else " " for c in cells) + "|"


def missing_provenance(provenance: dict) -> list[str]:
    """The required provenance fields that are null (or absent)."""
    return [k for k in REQUIRED_PROVENANCE if provenance.get(k) in (None, "", [])]


def describe_field(key: str, value: Any) -> str | None:
    """``key: value`` for the lines under a table; a null required field as "not
    recorded", a null optional one as nothing."""
    label = key.replace("_", " ")
    if value in (None, "", []):
        return f"{label} not recorded" if key in REQUIRED_PROVENANCE else None
    if key == "command":
        commands = value if isinstance(value, list) else [value]
        return ("commands " if len(commands) > 1 else "command ") + ", ".join(f"`{c}`" for c in commands)
    if isinstance(value, list):
        value = ", ".join(str(v) for v in value)
    return f"{label}: {value}"


def describe_provenance(provenance: dict, like: dict | None = None, like_key: str = "") -> str:
    """One line: every provenance field, null required ones as "not recorded"; with
    ``like`` (the table's first source) only the fields that differ from it."""
    keys = [k for k in PROVENANCE_KEYS if like is None or provenance.get(k) != like.get(k)]
    parts = [p for k in keys if (p := describe_field(k, provenance.get(k))) is not None]
    if like is not None:
        return f"as **{like_key}**, but " + "; ".join(parts) if parts else f"as **{like_key}**"
    return "; ".join(parts)


def source_keys(records: list[dict]) -> list[tuple[str, dict]]:
    """The distinct provenances of ``records`` in order of first use, keyed A, B, ..."""
    keys: list[tuple[str, dict]] = []
    for record in records:
        prov = record.get("provenance") or {}
        if not any(p == prov for _, p in keys):
            keys.append((_letter(len(keys)), prov))
    return keys


def _letter(i: int) -> str:
    return string.ascii_uppercase[i % 26] * (i // 26 + 1)  # A..Z, then AA..ZZ


def render_table(name: str, spec: dict, records: list[dict]) -> str:
    """The markdown of table ``name``: its rows with a ``source`` column, then one line
    per source."""
    columns = spec["columns"]
    keys = source_keys(records)
    lines = []
    if spec.get("intro"):
        lines += [spec["intro"], ""]
    lines.append(render_row([c["header"] for c in columns] + ["source"]))
    lines.append("|" + "|".join([ALIGN[c.get("align", "left")] for c in columns] + ["---"]) + "|")
    for record in records:
        prov = record.get("provenance") or {}
        key = next(k for k, p in keys if p == prov)
        missing = missing_provenance(prov)
        source = f"{key} (not recorded: {', '.join(missing)})" if missing else key
        lines.append(render_row([render_cell(c, record) for c in columns] + [source]))
    lines.append("")
    first_key, first = keys[0] if keys else ("", {})
    for key, prov in keys:
        differ = sum(prov.get(k) != first.get(k) for k in PROVENANCE_KEYS)
        like = first if key != first_key and differ <= len(PROVENANCE_KEYS) // 2 else None
        lines.append(f"- **{key}**: {describe_provenance(prov, like, first_key)}.")
    return "\n".join(lines)


def family_files() -> list[Path]:
    return sorted(MEASUREMENTS.glob("*/*.json"))


def load_family(path: Path) -> dict:
    data = json.loads(path.read_text())
    unknown = set(data) - {"family", "description", "tables", "records"}
    if unknown:
        raise ValueError(f"{path}: unknown top-level keys {sorted(unknown)}")
    for record in data["records"]:
        if record.get("table") not in data["tables"]:
            raise ValueError(f"{path}: a record of unknown table {record.get('table')!r}")
    return data


def all_tables() -> dict[str, tuple[Path, dict, list[dict]]]:
    """Every table: name -> (family file, table spec, its records)."""
    tables: dict[str, tuple[Path, dict, list[dict]]] = {}
    for path in family_files():
        data = load_family(path)
        for name, spec in data["tables"].items():
            if name in tables:
                raise ValueError(f"table {name!r} is defined in {tables[name][0]} and in {path}")
            tables[name] = (path, spec, [r for r in data["records"] if r["table"] == name])
    return tables


def render_document(text: str, tables: dict, document: str) -> tuple[str, list[str]]:
    """``text`` with every marked table rendered, and the names of the tables whose
    region changed. ``ValueError`` for a marker of an unknown table, a start marker
    without its end, or a table of this document without markers."""
    out, pos, changed, seen = [], 0, [], set()
    for match in START.finditer(text):
        if match.start() < pos:
            continue
        name = match["name"]
        if name not in tables:
            raise ValueError(f"{document}: marker of unknown table {name!r} (no measurements/*/*.json defines it)")
        end = text.find(END.format(name=name), match.end())
        if end < 0:
            raise ValueError(f"{document}: table {name!r} has a start marker and no end marker")
        path, spec, records = tables[name]
        if spec["document"] != document:
            raise ValueError(f"{document}: table {name!r} belongs to {spec['document']}")
        body = "\n" + render_table(name, spec, records) + "\n"
        if text[match.end():end] != body:
            changed.append(name)
        out += [text[pos:match.end()], body]
        pos = end
        seen.add(name)
    out.append(text[pos:])
    unplaced = [n for n, (_, spec, _) in tables.items() if spec["document"] == document and n not in seen]
    if unplaced:
        raise ValueError(f"{document}: no markers for the tables {unplaced}")
    return "".join(out), changed


def render(check: bool = False) -> list[str]:
    """Render every document (or, with ``check``, only compare); the stale tables."""
    tables = all_tables()
    stale, writes = [], []
    for document in DOCUMENTS:  # every document checked before any is written
        path = ROOT / document
        text = path.read_text()
        new, changed = render_document(text, tables, document)
        stale += [f"{document}: {name}" for name in changed]
        if new != text:
            writes.append((path, new))
    if not check:
        for path, new in writes:
            path.write_text(new)
    return stale


def dump_family(data: dict) -> str:
    """A family file's text: the header indented, one record per line (so that an
    appended measurement is one added line)."""
    head = {k: v for k, v in data.items() if k != "records"}
    text = json.dumps(head, indent=2, ensure_ascii=False)
    records = ",\n".join("    " + json.dumps(r, ensure_ascii=False) for r in data["records"])
    return text[:-2] + ',\n  "records": [\n' + records + "\n  ]\n}\n"


def family_path(family: str) -> Path:
    """The file of ``family`` (``"env_throughput"`` or ``"benchmarks/env_throughput"``)."""
    if "/" in family:
        path = MEASUREMENTS / f"{family}.json"
        if path.exists():
            return path
        raise ValueError(f"no family file {path}")
    found = sorted(MEASUREMENTS.glob(f"*/{family}.json"))
    if len(found) != 1:
        names = sorted(f"{p.parent.name}/{p.stem}" for p in family_files())
        raise ValueError(f"family {family!r}: {'ambiguous' if found else 'unknown'}; the families are {names}")
    return found[0]


def add_record(family: str, record: dict[str, Any], *, render_documents: bool = True) -> dict[str, Any]:
    """Append one measurement to ``family`` (a file of ``measurements/``, named as
    ``"env_throughput"`` or ``"benchmarks/env_throughput"``) and render the documents.

    ``record`` names its table (``"table"``, one of the family's ``tables``), holds every
    value the table's columns show (the keys of each column's first template; a value may
    be null where the row shows nothing) and a ``"provenance"`` dict: the keys of
    :data:`PROVENANCE_KEYS`; an absent key is stored as null and rendered as "not
    recorded", so never guess one. ``ValueError`` when the table is unknown, a value a
    column needs is absent, or a provenance key is not one of :data:`PROVENANCE_KEYS`.
    Returns the record as stored. With ``render_documents=False`` only the JSON changes
    (``python scripts/render_tables.py`` renders later)."""
    path = family_path(family)
    data = load_family(path)
    table = record.get("table")
    if table not in data["tables"]:
        raise ValueError(f"{path.name}: unknown table {table!r}; its tables are {sorted(data['tables'])}")
    provenance = dict(record.get("provenance") or {})
    unknown = set(provenance) - set(PROVENANCE_KEYS)
    if unknown:
        raise ValueError(f"unknown provenance keys {sorted(unknown)}; allowed: {PROVENANCE_KEYS}")
    stored = {**record, "provenance": {k: provenance.get(k) for k in PROVENANCE_KEYS}}
    for column in data["tables"][table]["columns"]:
        first = column["cell"][0] if isinstance(column["cell"], list) else column["cell"]
        needed = [f for _, f, _, _ in string.Formatter().parse(first) if f]
        absent = [f for f in needed if f not in stored]
        if absent:
            raise ValueError(f"table {table!r}, column {column['header']!r}: the record lacks {absent}")
        render_cell(column, stored)  # a bad format spec fails here, not in the document
    data["records"].append(stored)
    path.write_text(dump_family(data))
    if render_documents:
        render()
    return stored


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 and name the tables that differ from what the JSON renders")
    args = parser.parse_args(argv)
    try:
        stale = render(check=args.check)
    except ValueError as err:
        print(f"render_tables: {err}", file=sys.stderr)
        return 1
    if args.check and stale:
        print("stale tables (run python scripts/render_tables.py):", file=sys.stderr)
        for name in stale:
            print(f"  {name}", file=sys.stderr)
        return 1
    if not args.check:
        changed = f"changed: {', '.join(stale)}" if stale else "none changed"
        print(f"rendered {len(all_tables())} tables, {changed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
