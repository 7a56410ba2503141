"""`backalley sheet print`: the blank score sheet prints on one A4 and one Letter page (Chromium).

The page is printed to PDF by Chromium (as its print preview lays it out) at both paper
sizes and the PDF's pages are counted; a screenshot is saved beside the report's.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from backalley.cli.app import app
from tests.helpers import Browser, screenshots_dir

#: Paper sizes in inches (Chromium's printToPDF takes inches).
PAPER = {"A4": (8.27, 11.69), "Letter": (8.5, 11.0)}
CASES = [
    ("standard", ""),
    ("standard", "no_partnerships"),
    ("standard", "short_deck"),
    ("pereulok", ""),
    ("bab-online", ""),
]


def write_sheet(tmp_path: Path, ruleset: str, options: str) -> Path:
    out = tmp_path / f"{ruleset}-{options or 'plain'}.html"
    args = ["sheet", "print", "-o", str(out), "--ruleset", ruleset, "--players", "Anneliese,Bartholomew,<i>Cy</i>,Di"]
    result = CliRunner().invoke(app, [*args, "--options", options] if options else args)
    assert result.exit_code == 0, result.output
    return out


def pdf_pages(browser: Browser, size: str) -> int:
    width, height = PAPER[size]
    got = browser.call(
        "Page.printToPDF", {"paperWidth": width, "paperHeight": height, "printBackground": True}, session=True
    )
    pdf = base64.b64decode(got["data"])
    return len(re.findall(rb"/Type\s*/Page[^s]", pdf))


@pytest.mark.parametrize(("ruleset", "options"), CASES, ids=[f"{r}+{o}" if o else r for r, o in CASES])
def test_the_printed_sheet_fits_one_page_of_a4_and_of_letter(
    browser: Browser, tmp_path: Path, ruleset: str, options: str
) -> None:
    page = write_sheet(tmp_path, ruleset, options)
    html = page.read_text(encoding="utf-8")
    assert "<i>Cy</i>" not in html and "&lt;i&gt;Cy&lt;/i&gt;" in html  # a name is data, not markup
    assert "<script" not in html and "http" not in html.split("<body>")[1]  # self-contained
    assert browser.open(page.as_uri()) == []
    assert {size: pdf_pages(browser, size) for size in PAPER} == {"A4": 1, "Letter": 1}
    browser.screenshot(screenshots_dir() / f"sheet-{page.stem}.png", 800)


def test_every_deal_of_the_schedule_has_a_row(tmp_path: Path) -> None:
    page = write_sheet(tmp_path, "bab-online", "").read_text(encoding="utf-8")
    cards = re.findall(r'<td class="c">(\d+)</td>', page)
    assert cards == ["12", "10", "8", "6", "4", "2", "1", "3", "5", "7", "9", "11", "13"]
    assert "+10 for each rainbow" in page
