"""Which finished sessions `SessionStore.prune` deletes (docs/runtime-layout.md).

A finished session is one on no stack. It is deleted when it was last written more than
`max_age` ago, or when more than `keep` newer finished ones exist; its events, its self-review
files and its approval file go with it. Temporary files of writers killed between writing and
renaming (the stack marker's) are removed once they are a minute old.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Set
from datetime import timedelta
from pathlib import Path

from deepwork_core.base.identifiers import SessionId
from deepwork_core.base.layout import (
    APPROVALS_DIR,
    SESSION_PREFIX,
    STACK_FILE,
    TMP_DIR,
    review_file_glob,
)
from deepwork_core.state.store.port import Tx
from deepwork_core.state.store.tables.session_rows import delete_sessions, session_times

#: A temporary state file older than this was left by a killed writer and is removed.
STRAY_TMP_AGE_S = 60.0


def delete_finished(
    project_root: Path,
    db: Tx,
    project_id: str,
    active: Set[str],
    *,
    now: float,
    max_age: timedelta,
    keep: int,
) -> list[SessionId]:
    """Delete the finished sessions past the rule (`now` is a POSIX time); return their ids.

    Runs inside the caller's state transaction `db`; `active` are the ids on any stack.
    """
    state_dir = project_root / TMP_DIR
    _remove_stray_temporaries(state_dir, now)
    finished = [(at, i) for at, i in session_times(db, project_id) if i not in active]
    cutoff = now - max_age.total_seconds()
    removed = [
        session_id
        for position, (at, session_id) in enumerate(finished)
        if position >= keep or at < cutoff
    ]
    delete_sessions(db, project_id, removed)
    for session_id in removed:
        for review_file in state_dir.glob(review_file_glob(session_id)):
            review_file.unlink(missing_ok=True)
        (project_root / APPROVALS_DIR / f"{session_id}.json").unlink(missing_ok=True)
    return removed


def _remove_stray_temporaries(state_dir: Path, now: float) -> None:
    try:
        entries = list(os.scandir(state_dir))
    except FileNotFoundError:
        return
    for entry in entries:
        if _is_stray_temporary(entry.name):
            with contextlib.suppress(OSError):
                if now - entry.stat().st_mtime > STRAY_TMP_AGE_S:
                    os.unlink(entry.path)  # noqa: PTH108


def _is_stray_temporary(name: str) -> bool:
    """`atomic_write_text`'s temporary names for the stack marker and old session files."""
    return name.endswith(".tmp") and name.startswith((f".{STACK_FILE}.", f".{SESSION_PREFIX}"))
