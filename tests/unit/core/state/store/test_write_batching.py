"""Writes that travel together: a transaction's events keep their order however its writes are
sent (one-row inserts into one table go to PostgreSQL as one), its announcements reach a
listener once per session, and a stack read for one agent still finds every agent's top."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from deepwork_core.base.identifiers import SessionId
from deepwork_core.state.event_kinds import StepBegunEvent
from deepwork_core.state.events import EVENTS_CHANNEL, append_event, read_events
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.schema import ListColumns
from deepwork_core.state.store.tables.session_rows import (
    SessionRow,
    read_stacks_and_tops,
    save_session,
    write_stack,
)

WHEN = datetime(2026, 12, 2, tzinfo=UTC)


def _begun(session_id: str, entry: int) -> StepBegunEvent:
    return StepBegunEvent(
        ts=WHEN, session_id=SessionId(session_id), step_ids=[f"s{entry}"], entry_index=entry
    )


def _row(session_id: str, body: str = "{}") -> SessionRow:
    return SessionRow(
        session_id=session_id,
        job="job",
        workflow="main",
        status="active",
        agent=None,
        branch=None,
        started_at=1.0,
        completed_at=None,
        body=body,
        listed=ListColumns(goal="g", steps=json.dumps(["s1"])),
    )


def _entries(store: Store, session_id: str) -> list[int | None]:
    return [
        event.entry_index
        for event in read_events(store, SessionId(session_id))
        if isinstance(event, StepBegunEvent)
    ]


def test_a_transactions_events_land_in_the_order_written_around_other_writes(
    any_store: Store,
) -> None:
    project = any_store.project.project_id
    with any_store.write() as tx:
        append_event(any_store, _begun("a", 1))
        save_session(tx, project, "m", _row("a"), now=1.0)  # another table in between
        append_event(any_store, _begun("a", 2))
        append_event(any_store, _begun("b", 1))
        append_event(any_store, _begun("a", 3))
        tx.execute("DELETE FROM events WHERE session_id = ?", ("b",))  # names the table
        append_event(any_store, _begun("a", 4))
        append_event(any_store, _begun("b", 2))
    assert _entries(any_store, "a") == [1, 2, 3, 4]
    assert _entries(any_store, "b") == [2]  # the first was deleted before the second came
    with any_store.read() as tx:
        rows = tx.execute("SELECT session_id FROM events ORDER BY seq")
    assert [str(row[0]) for row in rows] == ["a", "a", "a", "a", "b"]


def test_a_stack_written_row_by_row_reads_back_in_order(any_store: Store) -> None:
    project = any_store.project.project_id
    ids = [f"s{n}" for n in range(20)]  # more rows than one folded insert takes
    with any_store.write() as tx:
        for session_id in ids:
            save_session(tx, project, "m", _row(session_id, body=f'{{"n": "{session_id}"}}'), 1.0)
        write_stack(tx, project, None, ids)
        write_stack(tx, project, "agent1", ["s3", "s4"])
    with any_store.read() as tx:
        stacks, tops = read_stacks_and_tops(tx, project)
        mine = read_stacks_and_tops(tx, project, tops_of=("agent1",))
        bare = read_stacks_and_tops(tx, project, tops_of=())
    assert stacks == {None: ids, "agent1": ["s3", "s4"]}
    assert tops == {"s19": '{"n": "s19"}', "s4": '{"n": "s4"}'}
    assert mine == (stacks, {"s4": '{"n": "s4"}'})  # only the tops asked for are read
    assert bare == (stacks, {})


def test_announcements_reach_a_listener_once_per_session_and_transaction(
    any_store: Store, tmp_path: Path
) -> None:
    with any_store.listener(EVENTS_CHANNEL) as listener:
        if listener is None:
            assert any_store.kind == "sqlite"  # its waiters poll: nothing is announced
            return
        with any_store.write():
            for entry in range(3):
                append_event(any_store, _begun("a", entry))
            append_event(any_store, _begun("b", 1))
        append_event(any_store, _begun("c", 1))  # a transaction of its own, committed later
        heard: list[str] = []
        while "c" not in heard:
            got = listener.wait(30.0)
            assert got, f"no announcement within 30 s; heard {heard}"
            heard.extend(got)
    assert heard == ["a", "b", "c"]
