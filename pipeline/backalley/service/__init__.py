"""``backalley serve``: upload game logs over HTTP, get the validation report, browse games and deals.

:func:`backalley.service.app.create_app` builds the ASGI application (FastAPI)
on one :class:`~backalley.service.state.Service`, which holds the database's
only writing connection; :func:`serve` runs it with uvicorn.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from backalley.service.settings import ServiceError, Settings, read_tokens_file

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["ServiceError", "Settings", "read_tokens_file", "serve"]


def serve(settings: Settings, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Run the service until interrupted (uvicorn, one process), with the file beside the database that
    tells other commands where it runs (:mod:`backalley.service.running`)."""
    from backalley.service.app import create_app
    from backalley.service.running import announced, local_url, new_token

    token = new_token()
    settings = replace(settings, local_token=token)
    ask_for = next((h for h in settings.allowed_hosts if h != "*"), "127.0.0.1")
    app = create_app(settings, running=lambda: announced(settings.db, local_url(host, port), ask_for, token))
    tune_gc()
    run_server(app, host, port)


def run_server(app: FastAPI, host: str, port: int) -> None:
    import uvicorn

    from backalley.service.server import BoundedH11
    from backalley.service.settings import KEEP_ALIVE_TIMEOUT, MAX_CONNECTIONS, MAX_HEADER_BYTES

    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level="warning",
        server_header=False,
        http=BoundedH11,  # h11, with a time limit on the headers (its size bound: h11_max_incomplete_event_size)
        timeout_keep_alive=KEEP_ALIVE_TIMEOUT,
        limit_concurrency=MAX_CONNECTIONS,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
    )


def tune_gc() -> None:
    """Leave what start-up made out of every collection, and collect rarely.

    What the imports, the application and its templates made lives as long as the
    process: frozen, the collector never walks it again. An upload's records and
    pages are many short-lived containers freed by their reference counts, so the
    youngest generation is collected after as many allocations as in the processes
    that replay (:func:`backalley.validate.tune_gc`). Measured under the load
    benchmark: the collector took 2.8 s of the service process's CPU in 40 s (15
    full collections walking every object start-up made) before, nothing after.
    """
    import gc

    from backalley.validate import tune_gc as collect_rarely

    gc.collect()
    gc.freeze()
    collect_rarely()
