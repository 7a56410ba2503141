"""One test per rule of docs/rules.md (ruleset ``standard``), on hand-made cards.

The tests call :mod:`backalley.rules` and :class:`backalley.engine.DealState`
directly; the few rules that concern a sequence of dealings (pass-out and
redeal) go through :func:`backalley.replay.replay`.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from backalley.cards import (
    BJ,
    CARD_NAMES,
    CLUBS,
    HEARTS,
    LJ,
    NO_TRUMP,
    SPADES,
    cards_of,
    lowest,
    mask_of,
    parse_card,
)
from backalley.engine import DealState, IllegalMoveError
from backalley.replay import replay
from backalley.rules import (
    HAND_SIZE,
    Contract,
    bid_in_range,
    contracts,
    follow_fault,
    hand_size,
    is_pass_out,
    legal_bids,
    legal_follows,
    legal_leads,
    score,
    stock_size,
    trick_winner,
)
from tests.spec_examples import record_example_deal

N, E, S, W = 0, 1, 2, 3


def bidding(*pairs: tuple[int, Any]) -> Any:
    """``rules.contracts`` of ``(seat, bid)`` pairs in bidding order."""
    return contracts(tuple(pairs))


def c(name: str) -> int:
    return parse_card(name)


def cs(names: str) -> list[int]:
    return [parse_card(x) for x in names.split()]


def m(names: str) -> int:
    """A hand mask from space-separated card names."""
    return mask_of(cs(names))


def names(mask: int) -> set[str]:
    return {CARD_NAMES[x] for x in cards_of(mask)}


def stock_for(hands: list[str], trump_card: str, second: str | None = None) -> list[int]:
    """The full stock: every card not dealt, ``trump_card`` on top (then ``second``)."""
    dealt = set()
    for h in hands:
        dealt |= set(cs(h))
    top = [c(trump_card)] + ([c(second)] if second else [])
    rest = [x for x in range(54) if x not in dealt and x not in top]
    return top + rest


def deal_state(number: int, dealer: int, hands: list[str], trump_card: str, second: str | None = None) -> DealState:
    return DealState(number, dealer, [m(h) for h in hands], stock_for(hands, trump_card, second))


# --- §2-§3: cards, schedule ----------------------------------------------------------------


def test_card_notation() -> None:
    assert parse_card("TH") == HEARTS * 13 + 8
    assert parse_card("AS") == SPADES * 13 + 12
    assert parse_card("2C") == CLUBS * 13
    assert (parse_card("LJ"), parse_card("BJ")) == (LJ, BJ)
    for bad in ("th", "10H", "1H", "Th", "bj", "", "HT", "XX"):
        with pytest.raises(ValueError):
            parse_card(bad)


def test_hand_size_schedule() -> None:
    sizes = [hand_size(k) for k in range(1, 26)]
    assert sizes == [13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]
    assert list(HAND_SIZE[1:]) == sizes
    assert sum(sizes) == 181  # tricks in a game
    # the stock holds the undealt cards: at least 2 (13 cards each leave 54 - 52)
    assert [stock_size(n) for n in (13, 3, 1)] == [2, 42, 50]


# --- §4: dealing, trump, joker swap ------------------------------------------------------


def test_trump_suit_from_trump_card() -> None:
    st = deal_state(11, N, ["2H KS 9D", "4C 7S QD", "AS 3H 8C", "BJ AH KD"], "5H")
    assert st.trump == HEARTS
    assert st.joker_swap is None
    # the Big Blooper in W's hand belongs to the trump suit (hearts)
    assert st.hands[W] == m("BJ AH KD")


def test_joker_swap() -> None:
    hands = ["2H KS 9D", "4C 7S QD", "AS 3H 8C", "LJ AH KD"]
    # the Big Blooper is turned: W (holding the Little Blooper) discards it and draws stock[1]
    st = deal_state(11, N, hands, "BJ", second="JC")
    assert st.trump == NO_TRUMP
    assert st.joker_swap == (W, c("JC"))
    assert st.hands[W] == m("JC AH KD")
    assert st.dealt[W] == m("LJ AH KD")  # the record keeps the hand as dealt
    assert not any(h >> LJ & 1 or h >> BJ & 1 for h in st.hands)
    rec = st.to_record()
    assert rec["joker_swap"] == {"seat": "W", "drawn": "JC"}
    assert rec["stock"][:2] == ["BJ", "JC"]
    # the Little Blooper turned, the Big one dealt to N: N swaps
    st = deal_state(11, N, ["BJ KS 9D", "4C 7S QD", "AS 3H 8C", "2H AH KD"], "LJ", second="5C")
    assert st.joker_swap == (N, c("5C"))
    assert st.hands[N] == m("5C KS 9D")


def test_joker_swap_not_when_other_joker_in_stock() -> None:
    hands = ["2H KS 9D", "4C 7S QD", "AS 3H 8C", "JC AH KD"]
    st = deal_state(11, N, hands, "BJ", second="LJ")
    assert st.trump == NO_TRUMP
    assert st.joker_swap is None
    assert st.hands == [m(h) for h in hands]
    assert "joker_swap" not in st.to_record()


def test_no_trump_deal() -> None:
    # a joker turned: no trump; the highest card of the led suit wins, whatever else is played
    assert trick_winner(cs("5C AS 9C KD"), NO_TRUMP) == 2
    assert trick_winner(cs("2H AS AD AC"), NO_TRUMP) == 0
    # following: the led suit only; hearts are an ordinary suit
    assert names(legal_follows(m("AC 2H"), c("5C"), NO_TRUMP)) == {"AC"}
    assert names(legal_follows(m("AS 2H"), c("5C"), NO_TRUMP)) == {"AS", "2H"}
    # leading: no trump to protect
    assert legal_leads(m("2H AS"), NO_TRUMP, False, False) == m("2H AS")
    # the jokers are out of play: no hand holds one after the deal
    st = deal_state(11, N, ["2H KS 9D", "4C 7S QD", "AS 3H 8C", "LJ AH KD"], "BJ", second="JC")
    assert all(not h & m("LJ BJ") for h in st.hands)


# --- §5: ranking ------------------------------------------------------------------------------


def test_trump_ranking() -> None:
    # BJ > LJ > A > K > ... > 2 of trump, whatever order they come in
    order = ["BJ", "LJ", "AH", "KH", "QH", "JH", "TH", "9H", "8H", "7H", "6H", "5H", "4H", "3H", "2H"]
    for hi_i, hi in enumerate(order):
        for lo in order[hi_i + 1 :]:
            assert trick_winner(cs(f"{lo} {hi} 2S 3S"), HEARTS) == 1, (hi, lo)
            assert trick_winner(cs(f"{hi} {lo} 2S 3S"), HEARTS) == 0, (hi, lo)


def test_non_trump_ranking() -> None:
    order = ["AS", "KS", "QS", "JS", "TS", "9S", "8S", "7S", "6S", "5S", "4S", "3S", "2S"]
    for hi_i, hi in enumerate(order):
        for lo in order[hi_i + 1 :]:
            assert trick_winner(cs(f"{lo} {hi} 2D 3D"), HEARTS) == 1, (hi, lo)


def test_trick_winner_highest_trump() -> None:
    # any trump beats every card of the led suit; the highest trump wins
    assert trick_winner(cs("AS 2H KS QS"), HEARTS) == 1
    assert trick_winner(cs("AS 2H 3H KS"), HEARTS) == 2
    assert trick_winner(cs("AS LJ AH KS"), HEARTS) == 1
    assert trick_winner(cs("2H 3H BJ LJ"), HEARTS) == 2
    # a joker led is a trump lead; it wins against the trump ace
    assert trick_winner(cs("LJ AH 2S 3S"), HEARTS) == 0


def test_trick_winner_led_suit() -> None:
    # without trumps, the highest card of the led suit wins; off-suit aces do not
    assert trick_winner(cs("5C AS 9C KD"), HEARTS) == 2
    assert trick_winner(cs("KD AS AC QD"), HEARTS) == 0
    assert trick_winner(cs("2D 3D 4D 5D"), SPADES) == 3


# --- §6: bidding -------------------------------------------------------------------------------


def test_bid_range() -> None:
    assert legal_bids(3) == ["pass", 1, 2, "board"]
    assert legal_bids(13) == ["pass", *range(1, 13), "board"]
    assert legal_bids(1) == ["pass", "board"]  # at 1 card no number
    assert not bid_in_range(0, 3)  # 0 is not a bid: pass is
    assert not bid_in_range(3, 3)
    assert not bid_in_range(-1, 3)
    assert not bid_in_range(1, 1)
    assert bid_in_range("pass", 1) and bid_in_range("board", 1)
    st = deal_state(11, N, ["2H KS 9D", "4C 7S QD", "AS 3H 8C", "BJ AH KD"], "5H")
    assert st.legal_bids() == ["pass", 1, 2, "board"]
    assert not st.is_legal_bid(0)
    assert not st.is_legal_bid(3)
    assert not st.is_legal_bid(True)  # a boolean is not a number
    with pytest.raises(IllegalMoveError):
        st.bid(0)


def test_bidding_order_starts_left_of_dealer() -> None:
    st = deal_state(11, S, ["2H KS 9D", "4C 7S QD", "AS 3H 8C", "BJ AH KD"], "5H")
    seats = []
    for _ in range(4):
        seats.append(st.to_act())
        st.bid("pass")
    assert seats == [W, N, E, S]
    assert st.pass_out and st.finished


def test_board_multipliers_in_bidding_order() -> None:
    # E board (x1), S board (x2), W board (x3), N board (x4): each team takes its highest claim
    con = bidding((E, "board"), (S, "board"), (W, "board"), (N, "board"))
    assert con.ew == Contract(True, 3)
    assert con.ns == Contract(True, 4)
    assert con.opening_leader == N
    assert con.board_claimers == 0b1111
    # double board across teams: E board x1, then N board x2
    con = bidding((E, "board"), (S, 2), (W, 1), (N, "board"))
    assert con.ew == Contract(True, 1)
    assert con.ns == Contract(True, 2)
    # one team claims twice: the second claim is a double board
    con = bidding((E, "board"), (S, "pass"), (W, "board"), (N, 1))
    assert con.ew == Contract(True, 2)
    assert con.ns == Contract(False, 1)


def test_numeric_bids_of_board_team_ignored() -> None:
    con = bidding((E, "pass"), (S, 1), (W, "board"), (N, 2))
    assert con.ew == Contract(True, 1)  # E's pass (and any number) is ignored
    assert con.ns == Contract(False, 3)
    con = bidding((E, 2), (S, 1), (W, "board"), (N, 2))
    assert con.ew == Contract(True, 1)


def test_numeric_contract_is_sum_of_bids() -> None:
    con = bidding((E, 3), (S, 4), (W, 2), (N, 1))
    assert con.ew == Contract(False, 5)
    assert con.ns == Contract(False, 5)
    con = bidding((E, "pass"), (S, 4), (W, "pass"), (N, "pass"))
    assert con.ew == Contract(False, 0)  # two passes: a contract of 0
    assert con.ns == Contract(False, 4)


def test_pass_out_when_all_four_pass() -> None:
    assert is_pass_out(["pass", "pass", "pass", "pass"])
    assert not is_pass_out(["pass", "pass", "pass", 1])
    assert not is_pass_out(["pass", "pass", "pass", "board"])


# --- §7: opening leader ------------------------------------------------------------------------


def test_opening_leader_last_board_claim() -> None:
    assert bidding((E, "pass"), (S, 1), (W, "board"), (N, 2)).opening_leader == W
    assert bidding((E, "board"), (S, "board"), (W, 2), (N, 2)).opening_leader == S
    # a board claim beats any number
    assert bidding((E, 12), (S, "board"), (W, 12), (N, 1)).opening_leader == S


def test_opening_leader_highest_number_first_bidder_wins_tie() -> None:
    assert bidding((E, 2), (S, 3), (W, 3), (N, 1)).opening_leader == S
    assert bidding((E, 1), (S, 1), (W, 1), (N, 1)).opening_leader == E
    assert bidding((E, "pass"), (S, 1), (W, 2), (N, 2)).opening_leader == W


def test_no_opening_leader_when_all_pass_or_zero() -> None:
    assert bidding((E, "pass"), (S, "pass"), (W, "pass"), (N, "pass")).opening_leader is None
    # out-of-range bids of 0 count at face value (docs/rules.md §12): still no number >= 1
    assert bidding((E, 0), (S, "pass"), (W, 0), (N, "pass")).opening_leader is None


def test_engine_opening_leader_leads_first() -> None:
    st = deal_state(11, N, ["2H KS 9D", "4C 7S QD", "AS 3H 8C", "BJ AH KD"], "5H")
    for b in ("pass", 1, "board", 2):
        st.bid(b)
    assert st.to_act() == W


# --- §7: leading -------------------------------------------------------------------------------


def test_trump_lead_forbidden_while_unbroken() -> None:
    assert names(legal_leads(m("2H KS 9D"), HEARTS, False, False)) == {"KS", "9D"}
    # jokers are trumps too
    assert names(legal_leads(m("BJ LJ KS"), HEARTS, False, False)) == {"KS"}


def test_trump_lead_allowed_once_broken() -> None:
    assert legal_leads(m("2H KS 9D"), HEARTS, True, False) == m("2H KS 9D")
    assert legal_leads(m("BJ KS"), HEARTS, True, False) == m("BJ KS")


def test_trump_broken_by_any_trump_in_an_earlier_trick() -> None:
    # 3 cards; trump hearts; W claims board and leads a non-trump; N ruffs with 4H -> broken
    st = deal_state(11, N, ["4H 7H 9S", "4C 7S QD", "AS 3H 8C", "KD AD 2C"], "5H")
    for b in ("pass", 1, "board", "pass"):
        st.bid(b)
    assert st.to_act() == W
    for card in ("KD", "4H", "QD", "AS"):  # N void in diamonds: trumps allowed
        st.play(c(card))
    assert st.broken
    assert st.to_act() == N  # N's 4H won
    assert names(st.legal_plays()) == {"7H", "9S"}


def test_board_claimer_may_lead_trump_on_trick_1() -> None:
    assert legal_leads(m("2H KS 9D"), HEARTS, False, True) == m("2H KS 9D")
    st = deal_state(11, N, ["2H KS 9D", "4C 7S QD", "AS 3H 8C", "BJ AH KD"], "5H")
    for b in ("pass", 1, "board", 2):
        st.bid(b)
    assert st.legal_plays() == m("BJ AH KD")
    assert st.is_legal(BJ)


def test_partner_of_board_claimer_may_not_lead_trump() -> None:
    # deal 11 (3 cards), dealer W; S claims board and leads; N (S's partner) wins trick 1 with no trump
    hands = ["AC 4H 6D", "3C 9S 7D", "2C 3S 5S", "4C 2D 8S"]
    st = deal_state(11, W, hands, "5H")
    for b in ("pass", "pass", "board", "pass"):  # N, E, S, W
        st.bid(b)
    assert st.to_act() == S
    for card in ("2C", "4C", "AC", "3C"):
        st.play(c(card))
    assert not st.broken
    assert st.to_act() == N
    assert names(st.legal_plays()) == {"6D"}
    assert not st.is_legal(c("4H"))
    with pytest.raises(IllegalMoveError):
        st.play(c("4H"))


def test_all_trump_leader_may_lead_trump() -> None:
    assert legal_leads(m("BJ 2H AH"), HEARTS, False, False) == m("BJ 2H AH")
    assert legal_leads(m("LJ"), SPADES, False, False) == m("LJ")


# --- §7: following -----------------------------------------------------------------------------


def test_follow_suit() -> None:
    # must follow the led suit
    assert names(legal_follows(m("2H KS 9D"), c("KD"), CLUBS)) == {"9D"}
    assert names(legal_follows(m("2D KS 9D"), c("KD"), CLUBS)) == {"2D", "9D"}
    # void in the led suit: anything, trumps included
    assert legal_follows(m("2H KS 3C"), c("AD"), CLUBS) == m("2H KS 3C")
    # a trump lead must be followed with trump
    assert names(legal_follows(m("2C KS 9D"), c("AC"), CLUBS)) == {"2C"}
    assert follow_fault(c("AD"), CLUBS) == "REVOKE"


def test_jokers_are_trump_suit_for_following() -> None:
    # a trump led: a joker that is your only trump must be played
    assert names(legal_follows(m("LJ 3C 4D"), c("7H"), HEARTS)) == {"LJ"}
    assert names(legal_follows(m("BJ 2H 3C"), c("7H"), HEARTS)) == {"BJ", "2H"}
    # a non-trump suit led: a joker does not follow it
    assert names(legal_follows(m("LJ 2C"), c("7C"), HEARTS)) == {"2C"}
    # ... and may be played when void (it is a trump)
    assert legal_follows(m("LJ 2S"), c("7C"), HEARTS) == m("LJ 2S")


def test_big_blooper_forces_highest_trump() -> None:
    assert names(legal_follows(m("2H KH 3C"), BJ, HEARTS)) == {"KH"}
    # the Little Blooper is the highest remaining trump
    assert names(legal_follows(m("LJ AH 3C"), BJ, HEARTS)) == {"LJ"}
    assert names(legal_follows(m("2S 3C"), BJ, SPADES)) == {"2S"}
    assert follow_fault(BJ, HEARTS) == "BIG_BLOOPER"


def test_little_blooper_forces_lowest_trump() -> None:
    assert names(legal_follows(m("2H KH 3C"), LJ, HEARTS)) == {"2H"}
    assert names(legal_follows(m("BJ 5H 2C"), LJ, HEARTS)) == {"5H"}
    # the Big Blooper, when it is one's only trump, is also the lowest
    assert names(legal_follows(m("BJ 3C"), LJ, HEARTS)) == {"BJ"}
    assert follow_fault(LJ, HEARTS) == "LITTLE_BLOOPER"


def test_blooper_lead_without_trumps_plays_anything() -> None:
    assert legal_follows(m("2S KD 3C"), BJ, HEARTS) == m("2S KD 3C")
    assert legal_follows(m("2S KD 3C"), LJ, HEARTS) == m("2S KD 3C")


def test_engine_plays_record_example_deal_11() -> None:
    st = deal_state(11, N, ["2H KS 9D", "4C 7S QD", "AS 3H 8C", "BJ AH KD"], "5H")
    for b in ("pass", 1, "board", 2):
        st.bid(b)
    # the Big Blooper lead forces N's 2H and S's 3H; E has no trump
    st.play(BJ)
    assert names(st.legal_plays()) == {"2H"}
    st.play(c("2H"))
    assert st.legal_plays() == m("4C 7S QD")
    st.play(c("4C"))
    assert names(st.legal_plays()) == {"3H"}
    st.play(c("3H"))
    for card in ("AH", "9D", "7S", "8C", "KD", "KS", "QD", "AS"):
        st.play(c(card))
    assert st.finished
    assert st.won == [0, 3]
    assert st.points() == (-15, 30)
    assert [leader for leader, _ in st.tricks] == [W, W, W]


# --- §8: scoring -------------------------------------------------------------------------------


def test_score_numeric_made_exactly() -> None:
    assert score(Contract(False, 4), 4, 13) == 20


def test_score_numeric_made_with_overtricks() -> None:
    assert score(Contract(False, 4), 7, 13) == 23
    assert score(Contract(False, 6), 7, 12) == 31


def test_score_numeric_set() -> None:
    assert score(Contract(False, 4), 3, 13) == -20
    assert score(Contract(False, 3), 0, 3) == -15


def test_score_contract_zero_scores_tricks() -> None:
    assert score(Contract(False, 0), 0, 5) == 0
    assert score(Contract(False, 0), 3, 5) == 3


def test_score_board_made() -> None:
    assert score(Contract(True, 1), 3, 3) == 30
    assert score(Contract(True, 1), 13, 13) == 130


def test_score_board_set() -> None:
    assert score(Contract(True, 1), 2, 3) == -30
    assert score(Contract(True, 1), 0, 1) == -10


def test_score_double_triple_quadruple_board() -> None:
    assert score(Contract(True, 2), 3, 3) == 60
    assert score(Contract(True, 2), 2, 3) == -60
    assert score(Contract(True, 3), 4, 4) == 120
    assert score(Contract(True, 3), 0, 4) == -120
    assert score(Contract(True, 4), 1, 1) == 40
    assert score(Contract(True, 4), 0, 1) == -40


def test_score_pass_out_is_zero() -> None:
    st = deal_state(11, N, ["2H KS 9D", "4C 7S QD", "AS 3H 8C", "BJ AH KD"], "5H")
    for _ in range(4):
        st.bid("pass")
    assert st.pass_out
    assert st.points() == (0, 0)
    assert st.legal_plays() == 0


# --- §10: the worked example -------------------------------------------------------------------


def worked_example_contracts() -> Any:
    return bidding((E, "pass"), (S, 1), (W, "board"), (N, 2))


def test_worked_example_contracts() -> None:
    con = worked_example_contracts()
    assert con.opening_leader == W
    assert con.ew == Contract(True, 1)
    assert con.ns == Contract(False, 3)


def test_worked_example_ew_wins_all_three() -> None:
    con = worked_example_contracts()
    assert score(con.ew, 3, 3) == 30
    assert score(con.ns, 0, 3) == -15


def test_worked_example_ew_wins_two() -> None:
    con = worked_example_contracts()
    assert score(con.ew, 2, 3) == -30
    assert score(con.ns, 1, 3) == -15


def test_worked_example_double_board() -> None:
    con = bidding((E, "pass"), (S, 1), (W, "board"), (N, "board"))
    assert con.opening_leader == N
    assert con.ns == Contract(True, 2)
    assert con.ew == Contract(True, 1)
    assert score(con.ns, 3, 3) == 60
    assert score(con.ew, 0, 3) == -30


# --- through the replay: the deal schedule and the docs/record-format.md example ---------------


def engine_deal(number: int, dealer: int, rng: random.Random, bids: list[Any] | None = None) -> dict[str, Any]:
    """A legally played dealing (lowest legal card each time) as a record deal object."""
    deck = list(range(54))
    rng.shuffle(deck)
    st = DealState.from_deck(number, dealer, deck)
    if bids is None:
        bids = [1, 1, 1, 1] if st.n > 1 else ["board", "pass", "pass", "pass"]
    for b in bids:
        st.bid(b)
    while not st.finished:
        st.play(lowest(st.legal_plays()))
    return st.to_record()


def record(deals: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "format_version": 1,
        "game_id": "rules-test",
        "ruleset": "standard",
        "players": {"N": "ann", "E": "bob", "S": "cat", "W": "dan"},
        "deals": deals,
    }


def codes(rec: dict[str, Any]) -> list[tuple[str, str]]:
    return [(v.code, v.path) for v in replay(rec).violations if v.severity == "error"]


def test_deal_passes_clockwise() -> None:
    rng = random.Random(1)
    deals = [engine_deal(k, (S + k - 1) % 4, rng) for k in range(1, 4)]
    assert codes(record(deals)) == []
    deals[2] = engine_deal(3, S, rng)  # S dealt deal 1; deal 3 belongs to W
    assert codes(record(deals)) == [("DEALER", "/deals/2/dealer")]


def test_pass_out_redeal_by_next_dealer() -> None:
    rng = random.Random(2)
    passed = engine_deal(1, N, rng, ["pass"] * 4)
    assert passed["tricks"] == []
    redeal = engine_deal(1, E, rng)  # the same number, dealt by the next dealer
    deal2 = engine_deal(2, S, rng)
    r = replay(record([passed, redeal, deal2]))
    assert r.valid, r.violations
    assert r.scored_deals == 2
    assert r.deals[0].pass_out and r.deals[0].points == (0, 0) and r.deals[0].tricks == (0, 0)
    # the redeal by the wrong dealer (the same one again)
    wrong = engine_deal(1, N, rng)
    assert codes(record([passed, wrong])) == [("DEALER", "/deals/1/dealer")]
    # a pass-out does not count: the next number after it is the same number
    assert codes(record([passed, engine_deal(2, E, rng)])) == [("DEAL_NUMBER", "/deals/1/number")]


def test_record_example_deal_11_replayed() -> None:
    rng = random.Random(11)
    # deal 11 is dealt by N, so deal 1 was dealt by S
    deals = [engine_deal(k, (S + k - 1) % 4, rng) for k in range(1, 11)]
    deals.append(record_example_deal())
    r = replay(record(deals))
    assert [v.code for v in r.violations] == ["INCOMPLETE"]
    assert r.valid and not r.complete
    assert r.scored_deals == 11
    d11 = r.deals[10]
    assert d11.tricks == (0, 3)
    assert d11.points == (-15, 30)
    assert d11.trump == HEARTS
    assert list(d11.winners) == [W, W, W]
    assert list(d11.broken_before) == [False, True, True]
    assert d11.contracts.opening_leader == W


def test_record_example_deal_11_alone() -> None:
    # alone in a record it is out of sequence (the first dealing must be number 1), but its play is legal
    r = replay(record([record_example_deal()]))
    assert [(v.code, v.path) for v in r.violations] == [("DEAL_NUMBER", "/deals/0/number"), ("INCOMPLETE", "/deals")]
    assert r.deals[0].tricks == (0, 3)
    assert r.deals[0].points == (-15, 30)
