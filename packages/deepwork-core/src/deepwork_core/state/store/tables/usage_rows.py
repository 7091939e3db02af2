"""The rows of `run_usage`: what the reviews logged to each session cost, summed as they are
logged (docs/quality-gate.md, "What reviews cost").

Every `review_usage` event adds its call to its session's row in the transaction that appends
it (`deepwork_core.state.events.append_event`, and the import of an old log file), so a run's
totals are one indexed row whatever the length of its log: the run page, the run list, `deepwork
status`, `get_active_workflow` and the review budget read it instead of every call. The sums
are made in the order the calls were logged, as `RunUsage.of` makes them from the events, so
both give the same figures. Rows written before the table existed are filled by the migration
to schema version 10, which reads each `review_usage` event once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from deepwork_core.base.errors import DeepWorkError
from deepwork_core.state.event_kinds import EventName, ReviewUsageEvent, parse_line
from deepwork_core.state.store.schema import Executes as Tx
from deepwork_core.state.usage.pair import RunUsage

_COLUMNS: Final = (
    "calls",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_creation_tokens",
    "cost_usd",
    "unpriced_calls",
    "self_reviews",
    "reused_verdicts",
    "saved_usd",
)
_SUMS: Final = ", ".join(f"{name} = run_usage.{name} + excluded.{name}" for name in _COLUMNS)
_UPSERT: Final = (
    f"INSERT INTO run_usage (project_id, session_id, {', '.join(_COLUMNS)}) "  # noqa: S608
    f"VALUES (?, ?, {', '.join('?' for _ in _COLUMNS)}) "
    f"ON CONFLICT (project_id, session_id) DO UPDATE SET {_SUMS}"
)
#: Events read a page at a time when the migration fills the table.
_FILL_PAGE: Final = 5_000


def _increments(event: ReviewUsageEvent) -> tuple[int | float, ...]:
    """What one call adds to each column (as `sum_usage` counts it)."""
    if event.mode == "self":
        return (0, 0, 0, 0, 0, 0.0, 0, 1, 0, 0.0)
    if event.mode == "reused":
        return (0, 0, 0, 0, 0, 0.0, 0, 0, 1, event.saved_usd or 0.0)
    usage = event.usage
    unpriced = usage.cost_usd is None
    return (
        1,
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read_tokens,
        usage.cache_creation_tokens,
        0.0 if unpriced else float(usage.cost_usd or 0.0),
        int(unpriced),
        0,
        0,
        0.0,
    )


def add_usage(tx: Tx, project_id: str, session_id: str, event: ReviewUsageEvent) -> None:
    """Add one logged call to its session's totals (in the transaction that logs it)."""
    tx.execute(_UPSERT, (project_id, session_id, *_increments(event)))


def add_usage_line(tx: Tx, project_id: str, session_id: str, text: str) -> None:
    """`add_usage` for a line as a log holds it; a line that does not read adds nothing (its
    readers report it as `events.corrupt`)."""
    try:
        event = parse_line(text, f"session {session_id}")
    except DeepWorkError:
        return
    if isinstance(event, ReviewUsageEvent):
        add_usage(tx, project_id, session_id, event)


def fill_usage(tx: Tx) -> None:
    """Sum every `review_usage` event logged before the table existed, in the order logged."""
    after = 0
    while True:
        rows = tx.execute(
            "SELECT seq, project_id, session_id, body FROM events WHERE kind = ? AND seq > ? "
            "ORDER BY seq LIMIT ?",
            (str(EventName.REVIEW_USAGE), after, _FILL_PAGE),
        )
        for seq, project_id, session_id, body in rows:
            add_usage_line(tx, str(project_id), str(session_id), str(body))
            after = int(seq)
        if len(rows) < _FILL_PAGE:
            return


def _usage(row: Sequence[object]) -> RunUsage:
    calls, inputs, outputs, read, created, cost, unpriced, selfs, reused, saved = row
    return RunUsage.summed(
        calls=int(str(calls)),
        input_tokens=int(str(inputs)),
        output_tokens=int(str(outputs)),
        cache_read_tokens=int(str(read)),
        cache_creation_tokens=int(str(created)),
        cost_usd=float(str(cost)),
        unpriced_calls=int(str(unpriced)),
        self_reviews=int(str(selfs)),
        reused_verdicts=int(str(reused)),
        saved_usd=float(str(saved)),
    )


def usage_of(tx: Tx, project_id: str, session_ids: Iterable[str]) -> dict[str, RunUsage]:
    """The totals of each of `session_ids` that has logged a review call (one indexed query)."""
    wanted = list(dict.fromkeys(session_ids))
    if not wanted:
        return {}
    rows = tx.execute(
        f"SELECT session_id, {', '.join(_COLUMNS)} FROM run_usage "  # noqa: S608
        f"WHERE project_id = ? AND session_id IN ({', '.join('?' for _ in wanted)})",
        (project_id, *wanted),
    )
    return {str(row[0]): _usage(row[1:]) for row in rows}


def delete_usage(tx: Tx, project_id: str, session_id: str) -> None:
    """Drop a session's totals (with its log, when the session is pruned)."""
    tx.execute(
        "DELETE FROM run_usage WHERE project_id = ? AND session_id = ?", (project_id, session_id)
    )
