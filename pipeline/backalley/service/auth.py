"""API tokens: given in a file (``--tokens``) or created in the database, kept there as SHA-256 hashes.

A request proves itself with ``Authorization: Bearer <token>`` (the upload
form sends the token as a form field instead). With ``--private`` a browser
reads the pages after signing in at ``/login``: the token is then kept in the
:data:`COOKIE` cookie (HttpOnly, SameSite=Strict) and checked like a bearer
token on every read; writes never take it from the cookie.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from datetime import UTC, datetime

import duckdb

from backalley.service.settings import ServiceError
from backalley.store.database import Store

#: The cookie holding a signed-in browser's token (reads only, in private mode).
COOKIE = "backalley_token"


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_token(store: Store, name: str) -> str:
    """A new random token under ``name`` (its hash stored); the token itself is shown once and never kept."""
    name = name.strip()
    if not name or len(name) > 64:
        raise ServiceError("a token name is 1 to 64 characters")
    token = "ba_" + secrets.token_urlsafe(32)
    try:
        with store.atomic():
            store.con.execute("INSERT INTO api_tokens VALUES (?, ?, ?)", [name, token_hash(token), datetime.now(UTC)])
    except duckdb.ConstraintException:
        raise ServiceError(f"a token named {name!r} exists already") from None
    return token


def list_tokens(store: Store) -> list[tuple[str, datetime]]:
    """The tokens created in the database: each name and when it was created, oldest first (never a token)."""
    rows = store.con.execute("SELECT name, created_at FROM api_tokens ORDER BY created_at, name").fetchall()
    return [(str(name), at) for name, at in rows]


def revoke_token(store: Store, name: str) -> None:
    """Forget the token named ``name``: a request showing it is refused from then on."""
    with store.atomic():
        found = store.con.execute("DELETE FROM api_tokens WHERE name = ? RETURNING name", [name.strip()]).fetchall()
    if not found:
        raise ServiceError(f"no token named {name.strip()!r} (backalley token list shows them)")


def bearer(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer …`` header, else ``None``."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def known(token: str | None, given: Iterable[str], con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``token`` is one of the ``given`` tokens (a file's) or one created in the database."""
    if not token:
        return False
    found = False
    for t in given:  # no early exit: the time taken does not say how close a guess came
        found |= hmac.compare_digest(t.encode("utf-8"), token.encode("utf-8"))
    if found:
        return True
    row = con.execute("SELECT count(*) FROM api_tokens WHERE token_hash = ?", [token_hash(token)]).fetchall()
    return bool(row[0][0])
