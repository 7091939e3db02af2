"""Protection of the http and sse transports: Host and Origin checks, and a bearer token.

A browser page from any site can send requests to a server on the user's machine, and with DNS
rebinding it can even make them look same-origin. The MCP transport rules therefore require a
server to validate `Origin`. This ASGI middleware, in front of every route:

- refuses a `Host` header naming anything but a loopback address or the bind address
  (421 Misdirected Request), unless a token is required (a remote server is reached under names
  we cannot know; the token protects it);
- refuses an `Origin` that is neither loopback nor the request's own host (403 Forbidden);
- when a token is set, refuses any request without `Authorization: Bearer <token>` (401).

See docs/security.md.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback IP addresses (brackets allowed)."""
    name = host.strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _hostname(authority: str) -> str:
    """The host part of a `Host` header value (`name`, `name:port`, `[v6]:port`)."""
    parsed = urlsplit(f"//{authority}")
    try:
        return (parsed.hostname or "").lower()
    except ValueError:
        return ""


class HostGuard:
    """ASGI middleware: Host/Origin validation and an optional bearer token."""

    def __init__(self, app: ASGIApp, *, bind_host: str, token: str | None = None) -> None:
        self.app = app
        self.bind_host = bind_host.strip("[]").lower()
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {
            key.decode("latin-1").lower(): value.decode("latin-1")
            for key, value in scope.get("headers", [])
        }
        refusal = self.refusal(headers)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        status, text = refusal
        extra = [(b"www-authenticate", b"Bearer")] if status == 401 else []
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), *extra],
            }
        )
        await send({"type": "http.response.body", "body": text.encode("utf-8")})

    def refusal(self, headers: dict[str, str]) -> tuple[int, str] | None:
        """(status, text) when the request must be refused, else None."""
        host = _hostname(headers.get("host", ""))
        if self.token is None and not self._host_allowed(host):
            return 421, "Misdirected Request: unknown Host"
        origin = headers.get("origin")
        if origin is not None and not self._origin_allowed(origin, host):
            return 403, "Forbidden: cross-origin request"
        if self.token is not None:
            given = headers.get("authorization", "")
            scheme, _, value = given.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                value.strip().encode("utf-8"), self.token.encode("utf-8")
            ):
                return 401, "Unauthorized: a bearer token is required"
        return None

    def _host_allowed(self, host: str) -> bool:
        return bool(host) and (is_loopback(host) or host == self.bind_host)

    def _origin_allowed(self, origin: str, host: str) -> bool:
        try:
            origin_host = (urlsplit(origin).hostname or "").lower()
        except ValueError:
            return False
        if not origin_host:
            return False  # "null" and other opaque origins
        return (is_loopback(origin_host) and is_loopback(host)) or origin_host == host
