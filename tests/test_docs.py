"""The documents point only inside the repository, and the report carries its metric definitions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from backalley.cli.app import app
from tests.report_sample import build_hand_made

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "data" / "sample" / "README.md"]
#: The README is an introduction, not a manual or a log: past this many lines, move text to docs/.
README_MAX_LINES = 250
#: Markdown links and images ``[text](target)`` and HTML ``href``/``src`` attributes.
LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|(?:href|src)=\"([^\"]+)\"")
#: Documents a user of the repository does not have, and the short forms of their sections (``RS§4``, ``BAB§6``).
FOREIGN = re.compile(
    r"\.\./shared|/work/shared|\bRECORD\.md\b|\bRULES\.md\b|\bRULESETS?(?:-[\w-]+)?(?:\.md)?\s*§|\bRULESETS?(?:-[\w-]+)?\.md\b"
    r"|\bSHEETS\.md\b|\bOBSERVED\.md\b|\b(?:RS|BAB|R) ?§"
)
#: The sources, tests, benchmarks, schemas and build files: their comments and docstrings cite docs/, not those.
#: tests/test_docs.py is left out: it spells the names it looks for.
SOURCES = sorted(
    {
        *(p for ext in ("py", "c", "pyi") for p in (ROOT / "pipeline").rglob(f"*.{ext}")),
        *(ROOT / "tests").rglob("*.py"),
        *(p for p in (ROOT / "benchmarks").rglob("*") if p.is_file() and p.suffix in {".py", ".md", ".json", ".toml"}),
        *(ROOT / "schemas").rglob("*.json"),
        *(p for name in ("README.md", "Makefile", "pyproject.toml", "setup.py") if (p := ROOT / name).is_file()),
    }
    - {Path(__file__).resolve()}
)


def links(text: str) -> list[str]:
    return [a or b for a, b in LINK.findall(text)]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_stay_in_the_repository_and_resolve(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    assert not FOREIGN.findall(text), f"{doc.name} names a document outside the repository"
    for target in links(text):
        assert "://" not in target and not target.startswith(("/", "mailto:")), f"{doc.name}: {target} leaves"
        path = target.split("#", 1)[0]
        if not path:
            continue
        resolved = (doc.parent / path).resolve()
        assert resolved.is_relative_to(ROOT), f"{doc.name}: {target} leaves the repository"
        assert resolved.exists(), f"{doc.name}: {target} does not exist"


def test_the_link_check_catches_bad_links() -> None:
    """The check above is not vacuous: it finds every kind of link the documents use."""
    assert links('[a](docs/x.md) ![i](p.png) <a href="y.html">') == ["docs/x.md", "p.png", "y.html"]
    assert FOREIGN.findall("see [spec](../shared/spec/RECORD.md)")


def test_sources_cite_no_foreign_document() -> None:
    """Comments and docstrings point to docs/ (rules.md, record-format.md, ...), which users have."""
    assert len(SOURCES) > 50 and ROOT / "pipeline" / "backalley" / "_fastplay.c" in SOURCES
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in SOURCES
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if FOREIGN.search(line)
    ]
    assert not found, "cite docs/ instead of documents outside the repository:\n" + "\n".join(found)


def test_the_foreign_pattern_catches_every_form() -> None:
    for text in (
        "(RULESETS.md §2.8)",
        "RULESET-bab-online.md §12",
        "by RULESETS §2.5",
        "(RULESET-bab-online §6)",
        "(RS§4.4)",
        "(BAB§10.4)",
        "BAB §12",
        "(R§4)",
        "RECORD.md's code table",
        "SHEETS.md",
        "OBSERVED.md",
    ):
        assert FOREIGN.search(text), text
    for text in ("docs/rules.md §14.2", "docs/record-format.md", "board claims ×1…×4", "§7: play"):
        assert not FOREIGN.search(text), text


def test_help_texts_name_no_foreign_document() -> None:
    for command in ("validate", "ingest", "query", "report", "export", "simulate", "schema"):
        result = CliRunner().invoke(app, [command, "--help"])
        assert result.exit_code == 0
        assert not FOREIGN.findall(result.stdout), command


def test_the_packaged_metric_definitions_are_docs_metrics_md() -> None:
    packaged = ROOT / "pipeline" / "backalley" / "reporting" / "metrics.md"
    assert packaged.read_bytes() == (ROOT / "docs" / "metrics.md").read_bytes(), "copy docs/metrics.md into the package"


def test_report_pages_link_to_definitions_written_beside_them(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    build_hand_made(db)
    out = tmp_path / "reports"
    result = CliRunner().invoke(app, ["report", "--db", str(db), "--out", str(out)])
    assert result.exit_code == 0, result.output
    metrics = (out / "metrics.html").read_text(encoding="utf-8")
    assert '<h2 id="bidding-accuracy-per-player">Bidding accuracy (per player)</h2>' in metrics
    assert '<li><a href="#bidding-accuracy-per-player">Bidding accuracy (per player)</a></li>' in metrics
    pages = [out / "index.html", *sorted((out / "players").glob("*.html")), out / "metrics.html"]
    for page in pages:
        for target in links(page.read_text(encoding="utf-8")):
            if target.startswith("#"):  # inside the page (SVG ids)
                continue
            resolved = (page.parent / target.split("#", 1)[0]).resolve()
            assert resolved.is_file(), f"{page.name}: {target}"
    assert 'href="../metrics.html"' in pages[1].read_text(encoding="utf-8")


def test_the_readme_stays_an_introduction() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines: move detail to docs/ (docs/index.md)"


def test_the_docs_index_lists_every_document() -> None:
    index = ROOT / "docs" / "index.md"
    listed = {target.split("#", 1)[0] for target in links(index.read_text(encoding="utf-8"))}
    present = {p.name for p in (ROOT / "docs").iterdir() if p.is_file() and p.name != "index.md"}
    assert present - listed == set(), f"docs/index.md does not list {sorted(present - listed)}"
    assert "docs/index.md" in links((ROOT / "README.md").read_text(encoding="utf-8"))
