"""Score sheets as CSV (docs/sheets.md): a file's rows split into games, each game one sheet record.

Reading happens in two steps, so that a worker process receives bytes, as for JSON:

1. :func:`csv_items` splits a file into games (consecutive rows with the same
   ``game_id``): each is an :class:`~backalley.records.sources.Item` whose raw
   bytes are the header plus that game's rows, byte for byte, and whose line is
   the file line of its first row;
2. :func:`sheet_record` turns one such item into a sheet record (a JSON value for
   the models to check) plus what a row could not say (a located error naming
   the CSV line), and maps every JSON Pointer of the record to its CSV line.

Nothing here raises on bad content: a broken game is an error of that game, the
other games of the file are read.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from backalley.cards import SEATS
from backalley.records.sources import BOM, HUGE_INT, MAX_INT_DIGITS, Item
from backalley.rules import PLAIN, RulesetError, find_ruleset

#: The columns a score sheet may have (docs/sheets.md, "The sheet as CSV").
COLUMNS = (
    "game_id",
    "deal",
    "dealer",
    "seat",
    "player",
    "bid",
    "tricks",
    "points",
    "trump",
    "rainbow",
    "ruleset",
    "options",
    "played_at",
    "event",
)
REQUIRED = ("game_id", "deal", "seat", "player", "bid")
#: The columns that are the same on every row of a game.
GAME_COLUMNS = ("ruleset", "options", "played_at", "event")
#: A line longer than this is not read (its game is an error that says so).
MAX_LINE_BYTES = 1 << 20
#: A game's rows beyond this many bytes are not kept (memory stays bounded; the game is an error).
MAX_GAME_BYTES = 16 << 20
_INT = re.compile(r"[+-]?\d+")


def is_csv(name: str) -> bool:
    """Whether a file of this name holds score sheets as CSV (``.csv`` in any case)."""
    return name.lower().endswith(".csv")


# --- step 1: a file's games -----------------------------------------------------------------


class _Lines:
    """The physical lines of a file for :mod:`csv`, as text, keeping each one's bytes and number.

    ``problems``: lines that are not UTF-8 (read with U+FFFD: their game is a ``SCHEMA`` error);
    ``cut``: lines over :data:`MAX_LINE_BYTES`, not read (their game cannot be read at all).
    """

    def __init__(self, fh: IO[bytes]) -> None:
        self.fh = fh
        self.number = 0
        self.taken: list[bytes] = []
        self.problems: list[str] = []
        self.cut: list[str] = []

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        raw = self.fh.readline(MAX_LINE_BYTES + 1)
        if not raw:
            raise StopIteration
        if self.number == 0:
            raw = raw.removeprefix(BOM)
        self.number += 1
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            skipped = len(raw) + _skip_line(self.fh)
            self.cut.append(f"line {self.number} is {skipped:,} bytes, more than {MAX_LINE_BYTES:,}: not read")
            self.taken.append(raw[:4096] + b"\n")
            return "\n"
        self.taken.append(raw)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.problems.append(f"line {self.number} is not UTF-8 (byte {exc.start + 1}): {exc.reason}")
            return raw.decode("utf-8", "replace")

    def take(self) -> bytes:
        out = b"".join(self.taken)
        self.taken = []
        return out


def _skip_line(fh: IO[bytes]) -> int:
    """Read past the rest of an over-long line; the bytes skipped."""
    skipped = 0
    while chunk := fh.readline(MAX_LINE_BYTES):
        skipped += len(chunk)
        if chunk.endswith(b"\n"):
            break
    return skipped


@dataclass(slots=True)
class _Game:
    key: str
    line: int
    parts: list[bytes] = field(default_factory=list)
    size: int = 0
    #: Why the game cannot be read (a line not read, rows beyond :data:`MAX_GAME_BYTES`).
    problems: list[str] = field(default_factory=list)
    full: bool = False

    def add(self, raw: bytes, line: int) -> None:
        if self.full or self.size + len(raw) > MAX_GAME_BYTES:
            if not self.full:
                self.problems.append(f"more than {MAX_GAME_BYTES:,} bytes of rows from line {line}: the rest not read")
            self.full = True
            return
        self.parts.append(raw)
        self.size += len(raw)


def csv_items(source: str, fh: IO[bytes]) -> Iterator[Item]:
    """The games of a CSV score-sheet file, one :class:`Item` each (raw: the header plus its rows)."""
    lines = _Lines(fh)
    reader = csv.reader(lines, strict=True)
    header = _next_row(reader, lines)
    if header is None:
        return
    head_raw = lines.take()
    names = [h.strip().lower() for h in header[0]] if isinstance(header, tuple) else []
    key_at = names.index("game_id") if "game_id" in names else None
    game: _Game | None = None
    while True:
        start = lines.number + 1
        got = _next_row(reader, lines)
        if got is None:
            break
        raw = lines.take()
        row = got[0] if isinstance(got, tuple) else None
        if row is not None and not any(cell.strip() for cell in row) and game is not None:
            game.add(raw, start)  # a blank line stays with the rows around it
            continue
        key = row[key_at].strip() if row is not None and key_at is not None and key_at < len(row) else ""
        if game is None or (key and key != game.key and key_at is not None):
            if game is not None:
                yield _item(source, head_raw, game)
            game = _Game(key, start)
        game.add(raw, start)
        game.problems += lines.cut
        lines.cut = []
    if game is not None:
        yield _item(source, head_raw, game)


def _next_row(reader: Any, lines: _Lines) -> tuple[list[str]] | str | None:
    """The next row as ``(cells,)``, the :mod:`csv` error text for a row it cannot read, or ``None`` at the end."""
    try:
        return (next(reader),)
    except StopIteration:
        return None
    except csv.Error as exc:
        return str(exc)


def _item(source: str, head_raw: bytes, game: _Game) -> Item:
    raw = head_raw + b"".join(game.parts)
    return Item(source, game.line, raw, "; ".join(game.problems) or None, csv=True)


# --- step 2: one game's rows as a sheet record -------------------------------------------------


@dataclass(slots=True)
class Sheet:
    """One CSV game as a sheet record, with what its rows could not say and where each part came from."""

    record: dict[str, Any]
    #: ``(JSON Pointer, message naming the CSV line)`` of each row the record could not hold.
    errors: list[tuple[str, str]]
    #: The CSV line of each JSON Pointer prefix (``/deals/3/bids/1`` -> its row's line).
    lines: dict[str, int]

    def line_of(self, path: str) -> int | None:
        """The CSV line a JSON Pointer of the record points into (its longest known prefix)."""
        while path:
            got = self.lines.get(path)
            if got is not None:
                return got
            path = path.rpartition("/")[0]
        return None


@dataclass(slots=True)
class _Row:
    line: int
    cells: dict[str, str]


def sheet_record(raw: bytes, first_line: int) -> Sheet:
    """The sheet record of one game's CSV text (header plus rows; the first row is line ``first_line``)."""
    lines = _Lines(io.BytesIO(raw))
    reader = csv.reader(lines, strict=True)
    at_first = {f"/{name}": first_line for name in ("game_id", "format_version", "sheet", *GAME_COLUMNS)}
    sheet = Sheet({"format_version": 2, "sheet": True}, [], at_first)
    header = _next_row(reader, lines)
    if not isinstance(header, tuple):
        sheet.errors.append(("", f"line 1: the header cannot be read: {header or 'the file is empty'}"))
        return sheet
    names = _header(header[0], sheet)
    lines.number = first_line - 1  # (the rows are numbered as in the file they came from)
    rows: list[_Row] = []
    while True:
        start = lines.number + 1
        got = _next_row(reader, lines)
        if got is None:
            break
        if not isinstance(got, tuple):
            sheet.errors.append(("", f"line {start}: {got}"))
            continue
        if not any(cell.strip() for cell in got[0]):
            continue
        if len(got[0]) != len(names):
            sheet.errors.append(("", f"line {start}: {len(got[0])} fields, the header has {len(names)}"))
            continue
        rows.append(_Row(start, {n: c.strip() for n, c in zip(names, got[0], strict=True) if n}))
    sheet.errors += [("", problem) for problem in lines.problems]
    if names and rows:
        _fill(sheet, rows)
    elif names:
        sheet.errors.append(("", f"line {first_line}: no rows"))
    return sheet


