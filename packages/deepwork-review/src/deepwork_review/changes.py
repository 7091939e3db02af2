"""Which files changed (docs/reviews.md).

Files added, copied, modified, renamed (under the new name) or changed in type since the
merge-base of HEAD with the default branch — committed, staged or only in the work tree — plus
untracked files git does not ignore. Deleted files are left out. Paths are relative to the
project root, also when the project is a sub-folder of the repository. A repository without
commits treats every non-ignored file as changed. Every git call has a timeout (`run_git`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import ReviewError
from deepwork_core.base.git import run_git

from deepwork_review.rule_discovery import ProjectFiles, is_runtime_file, list_project_files

_NOT_A_REPOSITORY = "not a git repository"
#: Candidates for the default branch, in order, after the remotes' HEAD branches.
_FALLBACK_BRANCHES = (
    "refs/heads/main",
    "refs/remotes/origin/main",
    "refs/heads/master",
    "refs/remotes/origin/master",
)


@dataclass(frozen=True, slots=True)
class ChangedFiles:
    files: tuple[str, ...]
    #: The ref the comparison started from (None for a repository without commits).
    base_ref: str | None
    #: The merge-base commit compared against (None for a repository without commits).
    base_commit: str | None


def not_a_repository(project_root: Path) -> ReviewError:
    return ReviewError(
        f"{project_root} is not inside a git repository, so changed files cannot be detected; "
        "name the files to review explicitly",
        code=ErrorCode.REVIEW_NOT_A_GIT_REPOSITORY,
    )


@dataclass(frozen=True, slots=True)
class TrackedChanges:
    """What git's history and index say changed; untracked files come from a file listing."""

    #: Changed tracked files, or None when HEAD has no commit yet (then every file is new).
    files: frozenset[str] | None
    base_ref: str | None
    base_commit: str | None


def detect_changes(
    project_root: Path, *, base_ref: str | None = None, listing: ProjectFiles | None = None
) -> ChangedFiles:
    """The changed files of the project at `project_root`.

    `base_ref` overrides the default branch. `listing` may pass a file listing already made
    (it saves a git call). Raises `review.not_a_git_repository` outside git and
    `review.base_ref_unknown` when `base_ref` names no commit.
    """
    tracked = find_tracked_changes(project_root, base_ref=base_ref)
    if listing is None:
        listing = list_project_files(project_root)
    return combine_changes(project_root, tracked, listing)


def find_tracked_changes(project_root: Path, *, base_ref: str | None = None) -> TrackedChanges:
    """Tracked files changed since the merge-base (committed, staged or in the work tree)."""
    head = run_git(["rev-parse", "--verify", "-q", "HEAD^{commit}"], cwd=project_root, check=False)
    if head.returncode != 0 and _NOT_A_REPOSITORY in head.stderr:
        raise not_a_repository(project_root)
    if head.returncode != 0:
        return TrackedChanges(None, None, None)  # no commit yet
    ref = base_ref if base_ref is not None else _default_branch(project_root)
    base_commit = _merge_base(project_root, ref, explicit=base_ref is not None)
    diff = run_git(
        [
            "diff",
            "-z",
            "--name-only",
            "--no-renames",  # a rename shows as delete + add: the new name is kept, the old dropped
            "--diff-filter=ACMRT",
            "--relative",
            "--no-ext-diff",
            "--ignore-submodules=all",
            base_commit,
            "--",
        ],
        cwd=project_root,
    )
    return TrackedChanges(frozenset(filter(None, diff.stdout.split("\0"))), ref, base_commit)


def combine_changes(
    project_root: Path, tracked: TrackedChanges, listing: ProjectFiles
) -> ChangedFiles:
    """Tracked changes plus the untracked files of `listing`, without runtime files."""
    if not listing.in_git:
        raise not_a_repository(project_root)
    if tracked.files is None:
        # No commit yet: everything git does not ignore is new (a staged file may be gone).
        present = [path for path in listing.all if (project_root / path).exists()]
        return ChangedFiles(tuple(sorted(present)), None, None)
    changed = set(tracked.files)
    changed.update(listing.untracked)
    files = sorted(path for path in changed if not is_runtime_file(path))
    return ChangedFiles(tuple(files), tracked.base_ref, tracked.base_commit)


def _default_branch(project_root: Path) -> str:
    """The remote's HEAD branch, else main, else master (local before remote), else HEAD."""
    result = run_git(
        [
            "for-each-ref",
            "--format=%(refname)%00%(symref)",
            "refs/remotes/*/HEAD",
            *_FALLBACK_BRANCHES,
        ],
        cwd=project_root,
    )
    symrefs: dict[str, str] = {}
    present: set[str] = set()
    for line in result.stdout.splitlines():
        refname, _, target = line.partition("\0")
        present.add(refname)
        if refname.endswith("/HEAD") and target:
            symrefs[refname] = target
    if symrefs:
        # Prefer origin's HEAD; otherwise the first remote in name order.
        return symrefs.get("refs/remotes/origin/HEAD") or symrefs[min(symrefs)]
    return next((ref for ref in _FALLBACK_BRANCHES if ref in present), "HEAD")


def _merge_base(project_root: Path, ref: str, *, explicit: bool) -> str:
    if ref == "HEAD":
        return "HEAD"
    if not ref or ref.startswith("-"):  # never let a ref be read as an option
        raise ReviewError(
            f"base ref {ref!r} is not a valid ref", code=ErrorCode.REVIEW_BASE_REF_UNKNOWN
        )
    result = run_git(["merge-base", "HEAD", ref], cwd=project_root, check=False)
    if result.returncode == 0:
        return result.stdout.strip()
    if explicit:
        detail = result.stderr.strip() or "no common ancestor with HEAD"
        raise ReviewError(
            f"base ref {ref!r} cannot be compared with HEAD: {detail}",
            code=ErrorCode.REVIEW_BASE_REF_UNKNOWN,
        )
    return "HEAD"  # unrelated histories: fall back to the changes since HEAD
