"""The listening sockets of the servers `deepwork` starts over TCP: `deepwork serve --transport
http|sse` and `deepwork dashboard` (docs/security.md, docs/dashboard.md).

Each command binds its socket itself, before it says anything about the address or starts
uvicorn on it, so that a port in use is one coded error in a person's words (uvicorn's own
answer is a raw `[Errno 98]` line and exit status 3) and nothing is announced that never
listens.
"""

from __future__ import annotations

import socket


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on `host`:`port` (0: a free port). Raises `OSError`."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(64)
    except OSError:
        sock.close()
        raise
    return sock


def cannot_listen(host: str, port: int, exc: OSError) -> str:
    """What to tell a person whose server could not listen on `host`:`port`."""
    return (
        f"cannot listen on {host}:{port} ({exc.strerror or exc}); pick another port "
        "with --port, or --port 0 for any free one"
    )
