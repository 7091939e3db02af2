"""The repository as a step begins: from `git status`, or from the change watch when it can vouch.

Every step that begins notes the repository (`take_snapshot`: a `git status` and, once, a
`git rev-parse`). A project's `Snapshots` keeps the last snapshot it noted; while the project's
change watch vouches for the time since, the next one is that snapshot moved on by the files
the watch saw written (`watched_snapshot`), with no git process (docs/evidence.md, "The change
watch"). Whenever the watch cannot vouch, git is asked as before.
"""

from __future__ import annotations

import threading
from pathlib import Path

from deepwork_core.evidence.scope import RepoSnapshot, take_snapshot, watched_snapshot
from deepwork_core.evidence.watch import ChangeWatch


class Snapshots:
    """The snapshots of one project folder. Thread-safe."""

    def __init__(self, project_root: Path, watch: ChangeWatch | None) -> None:
        self.project_root = project_root
        self.watch = watch
        self._last: RepoSnapshot | None = None
        self._lock = threading.Lock()

    def derived(self) -> RepoSnapshot | None:
        """The repository now, from the last snapshot and the watch; None when git must tell."""
        with self._lock:
            last = self._last
        if self.watch is None or last is None or last.watch is None:
            return None
        now = watched_snapshot(self.project_root, last, self.watch)
        if now is not None:
            self._keep(now)
        return now

    def take(self) -> RepoSnapshot | None:
        """The repository now (None outside a git work tree): derived when the watch vouches,
        else from git. Raises `GitError` as `take_snapshot` does."""
        derived = self.derived()
        if derived is not None:
            return derived
        with self._lock:
            prefix = None if self._last is None else self._last.prefix
        taken = take_snapshot(self.project_root, prefix=prefix, watch=self.watch)
        if taken is not None:
            self._keep(taken)
        return taken

    def _keep(self, snapshot: RepoSnapshot) -> None:
        with self._lock:
            self._last = snapshot
