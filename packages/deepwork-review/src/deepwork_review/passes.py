"""Review-pass memory: which review ids were handed out, and which of them passed.

Both lists live on disk under `.deepwork/tmp/review_passes/` because the ids are issued by one
process (`deepwork review` or the MCP server) and marked passed by another. Each list is a text
file with one id per line, appended under a cross-process lock and cut back to its newer half
when it grows past a size limit (so very old ids are eventually forgotten). A pass may carry a
reason (why findings were declined rather than fixed): it follows the id on the same line after
a tab, as one line of at most `MAX_REASON` characters.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import FileReadError, ReviewError
from deepwork_core.base.fsutil import atomic_write_text, read_text_file
from deepwork_core.base.layout import TMP_DIR
from deepwork_core.base.runtime_dir import ensure_tmp_dir

from deepwork_review.locks import review_lock
from deepwork_review.tasks import is_review_id

FOLDER = "review_passes"
#: A list larger than this many bytes is cut back to its newer half.
MAX_BYTES = 4_000_000
#: A reason longer than this many characters is cut (with an ellipsis).
MAX_REASON = 500


class ReviewPasses:
    """The issued and passed review ids of one project."""

    def __init__(self, project_root: Path) -> None:
        self._root = project_root

    @property
    def _folder(self) -> Path:
        return self._root / TMP_DIR / FOLDER

    def passed_ids(self) -> frozenset[str]:
        return frozenset(self.pass_reasons())

    def pass_reasons(self) -> dict[str, str]:
        """Every passed id with the reason given for it ("" when none was given)."""
        reasons: dict[str, str] = {}
        for line in _read(self._folder / "passed.txt"):
            review_id, _, reason = line.partition("\t")
            if reason or review_id not in reasons:
                reasons[review_id] = reason
        return reasons

    def record_issued(self, review_ids: Iterable[str]) -> None:
        self._append("issued.txt", list(review_ids))

    def mark_passed(self, review_id: str, reason: str | None = None) -> None:
        """Remember that `review_id` passed. Only ids this project issued are accepted.

        `reason` says why the review counts as passed although it had findings (the user
        declined them); it is kept with the pass. Marking a passed id again only adds a reason.
        """
        if not is_review_id(review_id) or review_id not in set(_read(self._folder / "issued.txt")):
            raise ReviewError(
                f"review id {review_id!r} was never issued for this project; use the review id "
                "written in the task's instruction file",
                code=ErrorCode.REVIEW_UNKNOWN_REVIEW_ID,
            )
        note = _one_line(reason)
        known = self.pass_reasons()
        if review_id not in known or (note and known[review_id] != note):
            self._append("passed.txt", [f"{review_id}\t{note}" if note else review_id])

    def _append(self, name: str, review_ids: list[str]) -> None:
        if not review_ids:
            return
        ensure_tmp_dir(self._root)
        self._folder.mkdir(exist_ok=True)
        path = self._folder / name
        with review_lock(self._folder / f"{name}.lock"):
            _append_lines(path, review_ids)
            if path.stat().st_size > MAX_BYTES:
                lines = _read(path)
                atomic_write_text(path, "".join(f"{line}\n" for line in lines[len(lines) // 2 :]))


def _append_lines(path: Path, lines: list[str]) -> None:
    """Append to a regular file only: a FIFO or device in its place is refused, not waited on."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        raise ReviewError(
            f"cannot write {path}: {exc.strerror}", code=ErrorCode.REVIEW_STATE_UNREADABLE
        ) from None
    with os.fdopen(fd, "ab") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ReviewError(
                f"{path} is not a regular file", code=ErrorCode.REVIEW_STATE_UNREADABLE
            )
        handle.write("".join(f"{line}\n" for line in lines).encode("utf-8"))


def _one_line(reason: str | None) -> str:
    """`reason` as one clipped line without tabs ("" for none or blank)."""
    text = " ".join((reason or "").split())
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 1] + "…"


def _read(path: Path) -> list[str]:
    try:
        text = read_text_file(path, limit=2 * MAX_BYTES)
    except FileReadError as exc:
        if exc.code == ErrorCode.FILE_NOT_FOUND:
            return []
        raise ReviewError(exc.message, code=ErrorCode.REVIEW_STATE_UNREADABLE) from None
    return [line for line in text.splitlines() if line]
