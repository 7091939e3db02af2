"""The event models: one per kind, read and written through one union, old and newer lines alike."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from deepwork_core.evidence.hashes import OutputEvidence, VerdictKind
from deepwork_core.evidence.verdicts import CriterionVerdict
from deepwork_core.state.event_kinds import (
    EVENT_SCHEMA_VERSION,
    EventName,
    OtherEvent,
    ReviewVerdictEvent,
    StartedEvent,
    StepBegunEvent,
    StepFinishedEvent,
    parse_event,
)
from deepwork_core.state.events import EventLogError, append_event, events_path, read_events
from deepwork_core.state.store.port import Store

FIXTURES = Path(__file__).parents[3] / "fixtures"
ALL_KINDS = FIXTURES / "event_logs_all_kinds" / "sess_all_kinds.jsonl"
OLD_LOGS = sorted((FIXTURES / "event_logs").glob("*.jsonl"))
SID = "sess_kinds1"
WHEN = datetime(2026, 11, 22, 8, 0, 0, 250000, tzinfo=UTC)


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def stored_lines(store: Store) -> str:
    """The records of the store's event log as the lines of an old log file."""
    with store.read() as tx:
        rows = tx.execute("SELECT body FROM events ORDER BY seq")
    return "".join(f"{body}\n" for (body,) in rows)


def write_lines(root: Path, *records: dict[str, Any]) -> None:
    path = events_path(root, SID)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")


def test_every_kind_has_a_model_and_every_fixture_line_reads_as_its_kind() -> None:
    records = [parse_event(line) for line in lines_of(ALL_KINDS)]
    read_kinds = {r.event for r in records if not isinstance(r, OtherEvent)}
    assert read_kinds == {name.value for name in EventName}


@pytest.mark.parametrize("log", [ALL_KINDS, *OLD_LOGS], ids=lambda p: p.stem)
def test_a_line_read_back_gives_the_same_keys_in_the_same_order(log: Path) -> None:
    for line in lines_of(log):
        written = parse_event(line).as_written()
        assert written == line
        assert list(written) == list(line)


def test_every_line_of_the_old_logs_reads_as_a_known_kind() -> None:
    for log in OLD_LOGS:
        assert not [r for r in map(parse_event, lines_of(log)) if isinstance(r, OtherEvent)]


def test_a_written_event_is_byte_for_byte_the_line_of_today(tmp_path: Path, store: Store) -> None:
    criteria = [CriterionVerdict(criterion="Sourced", passed=False, feedback="no links")]
    append_event(
        store,
        ReviewVerdictEvent(
            ts=WHEN,
            session_id=SID,
            step_id="write",
            review="report",
            target_file="report.md",
            passed=False,
            feedback="Sources missing",
            criteria=criteria,
            attempt=1,
        ),
    )
    assert stored_lines(store) == (
        '{"v":1,"ts":"2026-11-22T08:00:00.250000+00:00","session_id":"sess_kinds1",'
        '"event":"review_verdict","step_id":"write","review":"report",'
        '"target_file":"report.md","passed":false,"feedback":"Sources missing",'
        '"criteria":[{"criterion":"Sourced","passed":false,"feedback":"no links"}],'
        '"attempt":1}\n'
    )


def test_every_new_line_carries_the_version(tmp_path: Path, store: Store) -> None:
    append_event(store, StepBegunEvent(ts=WHEN, session_id=SID, step_ids=["a"]))
    [line] = [json.loads(text) for text in stored_lines(store).splitlines()]
    assert line["v"] == EVENT_SCHEMA_VERSION == 1
    assert next(iter(line)) == "v"


def test_a_written_event_reads_back_equal(tmp_path: Path, store: Store) -> None:
    evidence = OutputEvidence(
        output="report",
        step_id="write",
        path="report.md",
        sha256="ab12",
        verdict=VerdictKind.REVIEWER,
        recorded_at=WHEN,
    )
    event = StepFinishedEvent(
        ts=WHEN,
        session_id=SID,
        step_ids=["write"],
        verdict=VerdictKind.REVIEWER,
        evidence=[evidence],
    )
    append_event(store, event)
    assert read_events(store, SID) == [event]


def test_a_line_without_a_version_is_version_one(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    write_lines(tmp_path, {"ts": "2026-11-22T08:00:00+00:00", "session_id": SID,
                           "event": "started", "job": "j", "workflow": "w"})  # fmt: skip
    [event] = read_events(make_store(tmp_path), SID)  # importing them
    assert isinstance(event, StartedEvent)
    assert (event.v, event.job, event.goal) == (1, "j", None)
    assert "v" not in event.as_written()


def test_a_newer_versions_unknown_kind_reads_as_other_with_all_its_keys(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    line = {"v": 7, "ts": "2026-11-22T08:00:00+00:00", "session_id": SID,
            "event": "checkpoint_pruned", "kept": 3}  # fmt: skip
    write_lines(tmp_path, line)
    [event] = read_events(make_store(tmp_path), SID)  # importing them
    assert isinstance(event, OtherEvent)
    assert event.event == "checkpoint_pruned"
    assert event.as_written() == line
    assert event.details() == {"kept": 3}


def test_a_known_kind_keeps_keys_a_newer_writer_added(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    line = {"v": 2, "ts": "2026-11-22T08:00:00+00:00", "session_id": SID,
            "event": "step_begun", "step_ids": ["a"], "reason": "retry"}  # fmt: skip
    write_lines(tmp_path, line)
    [event] = read_events(make_store(tmp_path), SID)  # importing them
    assert isinstance(event, StepBegunEvent)
    assert (event.v, event.step_ids) == (2, ["a"])
    assert event.as_written() == line


def test_a_known_kind_whose_fields_do_not_fit_reads_as_other(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    line = {"v": 1, "ts": "2026-11-22T08:00:00+00:00", "session_id": SID,
            "event": "review_verdict", "step_id": "a", "passed": "perhaps"}  # fmt: skip
    write_lines(tmp_path, line)
    [event] = read_events(make_store(tmp_path), SID)  # importing them
    assert isinstance(event, OtherEvent)
    assert event.event == "review_verdict"
    assert event.as_written() == line


@pytest.mark.parametrize(
    "line",
    [
        {"v": 1, "ts": "not a time", "session_id": SID, "event": "anything"},
        {"v": "one", "ts": "2026-11-22T08:00:00+00:00", "session_id": SID, "event": "started"},
        {"v": 1, "ts": "2026-11-22T08:00:00+00:00", "session_id": SID, "event": 5},
    ],
)
def test_a_line_whose_header_cannot_be_read_is_corrupt(
    tmp_path: Path, line: dict[str, Any], make_store: Callable[..., Store]
) -> None:
    write_lines(tmp_path, line)
    with pytest.raises(EventLogError) as caught:
        read_events(make_store(tmp_path), SID)  # importing them
    assert caught.value.code == "events.corrupt"
    assert f"session {SID}, event 1:" in caught.value.message  # imported, then refused


def test_an_event_built_in_code_rejects_an_unknown_field() -> None:
    with pytest.raises(ValueError, match="extra"):
        StepBegunEvent.model_validate(
            {"ts": WHEN, "session_id": SID, "step_ids": [], "step": "typo"}
        )


def test_events_are_frozen() -> None:
    event = StepBegunEvent(ts=WHEN, session_id=SID, step_ids=["a"])
    with pytest.raises(ValueError, match="frozen"):
        event.step_ids = ["b"]  # type: ignore[misc]
