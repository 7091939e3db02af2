"""Who may use the dashboard: the token, its cookie, and the `Host` and `Origin` checks.

`deepwork dashboard` makes a random token at each start and prints it in the URL. The first
request carrying it (`?token=…`) gets an HttpOnly, SameSite=Strict cookie named after the port;
every later request must bring the cookie (or the token). Browsers send a cookie of 127.0.0.1 to
every port of it, so the cookie never holds the token: it holds a second secret of this start,
which signs in to this dashboard only and is never printed, logged or put in a form. A request
without either is answered 401. A request whose `Host` is not the loopback address and port the
dashboard listens on, or whose `Origin` is another site, is answered 403 before anything else: a
page of another site, even one whose name resolves to 127.0.0.1 (DNS rebinding), gets nothing.
Every state-changing request is a POST that carries the token in its form as well
(`form_token_ok`): a cross-site form cannot know it.
docs/dashboard.md says what this protects against and what it does not.

Bound beyond loopback (`deepwork dashboard --host`), the guard also accepts that address as
`Host`; behind a TLS proxy (`--public-url https://…`), the public name as `Host` and its origin,
and the cookie is then `Secure`. The token is required the same way everywhere.
"""

from __future__ import annotations

import secrets
from typing import Final
from urllib.parse import urlsplit

from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from deepwork_mcp.dashboard.pages import message_page

#: The query parameter and form field carrying the token.
TOKEN_FIELD: Final = "token"  # noqa: S105 - a field name, not a secret
#: Sent with every response: no inline script, no framing, no referrer to other sites, no caching.
SECURITY_HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # Not `no-referrer`: under it Chromium sends `Origin: null` with the page's own forms.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def new_token() -> str:
    return secrets.token_urlsafe(32)


def same_token(given: str | None, expected: str) -> bool:
    """Constant-time comparison; a missing token never matches."""
    return given is not None and secrets.compare_digest(given.encode(), expected.encode())


class DashboardGuard:
    """ASGI middleware in front of every route of the dashboard (see the module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        port: int,
        token: str,
        bound: str | None = None,
        public_url: str | None = None,
    ) -> None:
        self.app = app
        self.token = token
        self.cookie = f"deepwork_dashboard_{port}"
        self.cookie_secret = new_token()  # not the token: the cookie reaches other ports
        self.hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
        if bound is not None:
            self.hosts.add(f"[{bound}]:{port}" if ":" in bound else f"{bound}:{port}")
        self.origins = {f"http://{host}" for host in self.hosts}
        self.secure = False
        if public_url is not None:
            public = urlsplit(public_url)
            self.hosts.add(public.netloc)
            self.origins.add(f"{public.scheme}://{public.netloc}")
            self.secure = public.scheme == "https"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        refusal = self.refusal(request)
        if refusal is not None:
            status, title, message = refusal
            response = HTMLResponse(message_page(title, message), status_code=status)
            response.headers.update(SECURITY_HEADERS)
            await response(scope, receive, send)
            return
        set_cookie = same_token(request.query_params.get(TOKEN_FIELD), self.token)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers[name] = value
                if set_cookie:
                    headers.append(
                        "Set-Cookie",
                        f"{self.cookie}={self.cookie_secret}; Path=/; HttpOnly; SameSite=Strict"
                        + ("; Secure" if self.secure else ""),
                    )
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def refusal(self, request: Request) -> tuple[int, str, str] | None:
        """(status, title, message) when `request` must be refused, else None."""
        host = request.headers.get("host", "")
        if host not in self.hosts:
            return 403, "Forbidden", "This dashboard answers only at the address it printed."
        origin = request.headers.get("origin")
        if origin is not None and origin not in self.origins:
            return 403, "Forbidden", "Requests from other sites are refused."
        if same_token(request.query_params.get(TOKEN_FIELD), self.token):
            return None
        if same_token(request.cookies.get(self.cookie), self.cookie_secret):
            return None
        return (
            401,
            "Unauthorized",
            "Open the address `deepwork dashboard` printed (it carries the token).",
        )
