"""`deepwork dashboard` beyond loopback: only with `--host` given, and never without the token
(docs/dashboard.md, "Beyond this machine"). The real command, as a process."""

from __future__ import annotations

import http.client
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

from deepwork_mcp.dashboard.app import dashboard_app
from starlette.testclient import TestClient


def _dashboard(root: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "deepwork_mcp",
            "dashboard",
            "--path",
            str(root),
            "--no-open",
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )


def _get(url: str, path: str) -> int:
    parts = urlsplit(url)
    assert parts.hostname is not None
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.request("GET", path)
        return connection.getresponse().status
    finally:
        connection.close()


def test_another_address_is_served_only_when_given_and_still_needs_the_token(
    tmp_path: Path,
) -> None:
    process = _dashboard(tmp_path, "--host", "127.0.0.2")
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.2:"), url
        token = urlsplit(url).query
        assert _get(url, "/approvals") == 401
        assert _get(url, f"/approvals?{token}") == 200
    finally:
        process.terminate()
        process.communicate(timeout=30)


def test_every_address_needs_the_public_url_browsers_use(tmp_path: Path) -> None:
    process = _dashboard(tmp_path, "--host", "0.0.0.0")
    _, err = process.communicate(timeout=60)
    assert process.returncode == 2
    assert "--public-url" in err


def test_behind_a_tls_proxy_the_public_name_is_accepted_and_the_cookie_is_secure(
    tmp_path: Path,
) -> None:
    app = dashboard_app(tmp_path, port=8765, token="t0k", public_url="https://deepwork.example.com")
    with TestClient(app, base_url="https://deepwork.example.com") as client:  # the app's life
        answer = client.get("/stats?token=t0k", headers={"Origin": "https://deepwork.example.com"})
        assert answer.status_code == 200
        assert "; Secure" in answer.headers["set-cookie"]
        other = client.get("/stats?token=t0k", headers={"Host": "other.example.com"})
        assert other.status_code == 403
        assert client.get("/stats").status_code == 200  # the cookie, over https
        fresh = TestClient(app, base_url="https://deepwork.example.com")
        assert fresh.get("/stats").status_code == 401
