"""`notify.webhook`: `deepwork run` posts a JSON payload when a run parks, completes or fails
(docs/headless.md, "Telling someone").

The body is signed with HMAC-SHA256 under the secret in the variable `secret_env` names, sent as
`X-DeepWork-Signature-256: sha256=<hex>` (no secret: no header). It is sent from a thread of its
own, tried `TRIES` times with a doubling pause; `deepwork run` waits for it at most `WAIT_S`, so
a receiver that is down, slow or answers 500 never holds the run up by more.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Final

from deepwork_core.base.config import WebhookConfig

SIGNATURE_HEADER: Final = "X-DeepWork-Signature-256"
TRIES: Final = 3
#: The first pause between tries (then doubled).
BACKOFF_S: Final = 0.5
#: One try's time limit.
TRY_TIMEOUT_S: Final = 5.0
#: The longest `deepwork run` waits for the webhook before it exits: with reading the config and
#: starting the post, a receiver that is down, slow or failing costs the run under 1 s.
WAIT_S: Final = 0.8


def signature(secret: str, body: bytes) -> str:
    """The header's value for `body`."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def post(
    config: WebhookConfig,
    payload: Mapping[str, object],
    environ: Mapping[str, str],
    warn: Callable[[str], None],
) -> threading.Thread:
    """Start sending `payload` (retried in the background) and return the sending thread."""
    body = json.dumps(payload, sort_keys=True).encode()
    headers = {"Content-Type": "application/json", "User-Agent": "deepwork-run"}
    secret = environ.get(config.secret_env)
    if secret:
        headers[SIGNATURE_HEADER] = signature(secret, body)
    thread = threading.Thread(
        target=_send, args=(config.url, body, headers, warn), name="deepwork-webhook", daemon=True
    )
    thread.start()
    return thread


def _send(url: str, body: bytes, headers: dict[str, str], warn: Callable[[str], None]) -> None:
    pause = BACKOFF_S
    failure = ""
    for attempt in range(1, TRIES + 1):
        # the URL is http(s) only: WebhookConfig.url checks the scheme
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=TRY_TIMEOUT_S) as answer:  # noqa: S310
                if 200 <= answer.status < 300:
                    return
                failure = f"HTTP {answer.status}"
        except urllib.error.HTTPError as exc:
            failure = f"HTTP {exc.code}"
            exc.close()
        except (urllib.error.URLError, OSError) as exc:
            failure = str(getattr(exc, "reason", exc))
        if attempt < TRIES:
            time.sleep(pause)
            pause *= 2
    warn(f"warning: notify.webhook: {url} failed {TRIES} times (last: {failure})")
