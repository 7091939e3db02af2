"""The event log: one append-only JSON Lines file per workflow session.

`.deepwork/tmp/events/<session_id>.jsonl` records what happened in a session, in order: started,
step begun, outputs submitted, each review verdict, overrides, needs_work, jumps, approvals, abort
and completion. The session file holds the current state; the event log holds the history, and is
never rewritten (a `go_to_step` clears state, not history). Each kind of event is a model in
`deepwork_core.state.event_kinds`; docs/navigation.md ("The event log") lists them with their
fields and the rule by which older and newer lines still read.

Every line is one JSON object, the event model as JSON:

    {"v": 1, "ts": "2026-11-23T21:50:00.123456+00:00", "session_id": "…", "event": "started", …}

Each append takes an exclusive `flock` on the log file and writes the whole line with one
`write` on an `O_APPEND` descriptor, so lines from two servers never interleave. A reader skips a
last line that has no newline yet (a writer killed mid-line) and rejects any other line that is not
a JSON object with an `event` name and a readable header as `events.corrupt`, naming the file and
line. A line of an unknown kind reads as `OtherEvent`.

Observers (OpenTelemetry export in `deepwork_mcp.telemetry`) follow the log through
`add_event_listener`: each listener is called with every event after its line is written, in the
writer's thread. A listener must be quick and must not raise; one that raises is removed and the
write it followed still stands (the log is the record, observers are extras).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError, FileReadError
from deepwork_core.base.fsutil import read_bytes_file
from deepwork_core.base.identifiers import check_session_id
from deepwork_core.base.layout import EVENTS_DIR
from deepwork_core.base.runtime_dir import ensure_tmp_dir
from deepwork_core.state.event_kinds import EVENT_SCHEMA_VERSION as EVENT_SCHEMA_VERSION
from deepwork_core.state.event_kinds import EventName as EventName
from deepwork_core.state.event_kinds import EventRecord, KnownEvent, parse_event

logger = logging.getLogger("deepwork.events")

EVENTS_SUFFIX: Final = ".jsonl"
#: A log larger than this is refused on read rather than loaded whole into memory.
MAX_LOG_BYTES: Final = 64 * 1024 * 1024


class EventLogError(DeepWorkError):
    """An event log could not be read (`events.*` codes)."""

    code = ErrorCode.EVENTS_ERROR


def events_dir(project_root: Path) -> Path:
    return project_root / EVENTS_DIR


def events_path(project_root: Path, session_id: str) -> Path:
    """The log file of `session_id` (checked against the session id pattern)."""
    check_session_id(session_id)
    return events_dir(project_root) / f"{session_id}{EVENTS_SUFFIX}"


#: Called with the project root and each event after its line is written.
EventListener = Callable[[Path, KnownEvent], None]

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


def _notify(project_root: Path, event: KnownEvent) -> None:
    with _listeners_lock:
        listeners = tuple(_listeners)
    for listener in listeners:
        try:
            listener(project_root, event)
        except Exception:  # an observer must never fail the write it follows
            logger.exception("event listener %r failed; it is removed", listener)
            with _listeners_lock, contextlib.suppress(ValueError):
                _listeners.remove(listener)


def append_event(project_root: Path, event: KnownEvent) -> None:
    """Append `event` to its session's log as one line (every field, `v` first), then tell
    the listeners (`add_event_listener`)."""
    record = event.model_dump(mode="json")
    line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    path = events_path(project_root, event.session_id)
    ensure_tmp_dir(project_root)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            _write_all(fd, line)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    if _listeners:
        _notify(project_root, event)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def read_events(project_root: Path, session_id: str) -> list[EventRecord]:
    """Every event of the session, oldest first; `[]` when the session has no log."""
    return list(iter_events(events_path(project_root, session_id)))


def iter_events(path: Path) -> Iterator[EventRecord]:
    """The events of one log file. Only regular files are read, and at most MAX_LOG_BYTES."""
    data = _read_bounded(path)
    if data is None:
        return
    lines = data.split(b"\n")
    complete = lines[:-1]  # the part after the last newline is a line still being written
    for number, raw in enumerate(complete, start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            record = None
        event = None
        if isinstance(record, dict) and isinstance(record.get("event"), str):
            with contextlib.suppress(ValueError):
                event = parse_event(record)
        if event is None:
            raise EventLogError(
                f"{path}:{number}: not an event record (a JSON object with an 'event')",
                code=ErrorCode.EVENTS_CORRUPT,
            )
        yield event


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


def logged_session_ids(project_root: Path) -> list[str]:
    """Ids of the sessions that have an event log, oldest modification first."""
    folder = events_dir(project_root)
    try:
        entries = [p for p in folder.iterdir() if p.name.endswith(EVENTS_SUFFIX)]
    except FileNotFoundError:
        return []
    dated: list[tuple[float, str]] = []
    for entry in entries:
        with contextlib.suppress(FileNotFoundError):
            dated.append((entry.stat().st_mtime, entry.name[: -len(EVENTS_SUFFIX)]))
    return [name for _, name in sorted(dated)]


def delete_event_log(project_root: Path, session_id: str) -> None:
    """Remove a session's log (used when the session file itself is pruned)."""
    with contextlib.suppress(FileNotFoundError):
        events_path(project_root, session_id).unlink()
