"""Who may use the dashboard: token, cookie, Host and Origin (docs/dashboard.md)."""

from __future__ import annotations

from collections.abc import Callable

from starlette.testclient import TestClient

from tests.unit.mcp.dashboard.conftest import PORT, TOKEN, Waiting


def test_without_the_token_every_page_is_401(
    waiting: Waiting, client_for: Callable[..., TestClient]
) -> None:
    client = client_for(waiting.root, signed_in=False)
    for path in ("/", "/approvals", "/stats", f"/run/{waiting.session_id}", "/static/dashboard.js"):
        assert client.get(path).status_code == 401, path
    assert client.get("/?token=wrong").status_code == 401
    assert client.post(f"/approvals/{waiting.session_id}").status_code == 401


def test_the_token_sets_a_strict_http_only_cookie_that_later_requests_use(
    waiting: Waiting,
    client_for: Callable[..., TestClient],
) -> None:
    client = client_for(waiting.root, signed_in=False)
    first = client.get(f"/?token={TOKEN}")
    assert first.status_code == 200
    cookie = first.headers["set-cookie"]
    assert cookie.startswith(f"deepwork_dashboard_{PORT}=")
    # Browsers send 127.0.0.1's cookies to every port: the token itself is never in one.
    assert TOKEN not in cookie
    assert "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie
    assert client.get("/stats").status_code == 200  # the cookie alone now suffices
    assert "set-cookie" not in client.get("/stats").headers


def test_a_foreign_host_or_origin_is_403_even_with_the_token(
    waiting: Waiting, client_for: Callable[..., TestClient]
) -> None:
    client = client_for(waiting.root)
    assert client.get(f"/?token={TOKEN}", headers={"Host": "evil.example"}).status_code == 403
    assert client.get("/", headers={"Host": f"127.0.0.1:{PORT + 1}"}).status_code == 403
    assert client.get("/", headers={"Host": f"rebound.example:{PORT}"}).status_code == 403
    assert client.get("/", headers={"Origin": "http://evil.example"}).status_code == 403
    assert client.get("/", headers={"Origin": "null"}).status_code == 403
    assert client.get("/", headers={"Host": f"localhost:{PORT}"}).status_code == 200
    assert client.get("/", headers={"Origin": f"http://127.0.0.1:{PORT}"}).status_code == 200


def test_every_answer_forbids_inline_script_framing_and_foreign_referrers(
    waiting: Waiting, client_for: Callable[..., TestClient]
) -> None:
    client = client_for(waiting.root)
    for response in (client.get("/"), client_for(waiting.root, signed_in=False).get("/")):
        policy = response.headers["content-security-policy"]
        assert "script-src 'self'" in policy
        assert "unsafe-inline" not in policy
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["referrer-policy"] == "same-origin"


def test_a_cookie_holding_the_token_does_not_sign_in(
    waiting: Waiting, client_for: Callable[..., TestClient]
) -> None:
    client = client_for(waiting.root, signed_in=False)
    client.cookies.set(f"deepwork_dashboard_{PORT}", TOKEN)
    assert client.get("/stats").status_code == 401
