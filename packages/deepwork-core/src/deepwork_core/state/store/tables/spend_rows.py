"""The rows of `review_spend`: one per reviewer call, what it held and what it spent.

A call with a day cap first *holds* its slice of what the day has left (`hold_within`, one
transaction under the store-wide lock `deepwork.day_budget`, so servers on other machines see
it), then *settles* to what it really cost (`settle`); a call without a day cap is written once,
spent (`record_spent`); a call stopped mid-review is *kept* at its whole slice (`keep_whole`).
The day's spending is the sum of its rows, held, kept or spent: a call whose
server was killed keeps counting its whole slice, so a restart never frees money that a
reviewer still running may spend. The same rows are the history the estimates read
(`recent_tasks`): the cost and tokens of the latest tasks of one rule, depth and model.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from typing import Final

from deepwork_core.state.store.port import Store, Tx

#: The advisory lock every day-cap reservation takes, on every server of the store.
DAY_LOCK: Final = "deepwork.day_budget"
HELD: Final = "held"
SPENT: Final = "spent"
#: A hold whose call was stopped mid-review: it counts in full, but no reviewer holds it now.
KEPT: Final = "kept"


@dataclass(frozen=True, slots=True)
class SpendRow:
    """What identifies one reviewer call in the ledger."""

    session_id: str
    #: The task the call belongs to (a task asked twice has two calls with one ref).
    task_ref: str
    #: `<job>/<step>/<run_each>`: the review the estimates group by.
    rule: str
    depth: str
    #: The model asked for ('' for the CLI's own).
    model: str
    runner: str


@dataclass(frozen=True, slots=True)
class TaskSpend:
    """One earlier task: what its calls cost and used together."""

    usd: float
    tokens: int


def _insert(tx: Tx, store: Store, row: SpendRow, state: str, usd: float, tokens: int) -> str:
    spend_id = uuid.uuid4().hex
    tx.execute(
        "INSERT INTO review_spend (spend_id, project_id, session_id, task_ref, rule, depth, "
        "model, runner, state, usd, tokens, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            spend_id,
            store.project.project_id,
            row.session_id,
            row.task_ref,
            row.rule,
            row.depth,
            row.model,
            row.runner,
            state,
            usd,
            tokens,
            store.now(),
        ),
    )
    return spend_id


def spent_between(tx: Tx, start: float, end: float) -> float:
    """What every call of the store held or spent from `start` (included) to `end`."""
    rows = tx.execute("SELECT SUM(usd) FROM review_spend WHERE at >= ? AND at < ?", (start, end))
    total = rows[0][0] if rows else None
    return round(float(total or 0.0), 6)


def held_between(store: Store, start: float, end: float) -> float:
    """What calls held from `start` (included) to `end` and have not settled: reviewers that may
    still be running (or whose server died)."""
    with store.read() as tx:
        rows = tx.execute(
            "SELECT SUM(usd) FROM review_spend WHERE state = ? AND at >= ? AND at < ?",
            (HELD, start, end),
        )
    total = rows[0][0] if rows else None
    return round(float(total or 0.0), 6)


def hold_within(
    store: Store, row: SpendRow, *, cap: float, start: float, end: float, slots: int
) -> tuple[str | None, float, float]:
    """Hold this call's slice of what is left of `cap` between `start` and `end`: what is left
    shared by the `slots` calls that may start alongside it. Returns (the hold's id, its USD,
    what was spent or held before); the id is None when nothing is left (nothing is held)."""
    with store.write(lock=DAY_LOCK) as tx:
        spent = spent_between(tx, start, end)
        free = round(cap - spent, 6)
        if free <= 0:
            return None, 0.0, spent
        share = math.floor(free / max(1, slots) * 1e6) / 1e6  # never rounded up past what is left
        if share <= 0:
            return None, 0.0, spent
        return _insert(tx, store, row, HELD, share, 0), share, spent


def settle(store: Store, spend_id: str, usd: float, tokens: int) -> None:
    """A held call's real cost, once it is known."""
    with store.write() as tx:
        tx.execute(
            "UPDATE review_spend SET state = ?, usd = ?, tokens = ? WHERE spend_id = ?",
            (SPENT, usd, tokens, spend_id),
        )


def keep_whole(store: Store, spend_id: str) -> None:
    """A held call stopped before its cost was known: its whole slice counts, as spent (the
    reviewer may have spent it), and nothing waits for it to settle."""
    with store.write() as tx:
        tx.execute(
            "UPDATE review_spend SET state = ? WHERE spend_id = ? AND state = ?",
            (KEPT, spend_id, HELD),
        )


def release(store: Store, spend_id: str) -> None:
    """Drop a hold whose call never started a reviewer (nothing was spent)."""
    with store.write() as tx:
        tx.execute("DELETE FROM review_spend WHERE spend_id = ?", (spend_id,))


def record_spent(store: Store, row: SpendRow, usd: float, tokens: int) -> None:
    """A call made without a hold, with its cost."""
    with store.write() as tx:
        _insert(tx, store, row, SPENT, usd, tokens)


def spent_today(store: Store, start: float, end: float) -> float:
    """`spent_between` in a read of its own."""
    with store.read() as tx:
        return spent_between(tx, start, end)


def recent_tasks(
    store: Store, rule: str, depth: str, model: str, limit: int = 20
) -> list[TaskSpend]:
    """The latest `limit` finished tasks of this project's `rule` at `depth` with `model`,
    newest first: each one's calls summed."""
    with store.read() as tx:
        rows = tx.execute(
            "SELECT SUM(usd), SUM(tokens), MAX(at) FROM review_spend WHERE project_id = ? AND "
            "rule = ? AND depth = ? AND model = ? AND state = ? GROUP BY task_ref "
            "ORDER BY MAX(at) DESC LIMIT ?",
            (store.project.project_id, rule, depth, model, SPENT, limit),
        )
    return [TaskSpend(usd=float(usd or 0.0), tokens=int(tokens or 0)) for usd, tokens, _ in rows]
