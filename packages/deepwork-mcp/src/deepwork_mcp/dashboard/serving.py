"""Serving the dashboard: a socket on 127.0.0.1 and uvicorn (docs/dashboard.md).

The socket is bound before the URL is printed, so `--port 0` prints the port the system chose
and the URL always works by the time it is shown. Only the loopback address is ever bound.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Final

import uvicorn
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError

from deepwork_mcp.dashboard.app import dashboard_app

LOOPBACK: Final = "127.0.0.1"


class DashboardError(DeepWorkError):
    """The dashboard could not start (`dashboard.*` codes)."""

    code = ErrorCode.DASHBOARD_BIND_FAILED


def bind_loopback(port: int) -> socket.socket:
    """A listening TCP socket on 127.0.0.1:`port` (0: a free port the system picks)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((LOOPBACK, port))
        sock.listen(64)
    except OSError as exc:
        sock.close()
        raise DashboardError(
            f"cannot listen on {LOOPBACK}:{port} ({exc.strerror or exc}); pick another port "
            "with --port, or --port 0 for any free one",
            code=ErrorCode.DASHBOARD_BIND_FAILED,
        ) from None
    return sock


def dashboard_url(sock: socket.socket, token: str) -> str:
    port = sock.getsockname()[1]
    return f"http://{LOOPBACK}:{port}/?token={token}"


def serve(project_root: Path, sock: socket.socket, token: str) -> None:
    """Serve the dashboard of `project_root` on `sock` until interrupted (Ctrl-C)."""
    port = int(sock.getsockname()[1])
    config = uvicorn.Config(
        dashboard_app(project_root, port=port, token=token),
        log_level="warning",
        access_log=False,
        lifespan="off",
        server_header=False,
    )
    uvicorn.Server(config).run(sockets=[sock])
