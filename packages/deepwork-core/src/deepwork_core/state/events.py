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
import re
import stat
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError, FileReadError
from deepwork_core.base.fsutil import loads_json, read_bytes_file
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
    try:  # `Infinity` and `NaN` are not JSON: such an event is refused, never written
        text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:
        raise EventLogError(
            f"a {event.event} event holds a number that is not finite; it was not logged",
            code=ErrorCode.EVENTS_ERROR,
        ) from None
    line = (text + "\n").encode()
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
        if raw.strip():
            yield _parse_line(path, number, raw)


@dataclass(frozen=True, slots=True)
class EventScan:
    """A log read in bounded memory (`scan_events`): how many events it holds, the newest of
    them, and every event of the kinds asked for."""

    total: int
    recent: list[EventRecord]
    selected: list[EventRecord]

    @property
    def omitted(self) -> int:
        """Events older than `recent` that were counted but not read."""
        return self.total - len(self.recent)


def scan_events(
    project_root: Path, session_id: str, *, keep_last: int, kinds: frozenset[str]
) -> EventScan:
    """The newest `keep_last` events of a session and all its events of `kinds`, reading the
    log line by line: only those lines are parsed, so a log of any size costs little memory
    and time. Lines are checked as `read_events` checks them (`events.corrupt`) when parsed."""
    path = events_path(project_root, session_id)
    wanted = b"|".join(re.escape(kind.encode()) for kind in sorted(kinds)) or b"(?!)"
    marker = re.compile(rb'"event"\s*:\s*"(?:' + wanted + rb')"')
    recent: deque[tuple[int, bytes]] = deque(maxlen=max(keep_last, 0))
    selected: list[EventRecord] = []
    total = 0
    for number, raw in _lines(path):
        total += 1
        recent.append((number, raw))
        if marker.search(raw):
            event = _parse_line(path, number, raw)
            if event.event in kinds:
                selected.append(event)
    return EventScan(total, [_parse_line(path, n, raw) for n, raw in recent], selected)


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of every complete, non-blank line of the log, through the same
    guards as `_read_bounded` (regular file, no symbolic link, at most MAX_LOG_BYTES)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise EventLogError(f"event log cannot open {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb", buffering=1024 * 1024) as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_LOG_BYTES:
            _read_bounded(path)  # raises the coded error that names the problem
        for number, raw in enumerate(handle, start=1):
            if raw.endswith(b"\n") and raw.strip():
                yield number, raw


def _parse_line(path: Path, number: int, raw: bytes) -> EventRecord:
    try:
        record = loads_json(raw)
    except (ValueError, UnicodeDecodeError):
        record = None
    if isinstance(record, dict) and isinstance(record.get("event"), str):
        with contextlib.suppress(ValueError):
            return parse_event(record)
    raise EventLogError(
        f"{path}:{number}: not an event record (a JSON object with an 'event')",
        code=ErrorCode.EVENTS_CORRUPT,
    )


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
