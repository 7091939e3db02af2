"""Instruction files: one Markdown file per review task, named by its content.

Every run writes into one shared folder, `.deepwork/tmp/review_instructions/`. A task's file is
`<review id>-<hash of the file's text>.md` and a long context list's file is
`context-<hash of its text>.md`, so equal text always gets the same name and a different text a
new one. A run writes a file only when it is absent (to a temporary name, then renamed, so a
reader never sees half a file) and otherwise reuses it, touching it when it is getting old. A
repeated run on unchanged input therefore writes nothing, and an edited rule or file gives new
text, hence a new file, at once.

Files unused for a day are pruned, at most once every few minutes. Runs hold a shared lock on
the folder while they write and touch their files; pruning takes the lock exclusively (and is
skipped when the folder is busy), so a run never hands out a file that a concurrent run prunes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import shutil
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import ReviewError
from deepwork_core.base.fsutil import LockTimeout, file_lock
from deepwork_core.base.layout import TMP_DIR
from deepwork_core.base.runtime_dir import ensure_tmp_dir

from deepwork_review.locks import review_lock
from deepwork_review.tasks import ReviewTask, quote_path

FOLDER = "review_instructions"
#: Files (and folders of the older per-run layout) unused for this long are pruned.
MAX_AGE_SECONDS = 24 * 60 * 60
#: A reused file older than this is touched, so that it stays far from the pruning age.
TOUCH_AFTER_SECONDS = 60 * 60
#: Pruning scans the folder; it runs at most once per this many seconds.
PRUNE_INTERVAL_SECONDS = 10 * 60
#: Context lists longer than this go to a file of their own.
INLINE_CONTEXT_LIMIT = 50
#: One run may render at most this many bytes of instruction files (`review.too_large`).
MAX_RUN_BYTES = 64 * 1024 * 1024
LOCK_FILE = ".lock"
PRUNED_MARKER = ".pruned"


def write_instruction_files(
    project_root: Path, tasks: Sequence[ReviewTask], *, now: float | None = None
) -> tuple[str, ...]:
    """Make sure each task's instruction file exists; return their project-relative paths.

    Prunes files unused for a day when the folder was not pruned for a while.
    """
    folder = ensure_tmp_dir(project_root) / FOLDER
    folder.mkdir(exist_ok=True)
    now = time.time() if now is None else now
    store = _Store(folder, f"{TMP_DIR}/{FOLDER}", now)
    with review_lock(folder / LOCK_FILE, shared=True):
        lists = _ListCache(store)
        written = tuple(
            store.ensure(task.review_id, render_instructions(task, project_root, lists))
            for task in tasks
        )
    _prune_if_due(folder, now)
    return written


class _Store:
    """Content-named files in the shared folder. Call `ensure` only under the shared lock."""

    def __init__(self, folder: Path, relative_folder: str, now: float) -> None:
        self._folder = str(folder)
        self._relative_folder = relative_folder
        self._now = now
        self._total = 0

    def ensure(self, stem: str, text: str) -> str:
        """The project-relative path of a file `<stem>-<hash>.md` holding `text`.

        Raises `ReviewError` (`review.too_large`) once the run's files add up to more than
        `MAX_RUN_BYTES`.
        """
        data = text.encode("utf-8", errors="surrogateescape")
        self._total += len(data)
        if self._total > MAX_RUN_BYTES:
            raise ReviewError(
                f"the review instructions of this run would exceed {MAX_RUN_BYTES} bytes; "
                "shorten the rules' instructions or review fewer files at once",
                code=ErrorCode.REVIEW_TOO_LARGE,
            )
        name = f"{stem}-{hashlib.sha256(data).hexdigest()[:16]}.md"
        path = f"{self._folder}/{name}"
        try:
            info = os.stat(path)  # noqa: PTH116 - plain strings: this runs per task
        except FileNotFoundError:
            self._create(path, data)
        else:
            if info.st_size != len(data):
                self._create(path, data)  # cut short by a crash: write it again
            elif self._now - info.st_mtime > TOUCH_AFTER_SECONDS:
                os.utime(path, (self._now, self._now))
        return f"{self._relative_folder}/{name}"

    def _create(self, path: str, data: bytes) -> None:
        # A temporary name, then a rename: readers (and concurrent runs checking the size) see
        # the whole file or none. Equal names mean equal text, so replacing is harmless.
        temporary = f"{path}.{os.getpid()}-{threading.get_ident()}-{secrets.token_hex(3)}.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(temporary, path)  # noqa: PTH105
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)  # noqa: PTH108
            raise


def _prune_if_due(folder: Path, now: float) -> None:
    """Remove entries unused for a day, unless the folder was pruned recently or is busy."""
    marker = folder / PRUNED_MARKER
    try:
        if now - marker.stat().st_mtime < PRUNE_INTERVAL_SECONDS:
            return
    except FileNotFoundError:
        pass
    try:
        with file_lock(folder / LOCK_FILE, timeout=0):
            marker.touch()
            os.utime(marker, (now, now))
            _prune(folder, now)
    except LockTimeout:
        pass  # runs are writing: prune on a later run


def _prune(folder: Path, now: float) -> None:
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name in (LOCK_FILE, PRUNED_MARKER):
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            if now - info.st_mtime <= MAX_AGE_SECONDS:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)  # a run folder of the older layout
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)  # noqa: PTH108


class _ListCache:
    """Context lists of one run, each rendered once.

    A rule's context lists are shared by all its tasks and can hold thousands of paths. A long
    one is written once to its own content-named file and the instruction files point to it,
    instead of repeating it in every file.
    """

    def __init__(self, store: _Store | None = None) -> None:
        self._store = store
        self._rendered: dict[tuple[str, ...], str] = {}

    def context(self, paths: Sequence[str]) -> str:
        key = tuple(paths)  # equal lists share one rendering (C-speed hash and compare)
        cached = self._rendered.get(key)
        if cached is not None:
            return cached
        text = _bullets(paths)
        if self._store is not None and len(paths) > INLINE_CONTEXT_LIMIT:
            path = self._store.ensure("context", text)
            text = f"The {len(paths)} files are listed in `{path}`.\n"
        self._rendered[key] = text
        return text


def _bullets(paths: Sequence[str]) -> str:
    return "".join(f"- {quote_path(path)}\n" for path in paths) if paths else "(none)\n"


def render_instructions(
    task: ReviewTask, project_root: Path, lists: _ListCache | None = None
) -> str:
    """The Markdown a reviewer reads: what to review, how, with which context, and how to report
    a pass."""
    context = (lists or _ListCache()).context
    rule = task.rule
    parts = [
        f"# Review: {task.title}\n",
        f"Rule `{rule.name}` from `{rule.defining_file}`: {rule.description}\n",
        f"Review id: `{task.review_id}`\n",
        "## Project Root\n",
        f"Every path below is relative to `{project_root}`.\n",
        "## Review Instructions\n",
        rule.instructions.rstrip() + "\n",
        "## Files to Review\n",
        _bullets(task.files),
    ]
    if task.unchanged_matching_files is not None:
        parts += [
            "## Unchanged Matching Files\n",
            "These files match the rule but did not change; read them for context.\n",
            context(task.unchanged_matching_files),
        ]
    if task.all_changed_filenames is not None:
        parts += [
            "## All Changed Files\n",
            "Every file changed in this piece of work, for context.\n",
            context(task.all_changed_filenames),
        ]
    parts += [
        "## When You Are Done\n",
        "Report each issue with its file, line, what is wrong and a suggested fix.\n",
        "If the review found no issues, call the DeepWork MCP tool `mark_review_as_passed` with "
        f'`review_id: "{task.review_id}"`. This review is then not handed out again until the '
        "rule or one of the reviewed files changes. Do not mark a review with open issues as "
        "passed.\n",
    ]
    return "\n".join(parts)
