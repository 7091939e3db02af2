"""The bytes of the files an approval request shows, kept with the request in the store.

When the server opens a request it reads each shown file once and stores what a person must see
to decide (`approval_contents`, schema version 6): a text file whole when it has at most
`MAX_FILE_BYTES` (256 KiB) and the request's files together at most `MAX_REQUEST_BYTES` (2 MiB);
past that, its size, its hash and its first 256 KiB; a binary file by size and hash only. Any
dashboard and `deepwork approve` on any checkout of the store show these bytes, never a file of
their own checkout (docs/team.md).

A file is `complete` when the stored bytes are the whole file and hash to the SHA-256 the request
binds (or the file was absent and nothing is to be shown). Only a request whose files are all
complete may be decided away from the project that serves it
(`deepwork_core.state.approvals.record_decision`, `approval.bytes_not_stored`): elsewhere nobody
could have seen the rest.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Final, Protocol

from deepwork_core.base.errors import DeepWorkError
from deepwork_core.base.identifiers import resolve_inside
from deepwork_core.evidence.hashes import ShownOutput
from deepwork_core.state.store.port import Tx
from deepwork_core.state.store.tables.approval_rows import project_of

#: At most this many bytes of one file are stored.
MAX_FILE_BYTES: Final = 256 * 1024
#: At most this many bytes of one request's files are stored together.
MAX_REQUEST_BYTES: Final = 2 * 1024 * 1024
_CHUNK: Final = 64 * 1024


class Kept(StrEnum):
    """How much of a shown file the store holds."""

    #: The whole file (its bytes hash to the request's SHA-256).
    WHOLE = "whole"
    #: The file was absent when the request was opened: nothing to show.
    ABSENT = "absent"
    #: Larger than `MAX_FILE_BYTES`: its first 256 KiB.
    FIRST_PART = "first_part"
    #: Not text (a NUL byte anywhere in what would be kept, or not UTF-8): size and hash only.
    BINARY = "binary"
    #: The request's `MAX_REQUEST_BYTES` were used by the files before it: size and hash only.
    OVER_REQUEST_CAP = "over_request_cap"
    #: Unreadable, or its bytes changed between hashing and storing: nothing stored.
    UNREADABLE = "unreadable"
    #: Requested before the store kept bytes (schema version 5 or older): nothing stored.
    NOT_STORED = "not_stored"


@dataclass(frozen=True, slots=True)
class ShownBytes:
    """One shown file as the store keeps it."""

    output: str
    path: str
    #: The SHA-256 the request binds (None: the file was absent).
    sha256: str | None
    #: The file's size in bytes when the request was opened (None: absent or unknown).
    size: int | None
    kept: Kept
    #: The stored bytes as text (UTF-8): the whole file, or its first part; "" when none.
    text: str = ""

    @property
    def complete(self) -> bool:
        """Whether a person who reads `text` has seen every byte the request binds."""
        if self.kept is Kept.ABSENT:
            return self.sha256 is None
        if self.kept is not Kept.WHOLE or self.sha256 is None:
            return False
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest() == self.sha256

    def why_incomplete(self) -> str:
        """What a card says of a file that is not complete (empty when it is)."""
        if self.complete:
            return ""
        size = "unknown size" if self.size is None else f"{self.size} bytes"
        return {
            Kept.FIRST_PART: f"{size}: only the first {MAX_FILE_BYTES // 1024} KiB are kept",
            Kept.BINARY: f"a binary file of {size}: kept by size and hash only",
            Kept.OVER_REQUEST_CAP: (
                f"{size}: the request's {MAX_REQUEST_BYTES // (1024 * 1024)} MiB of kept bytes "
                "were used by the files before it, so it is kept by size and hash only"
            ),
            Kept.UNREADABLE: "the file could not be read as hashed when the request was made",
            Kept.NOT_STORED: "requested before the store kept the bytes of shown files",
        }.get(self.kept, "the kept bytes do not hash to the SHA-256 asked about")


def capture(project_root: Path, shown: Iterable[ShownOutput]) -> list[ShownBytes]:
    """Read each shown file once, within the caps, as the store keeps it."""
    budget = MAX_REQUEST_BYTES
    kept: list[ShownBytes] = []
    for item in shown:
        found = _read(project_root, item, budget)
        if found.kept in (Kept.WHOLE, Kept.FIRST_PART):
            budget -= len(found.text.encode("utf-8"))
        kept.append(found)
    return kept


def _read(project_root: Path, item: ShownOutput, budget: int) -> ShownBytes:
    def made(kept: Kept, size: int | None = None, text: str = "") -> ShownBytes:
        return ShownBytes(item.output, item.path, item.sha256, size, kept, text)

    if item.sha256 is None:
        return made(Kept.ABSENT)
    try:
        resolved = resolve_inside(project_root, item.path)
        fd = os.open(resolved, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except (DeepWorkError, OSError):
        return made(Kept.UNREADABLE)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return made(Kept.UNREADABLE)
        digest, head, size = hashlib.sha256(), bytearray(), 0
        while chunk := os.read(fd, _CHUNK):
            digest.update(chunk)
            size += len(chunk)
            if len(head) <= MAX_FILE_BYTES:
                head += chunk[: MAX_FILE_BYTES + 1 - len(head)]
    except OSError:
        return made(Kept.UNREADABLE)
    finally:
        os.close(fd)
    if digest.hexdigest() != item.sha256:
        return made(Kept.UNREADABLE, size)
    text = _text(bytes(head[:MAX_FILE_BYTES]), whole=size <= MAX_FILE_BYTES)
    if text is None:
        return made(Kept.BINARY, size)
    if len(text.encode("utf-8")) > budget:
        return made(Kept.OVER_REQUEST_CAP, size)
    return made(Kept.WHOLE if size <= MAX_FILE_BYTES else Kept.FIRST_PART, size, text)


def _text(data: bytes, *, whole: bool) -> str | None:
    """`data` as UTF-8 text (a first part cut inside a character ends before it); None when it
    is binary."""
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if whole or exc.start < len(data) - 3:
            return None
        return data[: exc.start].decode("utf-8")


def save(
    tx: Tx, project_id: str, session_id: str, request_id: str, files: Iterable[ShownBytes]
) -> None:
    """Store `files` as the shown bytes of the request (in the transaction that opens it)."""
    for position, item in enumerate(files):
        tx.execute(
            "INSERT INTO approval_contents (project_id, session_id, request_id, position, output, "
            "path, sha256, size, kept, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                project_id,
                session_id,
                request_id,
                position,
                item.output,
                item.path,
                item.sha256,
                item.size,
                item.kept.value,
                item.text,
            ),
        )


def load(
    tx: Tx, project_id: str, request_id: str, shown: Iterable[ShownOutput]
) -> list[ShownBytes]:
    """The stored bytes of the request's `shown` files, in their order; a file the store keeps
    nothing of (or other than the request names) is `not_stored`."""
    rows = tx.execute(
        "SELECT output, path, sha256, size, kept, content FROM approval_contents "
        "WHERE project_id = ? AND request_id = ? ORDER BY position",
        (project_id, request_id),
    )
    stored = {
        (str(output), str(path)): (sha, size, kept, content)
        for output, path, sha, size, kept, content in rows
    }
    files = []
    for item in shown:
        found = stored.get((item.output, item.path))
        if found is None or found[0] != item.sha256 or found[2] not in set(Kept):
            files.append(ShownBytes(item.output, item.path, item.sha256, None, Kept.NOT_STORED))
            continue
        _, size, kept, content = found
        number = None if size is None else int(size)
        files.append(
            ShownBytes(item.output, item.path, item.sha256, number, Kept(str(kept)), str(content))
        )
    return files


class Requested(Protocol):
    """What `why_not_travelled` reads of a request (`deepwork_core.state.approvals`)."""

    @property
    def request_id(self) -> str: ...

    @property
    def shown(self) -> list[ShownOutput]: ...


def why_not_travelled(tx: Tx, project_id: str, request: Requested) -> str | None:
    """Why `request` of `project_id` cannot be decided away from the checkout that serves it
    (the store lacks a byte of a shown file), naming where it can; None when it can."""
    missing = [f for f in load(tx, project_id, request.request_id, request.shown) if not f.complete]
    if not missing:
        return None
    served = project_of(tx, project_id)
    where = "the checkout that serves the run" if served is None else f"{served[0]} on {served[1]}"
    files = "; ".join(f"{f.path} ({f.why_incomplete()})" for f in missing)
    return (
        f"the store does not hold every byte shown for this approval: {files}. Nobody can see "
        f"them away from the run, so decide it where it is served: {where}. Nothing was recorded"
    )
