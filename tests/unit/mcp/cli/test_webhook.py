"""`notify.webhook` (docs/headless.md, "Telling someone"): the POST carries the payload signed
with the secret from the environment, is retried after a 500, is given up with a warning when
the receiver is down, and `deepwork run` never waits for a slow receiver past `WAIT_S`."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Iterator
from email.message import Message
from typing import Any

import pytest
from deepwork_core.base.config import DeepWorkConfig, WebhookConfig
from deepwork_mcp.cli.headless import webhook


class _Receiver(http.server.BaseHTTPRequestHandler):
    answers: list[int]
    seen: list[tuple[Message, bytes]]
    hold: threading.Event | None = None

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.seen.append((self.headers, body))
        if self.hold is not None:
            self.hold.wait(60)
        self.send_response(self.answers.pop(0) if self.answers else 200)
        self.end_headers()

    def log_message(self, *_: Any) -> None:
        return None


@pytest.fixture
def receiver() -> Iterator[tuple[str, type[_Receiver]]]:
    handler = type("Handler", (_Receiver,), {"answers": [], "seen": [], "hold": None})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", handler
    if handler.hold is not None:
        handler.hold.set()
    server.shutdown()
    server.server_close()


def test_the_payload_is_signed_and_retried_after_a_500(
    receiver: tuple[str, type[_Receiver]],
) -> None:
    url, handler = receiver
    handler.answers = [500]
    warnings: list[str] = []
    payload = {"status": "parked", "run": "sess_1", "approve_command": "deepwork approve sess_1"}
    environ = {"DEEPWORK_WEBHOOK_SECRET": "s3cret"}
    webhook.post(WebhookConfig(url=url), payload, environ, warnings.append).join(30)
    assert len(handler.seen) == 2
    headers, body = handler.seen[-1]
    assert json.loads(body) == payload
    assert headers[webhook.SIGNATURE_HEADER] == webhook.signature("s3cret", body)
    assert warnings == []


def test_a_receiver_that_is_down_is_given_up_with_a_warning() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    warnings: list[str] = []
    config = WebhookConfig(url=f"http://127.0.0.1:{port}/hook")
    webhook.post(config, {"status": "completed"}, {}, warnings.append).join(30)
    assert len(warnings) == 1
    assert f"failed {webhook.TRIES} times" in warnings[0]


def test_a_slow_receiver_is_not_waited_for(receiver: tuple[str, type[_Receiver]]) -> None:
    url, handler = receiver
    handler.hold = threading.Event()  # the receiver answers only when the test lets it
    sending = webhook.post(WebhookConfig(url=url), {"status": "parked"}, {}, print)
    sending.join(webhook.WAIT_S)  # what `deepwork run` waits
    assert sending.is_alive()  # it went on while the receiver still held the request
    assert len(handler.seen) == 1
    assert handler.seen[0][0].get(webhook.SIGNATURE_HEADER) is None  # no secret: no signature


def test_the_config_takes_http_urls_and_a_variable_name_only() -> None:
    config = DeepWorkConfig.model_validate({"notify": {"webhook": {"url": "https://x.test/h"}}})
    assert config.notify.webhook is not None
    assert config.notify.webhook.secret_env == "DEEPWORK_WEBHOOK_SECRET"
    for bad in ({"url": "file:///etc/passwd"}, {"url": "https://x.test", "secret_env": "a b"}):
        with pytest.raises(ValueError, match="validation error"):
            DeepWorkConfig.model_validate({"notify": {"webhook": bad}})
