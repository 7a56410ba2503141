"""The commands' progress bar on stderr (rich), imported only when a bar is shown.

Importing rich.progress is a large share of a command's start-up, and a bar is
shown only on a terminal: ``backalley.cli.app.progress_bar`` imports this module
only then.
"""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text


class RateColumn(ProgressColumn):
    """Records (or items) per second so far."""

    def render(self, task: Task) -> Text:
        done = task.fields.get("records", task.completed)
        elapsed = task.elapsed or 0.0
        rate = f"{done / elapsed:,.0f}/s" if elapsed > 0 else "-/s"
        return Text(rate, style="progress.data.speed")


def rich_bar(what: str, *, of_total: bool, console: Console, detail: str | None = None) -> Progress:
    """What, bar, count (``n/total`` or ``n records``), ``detail`` (a format of the task's fields), rate,
    time left; cleared when done."""
    count = MofNCompleteColumn() if of_total else TextColumn("{task.fields[records]:,} records")
    extra = [] if detail is None else [TextColumn(detail, markup=False)]
    return Progress(
        TextColumn(f"{what} {{task.description}}", markup=False),
        BarColumn(),
        count,
        *extra,
        RateColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )
