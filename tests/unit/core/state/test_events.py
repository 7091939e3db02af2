"""The per-session event log: append, read back, survive torn lines, refuse what is not a log."""

from __future__ import annotations

import json
import multiprocessing
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from deepwork_core.base.errors import InvalidIdentifierError
from deepwork_core.state import events
from deepwork_core.state.event_kinds import (
    CompletedEvent,
    EventRecord,
    ReviewVerdictEvent,
    StartedEvent,
    StepBegunEvent,
)
from deepwork_core.state.events import (
    EventLogError,
    append_event,
    delete_event_log,
    events_path,
    logged_session_ids,
    read_events,
)

SID = "sess_abc123"
WHEN = datetime(2026, 11, 23, 21, 50, tzinfo=UTC)


def started(session_id: str = SID, **fields: str) -> StartedEvent:
    return StartedEvent(ts=WHEN, session_id=session_id, job="j", workflow="w", **fields)


def completed(session_id: str = SID) -> CompletedEvent:
    return CompletedEvent(ts=WHEN, session_id=session_id, steps_completed=1)


def test_appended_events_read_back_in_order_with_their_fields(tmp_path: Path) -> None:
    append_event(tmp_path, started())
    append_event(tmp_path, StepBegunEvent(ts=WHEN, session_id=SID, step_ids=["one"]))

    records = read_events(tmp_path, SID)

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


def test_the_log_lives_under_the_ignored_runtime_folder(tmp_path: Path) -> None:
    append_event(tmp_path, started())
    assert events_path(tmp_path, SID) == tmp_path / ".deepwork/tmp/events" / f"{SID}.jsonl"
    assert (tmp_path / ".deepwork/tmp/.gitignore").read_text() == "*\n"


def test_a_session_without_a_log_has_no_events(tmp_path: Path) -> None:
    assert read_events(tmp_path, SID) == []
    assert logged_session_ids(tmp_path) == []


def test_an_event_cannot_carry_fields_its_kind_does_not_have(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="extra"):
        StartedEvent.model_validate(
            {"ts": WHEN, "session_id": SID, "job": "j", "workflow": "w", "stray": "x"}
        )
    assert read_events(tmp_path, SID) == []


def test_a_hostile_session_id_never_becomes_a_path(tmp_path: Path) -> None:
    with pytest.raises(InvalidIdentifierError):
        append_event(tmp_path, started("../../etc/passwd"))


def test_a_line_still_being_written_is_skipped(tmp_path: Path) -> None:
    append_event(tmp_path, started())
    with events_path(tmp_path, SID).open("ab") as handle:
        handle.write(b'{"v":1,"event":"comp')
    assert [r.event for r in read_events(tmp_path, SID)] == ["started"]


def test_a_corrupt_line_names_file_and_line(tmp_path: Path) -> None:
    append_event(tmp_path, started())
    with events_path(tmp_path, SID).open("ab") as handle:
        handle.write(b"[1, 2]\n")
    append_event(tmp_path, completed())

    with pytest.raises(EventLogError) as caught:
        read_events(tmp_path, SID)

    assert caught.value.code == "events.corrupt"
    assert f"{SID}.jsonl:2:" in caught.value.message


def test_a_fifo_in_place_of_the_log_is_refused_without_blocking(tmp_path: Path) -> None:
    path = events_path(tmp_path, SID)
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    with pytest.raises(EventLogError) as caught:
        read_events(tmp_path, SID)
    assert caught.value.code == "events.corrupt"


def test_a_symlinked_log_is_neither_read_nor_written(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.jsonl"
    target.write_text('{"event": "started"}\n')
    path = events_path(tmp_path, SID)
    path.parent.mkdir(parents=True)
    path.symlink_to(target)

    with pytest.raises(EventLogError):
        read_events(tmp_path, SID)
    with pytest.raises(OSError):
        append_event(tmp_path, completed())
    assert target.read_text() == '{"event": "started"}\n'


def test_a_log_over_the_size_limit_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    append_event(tmp_path, started(goal="x" * 200))
    monkeypatch.setattr(events, "MAX_LOG_BYTES", 100)
    with pytest.raises(EventLogError) as caught:
        read_events(tmp_path, SID)
    assert caught.value.code == "events.too_large"


def _append_many(root: str, writer: int, count: int) -> None:
    for index in range(count):
        # Lines far larger than a pipe buffer, so a torn write would show.
        append_event(
            Path(root),
            ReviewVerdictEvent(
                ts=WHEN,
                session_id=SID,
                step_id=f"w{writer}",
                passed=True,
                feedback="p" * 9000,
                attempt=index,
            ),
        )


def _attempts_of(records: list[EventRecord], writer: int) -> list[int | None]:
    return [
        r.attempt
        for r in records
        if isinstance(r, ReviewVerdictEvent) and r.step_id == f"w{writer}"
    ]


@pytest.mark.slow
def test_two_processes_appending_at_once_never_interleave_lines(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_append_many, args=(str(tmp_path), writer, 150)) for writer in (1, 2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0

    records = read_events(tmp_path, SID)

    assert len(records) == 300
    for writer in (1, 2):
        assert _attempts_of(records, writer) == list(range(150))
    raw = events_path(tmp_path, SID).read_bytes()
    assert all(json.loads(line) for line in raw.splitlines())


def test_logs_are_listed_and_deleted_by_session(tmp_path: Path) -> None:
    append_event(tmp_path, started())
    append_event(tmp_path, started("sess_other1"))
    assert sorted(logged_session_ids(tmp_path)) == ["sess_abc123", "sess_other1"]

    delete_event_log(tmp_path, SID)
    delete_event_log(tmp_path, SID)  # a second delete is harmless

    assert logged_session_ids(tmp_path) == ["sess_other1"]