def _header(cells: list[str], sheet: Sheet) -> list[str]:
    """The header's column names (``""`` for one not known); an error for each unknown, doubled or missing one."""
    names = [c.strip().lower() for c in cells]
    for n in names:
        if n not in COLUMNS:
            sheet.errors.append(("", f"line 1: unknown column {n!r} (the columns are {', '.join(COLUMNS)})"))
        elif names.count(n) > 1:
            sheet.errors.append(("", f"line 1: column {n!r} is given twice"))
    missing = [n for n in REQUIRED if n not in names]
    if missing:
        sheet.errors.append(("", f"line 1: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}"))
        return []
    return [n if n in COLUMNS else "" for n in names]


def _fill(sheet: Sheet, rows: list[_Row]) -> None:
    """The record's fields from the rows: game fields, players, then the dealings."""
    rec = sheet.record
    first = rows[0]
    rec["game_id"] = first.cells["game_id"]
    _game_fields(sheet, rows)
    rec["players"] = _players(sheet, rows)
    rec["deals"] = [_deal(sheet, k, dealing) for k, dealing in enumerate(_dealings(sheet, rows))]


def _game_fields(sheet: Sheet, rows: list[_Row]) -> None:
    rec = sheet.record
    for name in ("game_id", *GAME_COLUMNS):
        values = {r.cells.get(name, "") for r in rows}
        if len(values) > 1:
            other = next(r for r in rows if r.cells.get(name, "") != rows[0].cells.get(name, ""))
            sheet.errors.append(
                (
                    f"/{name}",
                    f"line {other.line}: {name} {other.cells.get(name, '')!r} differs from the game's first row",
                )
            )
    cells = rows[0].cells
    rec["ruleset"] = cells.get("ruleset") or PLAIN.name  # (no ruleset named: format 1's)
    if cells.get("options"):
        rec["options"] = [o.strip() for o in cells["options"].split("+")]
    for name in ("played_at", "event"):
        if cells.get(name):
            rec[name] = cells[name]


