"""Records of games watched on bab-online: its spectator's event stream -> format-2 ``bab-online`` records.

A *transcript* is what a spectator's Socket.IO client receives, one JSON object a line,
``{"event": NAME, "data": PAYLOAD}`` in arrival order (docs/recording.md); a recorder may add
``"at"`` (when the event arrived, RFC 3339 UTC). :class:`Transcriber` reads such a stream event
by event, live or from a file (the same code), and hands back each game as far as it was seen
whole (:class:`Written`): every dealing whose events it saw from its ``gameStart`` (or from the
snapshot of a join during its bidding) to its ``handComplete`` (or its ``destroyHands``), in
order, from the first such dealing on. Nothing is invented: a dealing not seen whole ends the
record at the dealing before it, and the final score is written only for a game seen whole from
its first deal to ``gameEnd``. Bad input never raises: it is a note in :attr:`Written.notes`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from backalley.records.fast import GAME_ID_PATTERN, PLAYER_PATTERN, instant, nfc, python_pattern
from backalley.rules import find_ruleset

#: bab-online's positions 1, 2, 3, 4 are the record's seats N, E, S, W.
SEATS = ("N", "E", "S", "W")
_SUITS = {"spades": "S", "hearts": "H", "diamonds": "D", "clubs": "C"}
_RANKS = {**{str(k): str(k) for k in range(2, 10)}, "10": "T", "J": "J", "Q": "Q", "K": "K", "A": "A"}
_JOKERS = {"HI": "BJ", "LO": "LJ"}
_BORES = {"B": "board", "2B": "board2", "3B": "board3", "4B": "board4"}
#: The events a record is made of (others are ignored), and the pseudo-event a recorder writes for a lost connection.
EVENTS = frozenset(
    {
        "positionUpdate", "gameStart", "bidReceived", "doneBidding", "destroyHands", "cardPlayed",
        "trickComplete", "rainbow", "handComplete", "gameEnd", "spectatorJoined",
    }
)  # fmt: skip
DISCONNECT = "disconnect"
_GAME_ID = re.compile(python_pattern(GAME_ID_PATTERN))
_PLAYER = re.compile(python_pattern(PLAYER_PATTERN))
_RULES = find_ruleset("bab-online")
#: The deal number of each hand size, by bab-online's schedule.
_NUMBER = {_RULES.hand_size(k): k for k in range(1, _RULES.scored_deals + 1)}


class BadEvent(ValueError):
    """An event that does not say what a record needs (its message says what)."""


def card(value: Any) -> str:
    """bab-online's ``{suit, rank}`` as a card name (``HI``/``LO`` jokers: ``BJ``/``LJ``)."""
    if not isinstance(value, Mapping):
        raise BadEvent(f"a card is an object {{suit, rank}}, not {value!r:.40}")
    suit, rank = value.get("suit"), value.get("rank")
    if suit == "joker" and rank in _JOKERS:
        return _JOKERS[rank]
    if suit in _SUITS and rank in _RANKS:
        return _RANKS[rank] + _SUITS[suit]
    raise BadEvent(f"no such card: {dict(value)!r:.60}")


def bid(value: Any) -> int | str:
    """bab-online's bid (``"0"``…``"12"``, ``"B"``…``"4B"``) as the record writes it."""
    text = str(value).upper() if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    if text in _BORES:
        return _BORES[text]
    if text.isdigit() and len(text) <= 2:
        return int(text) or "pass"
    raise BadEvent(f"no such bid: {value!r:.40}")


def seat(position: Any) -> str:
    if isinstance(position, int) and not isinstance(position, bool) and 1 <= position <= 4:
        return SEATS[position - 1]
    raise BadEvent(f"no such position: {position!r:.20}")


def _field(data: Any, name: str) -> Any:
    if not isinstance(data, Mapping) or name not in data:
        raise BadEvent(f"no {name}")
    return data[name]


