"""Showing untrusted text on a terminal: control characters escaped, never read as markup.

Game ids, player names, file names, JSON keys and query cells come from data.
:func:`printable` shows a control character (a terminal escape, a newline, a
bidirectional override, a lone surrogate) as its escape (``\\x1b``, ``\\n``,
``\\u202e``) so that it cannot move the cursor, recolour the terminal or hide
text; :func:`safe` also escapes Rich markup, for text placed inside a markup string.
"""

from __future__ import annotations

import re

#: C0 and C1 controls, DEL, bidirectional embedding/override/isolate controls, surrogates.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_one(m: re.Match[str]) -> str:
    ch = m.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(value: object) -> str:
    """``str(value)`` with every control character shown as an escape sequence."""
    return _CONTROL.sub(_escape_one, str(value))


def safe(value: object) -> str:
    """:func:`printable`, then escaped for Rich markup: prints literally inside a markup string."""
    from rich.markup import escape  # (here: importing rich is a large share of a command's start-up)

    return escape(printable(value))


__all__ = ["printable", "safe"]
