"""One session's event log read a page at a time: what a run page, `deepwork report` and
`deepwork log` show of a log of any length (docs/limits.md, "One run of a million events").

Each read is indexed and returns the newest rows it asks for. What a page leaves out is counted,
but a count stops at `COUNT_CAP`: a number above it means "more than 10,000", so a log of a
million events costs what a log of ten thousand costs (`bounded_count_text` says it that way).
Records are checked as `deepwork_core.state.events.read_events` checks them (`events.corrupt`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from deepwork_core.base.identifiers import SessionId
from deepwork_core.state.event_kinds import EventRecord, parse_line
from deepwork_core.state.store.port import Store, Tx

#: Counts of what a page leaves out are exact up to this many; a count above it is only known
#: to be larger, and views say "more than 10,000".
COUNT_CAP: Final = 10_000

#: Records already read from one session's log, by number: what a second read of the same
#: events reuses instead of checking them again.
ReadRecords = dict[int, EventRecord]


def bounded_count_text(count: int, *, cap: int = COUNT_CAP) -> str:
    """`12` or `more than 10,000`: a count read by this module, in a person's words."""
    return f"more than {cap:,}" if count > cap else f"{count:,}"


def _count_up_to(tx: Tx, where: str, params: Sequence[object], limit: int) -> int:
    """How many events match `where`, reading at most `limit` index entries."""
    [(counted,)] = tx.execute(
        f"SELECT COUNT(*) FROM (SELECT 1 FROM events WHERE {where} LIMIT ?) AS counted",  # noqa: S608
        (*params, limit),
    )
    return int(counted)


def _of_kinds(
    tx: Tx, key: tuple[str, str], kinds: frozenset[str], *, after: int = 0, newest: int = -1
) -> list[Sequence[object]]:
    """The rows `(seq, body)` of the session's events of `kinds` numbered above `after` (only
    the `newest` of them when not -1), newest first. One query per kind, each on its own
    stretch of the `events_by_kind` index: a single `kind IN (...)` query is answered by
    walking the whole session in the order of `seq` on SQLite, a million rows for a long run."""
    sql = (
        "SELECT seq, body FROM events WHERE project_id = ? AND session_id = ? AND kind = ? "
        "AND seq > ? ORDER BY seq DESC"
    )
    bounded = newest >= 0  # PostgreSQL refuses a negative LIMIT
    rows: list[Sequence[object]] = []
    for kind in sorted(kinds):
        params = (*key, kind, after, newest) if bounded else (*key, kind, after)
        rows.extend(tx.execute(sql + " LIMIT ?" if bounded else sql, params))
    rows.sort(key=lambda row: int(str(row[0])), reverse=True)
    return rows if newest < 0 else rows[:newest]


def _records(rows: Iterable[Sequence[object]], where: str, memo: ReadRecords) -> list[EventRecord]:
    """The rows `(seq, body)` as records, each checked once (`memo` keeps them)."""
    records = []
    for seq, body in rows:
        number = int(str(seq))
        record = memo.get(number)
        if record is None:
            record = memo[number] = parse_line(str(body), f"{where}, event #{seq}")
        records.append(record)
    return records


@dataclass(frozen=True, slots=True)
class EventScan:
    """A session's log read in bounded memory (`scan_events`): how many events it holds (above
    `COUNT_CAP`: more than that), the newest of them, and every event of the kinds asked for."""

    total: int
    recent: list[EventRecord]
    selected: list[EventRecord]

    @property
    def omitted(self) -> int:
        """Events older than `recent` that were counted but not read (above `COUNT_CAP`: more)."""
        return self.total - len(self.recent)


def scan_events(
    store: Store,
    session_id: SessionId,
    *,
    keep_last: int,
    kinds: frozenset[str],
    memo: ReadRecords | None = None,
    cap: int = COUNT_CAP,
) -> EventScan:
    """The newest `keep_last` events of a session and all its events of `kinds`: the store
    counts the rest, up to `cap` beyond the ones read, without handing them over, so a log of
    any size costs little memory and time. `memo` holds the records read before, and gets the
    ones read now."""
    key = (store.project.project_id, session_id)
    where = f"store {store.display}, session {session_id}"
    keep = max(keep_last, 0)
    with store.read() as tx:
        total = _count_up_to(tx, "project_id = ? AND session_id = ?", key, cap + keep + 1)
        recent = tx.execute(
            "SELECT seq, body FROM events WHERE project_id = ? AND session_id = ? "
            "ORDER BY seq DESC LIMIT ?",
            (*key, keep),
        )
        chosen = _of_kinds(tx, key, kinds)
    memo = {} if memo is None else memo
    return EventScan(
        total, _records(reversed(recent), where, memo), _records(reversed(chosen), where, memo)
    )


