"""``backalley serve``: upload game logs over HTTP, get the validation report, browse games and deals.

:func:`backalley.service.app.create_app` builds the ASGI application (FastAPI)
on one :class:`~backalley.service.state.Service`, which holds the database's
only writing connection; :func:`serve` runs it with uvicorn.
"""

from __future__ import annotations

from backalley.service.settings import ServiceError, Settings, read_tokens_file

__all__ = ["ServiceError", "Settings", "read_tokens_file", "serve"]


def serve(settings: Settings, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Run the service until interrupted (uvicorn, one process)."""
    import uvicorn

    from backalley.service.app import create_app

    uvicorn.run(create_app(settings), host=host, port=port, log_level="warning", server_header=False)
