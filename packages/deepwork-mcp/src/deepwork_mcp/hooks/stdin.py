"""Reading one event from a pipe without trusting the writer to close it."""

from __future__ import annotations

import os
import select
import time

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import HookError
from deepwork_core.base.fsutil import loads_json

MAX_EVENT_BYTES = 32 * 1024 * 1024


def read_event_text(fd: int, *, timeout: float, limit: int = MAX_EVENT_BYTES) -> str:
    """Read one JSON event from `fd` within `timeout` seconds.

    Returns at end of input, or as soon as the bytes read so far form a complete JSON object,
    so a writer that keeps the pipe open does not hold the hook. Raises `HookError`
    (`hook.stdin_timeout`, `hook.bad_input`) when no complete event arrives in time or the input
    is too large. Text that is not JSON is returned as it is for the parser to report.
    """
    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    size = 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise HookError(
                f"no complete hook event arrived on stdin within {timeout:g} s",
                code=ErrorCode.HOOK_STDIN_TIMEOUT,
            )
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise HookError(
                f"the hook input is larger than {limit} bytes", code=ErrorCode.HOOK_BAD_INPUT
            )
        if chunk.rstrip().endswith(b"}") and _is_complete(b"".join(chunks)):
            break
    return b"".join(chunks).decode("utf-8", errors="replace")


def _is_complete(data: bytes) -> bool:
    try:
        loads_json(data)
    except ValueError:
        return False
    return True
