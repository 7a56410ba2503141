"""Ruleset ``standard`` (RULES.md): the dialect of record format 1."""

from __future__ import annotations

from typing import ClassVar

from backalley.cards import team_of
from backalley.rules.base import BOARD, Bid, Contract, Contracts, Ruleset


class Standard(Ruleset):
    """25 deals of 13→1→13 cards, a turned trump card, board claims ×1…×4 (RULES.md)."""

    name: ClassVar[str] = "standard"
    summary: ClassVar[str] = "25 deals 13→1→13, a turned trump card, the joker swap, board claims ×1…×4"

    def compute_contracts(self, bids: tuple[tuple[int, Bid], ...], n: int) -> Contracts:
        """Contracts and opening leader from ``(seat, bid)`` pairs in bidding order (§6, §7).

        Board claims are numbered in bidding order (board, double, triple,
        quadruple); a team with a claim holds a board contract at the highest
        multiplier among its members' claims and its numeric bids are ignored.
        Otherwise its contract is the sum of its members' numbers (a pass adds 0).
        The opening leader is the last board claimer, else the first highest
        number >= 1, else nobody.  Board claimers may lead trump at once.
        """
        sums = [0, 0]
        mult = [0, 0]
        claims = 0
        claimers = 0
        last_board: int | None = None
        best_num = 0
        best_seat: int | None = None
        for seat, bid in bids:
            team = team_of(seat)
            if bid == BOARD:
                claims += 1
                mult[team] = max(mult[team], claims)
                claimers |= 1 << seat
                last_board = seat
            elif isinstance(bid, int):
                sums[team] += bid
                if bid > best_num:
                    best_num = bid
                    best_seat = seat
        ns = Contract(True, mult[0]) if mult[0] else Contract(False, sums[0])
        ew = Contract(True, mult[1]) if mult[1] else Contract(False, sums[1])
        leader = last_board if last_board is not None else best_seat
        return Contracts((ns, ew), leader, claimers, claimers)

    def score(self, contract: Contract, tricks: int, n: int) -> int:
        """Points for one team in one deal (§8)."""
        if contract.board:
            made = tricks == n
            return (10 if made else -10) * n * contract.value
        bid = contract.value
        if tricks >= bid:
            return 5 * bid + (tricks - bid)
        return -5 * bid