def newest_of_kinds(
    store: Store,
    session_id: SessionId,
    kinds: frozenset[str],
    *,
    limit: int,
    after: int = 0,
    memo: ReadRecords | None = None,
    count: frozenset[str] | None = None,
    cap: int = COUNT_CAP,
) -> tuple[dict[str, int], list[EventRecord]]:
    """How many events of each of `kinds` a session holds (kinds it has none of are left out;
    only those of `count` when given; each count reads at most `cap + limit + 1` index
    entries, so a count above `cap` beyond the `limit` shown means more), and the newest
    `limit` events of those kinds numbered above `after`, oldest first. Records are checked
    once (`memo`: as `scan_events`)."""
    key = (store.project.project_id, session_id)
    where = f"store {store.display}, session {session_id}"
    if not kinds:
        return {}, []
    counted = sorted(kinds if count is None else count & kinds)
    of_kind = "project_id = ? AND session_id = ? AND kind = ?"
    with store.read() as tx:
        counts = {
            kind: _count_up_to(tx, of_kind, (*key, kind), cap + limit + 1) for kind in counted
        }
        newest = _of_kinds(tx, key, kinds, after=after, newest=max(limit, 0))
    return (
        {kind: n for kind, n in counts.items() if n},
        _records(reversed(newest), where, {} if memo is None else memo),
    )


@dataclass(frozen=True, slots=True)
class EventPage:
    """One page of a session's log (`page_events`): its events oldest first, each with its
    number in the store, and how many older events were left for the next page (above
    `COUNT_CAP`: more than that)."""

    events: list[tuple[int, EventRecord]]
    older: int

    @property
    def next_before(self) -> int | None:
        """The number to page back from (`before=`) for the older events; None: none left."""
        return self.events[0][0] if self.older and self.events else None


def page_events(
    store: Store,
    session_id: SessionId,
    *,
    limit: int,
    before: int | None = None,
    cap: int = COUNT_CAP,
) -> EventPage:
    """The newest `limit` events of a session numbered below `before` (all when None), oldest
    first, and a count of the older ones up to `cap + 1`: two indexed reads of at most
    `limit` and `cap + 1` entries, whatever the size of the log."""
    key = (store.project.project_id, session_id)
    below = "" if before is None else " AND seq < ?"
    bound: tuple[object, ...] = key if before is None else (*key, before)
    with store.read() as tx:
        rows = tx.execute(
            "SELECT seq, body FROM events WHERE project_id = ? AND session_id = ?"  # noqa: S608
            f"{below} ORDER BY seq DESC LIMIT ?",
            (*bound, max(limit, 0)),
        )
        older = 0
        if rows and len(rows) == limit:
            older = _count_up_to(
                tx, "project_id = ? AND session_id = ? AND seq < ?", (*key, rows[-1][0]), cap + 1
            )
    where = f"store {store.display}, session {session_id}"
    oldest_first = list(reversed(rows))
    records = _records(oldest_first, where, {})
    numbers = [int(str(seq)) for seq, _ in oldest_first]
    return EventPage(list(zip(numbers, records, strict=True)), older)


def nth_newest_seq(store: Store, session_id: SessionId, kind: str, nth: int) -> int:
    """The number of the session's `nth` newest event of `kind` (1: its newest); 0 when it has
    fewer than `nth` of them."""
    with store.read() as tx:
        rows = tx.execute(
            "SELECT seq FROM events WHERE project_id = ? AND session_id = ? AND kind = ? "
            "ORDER BY seq DESC LIMIT 1 OFFSET ?",
            (store.project.project_id, session_id, kind, max(nth - 1, 0)),
        )
    return int(rows[0][0]) if rows else 0


def last_event_at(store: Store, session_id: SessionId) -> datetime | None:
    """When the session's last event was logged (None: it has none): the time of its newest
    row, found through the index whatever the length of its log."""
    with store.read() as tx:
        rows = tx.execute(
            "SELECT ts FROM events WHERE project_id = ? AND session_id = ? "
            "ORDER BY seq DESC LIMIT 1",
            (store.project.project_id, session_id),
        )
    stamp = rows[0][0] if rows else None
    return datetime.fromtimestamp(float(stamp), UTC) if stamp is not None else None
