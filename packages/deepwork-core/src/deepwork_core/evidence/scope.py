"""The scope guard: which files a step changed that it did not declare (docs/evidence.md).

When a step begins, `take_snapshot` notes the repository state cheaply: HEAD and the files git
reports as changed (modified, added, deleted, untracked; ignored files are not seen), each with
a stat signature (size, modification and change times, inode). At the step's checkpoint a second
snapshot is compared with the first (`changed_between`): a file is changed during the step when
it became changed, when its signature moved, when it went back to clean with other bytes, or when
a commit made during the step touched it. `undeclared` keeps the changed files that are neither
outputs of the checkpoint nor matched by one of its `may_change` globs.

Each snapshot is one `git status` (plus `git rev-parse --show-prefix` the first time, and a
`git diff` when HEAD moved), all bounded by the git helpers' timeout. With a live `ChangeWatch`
(`deepwork_core.evidence.watch`) a checkpoint needs no git at all: `watched_snapshot` takes the
step's first snapshot and updates only the files written since, asking git's index and ignore
rules about each as `git status` would; whenever the watch cannot vouch for the interval, the
`git status` runs as before. Paths are POSIX and
relative to the project root; files of the repository outside the project, and DeepWork's own
runtime folder `.deepwork/tmp/`, are not considered.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import GitError
from deepwork_core.base.fsutil import path_signature
from deepwork_core.base.git import run_git
from deepwork_core.base.globs import matches_any
from deepwork_core.base.layout import GATE_KEYS_DIR, RECEIPTS_DIR, TMP_DIR
from deepwork_core.evidence.git_index import clean_in_index
from deepwork_core.evidence.watch import ChangeWatch

#: Bound of each git call the guard makes (it runs at every checkpoint).
SCOPE_GIT_TIMEOUT = 10.0
#: The signature of a file that does not exist.
_GONE = "-"
#: What DeepWork itself writes into the project: its runtime folder, and the receipts (with the
#: gate key's listing) that a run completing on top of a step leaves.
_RUNTIME_PREFIXES = (f"{TMP_DIR}/", f"{RECEIPTS_DIR}/", f"{GATE_KEYS_DIR}/")


class RepoSnapshot(BaseModel):
    """The repository state at one moment, as the scope guard needs it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The commit HEAD points at; None on a branch without commits yet.
    head: str | None
    #: The project's folder inside the repository (`""` at the top, else ending in `/`).
    prefix: str
    #: Project-relative path of each changed file -> its stat signature.
    dirty: dict[str, str] = Field(default_factory=dict)
    #: The change watch's token for this moment; None when no watch vouches for what follows.
    watch: str | None = None


def take_snapshot(
    project_root: Path,
    *,
    prefix: str | None = None,
    timeout: float = SCOPE_GIT_TIMEOUT,
    watch: ChangeWatch | None = None,
) -> RepoSnapshot | None:
    """Note HEAD and the changed files; None outside a git work tree or without git.

    Pass the `prefix` of an earlier snapshot of the same project to save a git call, and the
    project's `watch` so that later snapshots can be taken from it. Raises `GitError` when git
    fails for another reason (a timeout, a broken repository).
    """
    if not under_git(project_root):
        return None  # no `.git` in the folder or above: no git process needed to know
    token = watch.mark() if watch is not None else None  # before git reads anything
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
    return RepoSnapshot(head=head, prefix=prefix, dirty=dirty, watch=token)


def watched_snapshot(
    project_root: Path, before: RepoSnapshot, watch: ChangeWatch
) -> RepoSnapshot | None:
    """The repository now as `take_snapshot` would note it, from `before` and the files the
    watch saw written since; None when only `git status` can tell.

    A written file counts as changed as git would count it: one that was changed already, a
    tracked file whose mode or bytes now differ from the index (or that is gone), a new file
    git does not ignore. HEAD and the index did not move (the watch answers None when they did).
    """
    seen = watch.touched_since(before.watch)
    if seen is None:
        return None
    touched, token = seen
    dirty = dict(before.dirty)
    new: list[str] = []
    for path in sorted(touched):
        if _runtime(path):
            continue
        signature = _signature(project_root, path)
        entry = None if path in before.dirty else watch.index_entry(path)
        if path in before.dirty:
            dirty[path] = signature
        elif entry is not None:
            if not entry[0]:
                return None  # assume-unchanged, skip-worktree or unmerged: git decides
            if signature == _GONE or not clean_in_index(entry, project_root / path):
                dirty[path] = signature
        elif signature != _GONE:  # created and removed again: git never saw it
            new.append(path)
    ignored = watch.ignored(new)
    if ignored is None:
        return None
    dirty.update((path, _signature(project_root, path)) for path in new if path not in ignored)
    return RepoSnapshot(head=before.head, prefix=before.prefix, dirty=dirty, watch=token)


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


def settled(before: RepoSnapshot, project_root: Path, paths: Iterable[str]) -> RepoSnapshot:
    """`before` as if `paths` had been as they are now when it was taken: files another session
    declared (the outputs of a workflow nested on the step, of a finished sibling instance in
    the same tree) are then no change of the step that began at `before` (docs/evidence.md)."""
    dirty = dict(before.dirty)
    dirty.update((path, _signature(project_root, path)) for path in paths if not _runtime(path))
    return before.model_copy(update={"dirty": dirty})


def undeclared_feedback(paths: Sequence[str], *, shared_instance: bool) -> str:
    """The `needs_work` feedback of `scope_guard: strict` for the undeclared `paths`.

    An instance of a step that fans out in the shared tree is not told to undo files: a sibling
    still at work may be writing them (a finished sibling's outputs are already settled)."""
    found = f"Files changed during this step that it does not declare: {', '.join(paths)}."
    if shared_instance:
        return (
            f"{found} Other instances of this step work in the same tree: if these are one's "
            "outputs, leave them and call finished_step again once it has finished, or pass "
            "quality_review_override_reason saying so. Otherwise undo them."
        )
    return (
        f"{found} Undo those changes, or pass quality_review_override_reason explaining why "
        "they belong to this step."
    )


def _runtime(path: str) -> bool:
    """DeepWork's own files (`.deepwork/tmp/`, the receipts and the gate keys' listing) are
    never a step's change."""
    return path.startswith(_RUNTIME_PREFIXES)


def under_git(folder: Path) -> bool:
    """True when `folder` or a parent holds `.git` (a folder, or a file in a linked work tree)."""
    return any((candidate / ".git").exists() for candidate in (folder, *folder.parents))


def head_commit(project_root: Path, *, timeout: float = SCOPE_GIT_TIMEOUT) -> str | None:
    """The commit HEAD points at; None without git, outside a repository, before the first
    commit, or when git fails."""
    try:
        result = run_git(["rev-parse", "--verify", "-q", "HEAD"], cwd=project_root,
                         timeout=timeout, check=False)  # fmt: skip
    except GitError:
        return None
    return result.stdout.strip() or None if result.returncode == 0 else None


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
