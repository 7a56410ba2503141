"""``backalley`` with a disagreement injected: the search's tables forbid a card the replay allows.

Run as a script (``python tests/mismatch_cli.py analyze ...``) by ``test_analyze_mismatch.py``.
Run as the main module (and so in every analysis worker, which the forkserver prepares
from it under the name ``__mp_main__``), ruleset ``standard``'s fast tables get every ace
in ``lead_block``: the C search then refuses an ace led while trump is unbroken, which the ruleset's ``legal_leads`` (the
replay's rule) allows.  Imported by a test (for :data:`ACES`), it changes nothing.
"""

from __future__ import annotations

from dataclasses import replace

from backalley.cards import CARD_NAMES
from backalley.rules import STANDARD

#: The cards the injected tables refuse as a lead while trump is unbroken.
ACES = sum(1 << CARD_NAMES.index(f"A{s}") for s in "SHDC")


def inject() -> None:
    tab = STANDARD.tables
    STANDARD._tables = replace(tab, lead_block=tuple(block | ACES for block in tab.lead_block))


if __name__ in ("__main__", "__mp_main__"):
    inject()

if __name__ == "__main__":
    from backalley.cli.app import main

    main()
