"""The service's settings and limits, each in one place."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: The largest record accepted (bytes): the same limit as ``backalley validate`` and ``ingest``
#: (a complete game is about 23 kB). A larger record is never parsed: an upload refuses it (413
#: naming its line) and stores the others.
from backalley.validate import MAX_RECORD_BYTES

#: The largest request body accepted (bytes).
MAX_BODY_BYTES = 64 << 20
#: ``POST /api/v1/validate`` stores nothing and may be open to anyone (``--public-validate``): each request
#: is bounded in its body, its records, the violations its reports list and the bytes of its answer.
VALIDATE_MAX_BODY = 8 << 20
VALIDATE_MAX_RECORDS = 5_000
VALIDATE_MAX_VIOLATIONS = 10_000
VALIDATE_MAX_ANSWER = 16 << 20
#: Seconds a request's body may pause between two of its pieces before the request is answered 408.
BODY_TIMEOUT = 30.0
#: The server's bounds on connections (uvicorn's settings; see docs/service.md, Deployment): seconds an
#: idle kept-alive connection stays open, connections and requests at once (more are answered 503),
#: and the bytes of a request's headers.
KEEP_ALIVE_TIMEOUT = 5
MAX_CONNECTIONS = 256
MAX_HEADER_BYTES = 16 << 10
#: The hosts answered for by default (``--allowed-host``): the service listens on 127.0.0.1.
ALLOWED_HOSTS = ("127.0.0.1", "localhost", "::1")
#: Uploads of more records than this become a job (202, then poll ``/api/v1/jobs/{id}``).
JOB_THRESHOLD = 2_000
#: After a write the players' pages recompute the report's figures (a second or more on a
#: large store) in the background, not more often than this many seconds apart, and show
#: the previous figures meanwhile.
METRICS_MAX_AGE = 10.0


#: See :attr:`Settings.memory_limit`: with ingest's 96 MB, stores of uploads failed out of
#: memory while the players' figures were computed (benchmarks/service_load.py).
MEMORY_LIMIT = "512MB"
#: Compressed bytes of stored records' texts kept in memory for the game and deal pages
#: (about 6 kB a game: some 10,000 games).
RECORD_CACHE_BYTES = 64 << 20


class ServiceError(ValueError):
    """A problem with the service's setup (a usage error for the command line)."""


@dataclass(frozen=True)
class Settings:
    db: Path
    #: Tokens given in a file (``--tokens``); tokens created with ``backalley token create`` live in the database.
    tokens: frozenset[str] = frozenset()
    #: Reading needs a token too.
    private: bool = False
    #: ``/api/v1/validate`` without a token (it always needs one with ``private``).
    public_validate: bool = False
    max_body: int = MAX_BODY_BYTES
    validate_max_body: int = VALIDATE_MAX_BODY
    validate_max_records: int = VALIDATE_MAX_RECORDS
    validate_max_violations: int = VALIDATE_MAX_VIOLATIONS
    validate_max_answer: int = VALIDATE_MAX_ANSWER
    body_timeout: float = BODY_TIMEOUT
    #: The hosts the service answers for (the ``Host`` header's name, without its port); ``*``: any.
    allowed_hosts: tuple[str, ...] = ALLOWED_HOSTS
    max_record: int = MAX_RECORD_BYTES
    job_threshold: int = JOB_THRESHOLD
    #: Processes that replay uploads (1: in the service's own process).
    workers: int = 1
    #: The players' figures are recomputed in the background at most this often (seconds).
    metrics_max_age: float = METRICS_MAX_AGE
    #: DuckDB's memory cap while an upload is stored. It holds for the whole database, reads
    #: included (the players' figures, pages), so it is larger than ``backalley ingest``'s.
    memory_limit: str = MEMORY_LIMIT
    #: Memory for the texts of stored records (:class:`~backalley.service.cache.RecordCache`), and half as
    #: much for what the game pages show of them.
    record_cache: int = RECORD_CACHE_BYTES
    #: A token of this run that reads (never writes), kept in the file beside the database
    #: (:mod:`backalley.service.running`): ``backalley query`` on the same file asks through it.
    local_token: str | None = None


def read_tokens_file(path: Path) -> frozenset[str]:
    """One token per line; blank lines and lines starting with ``#`` are skipped."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ServiceError(f"{path}: cannot read the tokens file: {getattr(exc, 'strerror', None) or exc}") from None
    tokens = frozenset(t.strip() for t in text.splitlines() if t.strip() and not t.lstrip().startswith("#"))
    short = [
        n for n, t in enumerate(text.splitlines(), 1) if t.strip() and not t.startswith("#") and len(t.strip()) < 16
    ]
    if short:
        raise ServiceError(f"{path}:{short[0]}: a token must be at least 16 characters")
    return tokens
