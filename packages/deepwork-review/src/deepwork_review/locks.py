"""The review runtime files' lock: `file_lock` with its timeout as a `review.lock_timeout`."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import ReviewError
from deepwork_core.base.fsutil import LockTimeout, file_lock


@contextlib.contextmanager
def review_lock(path: Path, *, shared: bool = False) -> Iterator[None]:
    """Hold `file_lock(path)` for the block; raises `review.lock_timeout` if it cannot."""
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(file_lock(path, shared=shared))
        except LockTimeout as exc:
            raise ReviewError(str(exc), code=ErrorCode.REVIEW_LOCK_TIMEOUT) from None
        yield