def _players(sheet: Sheet, rows: list[_Row]) -> dict[str, str]:
    """Seat -> player, from every row; a player who changes seat is an error naming both lines."""
    players: dict[str, str] = {}
    first_at: dict[str, int] = {}
    for r in rows:
        seat, player = r.cells["seat"], r.cells["player"]
        if seat not in players:
            players[seat] = player
            first_at[seat] = r.line
            sheet.lines.setdefault(f"/players/{seat}", r.line)
        elif players[seat] != player:
            sheet.errors.append(
                (
                    f"/players/{seat}",
                    f"line {r.line}: {player!r} sits at {seat}, where line {first_at[seat]} has {players[seat]!r}",
                )
            )
    return players


def _dealings(sheet: Sheet, rows: list[_Row]) -> list[list[_Row]]:
    """Consecutive rows grouped into dealings: a new one at a new deal number or after four rows."""
    out: list[list[_Row]] = []
    for r in rows:
        if not out or len(out[-1]) == 4 or r.cells["deal"] != out[-1][0].cells["deal"]:
            out.append([])
        out[-1].append(r)
    return out


def _deal(sheet: Sheet, k: int, rows: list[_Row]) -> dict[str, Any]:
    """One dealing (four rows in bidding order) as a sheet deal."""
    at = f"/deals/{k}"
    first = rows[0]
    sheet.lines[at] = first.line
    deal: dict[str, Any] = {"number": _number(sheet, f"{at}/number", first, "deal")}
    _dealing_shape(sheet, at, rows)
    deal["dealer"] = first.cells.get("dealer", "")
    deal["bids"] = []
    for j, r in enumerate(rows):
        sheet.lines[f"{at}/bids/{j}"] = r.line
        deal["bids"].append({"seat": r.cells["seat"], "bid": _bid(r.cells["bid"])})
        sheet.lines.setdefault(f"{at}/tricks_won/{r.cells['seat']}", r.line)
    tricks = _tricks(sheet, at, rows)
    if tricks is not None:
        deal["tricks_won"] = tricks
    _optional(sheet, at, rows, deal)
    return deal