def _int(data: Any, name: str) -> int:
    value = _field(data, name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadEvent(f"{name} is not an integer: {value!r:.20}")
    return value


def _names(entries: Any) -> dict[int, str]:
    """``[{position, username}, ...]`` as position -> name (entries that say neither are skipped)."""
    out: dict[int, str] = {}
    for e in entries if isinstance(entries, list) else []:
        if isinstance(e, Mapping) and isinstance(e.get("username"), str) and e.get("position") in (1, 2, 3, 4):
            out[e["position"]] = e["username"]
    return out


def players(names: Mapping[int, str]) -> dict[str, str]:
    """The record's ``players``: two seats showing the same name (bots) get `` (N)``, `` (E)``… appended."""
    shown = {SEATS[p - 1]: names[p] for p in range(1, 5)}
    return {s: f"{n} ({s})" if list(shown.values()).count(n) > 1 else n for s, n in shown.items()}


@dataclass
class Written:
    """One game as far as it was seen whole: ``record`` is ``None`` when no dealing of it was
    (``game_id`` is ``""`` when not even its id was seen)."""

    game_id: str
    record: dict[str, Any] | None
    notes: list[str] = field(default_factory=list)

    @property
    def deals(self) -> int:
        return len(self.record["deals"]) if self.record else 0


@dataclass
class _Dealing:
    number: int
    n: int
    dealer: str
    trump_card: str
    first_bidder: int  # position
    bids: list[dict[str, Any]] = field(default_factory=list)
    tricks: list[dict[str, Any]] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    played: dict[str, list[str]] = field(default_factory=lambda: {s: [] for s in SEATS})


@dataclass
class _Game:
    game_id: str
    names: dict[int, str]
    played_at: str | None
    deals: list[dict[str, Any]] = field(default_factory=list)
    base: tuple[int, int] | None = None  # the scores before the first dealing seen
    whole: bool = True  # every dealing since deal 1 seen whole
    ended: str | None = None  # why dealings after the last written one are not written
    gap: str | None = None  # a gap in the stream since the last dealing seen whole
    notes: list[str] = field(default_factory=list)


class Transcriber:
    """Turns one spectator's event stream into :class:`Written` games (live or from a transcript)."""

    def __init__(self) -> None:
        self.game: _Game | None = None
        self.dealing: _Dealing | None = None
        self.names: dict[int, str] = {}

    def feed(self, event: Any, data: Any, at: str | None = None) -> list[Written]:
        """One event; the games it finished (``gameEnd``, or another game's ``gameStart``)."""
        if event == DISCONNECT:
            self.cut("the connection was lost")
            return []
        if event not in EVENTS:
            return []
        try:
            done: list[Written] = getattr(self, f"_on_{event}")(data, at) or []
        except BadEvent as exc:
            self._lose(f"{event}: {exc}")
            return []
        return done

    def cut(self, why: str) -> None:
        """The stream has a gap: the dealing in progress is lost; between dealings, the next must fit."""
        if self.dealing is not None:
            self._lose(why)
        elif self.game is not None:
            self.game.gap = why

    def close(self, why: str = "the stream ended before gameEnd") -> list[Written]:
        """End of the stream: the game in progress as far as seen whole."""
        if self.game is None:
            return []
        self._lose(why)
        return [self._finish(None)]

    # --- the events ----------------------------------------------------------------------------

    def _on_positionUpdate(self, data: Any, at: str | None) -> None:
        entries = _field(data, "usernames")
        positions = _field(data, "positions")
        if isinstance(entries, list) and isinstance(positions, list):
            for p, e in zip(positions, entries, strict=False):
                if p in (1, 2, 3, 4) and isinstance(e, Mapping) and isinstance(e.get("username"), str):
                    self.names[p] = e["username"]

    def _on_spectatorJoined(self, data: Any, at: str | None) -> list[Written]:
        """The snapshot a spectator gets on joining: a dealing still in its bidding can be seen whole from it."""
        if not isinstance(data, Mapping) or "gameId" not in data:
            return []  # (the notice to the others that someone joined)
        self.names.update(_names(data.get("players")))
        if data.get("bidding") is not True or data.get("phase") != "bidding" or data.get("trump") is None:
            return []
        done = self._start(data, at)
        bids = _field(data, "playerBids")
        if not isinstance(bids, list):
            raise BadEvent("playerBids is not a list")
        for k in range(4):
            position = (self._dealing().first_bidder + k - 1) % 4 + 1
            made = bids[position - 1] if position - 1 < len(bids) else None
            if made is None:
                break
            self._bid(position, made)
        return done

    def _on_gameStart(self, data: Any, at: str | None) -> list[Written]:
        self.names.update(_names(data.get("playerInfo") if isinstance(data, Mapping) else None))
        return self._start(data, at)

    def _on_bidReceived(self, data: Any, at: str | None) -> None:
        if self.dealing is not None:
            self._bid(_field(data, "position"), _field(data, "bid"))

    def _on_doneBidding(self, data: Any, at: str | None) -> None:
        if self.dealing is not None and len(self.dealing.bids) != 4:
            raise BadEvent(f"bidding done after {len(self.dealing.bids)} bids")

    def _on_destroyHands(self, data: Any, at: str | None) -> None:
        d = self.dealing
        if d is None:
            return
        if len(d.bids) != 4 or any(b["bid"] != "pass" for b in d.bids) or d.tricks:
            raise BadEvent("a redeal after a bidding that was not four passes")
        self._keep({"number": d.number, "dealer": d.dealer, "trump_card": d.trump_card, "bids": d.bids, "tricks": []})

    def _on_cardPlayed(self, data: Any, at: str | None) -> None:
        d = self.dealing
        if d is None:
            return
        s, name = seat(_field(data, "position")), card(_field(data, "card"))
        if len(d.bids) != 4:
            raise BadEvent(f"a card played after {len(d.bids)} bids")
        if name in d.seen:
            raise BadEvent(f"{name} played twice")
        if not d.tricks or len(d.tricks[-1]["cards"]) == 4:
            if len(d.tricks) == d.n:
                raise BadEvent(f"more than {d.n} tricks")
            d.tricks.append({"leader": s, "cards": []})
        trick = d.tricks[-1]
        expected = SEATS[(SEATS.index(trick["leader"]) + len(trick["cards"])) % 4]
        if s != expected:
            raise BadEvent(f"{s} played where {expected} was to play")
        trick["cards"].append(name)
        d.seen.add(name)
        d.played[s].append(name)

    def _on_trickComplete(self, data: Any, at: str | None) -> None:
        d = self.dealing
        if d is not None and (not d.tricks or len(d.tricks[-1]["cards"]) != 4):
            raise BadEvent("a trick complete before its four cards")

    def _on_rainbow(self, data: Any, at: str | None) -> None:
        seat(_field(data, "position"))  # (the replay finds rainbows from the hands)

    def _on_handComplete(self, data: Any, at: str | None) -> None:
        d = self.dealing
        if d is None:
            return
        if len(d.tricks) != d.n or len(d.tricks[-1]["cards"]) != 4:
            raise BadEvent(f"the hand ended after {len(d.seen)} of its {4 * d.n} cards")
        score = _field(data, "score")
        tricks = {"NS": _int(data, "team1Tricks"), "EW": _int(data, "team2Tricks")}
        points = {
            "NS": _int(score, "team1") - _int(data, "team1OldScore"),
            "EW": _int(score, "team2") - _int(data, "team2OldScore"),
        }
        deal = {"number": d.number, "dealer": d.dealer, "hands": d.played, "trump_card": d.trump_card}
        self._keep({**deal, "bids": d.bids, "tricks": d.tricks, "result": {"tricks": tricks, "points": points}})

    def _on_gameEnd(self, data: Any, at: str | None) -> list[Written]:
        if self.game is None:
            return [Written("", None, ["gameEnd of a game none of whose dealings was seen: nothing written"])]
        score = _field(data, "score")
        final = {"NS": _int(score, "team1"), "EW": _int(score, "team2")}
        if self.dealing is not None:
            self._lose("gameEnd came in the middle of a dealing")
        return [self._finish(final)]

    # --- the state -----------------------------------------------------------------------------

    def _start(self, data: Any, at: str | None) -> list[Written]:
        """A new dealing (and a new game, when its id is not the current game's)."""
        game_id = _field(data, "gameId")
        if not isinstance(game_id, str) or not game_id:
            raise BadEvent(f"gameId is not a string: {game_id!r:.40}")
        n = _int(data, "currentHand")
        if n not in _NUMBER:
            raise BadEvent(f"no deal of bab-online has {n} cards")
        dealing = _Dealing(_NUMBER[n], n, seat(_field(data, "dealer")), card(_field(data, "trump")), 0)
        dealing.first_bidder = (SEATS.index(dealing.dealer) + 1) % 4 + 1  # (positions 1-4; the left of the dealer)
        scores = _scores(data)
        done: list[Written] = []
        if self.game is not None and self.game.game_id != game_id:
            self._lose("another game started before gameEnd")
            done.append(self._finish(None))
        if self.dealing is not None:
            self._lose("a new dealing started before it ended")
        if self.game is None:
            self.game = _Game(game_id, dict(self.names), _time(at), base=scores)
            if dealing.number != 1:
                self.game.whole = False
                self.game.notes.append(f"joined at deal {dealing.number}: the deals before it were not seen")
        elif self.game.gap is not None:
            self._check_fit(self.game, dealing, scores)
        self.dealing = dealing
        return done

    def _check_fit(self, game: _Game, dealing: _Dealing, scores: tuple[int, int] | None) -> None:
        """After a gap between dealings: the dealing must be the one due next, with the scores so far."""
        why, game.gap = game.gap, None
        last = game.deals[-1] if game.deals else None
        if last is None or game.base is None or scores is None:
            self._stop(f"{why}; nothing after it can be placed")
            return
        passed = "hands" not in last
        number = _RULES.next_number(last["number"], passed)
        dealer = SEATS[_RULES.next_dealer(SEATS.index(last["dealer"]), passed, ())]
        points = [d["result"]["points"] for d in game.deals if "result" in d]
        totals = (game.base[0] + sum(p["NS"] for p in points), game.base[1] + sum(p["EW"] for p in points))
        if (dealing.number, dealing.dealer, scores) != (number, dealer, totals):
            self._stop(f"{why}; dealings were missed (deal {dealing.number} by {dealing.dealer} came next)")

    def _dealing(self) -> _Dealing:
        if self.dealing is None:
            raise BadEvent("no dealing in progress")
        return self.dealing

    def _bid(self, position: Any, made: Any) -> None:
        d = self._dealing()
        expected = (d.first_bidder + len(d.bids) - 1) % 4 + 1
        if len(d.bids) == 4:
            raise BadEvent("a fifth bid")
        if position != expected:
            raise BadEvent(f"position {position!r:.10} bid where position {expected} was to bid")
        d.bids.append({"seat": seat(position), "bid": bid(made)})

    def _keep(self, deal: dict[str, Any]) -> None:
        """The dealing in progress was seen whole: it joins the record unless an earlier one was lost."""
        game = self.game
        self.dealing = None
        if game is not None and game.ended is None:
            game.deals.append(deal)

    def _lose(self, why: str) -> None:
        """What is in progress cannot be seen whole: the record ends before it."""
        d, self.dealing = self.dealing, None
        if d is not None:
            why = f"deal {d.number} ({d.n} cards) was not seen whole: {why}"
        self._stop(why)

    def _stop(self, why: str) -> None:
        game = self.game
        if game is not None and game.ended is None:
            game.ended = why
            game.whole = False
            game.notes.append(why)

    def _finish(self, final: dict[str, int] | None) -> Written:
        game, self.game, self.dealing = self.game, None, None
        assert game is not None
        if not game.deals:
            return Written(game.game_id, None, [*game.notes, "no dealing was seen whole: nothing written"])
        why = _unwritable(game)
        if why:
            return Written(game.game_id, None, [*game.notes, f"{why}: nothing written"])
        rec: dict[str, Any] = {
            "format_version": 2,
            "game_id": game.game_id,
            "ruleset": _RULES.name,
            "players": players(game.names),
        }
        if game.played_at is not None:
            rec["played_at"] = game.played_at
        rec["deals"] = game.deals
        scored = sum(1 for d in game.deals if "hands" in d)
        if final is not None and game.whole and scored == _RULES.scored_deals:
            rec["final_score"] = final
        elif final is not None:
            game.notes.append(f"final score left out: {scored} of the game's {_RULES.scored_deals} deals were seen")
        return Written(game.game_id, rec, game.notes)


def _unwritable(game: _Game) -> str:
    """Why the game's id or players cannot be a record's (``""``: they can)."""
    if not _GAME_ID.search(game.game_id):
        return f"the game id {game.game_id!r:.40} is not one a record can have"
    if len(game.names) < 4:
        return "the players' names were not seen"
    shown = players(game.names)
    bad = [n for n in shown.values() if not _PLAYER.search(n)]
    if bad or len({nfc(n) for n in shown.values()}) < 4:
        return f"the players' names {sorted(shown.values())!r:.120} are not four a record can have"
    return ""


def _time(at: str | None) -> str | None:
    """``at`` if it is an RFC 3339 date-time (a record's ``played_at``), else ``None``."""
    if at is None:
        return None
    try:
        instant(at)
    except ValueError:
        return None
    return at


def _scores(data: Any) -> tuple[int, int] | None:
    """The teams' scores before the dealing, as ``gameStart`` says them (``None`` if it does not)."""
    try:
        return _int(data, "score1"), _int(data, "score2")
    except BadEvent:
        return None


def read_entry(line: str) -> dict[str, Any] | None:
    """A transcript line's ``{"event", "data", "at"}`` object; ``None`` when the line is not one."""
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    return entry if isinstance(entry, dict) and "event" in entry else None


def transcribe(lines: Any) -> list[Written]:
    """Every game of a transcript (an iterable of text lines), as far as each was seen whole.

    A line that is not a JSON object ``{"event", "data"}`` is a gap in the stream (its line number
    is in the notes); the stream's end closes the game in progress.
    """
    t = Transcriber()
    out: list[Written] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        entry = read_entry(line)
        if entry is None:
            t.cut(f"line {number} is not an event {{event, data}}")
            continue
        at = entry.get("at")
        out += t.feed(entry["event"], entry.get("data"), at if isinstance(at, str) else None)
    return out + t.close()
