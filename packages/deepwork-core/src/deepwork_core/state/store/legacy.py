"""Importing a project's state from before the store: the old files under `.deepwork/tmp/`.

When a store is opened for a project whose runtime folder still has `session_<id>.json` files or
event logs `events/<id>.jsonl`, one transaction copies in every session (its document as it
was, approvals and their seals included), the stacks of `stack.json`, and every event line in
order (a line that is no event record too, as it is: readers report it as they did the file).
After the commit each imported file is renamed beside itself with `.imported` appended,
so nothing is lost and nothing is imported twice; a crash between the commit and the renames is
harmless (a session already in the store is kept, a session that already has events in the
store gets none added). The approval files `approvals/<id>.json` come in too: each request
as the session's open one and its decision, seals and signature as they were, so an imported
run's approval reads (and verifies) as before; a request already in the store is kept. A file
that cannot be read is set aside, renamed with `.unreadable` appended, and the rest is
imported: `import_legacy` answers one coded warning per file set aside, naming it, which the
root that opened the store shows. The seals' keys stay where they are (the user's state
directory).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError, FileReadError, SessionError
from deepwork_core.base.fsutil import loads_json, read_bytes_file
from deepwork_core.base.identifiers import SESSION_ID_PATTERN
from deepwork_core.base.layout import (
    APPROVALS_DIR,
    EVENTS_DIR,
    SESSION_PREFIX,
    SESSION_SUFFIX,
    STACK_FILE,
    TMP_DIR,
)
from deepwork_core.state.event_kinds import EventName
from deepwork_core.state.store.errors import StoreError
from deepwork_core.state.store.port import Store, Tx
from deepwork_core.state.store.schema import list_columns
from deepwork_core.state.store.tables import approval_rows as rows
from deepwork_core.state.store.tables.session_rows import (
    SessionRow,
    read_stacks,
    save_session,
    write_stack,
)
from deepwork_core.state.store.tables.usage_rows import add_usage_line

#: Appended to the name of every file the store imported.
IMPORTED_SUFFIX: Final = ".imported"
_LOG_SUFFIX: Final = ".jsonl"
_MAX_FILE_BYTES: Final = 64 * 1024 * 1024


def legacy_files(project_root: Path) -> tuple[list[Path], list[Path]]:
    """The old session files and event logs of the project (each list sorted by age)."""
    tmp = project_root / TMP_DIR
    sessions = _listed(tmp, SESSION_PREFIX, SESSION_SUFFIX)
    logs = _listed(project_root / EVENTS_DIR, "", _LOG_SUFFIX)
    return sessions, logs


def legacy_approvals(project_root: Path) -> list[Path]:
    """The old approval files of the project (sorted by age)."""
    return _listed(project_root / APPROVALS_DIR, "", ".json")


def _listed(folder: Path, prefix: str, suffix: str) -> list[Path]:
    try:
        names = [
            p for p in folder.iterdir() if p.name.startswith(prefix) and p.name.endswith(suffix)
        ]
    except (FileNotFoundError, NotADirectoryError):
        return []
    dated = []
    for path in names:
        with contextlib.suppress(FileNotFoundError):
            dated.append((path.stat().st_mtime, path.name, path))
    return [path for _, _, path in sorted(dated)]


#: Appended to the name of an old file that could not be imported (it stays for a person).
SET_ASIDE_SUFFIX: Final = ".unreadable"


def import_legacy(store: Store, project_root: Path) -> list[str]:
    """Import the project's old files (module docstring). A file that cannot be read is set
    aside (renamed with `.unreadable` appended) and the others come in; returns one coded
    warning per file set aside, naming it."""
    sessions, logs = legacy_files(project_root)
    approvals = legacy_approvals(project_root)
    if not sessions and not logs and not approvals:
        return []
    project_id = store.project.project_id
    imported: list[Path] = []
    unreadable: list[tuple[Path, DeepWorkError]] = []
    with store.write(lock=f"deepwork.state:{project_id}") as tx:
        steps: list[tuple[list[Path], Callable[[Path], None]]] = [
            (sessions, lambda path: _import_session(tx, store, path)),
            (logs, lambda path: _import_log(tx, project_id, path)),
            (approvals, lambda path: _import_approval(tx, project_id, path, store.now())),
        ]
        for paths, importing in steps:
            for path in paths:
                try:
                    importing(path)
                except StoreError:
                    raise  # the database failed: nothing is imported
                except DeepWorkError as exc:
                    unreadable.append((path, exc))
                else:
                    imported.append(path)
            if paths is sessions and sessions:
                stack = project_root / TMP_DIR / STACK_FILE
                try:
                    _import_stacks(tx, project_id, stack)
                except SessionError as exc:
                    unreadable.append((stack, exc))
        tx.execute(
            "UPDATE projects SET imported_at = ? WHERE project_id = ?", (store.now(), project_id)
        )
    for path in imported:
        with contextlib.suppress(FileNotFoundError):
            path.rename(path.with_name(path.name + IMPORTED_SUFFIX))
    return [_set_aside(path, exc) for path, exc in unreadable]


def _set_aside(path: Path, exc: DeepWorkError) -> str:
    """Rename a file that could not be imported out of the way; the warning that says so."""
    aside = path.with_name(path.name + SET_ASIDE_SUFFIX)
    with contextlib.suppress(OSError):
        path.rename(aside)
    return (
        f"{exc.code}: {exc.message} It was set aside as {aside} and the other old files were "
        "imported; fix it and remove the suffix to import it on the next start, or delete it."
    )


def _read(path: Path, code: ErrorCode) -> bytes:
    try:
        return read_bytes_file(path, limit=_MAX_FILE_BYTES, follow_symlinks=False)
    except FileReadError as exc:
        raise DeepWorkError(f"cannot import {path}: {exc}.", code=code) from None


def _import_session(tx: Tx, store: Store, path: Path) -> None:
    session_id = path.name[len(SESSION_PREFIX) : -len(SESSION_SUFFIX)]
    raw = _read(path, ErrorCode.SESSION_STATE_CORRUPT)
    try:
        data = loads_json(raw)
        row = SessionRow(
            session_id=_checked_id(session_id, data.get("session_id")),
            job=str(data["job_name"]),
            workflow=str(data["workflow_name"]),
            status=str(data.get("status", "active")),
            agent=data.get("agent_id"),
            branch=data.get("branch_name"),
            started_at=_stamp(data["started_at"]),
            completed_at=_stamp(data["completed_at"]) if data.get("completed_at") else None,
            body=raw.decode("utf-8"),
            listed=list_columns(data),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise SessionError(
            f"cannot import state file {path}: {exc}.",
            code=ErrorCode.SESSION_STATE_CORRUPT,
        ) from None
    if tx.execute(
        "SELECT 1 FROM sessions WHERE project_id = ? AND session_id = ?",
        (store.project.project_id, session_id),
    ):
        return  # imported before a crash kept the file from being renamed
    # Last written: when it finished (how old listings ordered finished runs), else the file's
    # own time.
    written = row.completed_at if row.completed_at is not None else path.stat().st_mtime
    save_session(tx, store.project.project_id, store.project.machine, row, written)


def _checked_id(from_name: str, inside: Any) -> str:
    import re

    if not re.fullmatch(SESSION_ID_PATTERN, from_name) or inside != from_name:
        raise ValueError(f"the file holds session {inside!r}")
    return from_name


def _stamp(value: Any) -> float:
    return datetime.fromisoformat(str(value)).timestamp()


def _import_stacks(tx: Tx, project_id: str, path: Path) -> None:
    if read_stacks(tx, project_id):
        return
    try:
        data = loads_json(_read(path, ErrorCode.SESSION_STATE_CORRUPT))
    except DeepWorkError:
        return  # no stack file: nothing was running
    except ValueError:
        raise SessionError(
            f"cannot import state file {path}: not valid JSON.",
            code=ErrorCode.SESSION_STATE_CORRUPT,
        ) from None
    if not isinstance(data, dict):
        return
    write_stack(tx, project_id, None, _held(tx, project_id, data.get("session_ids", [])))
    for agent, ids in dict(data.get("agents", {})).items():
        write_stack(tx, project_id, str(agent), _held(tx, project_id, ids))


def _held(tx: Tx, project_id: str, ids: object) -> list[str]:
    """The ids of an old stack that the store holds, in order (a session file set aside is not
    on a stack: the run is left out, the others still show)."""
    listed = [str(i) for i in ids] if isinstance(ids, list) else []
    return [
        session_id
        for session_id in listed
        if tx.execute(
            "SELECT 1 FROM sessions WHERE project_id = ? AND session_id = ?",
            (project_id, session_id),
        )
    ]


def _import_log(tx: Tx, project_id: str, path: Path) -> None:
    session_id = path.name[: -len(_LOG_SUFFIX)]
    if tx.execute(
        "SELECT 1 FROM events WHERE project_id = ? AND session_id = ? LIMIT 1",
        (project_id, session_id),
    ):
        return
    lines = _read(path, ErrorCode.EVENTS_CORRUPT).split(b"\n")
    texts = [
        raw.decode("utf-8", errors="replace").strip()
        for raw in lines[:-1]  # the rest is a line cut off mid-write
        if raw.strip()
    ]
    for text in texts:
        kind, stamp = _header(text)
        tx.execute(
            "INSERT INTO events (project_id, session_id, ts, kind, body) VALUES (?, ?, ?, ?, ?)",
            (project_id, session_id, stamp, kind, text),
        )
        if kind == EventName.REVIEW_USAGE:
            add_usage_line(tx, project_id, session_id, text)


def _header(text: str) -> tuple[str, float]:
    """The kind and time of a line, as far as they read; a line that is no event record is
    still imported as it is (readers report it as `events.corrupt`, as they did the file)."""
    try:
        record = loads_json(text)
    except ValueError:
        return "", 0.0
    if not isinstance(record, dict):
        return "", 0.0
    kind = record.get("event")
    try:
        stamp = _stamp(record["ts"]) if record.get("ts") else 0.0
    except (ValueError, TypeError):
        stamp = 0.0
    return (kind if isinstance(kind, str) else ""), stamp


def _import_approval(tx: Tx, project_id: str, path: Path, now: float) -> None:
    """One old approval file: its request as the session's open one, and its decision."""
    raw = _read(path, ErrorCode.APPROVAL_CORRUPT)
    try:
        data = loads_json(raw)
        request = dict(data["request"])
        session_id = _checked_id(path.name[: -len(".json")], request["session_id"])
        request_id = str(request["request_id"])
        requested = rows.RequestRow(
            session_id=session_id,
            request_id=request_id,
            job=str(request["job_name"]),
            workflow=str(request["workflow_name"]),
            step_ids=json.dumps(request["step_ids"]),
            shown=json.dumps(request.get("shown", [])),
            channels="cli dashboard elicitation",
            mac=request.get("mac"),
            requested_at=_stamp(request["requested_at"]),
            body=json.dumps(request),
        )
        decision = data.get("decision")
        decided = None if decision is None else _decision_row(session_id, dict(decision))
    except (ValueError, KeyError, TypeError) as exc:
        raise DeepWorkError(
            f"cannot import approval file {path}: {exc}.",
            code=ErrorCode.APPROVAL_CORRUPT,
        ) from None
    if tx.execute(
        "SELECT 1 FROM approval_requests WHERE project_id = ? AND request_id = ?",
        (project_id, request_id),
    ):
        return  # imported before a crash kept the file from being renamed
    rows.open_request(tx, project_id, requested, now)
    if decided is not None:
        rows.save_decision(tx, project_id, decided)


def _decision_row(session_id: str, decision: dict[str, Any]) -> rows.DecisionRow:
    return rows.DecisionRow(
        session_id=session_id,
        request_id=str(decision["request_id"]),
        seat="",
        approved=bool(decision["approved"]),
        channel=str(decision["channel"]),
        actor=str(decision["actor"]),
        signer=decision.get("signer"),
        signature=decision.get("signature"),
        mac=decision.get("mac"),
        decided_at=_stamp(decision["decided_at"]),
        body=json.dumps(decision),
    )
