"""A log read a page at a time (deepwork_core.state.event_pages): the newest rows, the kinds
asked for, and counts of the rest that stop at a cap, so a page costs the same whatever the
length of the log (docs/limits.md, "One run of a million events")."""

from __future__ import annotations

from datetime import UTC, datetime

from deepwork_core.state.event_kinds import (
    CompletedEvent,
    EventRecord,
    StartedEvent,
    StepBegunEvent,
)
from deepwork_core.state.event_pages import (
    COUNT_CAP,
    bounded_count_text,
    newest_of_kinds,
    nth_newest_seq,
    page_events,
    scan_events,
)
from deepwork_core.state.events import append_event
from deepwork_core.state.store.port import Store

SID = "sess_abc123"
WHEN = datetime(2026, 11, 23, 21, 50, tzinfo=UTC)


def started(session_id: str = SID) -> StartedEvent:
    return StartedEvent(ts=WHEN, session_id=session_id, job="j", workflow="w")


def completed(session_id: str = SID) -> CompletedEvent:
    return CompletedEvent(ts=WHEN, session_id=session_id, steps_completed=1)


def begun(step: str) -> StepBegunEvent:
    return StepBegunEvent(ts=WHEN, session_id=SID, step_ids=[step])


def seven_events(store: Store) -> None:
    """started, five step_begun (a to e), completed."""
    append_event(store, started())
    for step in "abcde":
        append_event(store, begun(step))
    append_event(store, completed())


def test_a_scan_counts_every_event_and_reads_only_the_newest_and_the_kinds_asked(
    store: Store,
) -> None:
    append_event(store, started())
    for _ in range(5):
        append_event(store, StepBegunEvent(ts=WHEN, session_id=SID, step_ids=["a"]))
    append_event(store, completed())
    scan = scan_events(store, SID, keep_last=2, kinds=frozenset({"started"}))
    assert scan.total == 7
    assert scan.omitted == 5
    assert [event.event for event in scan.recent] == ["step_begun", "completed"]
    assert [event.event for event in scan.selected] == ["started"]
    both = scan_events(store, SID, keep_last=0, kinds=frozenset({"completed", "started"}))
    assert [event.event for event in both.selected] == ["started", "completed"]  # log order
    assert scan_events(store, "sess_none", keep_last=2, kinds=frozenset()).total == 0


def test_the_newest_of_some_kinds_come_with_a_count_of_each_and_start_after_a_number(
    store: Store,
) -> None:
    append_event(store, started())
    for step in "abcde":
        append_event(store, StepBegunEvent(ts=WHEN, session_id=SID, step_ids=[step]))
    append_event(store, completed())
    kinds = frozenset({"step_begun", "completed", "resumed"})
    counts, newest = newest_of_kinds(store, SID, kinds, limit=3)
    assert counts == {"step_begun": 5, "completed": 1}
    assert [getattr(e, "step_ids", None) for e in newest] == [["d"], ["e"], None]
    third = nth_newest_seq(store, SID, "step_begun", 3)  # the one of step c
    _, after = newest_of_kinds(store, SID, kinds, limit=10, after=third)
    assert [getattr(e, "step_ids", None) for e in after] == [["d"], ["e"], None]
    assert nth_newest_seq(store, SID, "step_begun", 6) == 0
    assert newest_of_kinds(store, SID, frozenset(), limit=3) == ({}, [])
    only, same = newest_of_kinds(store, SID, kinds, limit=3, count=frozenset({"completed"}))
    assert (only, same) == ({"completed": 1}, newest)  # only the kinds asked for are counted
    assert newest_of_kinds(store, SID, kinds, limit=3, count=frozenset())[0] == {}


def test_records_read_once_are_handed_back_by_a_second_read(store: Store) -> None:
    append_event(store, started())
    append_event(store, completed())
    memo: dict[int, EventRecord] = {}
    scan = scan_events(store, SID, keep_last=1, kinds=frozenset(), memo=memo)
    _, again = newest_of_kinds(store, SID, frozenset({"completed"}), limit=1, memo=memo)
    assert len(memo) == 1
    assert again[0] is scan.recent[0]


def test_counts_past_the_cap_say_more_and_stay_true(store: Store) -> None:
    seven_events(store)
    scan = scan_events(store, SID, keep_last=2, kinds=frozenset(), cap=3)
    assert len(scan.recent) == 2
    assert bounded_count_text(scan.total, cap=3) == "more than 3"  # 7 events
    assert bounded_count_text(scan.omitted, cap=3) == "more than 3"  # 5 left out
    assert scan_events(store, SID, keep_last=2, kinds=frozenset(), cap=5).total == 7  # exact

    page = page_events(store, SID, limit=2, cap=3)
    assert bounded_count_text(page.older, cap=3) == "more than 3"  # 5 older
    assert page_events(store, SID, limit=2, cap=5).older == 5

    counts, newest = newest_of_kinds(store, SID, frozenset({"step_begun"}), limit=1, cap=2)
    assert len(newest) == 1
    assert bounded_count_text(counts["step_begun"] - len(newest), cap=2) == "more than 2"
    exact, _ = newest_of_kinds(store, SID, frozenset({"step_begun"}), limit=1, cap=4)
    assert exact == {"step_begun": 5}


def test_a_count_reads_its_words_exactly_up_to_the_cap() -> None:
    assert bounded_count_text(COUNT_CAP) == "10,000"
    assert bounded_count_text(COUNT_CAP + 1) == "more than 10,000"
    assert bounded_count_text(0) == "0"
