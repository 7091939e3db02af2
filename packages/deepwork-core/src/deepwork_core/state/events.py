"""The event log: the append-only history of every workflow session, in the project's store.

The `events` table of the store (`deepwork_core.state.store`) records what happened in a
session, in order: started, step begun, outputs submitted, each review verdict, overrides,
needs_work, jumps, approvals, abort and completion. The session row holds the current state; the
event log holds the history, and is never rewritten (a `go_to_step` clears state, not history).
Each kind of event is a model in `deepwork_core.state.event_kinds`; docs/navigation.md ("The
event log") lists them with their fields and the rule by which older and newer records still read.

Every record is one JSON object, the event model as JSON, exactly the line the old files held:

    {"v": 1, "ts": "2026-11-23T21:50:00.123456+00:00", "session_id": "…", "event": "started", …}

An append is one committed insert, numbered by the store: two servers never interleave or lose
one. A record that is not a JSON object with an `event` name and a readable header is rejected
as `events.corrupt`, naming the session and its position; a record of an unknown kind reads as
`OtherEvent`.

Before the store, each session had a JSON Lines file `.deepwork/tmp/events/<session_id>.jsonl`;
`iter_events` still reads such a file (the store imports them on its first open, and
`deepwork store export` writes a run in the same form).

Every function takes the project's open `Store` (opened at a composition root and handed down,
docs/architecture.md); a root that only reads opens none for a project without a store.

Observers (OpenTelemetry export in `deepwork_mcp.telemetry`) follow the log through
`add_event_listener`: each listener is called with the store and every event after it is
written, in the writer's thread. A listener must be quick and must not raise; one that raises
is removed and the write it followed still stands (the log is the record, observers are
extras).
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Final, TypeVar

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import FileReadError
from deepwork_core.base.fsutil import read_bytes_file
from deepwork_core.base.identifiers import SessionId
from deepwork_core.base.layout import EVENTS_DIR
from deepwork_core.state.event_kinds import EVENT_SCHEMA_VERSION as EVENT_SCHEMA_VERSION
from deepwork_core.state.event_kinds import EventLogError as EventLogError
from deepwork_core.state.event_kinds import EventName as EventName
from deepwork_core.state.event_kinds import (
    EventRecord,
    KnownEvent,
    ReviewUsageEvent,
    parse_line,
)
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.tables.usage_rows import add_usage, delete_usage

logger = logging.getLogger("deepwork.events")

EVENTS_SUFFIX: Final = ".jsonl"
#: A log larger than this is refused on read rather than loaded whole into memory.
MAX_LOG_BYTES: Final = 64 * 1024 * 1024
#: What a caller of `events_of_kinds` reads each record as.
Parsed = TypeVar("Parsed")


def events_dir(project_root: Path) -> Path:
    """The folder of the old per-session log files (imported by the store)."""
    return project_root / EVENTS_DIR


def events_path(project_root: Path, session_id: SessionId) -> Path:
    """The old log file of `session_id`."""
    return events_dir(project_root) / f"{session_id}{EVENTS_SUFFIX}"


#: Called with the project's store and each event after its line is written.
EventListener = Callable[[Store, KnownEvent], None]

_listeners: list[EventListener] = []
_listeners_lock = threading.Lock()


def add_event_listener(listener: EventListener) -> Callable[[], None]:
    """Call `listener` after every event appended in this process; returns its remover."""
    with _listeners_lock:
        _listeners.append(listener)

    def remove() -> None:
        with _listeners_lock, contextlib.suppress(ValueError):
            _listeners.remove(listener)

    return remove


def _notify(store: Store, event: KnownEvent) -> None:
    with _listeners_lock:
        listeners = tuple(_listeners)
    for listener in listeners:
        try:
            listener(store, event)
        except Exception:  # an observer must never fail the write it follows
            logger.exception("event listener %r failed; it is removed", listener)
            with _listeners_lock, contextlib.suppress(ValueError):
                _listeners.remove(listener)


def event_line(event: EventRecord) -> str:
    """The event as one JSON line without its newline (every field, `v` first).

    `Infinity` and `NaN` are not JSON: an event holding a number that is not finite is refused
    (`events.error`), never written."""
    record = event.model_dump(mode="json")
    try:
        return json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:
        raise EventLogError(
            f"a {event.event} event holds a number that is not finite; it was not logged",
            code=ErrorCode.EVENTS_ERROR,
        ) from None


#: The store's announcement channel of appended events; the payload is the session's id
#: (`deepwork wait` listens on it, docs/headless.md).
EVENTS_CHANNEL: Final = "deepwork_events"


def append_event(store: Store, event: KnownEvent, *, project_id: str | None = None) -> None:
    """Append `event` to its session's log (committed before this returns, unless it joins a
    transaction already open on the store, with which it then commits), then tell the
    listeners (`add_event_listener`). `project_id` names another project of the store (a
    decision on a run another checkout serves); its listeners are not this process's."""
    line = event_line(event)
    foreign = project_id is not None and project_id != store.project.project_id
    project = project_id or store.project.project_id
    with store.write() as tx:
        tx.execute(
            "INSERT INTO events (project_id, session_id, ts, kind, body) VALUES (?, ?, ?, ?, ?)",
            (project, event.session_id, event.ts.timestamp(), str(event.event), line),
        )
        if isinstance(event, ReviewUsageEvent):  # the run's totals, in the same transaction
            add_usage(tx, project, event.session_id, event)
        store.announce(tx, EVENTS_CHANNEL, event.session_id)
    if _listeners and not foreign:
        _notify(store, event)


