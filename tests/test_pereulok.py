"""Ruleset ``pereulok`` and the four house options: one test per rule, and the worked example.

Rules are asked of the :class:`~backalley.rules.Ruleset` objects; what the
replay reports goes through :func:`backalley.replay.replay` on small records.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from backalley.cards import BJ, CLUBS, HEARTS, JOKERS, LJ, NO_TRUMP, SPADES, mask_of, parse_card
from backalley.engine import DealState
from backalley.replay import Replay, replay
from backalley.rules import RulesetError, all_rulesets, find_ruleset
from backalley.rules.pereulok import multiplier

PER = find_ruleset("pereulok")
N, E, S, W = 0, 1, 2, 3


def c(name: str) -> int:
    return parse_card(name)


def m(names: str) -> int:
    return mask_of(c(x) for x in names.split())


def record(deals: list[dict[str, Any]], ruleset: str = "pereulok", options: list[str] | None = None) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "format_version": 2,
        "game_id": "p-1",
        "ruleset": ruleset,
        "players": {"N": "Ann", "E": "Bo", "S": "Cy", "W": "Di"},
        "deals": deals,
    }
    if options:
        rec["options"] = options
    return rec


def errors(r: Replay) -> list[tuple[str, str]]:
    return [(v.code, v.path) for v in r.violations if v.severity == "error"]


#: The example game of docs/rules.md §14.2 (game 1 of a match).
GAME_1: dict[str, Any] = {
    "number": 1,
    "dealer": "N",
    "hands": {
        "N": ["4S", "6S", "7S", "JS", "KS", "6H", "7H", "8H", "9H", "4D", "6D", "4C", "AC"],
        "E": ["5S", "TS", "3H", "4H", "5H", "JH", "2D", "8D", "9D", "KD", "9C", "TC", "QC"],
        "S": ["2S", "3S", "AS", "TH", "KH", "3D", "5D", "TD", "QD", "5C", "6C", "JC", "KC"],
        "W": ["9S", "QS", "2H", "AH", "7D", "JD", "AD", "2C", "3C", "7C", "8C", "BJ", "LJ"],
    },
    "bids": [
        {"seat": "E", "bid": 4},
        {"seat": "S", "bid": 8},
        {"seat": "W", "bid": "pass"},
        {"seat": "N", "bid": "pass"},
    ],
    "trump": "C",
    "tricks": [
        {"leader": "S", "cards": ["2S", "QS", "KS", "5S"]},
        {"leader": "N", "cards": ["4D", "2D", "QD", "7D"]},
        {"leader": "S", "cards": ["TH", "2H", "9H", "3H"]},
        {"leader": "S", "cards": ["3D", "JD", "6D", "KD"]},
        {"leader": "E", "cards": ["4H", "KH", "AH", "8H"]},
        {"leader": "W", "cards": ["2C", "4C", "9C", "5C"]},
        {"leader": "E", "cards": ["TC", "KC", "3C", "AC"]},
        {"leader": "N", "cards": ["JS", "TS", "AS", "9S"]},
        {"leader": "S", "cards": ["3S", "AD", "7S", "QC"]},
        {"leader": "E", "cards": ["8D", "TD", "LJ", "4S"]},
        {"leader": "W", "cards": ["BJ", "7H", "JH", "JC"]},
        {"leader": "W", "cards": ["8C", "6S", "9D", "6C"]},
        {"leader": "W", "cards": ["7C", "6H", "5H", "5D"]},
    ],
    "result": {"tricks": {"NS": 5, "EW": 8}, "points": {"NS": 0, "EW": 80}},
}


# --- match, deals, dealing ------------------------------------------------------------------------


def test_a_match_is_two_games_of_thirteen_cards_two_left_undealt() -> None:
    assert PER.scored_deals == 2
    assert [PER.hand_size(k) for k in (1, 2)] == [13, 13]
    assert PER.stock_size(13) == 2 and not PER.turns_card(13)


def test_no_joker_swap_and_no_turned_card() -> None:
    assert PER.joker_swap(BJ, [m("LJ 2S"), 0, 0, 0]) == (-1, -1)
    assert not PER.has_joker_swap


# --- the auction --------------------------------------------------------------------------------


def test_each_declaration_higher_than_the_previous() -> None:
    pairs = ((E, 4), (S, 4), (W, "pass"), (N, "pass"))
    assert PER.bid_faults(13, pairs) == ((1, "BID_LOW"),)


def test_a_team_declares_at_most_once() -> None:
    pairs = ((E, 4), (S, "pass"), (W, 6), (N, "pass"))
    assert PER.bid_faults(13, pairs) == ((2, "BID_TWICE"),)
    assert PER.legal_bids_after(13, W, [(E, 4), (S, "pass")]) == ["pass"]


def test_declarations_one_to_hand_size_and_range_first() -> None:
    assert PER.bid_faults(13, ((E, 13), (S, "pass"), (W, "pass"), (N, "pass"))) == ()
    assert PER.bid_faults(13, ((E, 14), (S, 0), (W, "pass"), (N, "pass"))) == ((0, "BID_RANGE"), (1, "BID_RANGE"))


def test_doubling_exact_multiples_only() -> None:
    assert [multiplier(x, 4) for x in (8, 12, 7, 16)] == [2, 3, 1, 4]
    assert multiplier(5, 0) == 1
    con = PER.contracts(((N, 3), (E, 9), (S, "pass"), (W, "pass")), 13)
    assert (con.ew.value, con.ew.mult) == (9, 3)
    assert PER.score(con.ew, 10, 13) == 300


def test_highest_declarer_names_trump_and_leads() -> None:
    con = PER.contracts(((E, 4), (S, 8), (W, "pass"), (N, "pass")), 13)
    assert con.opening_leader == S


def test_four_passes_pass_out_and_left_deals_again() -> None:
    assert PER.is_pass_out(["pass"] * 4)
    assert PER.next_dealer(N, True, (0, 0)) == E
    assert PER.next_number(1, True) == 1


# --- trump and play ---------------------------------------------------------------------------


def test_both_jokers_belong_to_the_trump_suit() -> None:
    assert PER.trump_mask(HEARTS) & JOKERS == JOKERS
    assert PER.trick_winner([c("AS"), LJ, c("KS"), c("2H")], HEARTS) == 1


def test_leading_any_card_at_any_time() -> None:
    con = PER.contracts(((E, 4), (S, 8), (W, "pass"), (N, "pass")), 13)
    assert con.lead_exempt >> N & 1
    assert PER.legal_leads(m("2C AS"), CLUBS, False, True) == m("2C AS")


def test_big_joker_lead_forces_everyones_highest_trump() -> None:
    assert PER.legal_follows(m("JC 6C 2S"), BJ, CLUBS, 2) == m("JC")
    assert PER.follow_fault(BJ, CLUBS, 2) == "BIG_BLOOPER"


def test_lowest_trump_lead_forces_everyones_lowest_trump() -> None:
    assert PER.legal_follows(m("AC 4C 7S"), c("2C"), CLUBS, 1) == m("4C")
    assert PER.follow_fault(c("2C"), CLUBS, 1) == "LOWEST_TRUMP"
    short = find_ruleset("pereulok", ["short_deck"])
    assert short.legal_follows(m("AC 6C 7S"), c("5C"), CLUBS, 1) == m("6C")


def test_small_joker_lead_is_a_plain_trump_lead() -> None:
    assert PER.legal_follows(m("AC 4C 7S"), LJ, CLUBS, 1) == m("AC 4C")
    assert PER.follow_fault(LJ, CLUBS, 1) == "REVOKE"


# --- scoring and the next dealer ---------------------------------------------------------------


def test_made_declaration_scores_every_trick_failed_or_none_scores_zero() -> None:
    con = PER.contracts(((E, 4), (S, 8), (W, "pass"), (N, "pass")), 13)
    assert PER.deal_points(con, (5, 8), 13) == (0, 80)
    assert PER.deal_points(con, (8, 5), 13) == (160, 50)  # both made: every trick counts
    assert PER.deal_points(con, (10, 3), 13) == (200, 0)  # EW failed: 0, no penalty
    none = PER.contracts(((E, "pass"), (S, 8), (W, "pass"), (N, "pass")), 13)
    assert PER.score(none.ew, 13, 13) == 0


def test_next_dealer_nearest_of_the_losing_side() -> None:
    assert PER.next_dealer(N, False, (0, 80)) == S
    assert PER.next_dealer(N, False, (80, 0)) == E
    assert PER.next_dealer(N, False, (50, 50)) == E


# --- worked example ---------------------------------------------------------------------------------


def test_worked_example_game_one() -> None:
    r = replay(record([GAME_1]))
    assert errors(r) == []
    d = r.deals[0]
    assert d.trump == CLUBS and d.tricks == (5, 8) and d.points == (0, 80)
    assert list(d.winners) == [N, S, S, E, W, E, N, S, E, W, W, W, W]
    assert r.scored_deals == 1 and not r.complete


def test_worked_example_faults_are_reported() -> None:
    bad = copy.deepcopy(GAME_1)
    bad["tricks"][5]["cards"][1] = "AC"  # N must play his lowest trump 4C
    bad["tricks"][6]["cards"][3] = "4C"
    bad.pop("result")
    assert ("LOWEST_TRUMP", "/deals/0/tricks/5/cards/1") in errors(replay(record([bad])))
    no_trump = copy.deepcopy(GAME_1)
    del no_trump["trump"]
    assert ("TRUMP", "/deals/0") in errors(replay(record([no_trump])))


def test_worked_example_game_two_auction_and_dealer() -> None:
    assert PER.next_dealer(N, False, (0, 80)) == S
    con = PER.contracts(((W, 7), (N, "pass"), (E, "pass"), (S, 10)), 13)
    assert con.opening_leader == S and (con.ns.value, con.ns.mult) == (10, 1)
    assert PER.deal_points(con, (12, 1), 13) == (120, 0)


# --- house options -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "options", "deck", "hand", "deals"),
    [
        ("standard", [], 54, 13, 25),
        ("standard", ["no_jokers"], 52, 13, 25),
        ("standard", ["short_deck"], 42, 10, 19),
        ("standard", ["short_deck", "no_jokers"], 40, 10, 19),
        ("pereulok", [], 54, 13, 2),
        ("pereulok", ["no_jokers"], 52, 13, 2),
        ("pereulok", ["short_deck"], 42, 10, 2),
        ("pereulok", ["no_jokers", "short_deck"], 40, 10, 2),
    ],
)
def test_derived_figures_of_the_combinations(name: str, options: list[str], deck: int, hand: int, deals: int) -> None:
    rules = find_ruleset(name, options)
    assert (rules.deck_size, rules.max_hand, rules.scored_deals) == (deck, hand, deals)


def test_all_thirty_two_combinations_and_bab_online_are_registered() -> None:
    assert len(all_rulesets()) == 33
    with pytest.raises(RulesetError):
        find_ruleset("bab-online", ["no_jokers"])
    with pytest.raises(RulesetError):
        find_ruleset("standard", ["no_jokers", "no_jokers"])


def test_no_jokers_thirteen_card_deals_have_no_trump() -> None:
    rules = find_ruleset("standard", ["no_jokers"])
    assert not rules.turns_card(13) and rules.turns_card(12)
    deck = [x for x in range(52)]
    st = DealState.from_deck(1, N, deck, rules)
    assert st.trump == NO_TRUMP and st.trump_card == -1 and "trump_card" not in st.to_record()
    assert rules.impossible_codes == ("BIG_BLOOPER", "LITTLE_BLOOPER")


def test_short_deck_schedule_ten_down_to_one_and_back() -> None:
    rules = find_ruleset("standard", ["short_deck"])
    assert [rules.hand_size(k) for k in range(1, 20)] == [*range(10, 0, -1), *range(2, 11)]
    assert rules.stock_size(10) == 2 and rules.bid_range(10) == (1, 9)


def test_spades_trump_nothing_turned_or_named() -> None:
    std = find_ruleset("standard", ["spades_trump"])
    assert not std.turns_card(5) and std.deal_trump(5, -1, -1, -1) == SPADES
    per = find_ruleset("pereulok", ["spades_trump"])
    assert not per.names_trump() and per.deal_trump(13, -1, -1, HEARTS) == SPADES
    assert per.legal_follows(m("AS 3S 7H"), c("2S"), SPADES, 1) == m("3S")


def test_no_partnerships_each_seat_a_side() -> None:
    std = find_ruleset("standard", ["no_partnerships"])
    assert std.sides == ("N", "E", "S", "W")
    con = std.contracts(((E, "board"), (S, 2), (W, "board"), (N, "pass")), 4)
    assert [(x.board, x.value) for x in con.by_side] == [(False, 0), (True, 1), (False, 2), (True, 2)]
    assert con.opening_leader == W
    per = find_ruleset("pereulok", ["no_partnerships"])
    assert per.bid_faults(13, ((E, 4), (S, 5), (W, 6), (N, 12))) == ()
    assert per.next_dealer(N, False, (10, 0, 0, 30)) == E


def test_not_in_deck_and_trump_reported() -> None:
    deal = {
        "number": 19,
        "dealer": "N",
        "hands": {"N": ["2S", "AS", "KS", "QS", "JS", "TS", "9S", "8S", "7S", "6S"], "E": [], "S": [], "W": []},
        "bids": [{"seat": s, "bid": "pass"} for s in "ESWN"],
        "tricks": [],
    }
    r = replay(record([deal], "standard", ["short_deck"]))
    assert ("NOT_IN_DECK", "/deals/0/hands/N/0") in errors(r)
    assert ("TRUMP", "/deals/0") in errors(r)
