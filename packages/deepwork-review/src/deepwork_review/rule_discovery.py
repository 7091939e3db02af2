"""Finding the project's files and its `.deepreview` rules.

Inside git, one `git ls-files` call lists every file git does not ignore (tracked and untracked,
`.gitignore` honoured, symlinks never followed). Outside git, a walk that never follows
symlinked folders and skips `.git` does the same job without ignore rules. Files under
`.deepwork/tmp/` never count. Parsed `.deepreview` files are cached per process and revalidated
by the mtime and size of the file and of every instructions file it read. A long-lived server
lists the `.deepreview` files once per project and keeps the list while the project's change
watch sees none of them written (`RuleFiles`), so a checkpoint runs no git for its rules.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import GitError, Problem
from deepwork_core.base.git import run_git
from deepwork_core.base.layout import TMP_DIR

from deepwork_review.deepreview import FILE_NAME, ParsedFile, ReviewRule, parse_deepreview

if TYPE_CHECKING:
    from deepwork_core.evidence.watch import ChangeWatch

_RUNTIME_PREFIX = TMP_DIR + "/"
_NOT_A_REPOSITORY = "not a git repository"


def is_runtime_file(path: str) -> bool:
    """True for files under `.deepwork/tmp/`, which are never reviewed."""
    return path.startswith(_RUNTIME_PREFIX)


@dataclass(frozen=True, slots=True)
class ProjectFiles:
    """Every non-ignored file of the project (project-relative POSIX paths), and whether git
    knows them. Outside git every file counts as untracked and `in_git` is false."""

    tracked: tuple[str, ...]
    untracked: tuple[str, ...]
    in_git: bool

    @property
    def all(self) -> tuple[str, ...]:
        return self.tracked + self.untracked


def list_project_files(project_root: Path, *, only_name: str | None = None) -> ProjectFiles:
    """List the project's files; with `only_name`, only files with that base name."""
    pathspec = [f":(glob)**/{only_name}"] if only_name else []
    result = run_git(
        ["ls-files", "-z", "-t", "--cached", "--others", "--exclude-standard", "--", *pathspec],
        cwd=project_root,
        check=False,
    )
    if result.returncode != 0 and _NOT_A_REPOSITORY in result.stderr:
        files = tuple(_walk(project_root, only_name))
        return ProjectFiles((), files, in_git=False)
    if result.returncode != 0:
        detail = result.stderr.strip() or f"exit {result.returncode}"
        raise GitError(
            f"git ls-files failed in {project_root}: {detail}", code=ErrorCode.GIT_FAILED
        )
    tracked: list[str] = []
    untracked: list[str] = []
    seen: set[str] = set()
    for entry in result.stdout.split("\0"):
        if len(entry) < 3:
            continue
        tag, path = entry[0], entry[2:]
        # A conflicted file is listed once per stage; keep it once.
        if path in seen or is_runtime_file(path):
            continue
        seen.add(path)
        (untracked if tag == "?" else tracked).append(path)
    return ProjectFiles(tuple(tracked), tuple(untracked), in_git=True)


def _walk(project_root: Path, only_name: str | None) -> Iterable[str]:
    """Files under `project_root`, never entering symlinked folders, `.git` or runtime files."""
    for folder, dirnames, filenames in os.walk(project_root, followlinks=False):
        relative = os.path.relpath(folder, project_root)
        prefix = "" if relative == "." else relative.replace(os.sep, "/") + "/"
        # os.walk lists a symlinked folder among dirnames but (followlinks=False) never enters it.
        dirnames[:] = sorted(d for d in dirnames if d != ".git" and f"{prefix}{d}" != TMP_DIR)
        for name in sorted(filenames):
            if only_name is None or name == only_name:
                yield prefix + name


def deepreview_sources(files: Iterable[str]) -> list[str]:
    """The `.deepreview` files among `files`, sorted by path."""
    return sorted(path for path in files if _names_rule_file(path))


def _names_rule_file(path: str) -> bool:
    return path == FILE_NAME or path.endswith("/" + FILE_NAME)


@dataclass(frozen=True, slots=True)
class RuleSet:
    """Every valid rule of the project and every problem found while parsing."""

    sources: tuple[str, ...]
    rules: tuple[ReviewRule, ...]
    problems: tuple[Problem, ...]


_Signature = tuple[tuple[int, int, int] | None, ...]


def _stat(path: Path) -> tuple[int, int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size, info.st_ino)


