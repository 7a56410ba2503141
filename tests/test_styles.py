"""The report's stylesheet and the service's share one look: the same colours, type and tables.

The two stylesheets (``reporting/html.py``'s ``CSS`` and the ``<style>`` of
``service/templates/base.html``) style different pages, so each keeps rules of
its own; what both pages show (the palette, the body text, links, the header,
headings and tables) must be written the same in both.
"""

from __future__ import annotations

import re
from pathlib import Path

from backalley.reporting.html import CSS as REPORT_CSS

BASE = Path(__file__).resolve().parent.parent / "pipeline" / "backalley" / "service" / "templates" / "base.html"
#: Selectors whose rules both stylesheets must state alike (a property either states agrees).
SHARED = ("body", "a", "header", "header h1", "h2", "table", "th", "td", ".scroll")
#: Properties that differ on purpose: the report's tables are columns of figures (right-aligned),
#: the service's are lists of games and plays.
APART = {("th", "text-align"), ("td", "text-align")}


def service_css() -> str:
    text = BASE.read_text(encoding="utf-8")
    return text[text.index("<style>") + len("<style>") : text.index("</style>")]


def rules(css: str) -> dict[str, dict[str, str]]:
    """Top-level rules (not inside @media) as selector -> property -> value; a selector list counts for each."""
    css = re.sub(r"@media[^{]*\{(?:[^{}]*\{[^{}]*\})*[^{}]*\}", "", css)
    out: dict[str, dict[str, str]] = {}
    for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css):
        props = dict((k.strip(), v.strip()) for k, v in (p.split(":", 1) for p in body.split(";") if ":" in p))
        for sel in selectors.split(","):
            out.setdefault(sel.strip(), {}).update(props)
    return out


def test_rules_parses_selector_lists_and_skips_media() -> None:
    got = rules("a,b{color:red;margin:0}@media (max-width:1px){a{color:blue}}c{x:1}")
    assert got == {"a": {"color": "red", "margin": "0"}, "b": {"color": "red", "margin": "0"}, "c": {"x": "1"}}


def test_the_palette_of_the_report_is_the_services() -> None:
    report, service = rules(REPORT_CSS)[":root"], rules(service_css())[":root"]
    assert report, "no :root in the report's stylesheet"
    assert {k: service.get(k) for k in report} == report


def test_shared_elements_are_styled_alike() -> None:
    report, service = rules(REPORT_CSS), rules(service_css())
    for selector in SHARED:
        mine, theirs = report.get(selector, {}), service.get(selector, {})
        both = mine.keys() & theirs.keys()
        assert both, f"{selector}: no property in common"
        differ = {k: (mine[k], theirs[k]) for k in both if mine[k] != theirs[k] and (selector, k) not in APART}
        assert not differ, f"{selector} differs (report, service): {differ}"
