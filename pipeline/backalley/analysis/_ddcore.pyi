"""Types of the C search (``_ddcore.c``); see :mod:`backalley.analysis.solver`."""

from collections.abc import Sequence

class Core:
    def __init__(
        self,
        hands: Sequence[int],
        side: int,
        exempt: int,
        follow: Sequence[int],
        forced: Sequence[int],
        forced_pool: int,
        winkey: Sequence[int],
        lead_block: int,
        breaks: int,
        suit: Sequence[int],
        special: int,
        trumps: int,
        flags: int,
        tt_bits: int = ...,
    ) -> None: ...
    @property
    def nodes(self) -> int: ...
    @property
    def profile(self) -> dict[str, int]: ...
    def value(self, hands: Sequence[int], leader: int, trick: Sequence[int], broken: bool, guess: int = ...) -> int: ...
    def at_least(self, hands: Sequence[int], leader: int, trick: Sequence[int], broken: bool, target: int) -> bool: ...
    def legal(self, hands: Sequence[int], leader: int, trick: Sequence[int], broken: bool) -> int: ...
    def winner(self, trick: Sequence[int]) -> int: ...
