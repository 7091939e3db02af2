"""Reading one receipt file for `deepwork verify`, failing closed (docs/verify.md, "Fail
closed"): a symbolic link or anything but a regular file, a file over `MAX_RECEIPT_BYTES`, one
that cannot be read, that is not canonical JSON, nested too deeply or not of the receipt's shape
is a finding with its own code, never a receipt half read. Paths a receipt names are checked to
stay inside the project and out of `.git`.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path, PurePosixPath
from typing import Final

from pydantic import ValidationError

from deepwork_core.receipts.codes import ReceiptCode
from deepwork_core.receipts.findings import Finding
from deepwork_core.receipts.model import MAX_RECEIPT_BYTES, Receipt, canonical_bytes

#: The deepest a receipt's JSON nests (a real one: about 8 levels).
MAX_DEPTH: Final = 32
_STRINGS: Final = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKETS: Final = re.compile(r"[\[\]{}]")


def read_receipt(root: Path, relative: str) -> Receipt | Finding:
    """The receipt at `relative` (a path inside the project `root`), or why it is refused."""
    try:
        raw = _read_regular(root / relative)
    except _Refused as refused:
        return Finding(code=refused.code, file=relative, receipt=relative, message=refused.why)
    return parse_receipt(raw, relative)


def parse_receipt(raw: bytes, relative: str) -> Receipt | Finding:
    """The receipt in `raw`, the bytes of the file `relative`, or why it is refused."""

    def malformed(why: str) -> Finding:
        return Finding(
            code=ReceiptCode.VERIFY_RECEIPT_MALFORMED, file=relative, receipt=relative, message=why
        )

    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        return malformed("not ASCII: a receipt is canonical JSON, ASCII only")
    if _depth(text) > MAX_DEPTH:
        return malformed(f"nested deeper than {MAX_DEPTH} levels")
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return malformed(f"not JSON: {exc}")
    if canonical_bytes(document) != raw:
        return malformed("not in canonical form (sorted keys, no spaces, one final newline)")
    try:
        return Receipt.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "<top>"
        return malformed(f"not of the receipt's shape: {where}: {first['msg']}")


def unsafe_path(path: str) -> str | None:
    """Why the project-relative POSIX `path` a receipt names is not inside the project; None
    when it is."""
    if not path or "\0" in path or "\\" in path:
        return f"{path!r} is not a project-relative POSIX path"
    pure = PurePosixPath(path)
    if pure.is_absolute():
        return f"{path!r} is absolute"
    if ".." in pure.parts:
        return f"{path!r} climbs out of the project"
    if ".git" in pure.parts:
        return f"{path!r} is inside git's own folder"
    return None


class _Refused(Exception):
    def __init__(self, code: ReceiptCode, why: str) -> None:
        super().__init__(why)
        self.code = code
        self.why = why


def _read_regular(path: Path) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if path.is_symlink():
            raise _Refused(ReceiptCode.VERIFY_RECEIPT_SYMLINK, "a symbolic link") from None
        raise _Refused(
            ReceiptCode.VERIFY_RECEIPT_UNREADABLE, f"cannot be read: {exc.strerror}"
        ) from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise _Refused(ReceiptCode.VERIFY_RECEIPT_SYMLINK, "not a regular file")
        if info.st_size > MAX_RECEIPT_BYTES:
            raise _Refused(
                ReceiptCode.VERIFY_RECEIPT_TOO_LARGE,
                f"{info.st_size} bytes; a receipt holds at most {MAX_RECEIPT_BYTES}",
            )
        try:
            data = handle.read(MAX_RECEIPT_BYTES + 1)
        except OSError as exc:
            raise _Refused(
                ReceiptCode.VERIFY_RECEIPT_UNREADABLE, f"cannot be read: {exc.strerror}"
            ) from None
    if len(data) > MAX_RECEIPT_BYTES:
        raise _Refused(ReceiptCode.VERIFY_RECEIPT_TOO_LARGE, "grew past the largest receipt")
    return data


def _depth(text: str) -> int:
    """How deeply the JSON `text` nests (counting brackets outside strings)."""
    deepest = depth = 0
    for bracket in _BRACKETS.findall(_STRINGS.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest
