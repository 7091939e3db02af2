"""The store's review totals per run (`run_usage`, docs/quality-gate.md): summed as each
`review_usage` event is logged, equal to summing the events themselves, filled for the events
logged before the table existed, and dropped with the log."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from deepwork_core.base.identifiers import SessionId
from deepwork_core.state.event_kinds import ReviewUsageEvent, StepBegunEvent
from deepwork_core.state.events import append_event, delete_event_log, read_events
from deepwork_core.state.store.port import Store
from deepwork_core.state.usage.pair import RunUsage
from deepwork_core.state.usage.totals import run_usage, sum_usage

RUN = SessionId("sess_totals")


def _call(**fields: object) -> ReviewUsageEvent:
    base: dict[str, object] = {
        "ts": datetime(2026, 12, 1, 9, 0, tzinfo=UTC),
        "session_id": RUN,
        "job": "report",
        "step_id": "write",
        "review": "step",
        "outcome": "passed",
    }
    return ReviewUsageEvent.model_validate({**base, **fields})


CALLS = [
    _call(input_tokens=1_000, output_tokens=20, cache_read_tokens=7, cost_usd=0.1),
    _call(input_tokens=3, cache_creation_tokens=11, cost_usd=None),  # unpriced
    _call(mode="self", outcome="requested", cost_usd=None),
    _call(mode="reused", outcome="passed", cost_usd=None, saved_usd=0.2),
    _call(output_tokens=5, cost_usd=0.2),
]


def _log(store: Store) -> None:
    append_event(store, StepBegunEvent(ts=CALLS[0].ts, session_id=RUN, step_ids=["write"]))
    for event in CALLS:
        append_event(store, event)


def test_the_totals_are_the_sum_of_the_logged_calls(store: Store) -> None:
    assert run_usage(store, RUN) == RunUsage()
    _log(store)
    totals = run_usage(store, RUN)
    assert totals == sum_usage(read_events(store, RUN))
    assert (totals.calls, totals.unpriced_calls, totals.self_reviews) == (3, 1, 1)
    assert (totals.reused_verdicts, totals.saved_usd, totals.cost_usd) == (1, 0.2, 0.3)
    assert totals.note is not None
    assert "1 reviewer call(s) reported no cost" in totals.note
    assert run_usage(store, SessionId("sess_other")) == RunUsage()


def test_a_store_migrated_from_version_9_sums_the_calls_logged_before(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    store = make_store(tmp_path)
    _log(store)
    expected = run_usage(store, RUN)
    with store.write() as tx:  # the store as version 9 left it: no totals
        tx.execute("DROP TABLE run_usage")
        tx.execute("DROP INDEX events_by_project_kind")
        tx.execute("UPDATE store_meta SET value = '9' WHERE key = 'schema_version'")
        tx.execute(
            "INSERT INTO events (project_id, session_id, ts, kind, body) "
            "VALUES (?, ?, 0, 'review_usage', 'not json')",
            (store.project.project_id, RUN),
        )  # a line that does not read adds nothing
    store.close()
    again = make_store(tmp_path)
    assert run_usage(again, RUN) == expected


def test_pruning_a_log_drops_its_totals(store: Store) -> None:
    _log(store)
    delete_event_log(store, RUN)
    assert run_usage(store, RUN) == RunUsage()
    append_event(store, CALLS[0])
    assert run_usage(store, RUN).calls == 1
