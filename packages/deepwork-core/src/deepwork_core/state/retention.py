"""Which finished sessions `SessionStore.prune` deletes, and their files (docs/runtime-layout.md).

A finished session is one on no stack. It is deleted when its file was last written more than
`max_age` ago, or when more than `keep` newer finished ones exist; its self-review files, its
approval file and its event log go with it. Temporary files of writers killed between writing
and renaming are removed once they are a minute old.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Set
from datetime import timedelta
from pathlib import Path

from deepwork_core.base.layout import (
    APPROVALS_DIR,
    SESSION_PREFIX,
    SESSION_SUFFIX,
    STACK_FILE,
    TMP_DIR,
    review_file_glob,
)
from deepwork_core.state.events import delete_event_log

#: A temporary state file older than this was left by a killed writer and is removed.
STRAY_TMP_AGE_S = 60.0


def delete_finished(
    project_root: Path, active: Set[str], *, now: float, max_age: timedelta, keep: int
) -> list[str]:
    """Delete the finished sessions past the rule (`now` is a POSIX time); return their ids.

    The caller holds the state lock; `active` are the ids on any stack.
    """
    state_dir = project_root / TMP_DIR
    finished: list[tuple[float, str, Path]] = []
    for entry in os.scandir(state_dir):
        name = entry.name
        if _is_stray_temporary(name):
            with contextlib.suppress(OSError):
                if now - entry.stat().st_mtime > STRAY_TMP_AGE_S:
                    os.unlink(entry.path)  # noqa: PTH108
            continue
        if not (name.startswith(SESSION_PREFIX) and name.endswith(SESSION_SUFFIX)):
            continue
        session_id = name[len(SESSION_PREFIX) : -len(SESSION_SUFFIX)]
        if session_id not in active:
            finished.append((entry.stat().st_mtime, session_id, Path(entry.path)))
    finished.sort(reverse=True)
    cutoff = now - max_age.total_seconds()
    removed: list[str] = []
    for position, (mtime, session_id, path) in enumerate(finished):
        if position >= keep or mtime < cutoff:
            path.unlink(missing_ok=True)
            for review_file in state_dir.glob(review_file_glob(session_id)):
                review_file.unlink(missing_ok=True)
            (project_root / APPROVALS_DIR / f"{session_id}.json").unlink(missing_ok=True)
            delete_event_log(project_root, session_id)
            removed.append(session_id)
    return removed


def _is_stray_temporary(name: str) -> bool:
    """`atomic_write_text`'s temporary names for the stack and session files."""
    return name.endswith(".tmp") and name.startswith((f".{STACK_FILE}.", f".{SESSION_PREFIX}"))