def _dealing_shape(sheet: Sheet, at: str, rows: list[_Row]) -> None:
    """Four rows, four seats, the dealer on the first row and only repeated on the others."""
    first = rows[0]
    if len(rows) != 4:
        sheet.errors.append((at, f"line {first.line}: a dealing of {len(rows)} row{'s' * (len(rows) != 1)}, not 4"))
    seen: dict[str, int] = {}
    for r in rows:
        seat = r.cells["seat"]
        if seat in seen:
            sheet.errors.append((at, f"line {r.line}: seat {seat!r} is given twice in a dealing (line {seen[seat]})"))
        seen.setdefault(seat, r.line)
    if not first.cells.get("dealer"):
        sheet.errors.append((f"{at}/dealer", f"line {first.line}: the first row of a dealing names the dealer"))
    for r in rows[1:]:
        if r.cells.get("dealer") and r.cells["dealer"] != first.cells.get("dealer"):
            sheet.errors.append(
                (f"{at}/dealer", f"line {r.line}: dealer {r.cells['dealer']!r}, but line {first.line} has another")
            )


def _number(sheet: Sheet, path: str, r: _Row, name: str) -> Any:
    text = r.cells.get(name, "")
    value = _int(text)
    if value is None:
        sheet.errors.append((path, f"line {r.line}: {name} {text!r} is not a whole number"))
        return text
    return value


def _int(text: str) -> int | None:
    if not _INT.fullmatch(text):
        return None
    digits = text.lstrip("+-")
    if len(digits) > MAX_INT_DIGITS:
        return -HUGE_INT if text.startswith("-") else HUGE_INT
    return int(text)


def _bid(text: str) -> int | str:
    """A bid cell: a whole number, else the word as written (the models say whether it is one)."""
    value = _int(text)
    return text if value is None else value


def _tricks(sheet: Sheet, at: str, rows: list[_Row]) -> dict[str, Any] | None:
    """Each player's tricks, or ``None`` when every row leaves them empty (a passed-out dealing)."""
    given = [r for r in rows if r.cells.get("tricks", "")]
    if not given:
        return None
    out: dict[str, Any] = {}
    for r in rows:
        text = r.cells.get("tricks", "")
        if not text:
            sheet.errors.append((f"{at}/tricks_won", f"line {r.line}: no tricks, but other rows of the dealing have"))
            continue
        out[r.cells["seat"]] = _number(sheet, f"{at}/tricks_won/{r.cells['seat']}", r, "tricks")
    return out


def _optional(sheet: Sheet, at: str, rows: list[_Row], deal: dict[str, Any]) -> None:
    """``trump``, ``rainbows`` and ``result`` (points, with the tricks summed by side)."""
    trumps = {r.cells.get("trump", "") for r in rows} - {""}
    if len(trumps) > 1:
        sheet.errors.append((f"{at}/trump", f"line {rows[0].line}: the rows of a dealing name different trumps"))
    elif trumps:
        deal["trump"] = trumps.pop()
    rainbows = []
    for r in rows:
        word = r.cells.get("rainbow", "")
        if word.lower() == "yes":
            rainbows.append(r.cells["seat"])
        elif word:
            sheet.errors.append((f"{at}/rainbows", f"line {r.line}: rainbow is 'yes' or empty, not {word!r}"))
    if rainbows:
        deal["rainbows"] = rainbows
    _result(sheet, at, rows, deal)


