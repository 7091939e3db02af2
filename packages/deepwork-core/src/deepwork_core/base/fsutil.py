"""Guarded file reads, durable file writes and a cross-process lock."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import FileReadError

#: How deeply untrusted JSON may nest. Real DeepWork files nest a handful of levels; far deeper
#: text would overflow Python's recursion limit while parsing, printing or dumping it.
MAX_JSON_NESTING: Final = 100

_JSON_STRINGS: Final = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKETS: Final = bytes(b for b in range(256) if b not in b"[]{}")
_SQUARE: Final = bytes.maketrans(b"{}", b"[]")


def loads_json(text: str | bytes) -> Any:
    """`json.loads` for text DeepWork did not write itself (state, logs, hooks, reviewers).

    Text nested deeper than `MAX_JSON_NESTING` is refused like any other malformed JSON, with a
    `json.JSONDecodeError` (a `ValueError`), before it is parsed: it never raises
    `RecursionError`, here or later in the code that walks what was read.
    """
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if data.count(b"[") + data.count(b"{") > MAX_JSON_NESTING and _too_deep(data):
        raise json.JSONDecodeError(f"nested more than {MAX_JSON_NESTING} levels deep", "", 0)
    try:
        return json.loads(text)
    except RecursionError:  # pragma: no cover - the check above comes first
        raise json.JSONDecodeError("nested too deeply", "", 0) from None


def _too_deep(data: bytes) -> bool:
    """True when the brackets outside strings nest more than `MAX_JSON_NESTING` levels.

    Each pass deletes the innermost pairs, so a document `d` levels deep is gone after `d`
    passes; all of it runs in C, whatever the size.
    """
    brackets = _JSON_STRINGS.sub(b"", data).translate(_SQUARE, _NOT_BRACKETS)
    for _ in range(MAX_JSON_NESTING):
        shorter = brackets.replace(b"[]", b"")
        if shorter == brackets:  # unbalanced: only unmatched brackets are left
            return len(shorter) > MAX_JSON_NESTING
        if not shorter:
            return False
        brackets = shorter
    return True


def read_bytes_file(path: Path, *, limit: int, follow_symlinks: bool = True) -> bytes:
    """The bytes of regular file `path`, at most `limit` of them.

    The one way DeepWork reads a file a project controls: the file is opened non-blocking, so a
    FIFO (or a device) never makes us wait for a writer, and anything but a regular file is
    refused. Raises `FileReadError`: `file.not_found`, `file.not_regular`, `file.too_large`
    (more than `limit` bytes) or `file.unreadable`.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise FileReadError(f"{path} does not exist", code=ErrorCode.FILE_NOT_FOUND) from None
    except OSError as exc:
        raise FileReadError(f"cannot open {path}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileReadError(f"{path} is not a regular file", code=ErrorCode.FILE_NOT_REGULAR)
        if info.st_size > limit:
            raise FileReadError(
                f"{path} has {info.st_size} bytes; at most {limit} are read",
                code=ErrorCode.FILE_TOO_LARGE,
            )
        data = _read_to_end(fd, expected=info.st_size, limit=limit)
    except OSError as exc:
        raise FileReadError(f"cannot read {path}: {exc.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > limit:  # grew while we read it
        raise FileReadError(f"{path} has more than {limit} bytes", code=ErrorCode.FILE_TOO_LARGE)
    return data


def _read_to_end(fd: int, *, expected: int, limit: int) -> bytes:
    """The bytes of regular file `fd` up to its end, or `limit + 1` bytes if it has more.

    Reads are sized by the file, not by `limit`: a read of `limit + 1` bytes allocates that much
    memory first (32 MiB for a state file), which made every small read cost about 60 µs more.
    (O_NONBLOCK has no effect on a regular file, so these reads wait for the disk as usual.)
    """
    chunks: list[bytes] = []
    total = 0
    size = min(expected, limit) + 1  # one byte more shows a file that grew
    while total <= limit:
        chunk = os.read(fd, min(size, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        size = max(size, 64 * 1024)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def read_text_file(path: Path, *, limit: int, follow_symlinks: bool = True) -> str:
    """`read_bytes_file` decoded as UTF-8; `file.not_text` when it is not valid UTF-8."""
    data = read_bytes_file(path, limit=limit, follow_symlinks=follow_symlinks)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise FileReadError(f"{path} is not UTF-8 text", code=ErrorCode.FILE_NOT_TEXT) from None


class LockTimeout(TimeoutError):
    """`file_lock` could not take the lock in time; callers map it to their own domain error."""

    def __init__(self, path: Path, timeout: float) -> None:
        super().__init__(f"could not lock {path} within {timeout:g} s")
        self.path = path
        self.timeout = timeout


def atomic_write_text(
    path: Path, text: str, *, sync_folder: bool = True, sync: bool = True
) -> None:
    """Write `text` to `path` so that readers see the old or the new content, never a mix.

    Temporary file in the same folder, flush, fsync, rename, then fsync the folder. A caller
    that writes several files of one folder in a row may pass `sync_folder=False` and call
    `fsync_folder` once after the last rename (the session store does, once per transaction).
    `sync=False` skips the file's fsync too: for a file that only mirrors what is durable
    elsewhere, which a power loss may leave at an earlier content.
    """
    import tempfile  # only writers pay for it; hooks that merely read start faster

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            if sync:
                os.fsync(handle.fileno())
        Path(tmp_name).replace(path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            Path(tmp_name).unlink()
        raise
    if sync_folder:
        fsync_folder(path.parent)


def fsync_folder(folder: Path) -> None:
    """Make the renames done in `folder` durable."""
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def stat_signature(info: os.stat_result) -> str:
    """Size, modification and change times and inode: any write or replacement changes it.

    The change time cannot be set from user space, so an unchanged signature means unchanged
    bytes (the same test git uses to skip re-reading files).
    """
    return f"{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_ino}"


def path_signature(path: Path) -> str | None:
    """`stat_signature` of `path` (not following a final symlink); None when it does not exist."""
    try:
        return stat_signature(os.lstat(path))
    except OSError:
        return None


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
