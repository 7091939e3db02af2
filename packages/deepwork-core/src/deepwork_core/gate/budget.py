"""The review budget of a workflow run: `quality_gate.budget` (docs/quality-gate.md, "Budgets").

A run (a top-level workflow with every workflow nested in it) may spend at most `max_cost_usd`
and `max_tokens` on external reviews. What it spent is the sum of its `review_usage` events.
Before each reviewer call the gate asks `usd_left` (passed on as `--max-budget-usd`); once the
run has spent its budget no reviewer starts and `finished_step` answers
`quality_gate.budget_exhausted`, which is not an attempt: the run goes on with self-review.
A reviewer that stalls twice (`quality_gate.reviewer_stalled`) is handled the same way: the
answer names the self-review instruction file (`with_self_review`). Self-reviews are counted
here too (`log_self_reviews`), though they cost nothing DeepWork can see.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from deepwork_core.base.config import DEFAULT_REVIEW_DEPTH, ReviewBudget
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError, QualityGateError
from deepwork_core.base.identifiers import SessionId
from deepwork_core.gate.checkpoint import Checkpoint
from deepwork_core.gate.costs.day_cap import day_window
from deepwork_core.gate.quality import (
    QualityReviewTask,
    self_review_feedback,
    write_self_review_file,
)
from deepwork_core.state.event_kinds import (
    BudgetExhaustedEvent,
    ReviewUsageEvent,
)
from deepwork_core.state.events import append_event, read_events
from deepwork_core.state.sessions import NOT_AN_ATTEMPT, utc_now
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.tables.spend_rows import spent_today
from deepwork_core.state.usage.pair import RequestUsage, RunUsage, count_text, tokens_text
from deepwork_core.state.usage.totals import run_usage

#: At most this many items are named in the "spent on" list.
_SPENT_ON_ITEMS = 5


def usd_left(budget: ReviewBudget, spent: RunUsage) -> float | None:
    """What is left of the cost budget (never below 0); None when there is no cost budget."""
    if budget.max_cost_usd is None:
        return None
    return max(0.0, round(budget.max_cost_usd - spent.cost_usd, 6))


def is_spent(budget: ReviewBudget, spent: RunUsage) -> bool:
    """True when the run reached either limit of its budget."""
    over_cost = budget.max_cost_usd is not None and spent.cost_usd >= budget.max_cost_usd
    over_tokens = budget.max_tokens is not None and spent.tokens >= budget.max_tokens
    return over_cost or over_tokens


def check_budget(store: Store, run_id: SessionId, budget: ReviewBudget) -> RunUsage:
    """What run `run_id` spent; raises `quality_gate.budget_exhausted` when that is the budget."""
    spent = run_usage(store, run_id)
    if is_spent(budget, spent):
        raise budget_exhausted(store, run_id, budget, spent)
    return spent


class BudgetLedger:
    """The USD that reviewer calls running now have reserved, per run.

    Parallel reviewers cannot together overspend: each call reserves its slice of what is left
    before it starts (`reserve`, passed on as `--max-budget-usd`) and gives it back once its
    real cost is logged (`release`). What is left is the budget less what the run's log says it
    spent and less what running calls hold; it is shared among the calls that may still start
    alongside them (`slots`), so the run's total stays within its budget plus at most one
    call's overrun. Safe to use from several threads.
    """

    def __init__(self, budget: ReviewBudget) -> None:
        self.budget = budget
        self._lock = threading.Lock()
        self._held: dict[str, list[float]] = {}

    def reserve(self, store: Store, run_id: SessionId, slots: int) -> float | None:
        """This call's slice in USD (None: no cost budget); raises
        `quality_gate.budget_exhausted` once the run spent or holds its whole budget."""
        if self.budget.max_cost_usd is None and self.budget.max_tokens is None:
            return None
        with self._lock:
            spent = check_budget(store, run_id, self.budget)
            if self.budget.max_cost_usd is None:
                return None
            held = self._held.setdefault(run_id, [])
            free = round(self.budget.max_cost_usd - spent.cost_usd - sum(held), 6)
            if free <= 0:
                raise budget_exhausted(store, run_id, self.budget, spent)
            share = round(free / max(1, slots - len(held)), 6)
            held.append(share)
            return share

    def release(self, run_id: SessionId, share: float) -> None:
        """Give back a slice once the call's real cost is in the log."""
        with self._lock:
            held = self._held.get(run_id, [])
            if share in held:
                held.remove(share)
            if not held:
                self._held.pop(run_id, None)


def budget_exhausted(
    store: Store, run_id: SessionId, budget: ReviewBudget, spent: RunUsage
) -> QualityGateError:
    """The error answering a checkpoint of a run that spent its budget: what went on what."""
    limits = []
    if budget.max_cost_usd is not None:
        limits.append(f"{budget.max_cost_usd:g} USD")
    if budget.max_tokens is not None:
        limits.append(f"{count_text(budget.max_tokens)} tokens")
    return QualityGateError(
        f"the review budget of this workflow run ({' / '.join(limits)}) is spent: "
        f"{spent.cost_usd:.4f} USD and {tokens_text(spent)} in {spent.calls} reviewer "
        f"call(s){spent_on(store, run_id)}. No reviewer was started and this was not "
        "counted as an attempt; your outputs and notes are recorded. The run continues with "
        "self-review, unless a human raises quality_gate.budget in .deepwork/config.yml.",
        code=ErrorCode.QUALITY_GATE_BUDGET_EXHAUSTED,
    )


