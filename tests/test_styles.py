"""One stylesheet for the report's pages and the service's: ``reporting/templates/style.css``.

Both inline the same file (the report's pages are self-contained and the
service's pages allow no other stylesheet), so they cannot drift apart: each
page carries exactly one ``<style>``, and it is the file's text.
"""

from __future__ import annotations

import re
from pathlib import Path

from backalley.reporting.blocks import stylesheet
from backalley.reporting.html import metrics_page

ROOT = Path(__file__).resolve().parent.parent / "pipeline" / "backalley"
SHEET = ROOT / "reporting" / "templates" / "style.css"


def styles(page: str) -> list[str]:
    return re.findall(r"<style>(.*?)</style>", page, re.DOTALL)


def rules(css: str) -> dict[str, dict[str, str]]:
    """Top-level rules (not inside @media) as selector -> property -> value; a selector list counts for each."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.DOTALL)
    css = re.sub(r"@media[^{]*\{(?:[^{}]*\{[^{}]*\})*[^{}]*\}", "", css)
    out: dict[str, dict[str, str]] = {}
    for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css):
        props = dict((k.strip(), v.strip()) for k, v in (p.split(":", 1) for p in body.split(";") if ":" in p))
        for sel in selectors.split(","):
            out.setdefault(sel.strip(), {}).update(props)
    return out


def test_rules_parses_selector_lists_and_skips_media_and_comments() -> None:
    got = rules("/* a{x:2} */a,b{color:red;margin:0}@media (max-width:1px){a{color:blue}}c{x:1}")
    assert got == {"a": {"color": "red", "margin": "0"}, "b": {"color": "red", "margin": "0"}, "c": {"x": "1"}}


def test_the_report_inlines_the_shared_stylesheet() -> None:
    page = metrics_page()
    assert styles(page) == [SHEET.read_text(encoding="utf-8").strip()]
    assert '<body class="report">' in page


def test_the_service_inlines_the_same_stylesheet() -> None:
    from backalley.service.pages import TEMPLATES

    page = TEMPLATES.get_template("error.html").render(status=404, phrase="Not Found", detail="x", nonce="n")
    assert styles(page) == [str(stylesheet())]
    base = (ROOT / "service" / "templates" / "base.html").read_text(encoding="utf-8")
    assert base.count("<style>") == 1 and "{{ stylesheet }}" in base  # no rule of its own


def test_the_report_rules_are_scoped_to_its_pages() -> None:
    """The report's tables are right-aligned columns of figures, the service's are lists: the report's
    own rules apply under ``body.report`` only, so neither page restyles the other."""
    got = rules(stylesheet())
    assert got["th"]["text-align"] == "left" and got[".report th"]["text-align"] == "right"
    assert got[".cards"]["display"] == "flex" and got[".report .cards"]["display"] == "grid"
    for selector in ("body", "a", "header", "header h1", "h2", "table", "th", "td", ".scroll"):
        assert selector in got, selector
