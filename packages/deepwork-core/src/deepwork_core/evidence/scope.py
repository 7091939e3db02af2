"""The scope guard: which files a step changed that it did not declare (docs/evidence.md).

When a step begins, `take_snapshot` notes the repository state cheaply: HEAD and the files git
reports as changed (modified, added, deleted, untracked; ignored files are not seen), each with
a stat signature (size, modification and change times, inode). At the step's checkpoint a second
snapshot is compared with the first (`changed_between`): a file is changed during the step when
it became changed, when its signature moved, when it went back to clean with other bytes, or when
a commit made during the step touched it. `undeclared` keeps the changed files that are neither
outputs of the checkpoint nor matched by one of its `may_change` globs.

Each snapshot is one `git status` (plus `git rev-parse --show-prefix` the first time, and a
`git diff` when HEAD moved), all bounded by the git helpers' timeout. Paths are POSIX and
relative to the project root; files of the repository outside the project, and DeepWork's own
runtime folder `.deepwork/tmp/`, are not considered.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import GitError
from deepwork_core.base.fsutil import path_signature
from deepwork_core.base.git import run_git
from deepwork_core.base.globs import matches_any
from deepwork_core.base.layout import TMP_DIR

#: Bound of each git call the guard makes (it runs at every checkpoint).
SCOPE_GIT_TIMEOUT = 10.0
#: The signature of a file that does not exist.
_GONE = "-"
_RUNTIME_PREFIX = f"{TMP_DIR}/"


class RepoSnapshot(BaseModel):
    """The repository state at one moment, as the scope guard needs it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The commit HEAD points at; None on a branch without commits yet.
    head: str | None
    #: The project's folder inside the repository (`""` at the top, else ending in `/`).
    prefix: str
    #: Project-relative path of each changed file -> its stat signature.
    dirty: dict[str, str] = Field(default_factory=dict)


def take_snapshot(
    project_root: Path, *, prefix: str | None = None, timeout: float = SCOPE_GIT_TIMEOUT
) -> RepoSnapshot | None:
    """Note HEAD and the changed files; None outside a git work tree or without git.

    Pass the `prefix` of an earlier snapshot of the same project to save a git call. Raises
    `GitError` when git fails for another reason (a timeout, a broken repository).
    """
    if not under_git(project_root):
        return None  # no `.git` in the folder or above: no git process needed to know
    args = ["status", "--porcelain=v2", "-z", "--branch", "--no-renames", "--untracked-files=all"]
    try:
        result = run_git([*args, "--", "."], cwd=project_root, timeout=timeout, check=False)
    except GitError as exc:
        if exc.code == ErrorCode.GIT_NOT_INSTALLED:
            return None
        raise
    if result.returncode != 0:
        if "not a git repository" in result.stderr:
            return None
        raise GitError(f"git status failed: {result.stderr.strip()}", code=ErrorCode.GIT_FAILED)
    if prefix is None:
        shown = run_git(["rev-parse", "--show-prefix"], cwd=project_root, timeout=timeout)
        prefix = shown.stdout.strip()
    head, paths = _parse_status(result.stdout)
    inside = (path[len(prefix) :] for path in paths if path.startswith(prefix))
    dirty = {path: _signature(project_root, path) for path in inside if not _runtime(path)}
    return RepoSnapshot(head=head, prefix=prefix, dirty=dirty)


def changed_between(
    project_root: Path,
    before: RepoSnapshot,
    after: RepoSnapshot,
    *,
    timeout: float = SCOPE_GIT_TIMEOUT,
) -> list[str]:
    """The project-relative files changed between two snapshots, sorted."""
    changed: set[str] = set()
    for path in set(before.dirty) | set(after.dirty):
        old, new = before.dirty.get(path), after.dirty.get(path)
        if new is None:  # clean now: committed as it was, or put back (bytes differ)
            new = _signature(project_root, path)
        if old != new:
            changed.add(path)
    if after.head is not None and after.head != before.head:
        for path in _committed(project_root, before, after.head, timeout):
            # A file changed at the start and committed as it was is no change of the step.
            if path not in before.dirty or _signature(project_root, path) != before.dirty[path]:
                changed.add(path)
    return sorted(path for path in changed if not _runtime(path))


def undeclared(
    changed: Iterable[str], declared: Iterable[str], may_change: Iterable[str]
) -> list[str]:
    """The `changed` files that are not `declared` outputs and match no `may_change` glob."""
    outputs = set(declared)
    globs = list(may_change)
    return [path for path in changed if path not in outputs and not matches_any(path, globs)]


def _runtime(path: str) -> bool:
    """DeepWork's own runtime files (`.deepwork/tmp/`) are never a step's change."""
    return path.startswith(_RUNTIME_PREFIX)


def under_git(folder: Path) -> bool:
    """True when `folder` or a parent holds `.git` (a folder, or a file in a linked work tree)."""
    return any((candidate / ".git").exists() for candidate in (folder, *folder.parents))


def _parse_status(text: str) -> tuple[str | None, list[str]]:
    head: str | None = None
    paths: list[str] = []
    for record in text.split("\0"):
        if record.startswith("# branch.oid "):
            oid = record[len("# branch.oid ") :]
            head = None if oid == "(initial)" else oid
        elif record.startswith("1 "):
            paths.append(record.split(" ", 8)[8])
        elif record.startswith("u "):
            paths.append(record.split(" ", 10)[10])
        elif record.startswith("? "):
            paths.append(record[2:])
    return head, paths


def _committed(project_root: Path, before: RepoSnapshot, head: str, timeout: float) -> list[str]:
    """Project-relative files that differ between the old HEAD (or nothing) and `head`."""
    if before.head is None:
        args = ["ls-tree", "-r", "--name-only", "-z", "--full-tree", head]
    else:
        args = ["diff", "--name-only", "-z", "--no-renames", before.head, head]
    listed = run_git([*args, "--"], cwd=project_root, timeout=timeout).stdout
    prefix = before.prefix
    return [p[len(prefix) :] for p in listed.split("\0") if p and p.startswith(prefix)]


def _signature(project_root: Path, relative: str) -> str:
    return path_signature(project_root / relative) or _GONE
