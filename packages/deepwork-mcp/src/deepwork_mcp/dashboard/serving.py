"""Serving the dashboard: a socket on 127.0.0.1 and uvicorn (docs/dashboard.md).

The socket is bound before the URL is printed, so `--port 0` prints the port the system chose
and the URL always works by the time it is shown. Only the loopback address is bound, unless
`deepwork dashboard --host` names another one (docs/dashboard.md, "Beyond this machine").
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Final

import uvicorn
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError

from deepwork_mcp.dashboard.app import dashboard_app
from deepwork_mcp.listening import cannot_listen, listen

LOOPBACK: Final = "127.0.0.1"


class DashboardError(DeepWorkError):
    """The dashboard could not start (`dashboard.*` codes)."""

    code = ErrorCode.DASHBOARD_BIND_FAILED


def bind_loopback(port: int, host: str = LOOPBACK) -> socket.socket:
    """A listening TCP socket on `host`:`port` (127.0.0.1 unless told; 0: a free port)."""
    try:
        return listen(host, port)
    except OSError as exc:
        raise DashboardError(
            cannot_listen(host, port, exc), code=ErrorCode.DASHBOARD_BIND_FAILED
        ) from None


def dashboard_url(sock: socket.socket, token: str, public_url: str | None = None) -> str:
    """The address to open: `public_url` (a proxy in front) or the bound address, with the token."""
    if public_url is not None:
        return f"{public_url.rstrip('/')}/?token={token}"
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/?token={token}"


def serve_dashboard(
    project_root: Path,
    sock: socket.socket,
    token: str,
    public_url: str | None = None,
) -> None:
    """Serve the dashboard of `project_root` on `sock` until interrupted (Ctrl-C)."""
    host, port = sock.getsockname()[:2]
    bound = None if host == LOOPBACK else str(host)
    config = uvicorn.Config(
        dashboard_app(
            project_root, port=int(port), token=token, bound=bound, public_url=public_url
        ),
        log_level="warning",
        access_log=False,
        lifespan="on",  # the app closes its store when it stops
        server_header=False,
    )
    uvicorn.Server(config).run(sockets=[sock])
