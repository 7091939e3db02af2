"""The evidence work of one checkpoint, done at once (docs/evidence.md).

`audit_checkpoint` hashes the checkpoint's outputs, re-checks the evidence of earlier steps and,
when the step began inside git, snapshots the repository and lists the undeclared changes. The
snapshot is read from the change watch when it can vouch for the step (no git at all), else its
`git status` runs in a worker thread while the outputs are hashed, so the two costs overlap
instead of adding up.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from deepwork_core.base.errors import GitError
from deepwork_core.evidence.hashes import (
    OutputEvidence,
    OutputHash,
    StaleEvidence,
    find_stale,
    hash_outputs,
)
from deepwork_core.evidence.scope import (
    RepoSnapshot,
    changed_between,
    take_snapshot,
    undeclared,
    watched_snapshot,
)
from deepwork_core.evidence.watch import ChangeWatch

#: The `git status` of a snapshot runs here while the calling thread does other work.
SNAPSHOT_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="deepwork-audit")


@dataclass(frozen=True, slots=True)
class Audit:
    """What one checkpoint's audit found."""

    hashes: list[OutputHash]
    stale: list[StaleEvidence]
    #: The repository now (the next step's starting point); None outside git or when git failed.
    snapshot: RepoSnapshot | None
    #: Files changed since the step began that it did not declare (empty when not checked).
    undeclared: list[str] = field(default_factory=list)
    #: Why the scope guard did not run, when it did not (outside git, git failed …).
    guard_note: str | None = None


def audit_checkpoint(
    project_root: Path,
    outputs_by_step: Mapping[str, Mapping[str, str | list[str]]],
    earlier: Sequence[OutputEvidence],
    began: RepoSnapshot | None,
    *,
    may_change: Iterable[str] = (),
    guard: bool = True,
    watch: ChangeWatch | None = None,
) -> Audit:
    """Hash the outputs, find stale `earlier` evidence and, with `guard`, undeclared changes.

    `began` is the snapshot taken when the step began (None: it began outside git, so the guard
    is off). With a live `watch` the repository is read from it when it can vouch for the time
    since `began`, else by `git status`. A git failure turns the guard off for this checkpoint
    and says why; it never fails the checkpoint.
    """
    pending: Future[RepoSnapshot | None] | None = None
    watched: RepoSnapshot | None = None
    if guard and began is not None and watch is not None:
        # Here, not in the pool: a few stats and no process, and a second thread only makes
        # the two take turns at the interpreter lock.
        watched = watched_snapshot(project_root, began, watch)
    if guard and began is not None and watched is None:
        take = partial(take_snapshot, project_root, prefix=began.prefix, watch=watch)
        pending = SNAPSHOT_POOL.submit(take)
    hashes = hash_outputs(project_root, outputs_by_step)
    stale = find_stale(project_root, earlier)
    if began is None or (pending is None and watched is None):
        return Audit(hashes, stale, None, guard_note=None if guard else "scope guard off")
    try:
        now = watched if pending is None else pending.result()
        if now is None:
            return Audit(hashes, stale, None, guard_note="the project is no longer a git work tree")
        changed = changed_between(project_root, began, now)
    except GitError as exc:
        return Audit(hashes, stale, None, guard_note=f"{exc.code}: {exc.message}")
    declared = [item.path for item in hashes]
    return Audit(hashes, stale, now, undeclared(changed, declared, may_change))
