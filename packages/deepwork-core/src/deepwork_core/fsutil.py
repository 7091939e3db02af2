"""Durable file writes and a cross-process lock."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


class LockTimeout(TimeoutError):
    """`file_lock` could not take the lock in time; callers map it to their own domain error."""

    def __init__(self, path: Path, timeout: float) -> None:
        super().__init__(f"could not lock {path} within {timeout:g} s")
        self.path = path
        self.timeout = timeout


def atomic_write_text(path: Path, text: str) -> None:
    """Write `text` to `path` so that readers see the old or the new content, never a mix.

    Temporary file in the same folder, flush, fsync, rename, then fsync the folder.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        Path(tmp_name).replace(path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            Path(tmp_name).unlink()
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


@contextlib.contextmanager
def file_lock(path: Path, *, timeout: float = 30.0, shared: bool = False) -> Iterator[None]:
    """Hold an exclusive (or, with `shared`, a shared) `flock` on `path` (created if missing)
    for the `with` block.

    Works across processes on one machine; the lock is released when the block ends or the
    process dies. Raises `LockTimeout` after `timeout` seconds; with
    a timeout of 0 the lock is tried once.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout
        delay = 0.001
        while True:
            try:
                fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockTimeout(path, timeout) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