def spent_on(store: Store, run_id: SessionId) -> str:
    """`, on: write/report 0.8000 USD (2 calls); …`, the most expensive reviews first."""
    try:
        events = read_events(store, run_id)
    except DeepWorkError:
        return ""
    calls: dict[str, list[RequestUsage]] = defaultdict(list)
    for event in events:
        if isinstance(event, ReviewUsageEvent) and event.mode == "external":
            calls[f"{event.job}/{event.step_id}/{event.review}"].append(event.usage)
    totals = {label: RunUsage.of(usages) for label, usages in calls.items()}
    ranked = sorted(totals.items(), key=lambda item: -item[1].cost_usd)[:_SPENT_ON_ITEMS]
    listed = [
        f"{label} {spent.cost_usd:.4f} USD ({spent.calls} call(s))" for label, spent in ranked
    ]
    return f", on: {'; '.join(listed)}" if listed else ""


# Gate errors in NOT_AN_ATTEMPT: the engine gives the attempt back, and the answer hands the
# agent the self-review instruction file as the way on.


def with_self_review(
    exc: QualityGateError,
    checkpoint: Checkpoint,
    tasks: Sequence[QualityReviewTask],
    budget: ReviewBudget | None = None,
    day_cap: float | None = None,
) -> QualityGateError:
    """`exc`, or, when it is not an attempt, `exc` naming the self-review file it wrote; a
    spent budget (the run's `budget`, the project's `day_cap`) is logged as `budget_exhausted`."""
    if exc.code not in NOT_AN_ATTEMPT:
        return exc
    store, run_id = checkpoint.store, checkpoint.resolved_run_id
    if exc.code == ErrorCode.QUALITY_GATE_BUDGET_EXHAUSTED:
        spent, limits = run_usage(store, run_id), budget or ReviewBudget()
        event = BudgetExhaustedEvent(
            ts=utc_now(),
            session_id=run_id,
            job=checkpoint.job.name,
            step_ids=list(checkpoint.step_ids),
            spent_usd=spent.cost_usd,
            spent_tokens=spent.tokens,
            max_cost_usd=limits.max_cost_usd,
            max_tokens=limits.max_tokens,
        )
        append_event(store, event)
    elif exc.code == ErrorCode.QUALITY_GATE_DAY_BUDGET_EXHAUSTED and day_cap is not None:
        start, end = day_window(store.now())
        day_event = BudgetExhaustedEvent(
            ts=utc_now(),
            session_id=run_id,
            job=checkpoint.job.name,
            step_ids=list(checkpoint.step_ids),
            spent_usd=spent_today(store, start, end),
            spent_tokens=0,
            max_cost_usd=day_cap,
            cap="day",
            resets_at=datetime.fromtimestamp(end, UTC),
        )
        append_event(store, day_event)
    path = write_self_review_file(checkpoint, tasks)
    return QualityGateError(f"{exc.message} {self_review_feedback(path)}", code=exc.code)


def log_self_reviews(checkpoint: Checkpoint, tasks: Sequence[QualityReviewTask]) -> None:
    """One `review_usage` event (mode `self`: counted, not metered) per self-review task."""
    for task in tasks:
        event = review_usage_event(checkpoint, task, mode="self", outcome="requested")
        append_event(checkpoint.store, event)


def review_usage_event(
    checkpoint: Checkpoint,
    task: QualityReviewTask,
    usage: RequestUsage | None = None,
    **figures: Any,
) -> ReviewUsageEvent:
    """The `review_usage` event of `task`, for the log of the checkpoint's top-level run:
    what identifies the review, the call's `usage` (None: a self-review, nothing metered) and
    its other `figures` (mode, outcome, seconds, runner...)."""
    nested = checkpoint.session_id != checkpoint.resolved_run_id
    metered = usage.model_dump() if usage is not None else {}
    return ReviewUsageEvent(
        **review_event_fields(checkpoint, task),
        reviewed_session_id=checkpoint.session_id if nested else None,
        criteria=len(task.criteria),
        criteria_sha256=task.criteria_sha256,
        **({"sources": list(task.sources)} if task.sources else {}),
        **({"sources_sha256": dict(task.sources_sha256)} if task.sources_sha256 else {}),
        depth=task.depth or DEFAULT_REVIEW_DEPTH,
        attempt=checkpoint.attempt or None,
        **metered,
        **figures,
    )


def review_event_fields(checkpoint: Checkpoint, task: QualityReviewTask) -> dict[str, Any]:
    """What names a review in the events of the checkpoint's top-level run (`review_usage`,
    `review_stalled`): now, the run, the job, the step, the review and its target file."""
    return {
        "ts": utc_now(),
        "session_id": checkpoint.resolved_run_id,
        "job": checkpoint.job.name,
        "step_id": task.step_id,
        "review": task.run_each,
        "target_file": task.target_file,
    }
