"""The HTTP server's own bounds: uvicorn's h11 protocol, with a time limit on a request's headers.

uvicorn closes an idle kept-alive connection (``timeout_keep_alive``) but gives
a client all the time it wants to send a request's headers: thousands of
half-sent requests held the service's file descriptors until they closed. A
connection whose request headers are not complete :data:`HEADER_TIMEOUT`
seconds after it opened (or after its last answer) is closed.
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.h11_impl import H11Protocol

#: Seconds a client has to send a request's headers.
HEADER_TIMEOUT = 10.0


class BoundedH11(H11Protocol):
    """:class:`H11Protocol` that closes a connection whose request headers take over :data:`HEADER_TIMEOUT`."""

    _headers_timer: asyncio.TimerHandle | None = None
    _waiting_after: object = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.cycle is not self._waiting_after:  # a request's headers arrived: its body has its own bound
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._waiting_after = self.cycle
        self._headers_timer = self.loop.call_later(HEADER_TIMEOUT, self._too_slow)

    def _disarm(self) -> None:
        if self._headers_timer is not None:
            self._headers_timer.cancel()
            self._headers_timer = None

    def _too_slow(self) -> None:
        self._headers_timer = None
        if self.cycle is self._waiting_after and not self.transport.is_closing():
            self.transport.close()
