"""Ruleset ``bab-online``: one test per rule of its specification, and its worked examples.

The rules are asked of the :class:`~backalley.rules.Ruleset` object; rules about
a sequence of deals or about what the replay reports go through
:func:`backalley.replay.replay` on small format-2 records.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from backalley.cards import BJ, HEARTS, JOKERS, LJ, NO_TRUMP, SPADES, mask_of, parse_card
from backalley.engine import DealState
from backalley.replay import Replay, replay
from backalley.rules import find_ruleset
from backalley.rules.bab_online import bid_value
from backalley.simulate import make_record, player_pool

BAB = find_ruleset("bab-online")
N, E, S, W = 0, 1, 2, 3


def c(name: str) -> int:
    return parse_card(name)


def m(names: str) -> int:
    return mask_of(c(x) for x in names.split())


def bids(*pairs: tuple[int, Any]) -> tuple[tuple[int, Any], ...]:
    return tuple(pairs)


def record(deals: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "format_version": 2,
        "game_id": "bab-1",
        "ruleset": "bab-online",
        "players": {"N": "Ann", "E": "Bo", "S": "Cy", "W": "Di"},
        "deals": deals,
    }
    rec.update(extra)
    return rec


def codes(r: Replay) -> list[tuple[str, str]]:
    return [(v.code, v.path) for v in r.violations if v.severity == "error"]


#: docs/rules.md §14.3, the example: deal 5, hand size 4, trump hearts.
EXAMPLE_DEAL: dict[str, Any] = {
    "number": 5,
    "dealer": "N",
    "hands": {
        "N": ["6C", "JH", "AD", "5S"],
        "E": ["BJ", "5H", "KS", "8D"],
        "S": ["4C", "7H", "3H", "QD"],
        "W": ["3C", "KH", "2H", "9D"],
    },
    "trump_card": "9H",
    "bids": [
        {"seat": "E", "bid": 2},
        {"seat": "S", "bid": 1},
        {"seat": "W", "bid": 3},
        {"seat": "N", "bid": "pass"},
    ],
    "tricks": [
        {"leader": "W", "cards": ["3C", "6C", "5H", "4C"]},
        {"leader": "E", "cards": ["BJ", "7H", "2H", "JH"]},
        {"leader": "E", "cards": ["KS", "3H", "KH", "5S"]},
        {"leader": "W", "cards": ["9D", "AD", "8D", "QD"]},
    ],
    "result": {"tricks": {"NS": 1, "EW": 3}, "points": {"NS": 20, "EW": -40}},
}


def full_game_with(deal: dict[str, Any]) -> dict[str, Any]:
    """A complete valid bab-online game whose deal 5 is ``deal`` (the bots play the rest)."""
    for seed in range(200):
        rec = make_record("bab-ex", random.Random(seed), player_pool(8), 0, rules=BAB)
        k = next(i for i, d in enumerate(rec["deals"]) if d["number"] == 5 and d["tricks"])
        if rec["deals"][k]["dealer"] == deal["dealer"] and all(
            d["dealer"] == "N" or d["number"] != 5 for d in rec["deals"]
        ):
            old = rec["deals"][k]["result"]["points"]
            rec["deals"][k] = copy.deepcopy(deal)
            rec["final_score"] = {t: rec["final_score"][t] - old[t] + deal["result"]["points"][t] for t in ("NS", "EW")}
            return rec
    raise AssertionError("no seed has N dealing deal 5")


# --- schedule and dealers ----------------------------------------------------------------------


def test_schedule_twelve_down_to_one_up_to_thirteen() -> None:
    sizes = [BAB.hand_size(k) for k in range(1, 14)]
    assert sizes == [12, 10, 8, 6, 4, 2, 1, 3, 5, 7, 9, 11, 13]
    assert BAB.scored_deals == 13
    assert [BAB.stock_size(n) for n in (12, 1, 13)] == [6, 50, 2]


def test_redeal_by_the_same_dealer() -> None:
    assert BAB.next_dealer(E, True, (0, 0)) == E
    assert BAB.next_dealer(E, False, (10, -10)) == S
    assert BAB.next_number(4, True) == 4


# --- trump card, no joker swap, the kept joker -------------------------------------------------


def test_turned_joker_no_swap_and_the_other_joker_is_the_only_trump() -> None:
    hands = [m("LJ KS"), m("2H 3H"), m("AS 4D"), m("5C 6C")]
    st = DealState(
        6, W, hands, [BJ, *[x for x in range(54) if x not in (BJ, LJ) and not any(h >> x & 1 for h in hands)]], BAB
    )
    assert st.trump == NO_TRUMP and st.joker_swap is None and st.hands == hands
    assert BAB.trump_mask(NO_TRUMP) == JOKERS
    # the kept joker wins any trick it is played to, even as a discard
    assert BAB.trick_winner([c("AS"), c("KS"), c("2S"), LJ], NO_TRUMP) == 3
    # nobody can follow it: it is a suit of its own
    assert BAB.legal_follows(m("2S 3H"), LJ, NO_TRUMP, 1) == m("2S 3H")


def test_kept_joker_led_only_as_last_card_while_unbroken() -> None:
    assert BAB.legal_leads(m("LJ KS"), NO_TRUMP, False, False) == m("KS")
    assert BAB.legal_leads(m("LJ"), NO_TRUMP, False, False) == m("LJ")


def test_any_recorded_joker_swap_is_a_fault() -> None:
    deal = copy.deepcopy(EXAMPLE_DEAL)
    deal["joker_swap"] = {"seat": "E", "drawn": "2C"}
    r = replay(record([deal]))
    assert ("JOKER_SWAP", "/deals/0/joker_swap") in codes(r)


# --- bidding --------------------------------------------------------------------------------------


def test_numbers_up_to_the_hand_size_and_twelve() -> None:
    assert BAB.bid_faults(1, bids((N, 1), (E, "pass"), (S, "pass"), (W, "pass"))) == ()
    assert BAB.bid_faults(13, bids((N, 12), (E, 13), (S, 0), (W, "pass"))) == ((1, "BID_RANGE"), (2, "BID_RANGE"))
    assert BAB.bid_faults(2, bids((N, 5), (E, "pass"), (S, "pass"), (W, "pass"))) == ((0, "BID_RANGE"),)


def test_bore_escalation_one_level_at_a_time() -> None:
    ok = bids((N, "board"), (E, "board2"), (S, "board3"), (W, "board4"))
    assert BAB.bid_faults(5, ok) == ()
    again = bids((N, "board"), (E, 3), (S, "board"), (W, "pass"))
    assert BAB.bid_faults(5, again) == ((2, "BORE_LEVEL"),)
    skipped = bids((N, "board"), (E, "board3"), (S, "pass"), (W, "pass"))
    assert BAB.bid_faults(5, skipped) == ((1, "BORE_LEVEL"),)
    assert BAB.legal_bids_after(3, E, [(N, "board")]) == ["pass", 1, 2, 3, "board2"]
    assert "board" in BAB.legal_bids_after(3, E, [(N, 2)])


def test_team_values_add_up_capped_at_the_hand_size() -> None:
    con = BAB.contracts(bids((N, 5), (E, "pass"), (S, 6), (W, 1)), 8)
    assert (con.ns.value, con.ns.mult) == (8, 1)
    assert BAB.score(con.ns, 8, 8) == 80 and BAB.score(con.ns, 7, 8) == -80
    assert (con.ew.value, con.ew.mult) == (1, 1)


def test_bore_multipliers_by_highest_level() -> None:
    for level, mult in (("board", 2), ("board2", 4), ("board3", 8), ("board4", 16)):
        con = BAB.contracts(bids((N, level), (E, "pass"), (S, 1), (W, "pass")), 5)
        assert (con.ns.value, con.ns.mult) == (5, mult)
    both = BAB.contracts(bids((N, "board"), (E, "pass"), (S, "board2"), (W, "pass")), 5)
    assert both.ns.mult == 4


def test_lone_board_on_thirteen_cards_is_times_one() -> None:
    con = BAB.contracts(bids((N, "board"), (E, 3), (S, "pass"), (W, "board2")), 13)
    assert (con.ns.value, con.ns.mult) == (13, 1)
    assert (con.ew.value, con.ew.mult) == (13, 4)
    assert con.opening_leader == W
    # if EW take all 13: every trick at ×4
    assert BAB.score(con.ew, 13, 13) == 520 and BAB.score(con.ns, 0, 13) == -130


def test_opening_leader_highest_value_earliest_among_equals() -> None:
    assert BAB.contracts(bids((E, 3), (S, 3), (W, 1), (N, "pass")), 6).opening_leader == E
    assert BAB.contracts(bids((E, "board"), (S, 3), (W, "board2"), (N, 2)), 6).opening_leader == W


def test_four_passes_redeal_and_other_integers_count_zero() -> None:
    assert BAB.is_pass_out(["pass"] * 4)
    assert BAB.is_pass_out([13, "pass", "pass", "pass"])  # 13 counts 0 (docs/rules.md §14.3, "Contracts")
    assert bid_value(0) == 0 and bid_value(-2) == 0 and bid_value(12) == 12 and bid_value("board4") == 16


# --- play -----------------------------------------------------------------------------------------


def test_trump_lead_no_board_claimer_exception() -> None:
    con = BAB.contracts(bids((N, "board"), (E, "pass"), (S, "pass"), (W, "pass")), 4)
    assert con.lead_exempt == 0
    assert BAB.legal_leads(m("AH 2S"), HEARTS, False, bool(con.lead_exempt >> N & 1)) == m("2S")
    assert BAB.legal_leads(m("AH KH"), HEARTS, False, False) == m("AH KH")


def test_trump_broken_by_any_trump_played() -> None:
    assert BAB.breaks_trump([c("2S"), c("3S"), c("4H"), c("5S")], HEARTS)  # a trump follow breaks it
    assert BAB.breaks_trump([c("2S"), c("3S"), BJ, c("5S")], SPADES)


def test_big_blooper_binds_only_the_leaders_opponents() -> None:
    hand = m("KH 2H 5C")
    assert BAB.legal_follows(hand, BJ, HEARTS, 1) == m("KH")
    assert BAB.legal_follows(hand, BJ, HEARTS, 3) == m("KH")
    assert BAB.legal_follows(hand, BJ, HEARTS, 2) == m("KH 2H")  # the partner follows suit only
    assert BAB.follow_fault(BJ, HEARTS, 2) == "REVOKE"
    assert BAB.follow_fault(BJ, HEARTS, 1) == "BIG_BLOOPER"


def test_little_blooper_is_an_ordinary_trump_lead() -> None:
    assert BAB.legal_follows(m("KH 2H 5C"), LJ, HEARTS, 1) == m("KH 2H")
    assert BAB.follow_fault(LJ, HEARTS, 1) == "REVOKE"


# --- scoring --------------------------------------------------------------------------------------


def test_scoring_examples_of_section_8_3() -> None:
    def pts(pairs: tuple[tuple[int, Any], ...], n: int, won: int) -> int:
        return BAB.score(BAB.contracts(pairs, n).ns, won, n)

    assert pts(bids((N, 3), (E, "pass"), (S, 4), (W, "pass")), 12, 9) == 72
    assert pts(bids((N, 3), (E, "pass"), (S, 4), (W, "pass")), 12, 6) == -70
    assert pts(bids((N, 5), (E, "pass"), (S, 6), (W, "pass")), 8, 8) == 80
    assert pts(bids((N, "board"), (E, "pass"), (S, "pass"), (W, "pass")), 2, 2) == 40
    assert pts(bids((N, "board2"), (E, "board"), (S, 1), (W, "pass")), 1, 0) == -40
    assert pts(bids((N, "board"), (E, "pass"), (S, "pass"), (W, "pass")), 13, 13) == 130
    assert pts(bids((N, "board"), (E, "pass"), (S, 2), (W, "pass")), 13, 12) == -260
    assert pts(bids((N, "pass"), (E, 1), (S, "pass"), (W, "pass")), 4, 1) == 1


def test_rainbow_bonus_only_on_the_four_card_deal() -> None:
    rainbow = [m("6C JH AD 5S"), m("KS 8D 5H 2C"), m("4C 7H 3H QD"), m("3C KH 2H 9D")]
    assert BAB.bonus(rainbow, HEARTS, 4) == (10, 10)
    assert BAB.bonus(rainbow, HEARTS, 6) == (0, 0)
    joker = [m("6C BJ AD 5S"), m("KS 8D 5H 2S"), 0, 0]
    assert BAB.bonus(joker, HEARTS, 4) == (10, 0)  # the joker counts as a heart
    assert BAB.bonus(joker, NO_TRUMP, 4) == (0, 0)  # without a trump suit it is no suit


# --- worked examples ------------------------------------------------------------------------------


def test_worked_example_deal_five() -> None:
    rec = full_game_with(EXAMPLE_DEAL)
    r = replay(rec)
    assert r.valid and r.complete, codes(r)
    k = next(i for i, d in enumerate(rec["deals"]) if d["number"] == 5 and d["tricks"])
    assert r.deals[k].tricks == (1, 3) and r.deals[k].points == (20, -40)
    assert [(w) for w in r.deals[k].winners] == [E, E, W, N]
    # W's 2H after E's Big Blooper is legal here; in standard it is a BIG_BLOOPER fault
    std = copy.deepcopy(EXAMPLE_DEAL)
    std.pop("result")
    std_rec = {"format_version": 1, "game_id": "std", "ruleset": "standard", "players": rec["players"], "deals": [std]}
    assert ("BIG_BLOOPER", "/deals/0/tricks/1/cards/2") in codes(replay(std_rec))


def test_worked_example_bores_on_thirteen_cards() -> None:
    pairs = bids((N, "board"), (E, 3), (S, "pass"), (W, "board2"))
    assert BAB.bid_faults(13, pairs) == ()
    con = BAB.contracts(pairs, 13)
    assert con.opening_leader == W
    assert BAB.deal_points(con, (0, 13), 13) == (-130, 520)
    assert BAB.bid_faults(13, bids((N, "board"), (E, 3), (S, "board"), (W, "board2"))) == ((2, "BORE_LEVEL"),)


def test_simulated_games_are_valid_and_complete() -> None:
    pool = player_pool(8)
    for g in range(10):
        r = replay(make_record(f"b{g}", random.Random(g), pool, g, rules=BAB))
        assert r.valid and r.complete and r.scored_deals == 13
