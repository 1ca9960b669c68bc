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


def test_a_bench_file_becomes_records_with_its_provenance(tmp_path):
    """``scripts/record_bench.py``: the rows of a ``socialjax bench --json`` file become
    records of the named table, their provenance read from the file (the command, machine,
    software, batch sizes, repeats) and the load the person states; a file of another
    kind, an unknown table or no stated load is refused."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import record_bench

    bench = {"machine": {"cpu": "AMD EPYC", "cpu_count": 2, "platform": "Linux", "python": "3.11.7", "jax": "0.10.2",
                         "socialjax": "0.1", "backend": "cpu", "devices": ["TFRT_CPU_0"],
                         "load_average_1_5_15min": [0.3, 0.2, 0.1]},
             "args": {"envs": "ipd", "batch_sizes": "1,64", "steps": None, "budget": 2000000, "repeats": 5,
                      "obs_mode": "codes", "seed": 0},
             "results": [{"env": "ipd", "batch": b, "steps": 100, "num_agents": 2, "compile_s": 0.5,
                          "times_s": [0.010, 0.012, 0.011], "median_s": 0.011, "env_steps_per_s": b * 100 / 0.011,
                          "agent_steps_per_s": 2 * b * 100 / 0.011} for b in (1, 64)]}
    path = tmp_path / "bench.json"
    path.write_text(__import__("json").dumps(bench))
    made = record_bench.records(bench, path, "env-matrix-cpu", "quiet", commit="abc1234")
    assert [(r["batch"], r["env_steps_per_s"], r["min_call_s"], r["max_call_s"]) for r in made] == [
        (1, 9091, 0.01, 0.012), (64, 581818, 0.01, 0.012)]
    provenance = made[0]["provenance"]
    assert provenance["command"] == ("socialjax bench --envs ipd --batch-sizes 1,64 --budget 2000000 --repeats 5 "
                                     "--obs-mode codes --seed 0 --json bench.json")
    assert provenance["commit"] == "abc1234" and provenance["batch_sizes"] == [1, 64]
    assert provenance["load"].startswith("quiet; load average at the start [0.3")
    with pytest.raises(ValueError, match="not the JSON of `socialjax bench` over environments"):
        record_bench.records({"training": []}, path, "env-matrix-cpu", "quiet")
    for argv, message in (([str(path), "--table", "nope", "--load", "quiet"], "not a table"),
                          ([str(path), "--table", "env-matrix-cpu", "--load", " "], "say what else ran")):
        done = subprocess.run([sys.executable, str(ROOT / "scripts" / "record_bench.py"), *argv],
                              capture_output=True, text=True)
        assert done.returncode == 2 and message in done.stderr, done.stderr
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "record_bench.py"), str(path), "--table",
                           "env-matrix-cpu", "--load", "quiet", "--dry-run"], capture_output=True, text=True)
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 2, done.stderr
