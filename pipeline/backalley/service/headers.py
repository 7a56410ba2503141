"""ASGI middleware: the headers every answer carries, and the hosts the service answers for.

The ``Host`` header is not trusted: a request naming another host (DNS
rebinding, a forged header that would end up in a redirect) is refused (400)
before the application sees it. Every answer gets ``X-Content-Type-Options:
nosniff`` and a Content-Security-Policy (pages set their own, with a nonce;
others, error pages and the 413 answered before the body is read included,
get one that allows nothing); private answers get ``Cache-Control: no-store``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from backalley.service.bodies import refuse
from backalley.service.problems import Problem

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The policy of every answer that sets none of its own: nothing may load, nothing may frame it.
STRICT_CSP = b"default-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
#: Paths whose answers are private whatever the mode: sign-in, uploads and their jobs.
PRIVATE_PATHS = ("/login", "/logout", "/upload", "/api/v1/jobs", "/api/v1/games", "/api/v1/validate")


def host_name(value: str) -> str:
    """The host of a ``Host`` header, without its port (``[::1]:8000`` → ``::1``)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class Guard:
    """Refuse requests for hosts not in ``allowed`` (``*`` allows any); add the headers every answer carries."""

    def __init__(self, app: App, allowed: tuple[str, ...], private: bool) -> None:
        self.app = app
        self.allowed = {h.lower() for h in allowed}
        self.private = private

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path, method = str(scope.get("path", "")), str(scope.get("method", "GET"))
        private = self.private or method not in ("GET", "HEAD") or path.startswith(PRIVATE_PATHS)

        async def guarded(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {k.lower() for k, _ in headers}
                headers.append((b"x-content-type-options", b"nosniff"))
                if b"content-security-policy" not in names:
                    headers.append((b"content-security-policy", STRICT_CSP))
                if private:
                    headers = [(k, v) for k, v in headers if k.lower() != b"cache-control"]
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        if "*" not in self.allowed:
            host = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"host"), "")
            if host_name(host) not in self.allowed:
                shown = host if host.isprintable() and len(host) < 100 else "(not shown)"
                detail = f"this service does not answer for the host {shown!r} (see serve --allowed-host)"
                await refuse(scope, guarded, Problem(400, detail))
                return
        await self.app(scope, receive, guarded)
