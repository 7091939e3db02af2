"""The per-session event log: append to the store and read back; old log files (read for the
import) survive torn lines and refuse what is not a log."""

from __future__ import annotations

import json
import multiprocessing
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from deepwork_core.base.errors import InvalidIdentifierError
from deepwork_core.base.identifiers import parse_session_id
from deepwork_core.state import events
from deepwork_core.state.event_kinds import (
    CompletedEvent,
    EventRecord,
    ReviewUsageEvent,
    ReviewVerdictEvent,
    StartedEvent,
    StepBegunEvent,
)
from deepwork_core.state.events import (
    EventLogError,
    append_event,
    delete_event_log,
    events_path,
    iter_events,
    logged_session_ids,
    read_events,
)
from deepwork_core.state.store.opening import open_store
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.url import STORE_URL_ENV

from tests.conftest import on_postgres

SID = "sess_abc123"
WHEN = datetime(2026, 11, 23, 21, 50, tzinfo=UTC)


def started(session_id: str = SID, **fields: str) -> StartedEvent:
    return StartedEvent(ts=WHEN, session_id=session_id, job="j", workflow="w", **fields)


def completed(session_id: str = SID) -> CompletedEvent:
    return CompletedEvent(ts=WHEN, session_id=session_id, steps_completed=1)


def test_appended_events_read_back_in_order_with_their_fields(tmp_path: Path, store: Store) -> None:
    append_event(store, started())
    append_event(store, StepBegunEvent(ts=WHEN, session_id=SID, step_ids=["one"]))

    records = read_events(store, SID)

    assert [r.event for r in records] == ["started", "step_begun"]
    assert records[0].as_written() == {
        "v": 1,
        "ts": "2026-11-23T21:50:00+00:00",
        "session_id": SID,
        "event": "started",
        "job": "j",
        "workflow": "w",
        "goal": None,
        "instance_id": None,
        "agent_id": None,
        "parent_session_id": None,
        "branch": None,
    }
    assert records[0] == started()
    assert isinstance(records[1], StepBegunEvent)
    assert records[1].step_ids == ["one"]


@pytest.mark.skipif(on_postgres(), reason="the SQLite store's file")
def test_the_log_lives_in_the_store_under_the_ignored_runtime_folder(
    tmp_path: Path, store: Store
) -> None:
    append_event(store, started())
    assert (tmp_path / ".deepwork/tmp/deepwork.sqlite3").is_file()
    assert not events_path(tmp_path, SID).exists()
    assert (tmp_path / ".deepwork/tmp/.gitignore").read_text() == "*\n"


def _old_log(tmp_path: Path, *lines: bytes) -> Path:
    path = events_path(tmp_path, SID)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(lines))
    return path


def _line(event: EventRecord) -> bytes:
    return (events.event_line(event) + "\n").encode()


def test_a_session_without_a_log_has_no_events(tmp_path: Path, store: Store) -> None:
    assert read_events(store, SID) == []
    assert logged_session_ids(store) == []


def test_an_event_cannot_carry_fields_its_kind_does_not_have(tmp_path: Path, store: Store) -> None:
    with pytest.raises(ValueError, match="extra"):
        StartedEvent.model_validate(
            {"ts": WHEN, "session_id": SID, "job": "j", "workflow": "w", "stray": "x"}
        )
    assert read_events(store, SID) == []


def test_a_hostile_session_id_never_becomes_a_path(store: Store) -> None:
    # The log takes parsed `SessionId`s: a hostile id stops where it comes in.
    with pytest.raises(InvalidIdentifierError):
        append_event(store, started(parse_session_id("../../etc/passwd")))


def test_an_old_log_line_still_being_written_is_skipped(tmp_path: Path) -> None:
    path = _old_log(tmp_path, _line(started()), b'{"v":1,"event":"comp')
    assert [r.event for r in iter_events(path)] == ["started"]


def test_a_corrupt_old_line_names_file_and_line(tmp_path: Path) -> None:
    path = _old_log(tmp_path, _line(started()), b"[1, 2]\n", _line(completed()))

    with pytest.raises(EventLogError) as caught:
        list(iter_events(path))

    assert caught.value.code == "events.corrupt"
    assert f"{SID}.jsonl:2:" in caught.value.message


