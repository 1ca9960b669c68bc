"""The documents as facts: the measurement tables of BENCHMARKS.md and REPRODUCTIONS.md
are what ``measurements/`` renders (``scripts/render_tables.py --check``), no heading
carries a date or an issue number (history goes to CHANGELOG.md), and every relative
link of the README and docs/ points at a file that exists. No JAX here."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEADED = [ROOT / "README.md", ROOT / "BENCHMARKS.md", ROOT / "REPRODUCTIONS.md", *sorted((ROOT / "docs").glob("*.md"))]
LINKED = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MONTHS = ("January|February|March|April|May|June|July|August|September|October|November|December|"
          "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec")
DATED = re.compile(rf"\b20\d\d-\d\d-\d\d\b"                         # 2026-11-25
                   rf"|\b(?:{MONTHS})\.?\s+(?:\d{{1,2}},?\s+)?20\d\d\b"  # November 2026, Nov 3, 2026
                   r"|\bissues?\s+#?\d+|#\d+", re.I)                    # issue 27, #27
LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def without_code(text: str) -> str:
    """``text`` with fenced code blocks and inline code removed (a ``#`` there is no heading, a ``](`` no link)."""
    text = re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def headings(path: Path) -> list[str]:
    return [line for line in without_code(path.read_text()).splitlines() if re.match(r"#{1,6}\s", line)]


def test_the_tables_are_what_the_measurements_render():
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "render_tables.py"), "--check"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, f"stale tables: run python scripts/render_tables.py\n{done.stdout}{done.stderr}"


@pytest.mark.parametrize("path", HEADED, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_heading_carries_a_date_or_an_issue(path):
    bad = [h for h in headings(path) if DATED.search(h)]
    assert not bad, f"{path.name}: headings with a date or an issue number (history belongs in CHANGELOG.md): {bad}"


@pytest.mark.parametrize("heading", ["## Results (2026-11-25)", "### Territory (issue 27)", "## Done in November 2026",
                                     "## Fixed #12", "## Nov 3, 2026"])
def test_the_heading_rule_catches_dates_and_issues(heading):
    assert DATED.search(heading)


@pytest.mark.parametrize("heading", ["## Donor game: `donor_game` (Vallinder & Hughes 2024)",
                                     "## Lattice prisoner's dilemma: `lattice_pd` (Weng & Lee 2026)"])
def test_the_heading_rule_keeps_citations(heading):
    assert not DATED.search(heading)


@pytest.mark.parametrize("path", LINKED, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_at_files(path):
    broken = []
    for target in LINK.findall(without_code(path.read_text())):
        if re.match(r"(https?:|mailto:|#)", target):
            continue
        file = target.split("#", 1)[0]
        if not (path.parent / file).exists():
            broken.append(target)
    assert not broken, f"{path.name}: links to files that do not exist: {broken}"