class RuleCache:
    """Parsed `.deepreview` files, reused while the file and its instruction files are
    unchanged (same mtime, size and inode). Safe to share between threads."""

    def __init__(self) -> None:
        self._entries: dict[tuple[Path, str], tuple[_Signature, ParsedFile]] = {}
        self._lock = threading.Lock()

    def parse(self, project_root: Path, source: str) -> ParsedFile:
        key = (project_root, source)
        with self._lock:
            cached = self._entries.get(key)
        if cached is not None:
            signature, parsed = cached
            if signature == self._signature(project_root, source, parsed.dependencies):
                return parsed
        before = _stat(project_root / source)
        parsed = parse_deepreview(project_root, source)
        signature = (before, *(_stat(path) for path in parsed.dependencies))
        with self._lock:
            self._entries[key] = (signature, parsed)
        return parsed

    @staticmethod
    def _signature(project_root: Path, source: str, dependencies: Iterable[Path]) -> _Signature:
        return (_stat(project_root / source), *(_stat(path) for path in dependencies))

    def load(self, project_root: Path, sources: Iterable[str]) -> RuleSet:
        rules: list[ReviewRule] = []
        problems: list[Problem] = []
        found: list[str] = []
        for source in sources:
            path = project_root / source
            if not path.is_file():
                continue  # deleted from the work tree but still in the index, or a dangling link
            if path.is_symlink() and not path.resolve().is_relative_to(project_root):
                problems.append(
                    Problem(
                        code=ErrorCode.REVIEW_CONFIG_OUTSIDE_PROJECT,
                        message="symbolic link to a file outside the project; ignored",
                        file=Path(source),
                    )
                )
                continue
            parsed = self.parse(project_root, source)
            found.append(source)
            rules.extend(parsed.rules)
            problems.extend(parsed.problems)
        return RuleSet(tuple(found), tuple(rules), tuple(problems))


#: The process-wide cache used by the pipeline (the MCP server lives long; the CLI runs once).
DEFAULT_CACHE = RuleCache()


def project_rules(
    project_root: Path, cache: RuleCache = DEFAULT_CACHE, files: Iterable[str] | None = None
) -> RuleSet:
    """The rules of the project's `.deepreview` files, read through `cache`.

    `files` is the project's file listing when the caller has one already; without it, only the
    `.deepreview` files are listed.
    """
    if files is None:
        files = list_project_files(project_root, only_name=FILE_NAME).all
    return cache.load(project_root, deepreview_sources(files))


class RuleFiles:
    """The `.deepreview` files of each project, listed by git once and kept while the project's
    change watch has seen none written, created or deleted since (docs/quality-gate.md). Without
    a live watch, or when the watch cannot vouch (a commit, a checkout, a changed ignore file),
    they are listed again. Safe to share between threads."""

    def __init__(self) -> None:
        self._known: dict[Path, tuple[str, tuple[str, ...]]] = {}
        self._lock = threading.Lock()

    def kept(self, project_root: Path, watch: ChangeWatch | None) -> tuple[str, ...] | None:
        """The files as last listed while `watch` vouches that none of them changed since;
        None when they must be listed again (nothing is run to find out)."""
        if watch is None:
            return None
        with self._lock:
            known = self._known.get(project_root)
        answer = None if known is None else watch.touched_since(known[0])
        if known is None or answer is None:
            return None
        touched, fresh = answer
        if any(_names_rule_file(path) for path in touched):
            return None
        with self._lock:
            self._known[project_root] = (fresh, known[1])
        return known[1]

    def sources(self, project_root: Path, watch: ChangeWatch | None) -> tuple[str, ...]:
        """The project's `.deepreview` files, sorted (`project_root` resolved)."""
        token: str | None = None
        if watch is not None:
            kept = self.kept(project_root, watch)
            if kept is not None:
                return kept
            token = watch.mark()  # before listing: a file written meanwhile shows next time
        listed = tuple(
            deepreview_sources(list_project_files(project_root, only_name=FILE_NAME).all)
        )
        with self._lock:
            if token is None:
                self._known.pop(project_root, None)
            else:
                self._known[project_root] = (token, listed)
        return listed


def rule_file_problems(
    project_root: Path, cache: RuleCache = DEFAULT_CACHE, files: Iterable[str] | None = None
) -> tuple[Problem, ...]:
    """What kept a `.deepreview` file, or a rule in it, from loading: the quality gate warns of
    each (docs/quality-gate.md), since the rules it holds cannot apply. `files`: as for
    `project_rules`."""
    return project_rules(project_root.resolve(), cache, files).problems
