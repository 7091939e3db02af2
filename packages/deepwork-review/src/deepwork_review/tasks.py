"""Review tasks: rules applied to the changed files, grouped by strategy.

Each task gets a deterministic review id: a hash of the rule's full definition (instructions
text included), the reviewed paths and their contents. Editing the rule or any reviewed file
gives a new id; nothing else does.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated

from deepwork_core.base.escaping import quoted
from pydantic import BaseModel, ConfigDict, SkipValidation

from deepwork_review.deepreview import ReviewRule, Strategy

REVIEW_ID_PATTERN = r"^[A-Za-z0-9_-]{1,48}--[0-9a-f]{20}$"
_REVIEW_ID_RE = re.compile(REVIEW_ID_PATTERN)


def is_review_id(value: str) -> bool:
    return _REVIEW_ID_RE.fullmatch(value) is not None


_PLAIN_PATH = re.compile(r"[A-Za-z0-9_./@+=,-]+")


def quote_path(path: str) -> str:
    """`path` as literal Markdown text: a file name can never add headings or instructions.

    Ordinary names stay as they are. Any other name is JSON-escaped by DeepWork's one escaping
    rule (`deepwork_core.base.escaping`, docs/security.md: no line break or control character
    survives) and put in a code span long enough not to be closed by its backticks.
    """
    if _PLAIN_PATH.fullmatch(path):
        return path
    escaped = quoted(path)[1:-1]
    longest = max((len(run) for run in re.findall(r"`+", escaped)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {escaped} {fence}"


class ReviewTask(BaseModel):
    """One review to hand to one reviewer."""

    model_config = ConfigDict(frozen=True)

    review_id: str
    rule: ReviewRule
    files: tuple[str, ...]
    #: Context the rule asked for (None when it did not ask). Not validated, so that every task
    #: of a rule shares the one tuple instead of holding its own copy (thousands of tasks times
    #: thousands of paths).
    unchanged_matching_files: Annotated[tuple[str, ...] | None, SkipValidation] = None
    all_changed_filenames: Annotated[tuple[str, ...] | None, SkipValidation] = None

    @property
    def title(self) -> str:
        what = quote_path(self.files[0]) if len(self.files) == 1 else f"{len(self.files)} files"
        return f"{self.rule.display_name} review of {what}"


class ContentHasher:
    """SHA-256 of file contents, cached per path and revalidated by mtime, size and inode.

    A symbolic link is hashed by its target text (it is never followed, so a link cannot make
    us read outside the project); an unreadable path hashes to a marker naming the reason.
    Paths are plain strings and `os` calls are used on purpose: this runs for every reviewed
    file on every call, and pathlib objects cost more than the hashing.
    """

    def __init__(self) -> None:
        self._entries: dict[str, tuple[tuple[int, int, int], str]] = {}
        self._lock = threading.Lock()

    def digest(self, path: str) -> str:
        """The hash of the file at absolute path `path` (a string: this runs per file)."""
        try:
            info = os.lstat(path)
        except OSError as exc:
            return f"missing:{exc.errno}"
        signature = (info.st_mtime_ns, info.st_size, info.st_ino)
        with self._lock:
            cached = self._entries.get(path)
        if cached is not None and cached[0] == signature:
            return cached[1]
        if not (stat.S_ISLNK(info.st_mode) or stat.S_ISREG(info.st_mode)):
            return f"special:{stat.S_IFMT(info.st_mode)}"  # a FIFO or device is never opened
        try:
            value = _hash_file(path, info.st_mode)
        except OSError as exc:
            return f"unreadable:{exc.errno}"
        with self._lock:
            self._entries[path] = (signature, value)
        return value


def _hash_file(path: str, mode: int) -> str:
    if stat.S_ISLNK(mode):
        return hashlib.sha256(b"symlink:" + os.fsencode(os.readlink(path))).hexdigest()  # noqa: PTH115
    digest = hashlib.sha256()
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
    with open(os.open(path, flags), "rb") as handle:  # noqa: PTH123
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return "special:replaced"
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


DEFAULT_HASHER = ContentHasher()


def review_id(rule: ReviewRule, files: Sequence[str], contents: Callable[[str], str]) -> str:
    """`<rule name>--<20 hex>` from the rule's fingerprint, the paths and their content hashes."""
    digest = hashlib.sha256(rule.fingerprint.encode("ascii"))
    for path in files:
        digest.update(b"\0" + path.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(contents(path).encode("ascii"))
    return f"{rule.name[:48]}--{digest.hexdigest()[:20]}"


def build_tasks(
    rules: Sequence[ReviewRule],
    changed: Sequence[str],
    *,
    project_root: Path,
    all_files: Callable[[], Sequence[str]],
    hasher: ContentHasher = DEFAULT_HASHER,
) -> list[ReviewTask]:
    """The review tasks for `changed` (project-relative paths), rule by rule.

    `all_files` lists every non-ignored project file; it is called at most once, and only if a
    rule asks for `unchanged_matching_files`.
    """
    listing: list[Sequence[str]] = []

    def every_file() -> Sequence[str]:
        if not listing:
            listing.append(sorted(all_files()))
        return listing[0]

    prefix = f"{project_root}/"
    # A changed file is often reviewed by several rules: stat and look it up once per run.
    digests: dict[str, str] = {}

    def contents(path: str) -> str:
        digest = digests.get(path)
        if digest is None:
            digest = digests[path] = hasher.digest(prefix + path)
        return digest

    changed = sorted(changed)  # scopes find their folder's paths by bisection
    changed_set = frozenset(changed)
    tasks: list[ReviewTask] = []
    for rule in rules:
        matched = rule.scope.select(changed)
        if not matched:
            continue
        context = _context(rule, changed, every_file, changed_set, prefix)
        for files in _groups(rule, matched, changed):
            tasks.append(
                ReviewTask(
                    review_id=review_id(rule, files, contents), rule=rule, files=files, **context
                )
            )
    return tasks


def _context(
    rule: ReviewRule,
    changed: Sequence[str],
    every_file: Callable[[], Sequence[str]],
    changed_set: frozenset[str],
    prefix: str,
) -> dict[str, tuple[str, ...]]:
    """The additional context `rule` asks for, by `ReviewTask` field name."""
    context: dict[str, tuple[str, ...]] = {}
    if rule.additional_context.all_changed_filenames:
        context["all_changed_filenames"] = tuple(changed)
    if rule.additional_context.unchanged_matching_files:
        context["unchanged_matching_files"] = _unchanged(rule, every_file(), changed_set, prefix)
    return context


def _unchanged(
    rule: ReviewRule, every_file: Sequence[str], changed: frozenset[str], prefix: str
) -> tuple[str, ...]:
    """The existing project files `rule` matches that are not changed, sorted."""
    return tuple(
        sorted(
            path
            for path in rule.scope.select(every_file)
            if path not in changed and os.path.exists(prefix + path)  # noqa: PTH110
        )
    )


def _groups(
    rule: ReviewRule, matched: Sequence[str], changed: Sequence[str]
) -> list[tuple[str, ...]]:
    """The file groups of `rule`'s tasks, by its strategy."""
    if rule.strategy is Strategy.INDIVIDUAL:
        return [(path,) for path in matched]
    if rule.strategy is Strategy.MATCHES_TOGETHER:
        return [tuple(matched)]
    return [tuple(changed)]  # ALL_CHANGED_FILES: the whole change set, wherever the rule lives