def test_a_corrupt_stored_record_names_session_and_position(store: Store) -> None:
    append_event(store, started())
    with store.write() as tx:
        tx.execute("UPDATE events SET body = '[1, 2]'")
    with pytest.raises(EventLogError) as caught:
        read_events(store, SID)
    assert caught.value.code == "events.corrupt"
    assert f"session {SID}, event 1:" in caught.value.message


def test_a_fifo_in_place_of_an_old_log_is_refused_without_blocking(tmp_path: Path) -> None:
    path = events_path(tmp_path, SID)
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    with pytest.raises(EventLogError) as caught:
        list(iter_events(path))
    assert caught.value.code == "events.corrupt"


def test_a_symlinked_old_log_is_not_read(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.jsonl"
    target.write_text('{"event": "started"}\n')
    path = events_path(tmp_path, SID)
    path.parent.mkdir(parents=True)
    path.symlink_to(target)

    with pytest.raises(EventLogError):
        list(iter_events(path))
    assert target.read_text() == '{"event": "started"}\n'


def test_an_old_log_over_the_size_limit_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _old_log(tmp_path, _line(started(goal="x" * 200)))
    monkeypatch.setattr(events, "MAX_LOG_BYTES", 100)
    with pytest.raises(EventLogError) as caught:
        list(iter_events(path))
    assert caught.value.code == "events.too_large"


def _append_many(root: str, writer: int, count: int) -> None:
    with open_store(os.environ.get(STORE_URL_ENV), Path(root)) as store:  # as the CLI does
        for index in range(count):
            # Lines far larger than a pipe buffer, so a torn write would show.
            event = ReviewVerdictEvent(
                ts=WHEN,
                session_id=SID,
                step_id=f"w{writer}",
                passed=True,
                feedback="p" * 9000,
                attempt=index,
            )
            append_event(store, event)


def _attempts_of(records: list[EventRecord], writer: int) -> list[int | None]:
    return [
        r.attempt
        for r in records
        if isinstance(r, ReviewVerdictEvent) and r.step_id == f"w{writer}"
    ]


@pytest.mark.slow
def test_two_processes_appending_at_once_lose_and_mix_nothing(tmp_path: Path, store: Store) -> None:
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_append_many, args=(str(tmp_path), writer, 150)) for writer in (1, 2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0

    records = read_events(store, SID)

    assert len(records) == 300
    for writer in (1, 2):
        assert _attempts_of(records, writer) == list(range(150))
    assert all(json.loads(events.event_line(r)) for r in records)


def test_logs_are_listed_and_deleted_by_session(tmp_path: Path, store: Store) -> None:
    append_event(store, started())
    append_event(store, started("sess_other1"))
    assert sorted(logged_session_ids(store)) == ["sess_abc123", "sess_other1"]

    delete_event_log(store, SID)
    delete_event_log(store, SID)  # a second delete is harmless

    assert logged_session_ids(store) == ["sess_other1"]


def test_an_event_with_a_number_that_is_not_finite_is_refused_and_never_stored(
    tmp_path: Path,
    store: Store,
) -> None:
    append_event(store, started())
    usage = ReviewUsageEvent(
        ts=WHEN, session_id=SID, job="j", step_id="s", review="r", outcome="passed", seconds=1e400
    )
    with pytest.raises(EventLogError) as caught:
        append_event(store, usage)
    assert caught.value.code == "events.error"
    assert [event.event for event in read_events(store, SID)] == ["started"]


def test_a_stored_record_nested_without_end_is_corrupt_not_a_crash(store: Store) -> None:
    append_event(store, started())
    with store.write() as tx:
        tx.execute(
            "UPDATE events SET body = ?",
            ('{"event": "x", "v": ' + "[" * 100_000 + "]" * 100_000 + "}",),
        )
    with pytest.raises(EventLogError) as caught:
        read_events(store, SID)
    assert caught.value.code == "events.corrupt"