def _result(sheet: Sheet, at: str, rows: list[_Row], deal: dict[str, Any]) -> None:
    """A dealing with ``points`` gets a result: each side's points (partners agree) and tricks."""
    if not any(r.cells.get("points") for r in rows):
        return
    sides = _sides(sheet.record)
    points: dict[str, Any] = {}
    tricks: dict[str, Any] = {}
    for r in rows:
        seat = r.cells["seat"]
        side = sides[SEATS.index(seat)] if seat in SEATS else seat
        value = _number(sheet, f"{at}/result/points", r, "points")
        if side in points and points[side] != value:
            sheet.errors.append(
                (f"{at}/result/points", f"line {r.line}: points {value}, but the partner's row has {points[side]}")
            )
        points.setdefault(side, value)
        won = _int(r.cells.get("tricks", "")) or 0
        tricks[side] = tricks.get(side, 0) + won
    sheet.lines[f"{at}/result"] = rows[0].line
    deal["result"] = {"tricks": tricks, "points": points}


def _sides(rec: dict[str, Any]) -> tuple[str, ...]:
    """The side name of each seat (N, E, S, W) under the record's ruleset and options (teams if it has none such)."""
    try:
        rules = find_ruleset(rec.get("ruleset", ""), tuple(rec.get("options", ())))
    except RulesetError:
        rules = PLAIN
    return tuple(rules.sides[rules.side_of[seat]] for seat in range(4))


# --- writing ------------------------------------------------------------------------------------


def sheet_csv(record: dict[str, Any]) -> str:
    """A sheet record (:func:`sheet_record`'s shape) as CSV text: the header and four rows a dealing.

    Every column is written; ``points`` comes from a deal's ``result``, ``rainbow`` from its
    ``rainbows``, the game fields are repeated on every row.
    """
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(COLUMNS)
    sides = _sides(record)
    players = record["players"]
    game = [
        record.get("ruleset", PLAIN.name),
        "+".join(record.get("options", ())),
        record.get("played_at", ""),
        record.get("event", ""),
    ]
    for deal in record["deals"]:
        won = deal.get("tricks_won", {})
        points = deal.get("result", {}).get("points", {})
        for j, bid in enumerate(deal["bids"]):
            seat = bid["seat"]
            side = sides[SEATS.index(seat)]
            cells = [
                record["game_id"],
                deal["number"],
                deal["dealer"] if j == 0 else "",
                seat,
                players[seat],
                bid["bid"],
                won.get(seat, ""),
                points.get(side, ""),
                deal.get("trump", ""),
                "yes" if seat in deal.get("rainbows", ()) else "",
            ]
            w.writerow([*cells, *game])
    return out.getvalue()


def template_csv(rules: Any, players: tuple[str, str, str, str] = ("", "", "", "")) -> str:
    """A blank score sheet of ``rules`` as CSV: four rows for every deal of the schedule, in bidding
    order for the first dealer N and no redeals (the dealer of deal 1 left empty, later dealers
    filled in where the schedule alone says who deals)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(("game_id", "deal", "dealer", "seat", "player", "bid", "tricks", "points", "ruleset", "options"))
    dealer = 0
    known = True
    for number in range(1, rules.scored_deals + 1):
        if number > 1:
            nxt = rules.next_dealer(dealer, False, (0,) * len(rules.sides))
            known = known and nxt == rules.next_dealer(dealer, False, (1, *(0,) * (len(rules.sides) - 1)))
            dealer = nxt
        for j in range(4):
            seat = (dealer + 1 + j) % 4
            shown = SEATS[dealer] if j == 0 and number > 1 and known else ""
            w.writerow(("", number, shown, SEATS[seat], players[seat], "", "", "", rules.name, "+".join(rules.options)))
    return out.getvalue()