def read_events(store: Store, session_id: SessionId) -> list[EventRecord]:
    """Every event of the session, oldest first; `[]` when the session has no log."""
    with store.read() as tx:
        rows = tx.execute(
            "SELECT body FROM events WHERE project_id = ? AND session_id = ? ORDER BY seq",
            (store.project.project_id, session_id),
        )
    where = f"store {store.display}, session {session_id}"
    return [_parse(str(body), f"{where}, event {n}") for n, (body,) in enumerate(rows, 1)]


def session_marks(
    store: Store, *, kind: str | None = None, session_ids: Sequence[str] | None = None
) -> dict[str, tuple[int, float]]:
    """For each session with events (of `kind`; of `session_ids` only, when given): the number
    of its newest one, which changes whenever one is appended, and when that was logged (a Unix
    time). One query for a whole list of runs; with `session_ids`, it reads only their rows."""
    sql = "SELECT session_id, MAX(seq), MAX(ts) FROM events WHERE project_id = ?"
    params: list[object] = [store.project.project_id]
    if session_ids is not None:
        if not session_ids:
            return {}
        sql += f" AND session_id IN ({', '.join('?' for _ in session_ids)})"
        params.extend(session_ids)
    if kind is not None:
        sql += " AND kind = ?"
        params.append(kind)
    with store.read() as tx:
        rows = tx.execute(sql + " GROUP BY session_id", params)
    return {str(sid): (int(seq), float(ts)) for sid, seq, ts in rows}


def _parse(raw: str | bytes, where: str) -> EventRecord:
    return parse_line(raw, where)


def iter_events(path: Path) -> Iterator[EventRecord]:
    """The events of one old log file. Only regular files are read, and at most MAX_LOG_BYTES;
    the part after the last newline is a line a killed writer left unfinished, and is skipped."""
    data = _read_bounded(path)
    if data is None:
        return
    lines = data.split(b"\n")
    for number, raw in enumerate(lines[:-1], start=1):
        if raw.strip():
            yield _parse(raw, f"{path}:{number}")


