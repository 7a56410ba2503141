"""What a report page is made of: headings, notes, tables, cards and charts, rendered by Jinja2 templates.

The page builders (:mod:`backalley.reporting.html`) make lists of these blocks
from the figures; the templates in ``reporting/templates`` (autoescaped) turn
them into HTML.  Text is escaped by the templates unless it is
:class:`~markupsafe.Markup`, which only the cell helpers make, from escaped parts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from typing import Any, ClassVar

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

#: The stylesheet of the report's pages and of the service's (one file, inlined in each page).
STYLESHEET = "style.css"


@dataclass(frozen=True, slots=True)
class Heading:
    """A section's title; level 2 headings with an anchor are listed in the page's contents."""

    kind: ClassVar[str] = "heading"
    text: str
    anchor: str = ""
    level: int = 2


@dataclass(frozen=True, slots=True)
class Note:
    """A line of explanation under a heading (``text`` may be Markup)."""

    kind: ClassVar[str] = "note"
    text: Any
    how: bool = False  # a "how to read it" line, not a remark


@dataclass(frozen=True, slots=True)
class Table:
    """A table of figures; ``folded`` tables sit in a closed ``<details>`` (open when printed)."""

    kind: ClassVar[str] = "table"
    headers: Sequence[str]
    rows: Sequence[Sequence[Any]]
    caption: str | None = None
    folded: bool = False


@dataclass(frozen=True, slots=True)
class Card:
    label: str
    value: Any
    sub: Any = ""


@dataclass(frozen=True, slots=True)
class Cards:
    kind: ClassVar[str] = "cards"
    items: Sequence[Card]


@dataclass(frozen=True, slots=True)
class Chart:
    """An inline SVG chart from :mod:`backalley.reporting.charts` (every text in it escaped), or None."""

    svg: str | None
    what: str

    @property
    def markup(self) -> Markup:
        return Markup(self.svg or "")


@dataclass(frozen=True, slots=True)
class Charts:
    kind: ClassVar[str] = "charts"
    items: Sequence[Chart]


@dataclass(frozen=True, slots=True)
class Html:
    """A piece of page made by a cell helper (already escaped Markup)."""

    kind: ClassVar[str] = "html"
    markup: Markup


@dataclass(frozen=True, slots=True)
class View:
    """One sorted view of a table, reached by its anchor."""

    anchor: str
    table: Table


@dataclass(frozen=True, slots=True)
class Views:
    """The same table in several orders: the address's anchor picks one (CSS ``:target``), else the first."""

    kind: ClassVar[str] = "views"
    items: Sequence[View]


Block = Heading | Note | Table | Cards | Charts | Html | Views


@dataclass
class Page:
    """A whole page: its title, the line under it, its blocks, and the way back to the output folder.

    Every level-2 heading gets an anchor (from its text where it has none, unique on the page) and
    is listed in the page's contents.
    """

    title: str
    subtitle: Any
    blocks: list[Block] = field(default_factory=list)
    root: str = ""

    def __post_init__(self) -> None:
        taken = {b.anchor for b in self.blocks if isinstance(b, Heading) and b.anchor}
        for i, b in enumerate(self.blocks):
            if isinstance(b, Heading) and not b.anchor and b.level == 2:
                stem = anchor_of(b.text)
                name, k = stem, 1
                while name in taken:
                    k += 1
                    name = f"{stem}-{k}"
                taken.add(name)
                self.blocks[i] = Heading(b.text, name, b.level)

    @property
    def lead(self) -> list[Block]:
        """The blocks before the first heading (a link back): shown above the contents."""
        first = next((i for i, b in enumerate(self.blocks) if isinstance(b, Heading)), len(self.blocks))
        return self.blocks[:first]

    @property
    def body(self) -> list[Block]:
        """The blocks from the first heading on."""
        return self.blocks[len(self.lead) :]

    @property
    def contents(self) -> list[Heading]:
        """The page's sections: its level-2 headings, in order."""
        return [b for b in self.blocks if isinstance(b, Heading) and b.level == 2]


def anchor_of(text: str) -> str:
    """An id for a heading's text: lower-case ASCII letters and digits joined by ``-`` (``section`` if none)."""
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-") or "section"


@cache
def environment() -> Environment:
    """The templates' environment (autoescaped, undefined names an error), built once per process."""
    env = Environment(
        loader=PackageLoader("backalley.reporting", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,
        keep_trailing_newline=True,
    )
    env.globals["stylesheet"] = stylesheet
    return env


@cache
def stylesheet() -> Markup:
    """The shared stylesheet's text (a file of the package, trusted: it is no data)."""
    return Markup(files("backalley.reporting").joinpath("templates", STYLESHEET).read_text(encoding="utf-8").strip())


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)
