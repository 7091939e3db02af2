"""A telemetry endpoint that answers 503 does not hold the server's exit (docs/telemetry.md,
"When the backend is down"): `deepwork serve` as a real process, its stdin closed after one tool
call, exporting to a loopback HTTP server that answers every request 503."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO

import pytest

from tests.fixtures.workflow_project import make_project

pytestmark = pytest.mark.slow

#: The exit the docs promise for an endpoint that does not take the data, with room for a
#: loaded machine; unbounded, the exporter retries a 503 for its whole 10 s timeout and more.
EXIT_WITHIN_S = 6.0


class _Unavailable(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return None


@contextmanager
def unavailable_endpoint() -> Iterator[str]:
    """`http://127.0.0.1:<port>`, where every export is answered 503 Service Unavailable."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Unavailable)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def send(stdin: IO[str], message: dict[str, object]) -> None:
    stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    stdin.flush()


def _one_call_then_close(server: subprocess.Popen[str]) -> tuple[float, str]:
    """Initialise, call one tool, close stdin: the seconds until the process exited, and its
    stderr."""
    assert server.stdin is not None
    assert server.stdout is not None
    assert server.stderr is not None
    try:
        send(server.stdin, {"id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        }})  # fmt: skip
        assert json.loads(server.stdout.readline())["id"] == 1
        send(server.stdin, {"method": "notifications/initialized"})
        send(server.stdin, {"id": 2, "method": "tools/call", "params": {
            "name": "get_workflows", "arguments": {},
        }})  # fmt: skip
        assert json.loads(server.stdout.readline())["id"] == 2  # a span waits for export
        closed = time.monotonic()
        server.stdin.close()
        server.wait(timeout=60)
        return time.monotonic() - closed, server.stderr.read()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def test_an_endpoint_answering_503_does_not_delay_the_exit(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project")
    with unavailable_endpoint() as endpoint:
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "PYTHONUNBUFFERED": "1"}
        env.pop("DEEPWORK_OTEL_LOG_CONTENT", None)
        with subprocess.Popen(
            [sys.executable, "-m", "deepwork_mcp", "serve", "--path", str(root), "--no-branch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        ) as server:
            took, stderr = _one_call_then_close(server)
    assert server.returncode == 0, stderr
    assert took < EXIT_WITHIN_S, f"the server took {took:.1f} s to exit: {stderr}"