def _read_bounded(path: Path) -> bytes | None:
    """The log's bytes through the guarded reader (no FIFOs, no symlinks, bounded size)."""
    try:
        return read_bytes_file(path, limit=MAX_LOG_BYTES, follow_symlinks=False)
    except FileReadError as exc:
        if exc.code == ErrorCode.FILE_NOT_FOUND:
            return None
        code = (
            ErrorCode.EVENTS_TOO_LARGE
            if exc.code == ErrorCode.FILE_TOO_LARGE
            else ErrorCode.EVENTS_CORRUPT
        )
        raise EventLogError(f"event log {exc.message}", code=code) from None


def newest_started(
    store: Store, limit: int, *, job: str | None = None
) -> tuple[list[SessionId], int]:
    """The `limit` sessions whose `started` event was logged last, newest first (of `job` only,
    when given, as their session rows name it; a log without a session row is kept for the
    caller to sort out), and how many sessions have a `started` event in all: indexed reads of
    the `started` rows, whatever the length of the logs."""
    project = store.project.project_id
    sql = (
        "SELECT e.session_id FROM events e LEFT JOIN sessions s ON s.project_id = e.project_id "
        "AND s.session_id = e.session_id WHERE e.project_id = ? AND e.kind = ?"
    )
    params: list[object] = [project, str(EventName.STARTED)]
    if job is not None:
        sql += " AND (s.job = ? OR s.job IS NULL)"
        params.append(job)
    with store.read() as tx:
        rows = tx.execute(sql + " ORDER BY e.seq DESC LIMIT ?", (*params, max(limit, 0)))
        [(total,)] = tx.execute(
            "SELECT COUNT(*) FROM events WHERE project_id = ? AND kind = ?",
            (project, str(EventName.STARTED)),
        )
    ids = [SessionId(str(row[0])) for row in rows]  # ids it was given as `SessionId`s
    return list(dict.fromkeys(ids)), int(total)


def events_of_kinds(
    store: Store,
    session_ids: Sequence[SessionId],
    kinds: frozenset[str],
    parse: Callable[[str, str], Parsed],
) -> dict[SessionId, list[Parsed]]:
    """Every event of `kinds` of each of `session_ids`, oldest first (one query), each as
    `parse(body, where)` gives it; a session with a record that does not read (`parse` raises
    `EventLogError`) is left out, and its id raises nothing: the caller reads it alone
    (`read_events`) to learn why."""
    if not session_ids or not kinds:
        return {}
    ids = list(dict.fromkeys(session_ids))
    with store.read() as tx:
        rows = tx.execute(
            "SELECT session_id, seq, body FROM events WHERE project_id = ? "  # noqa: S608
            f"AND session_id IN ({', '.join('?' for _ in ids)}) "
            f"AND kind IN ({', '.join('?' for _ in kinds)}) ORDER BY session_id, seq",
            (store.project.project_id, *ids, *sorted(kinds)),
        )
    found: dict[SessionId, list[Parsed]] = {}
    broken: set[str] = set()
    display = store.display
    for session_id, seq, body in rows:
        sid = SessionId(str(session_id))
        if sid in broken:
            continue
        try:
            record = parse(str(body), f"store {display}, session {sid}, event #{seq}")
        except EventLogError:
            broken.add(sid)
            found.pop(sid, None)
            continue
        found.setdefault(sid, []).append(record)
    return found


def logged_session_ids(store: Store) -> list[SessionId]:
    """Ids of the sessions that have events, the one logged to least recently first."""
    with store.read() as tx:
        rows = tx.execute(
            "SELECT session_id, MAX(seq) AS last FROM events WHERE project_id = ? "
            "GROUP BY session_id ORDER BY last",
            (store.project.project_id,),
        )
    return [SessionId(str(row[0])) for row in rows]  # ids it was given as `SessionId`s


def delete_event_log(store: Store, session_id: SessionId) -> None:
    """Remove a session's events and its review totals (when the session itself is pruned)."""
    with store.write() as tx:
        tx.execute(
            "DELETE FROM events WHERE project_id = ? AND session_id = ?",
            (store.project.project_id, session_id),
        )
        delete_usage(tx, store.project.project_id, session_id)
