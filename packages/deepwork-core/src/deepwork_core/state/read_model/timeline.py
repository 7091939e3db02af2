"""A run's events as sentences a person reads (the run page, `report --html`; docs/dashboard.md).

`sentence(event)` says what one event means ("`write` submitted `report.md`"), from the event's
typed fields: no Python reprs, no `None`. A long free text inside it (notes, feedback, a reason)
is cut at `TEXT_CHARS` with an ellipsis; `TimelineEntry.detail` keeps the event's fields as
JSON for whoever wants the whole of it (the page shows it on demand).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, Final

from pydantic import BaseModel, ConfigDict

from deepwork_core.evidence.verdicts import GATE_OFF_REASON, VerdictKind
from deepwork_core.state.event_kinds import (
    AbortedEvent,
    ApprovalEndedEvent,
    ApprovalEvent,
    ApprovalRequestedEvent,
    BudgetExhaustedEvent,
    CompletedEvent,
    EventRecord,
    GoToStepEvent,
    NeedsWorkEvent,
    OutputsSubmittedEvent,
    OverrideEvent,
    ParkedEvent,
    ResumedEvent,
    ReviewStalledEvent,
    ReviewUsageEvent,
    ReviewVerdictEvent,
    StaleEvidenceEvent,
    StartedEvent,
    StepBegunEvent,
    StepFinishedEvent,
    UndeclaredChangesEvent,
)
from deepwork_core.state.usage.pair import count_text, tokens_text

#: Characters of a free text (notes, feedback, reasons) kept inside a sentence.
TEXT_CHARS: Final = 200
#: Characters of an event's JSON kept in `TimelineEntry.detail`.
DETAIL_CHARS: Final = 4_000

#: How each kind of verdict reads to a person (never "passed" for what no reviewer judged).
VERDICT_LABELS: Final = {
    VerdictKind.REVIEWER: "passed external review",
    VerdictKind.SELF_REVIEW: "self-reviewed by the agent",
    VerdictKind.OVERRIDE: "accepted by override",
    VerdictKind.UNREVIEWED: "unreviewed (no review applied)",
    VerdictKind.ERROR: "reviewer error",
}


def finished_label(event: StepFinishedEvent) -> str:
    """How an accepted checkpoint's verdict reads: "not reviewed: quality gate off" for one
    accepted while the gate was off, else its kind's label."""
    if any(e.override_reason == GATE_OFF_REASON for e in event.evidence):
        return GATE_OFF_REASON
    return VERDICT_LABELS[event.verdict]


class TimelineEntry(BaseModel):
    """One event of a run as the timeline shows it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    at: datetime | None
    kind: str
    sentence: str
    #: The event's fields as JSON (cut at DETAIL_CHARS), shown when the reader expands the line.
    detail: str


def clip(value: str, limit: int = TEXT_CHARS) -> str:
    flat = " ".join(value.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def names(values: Iterable[str]) -> str:
    """`a`, `b` and `c` (code-quoted, joined for a sentence)."""
    quoted = [f"`{value}`" for value in values]
    if len(quoted) <= 1:
        return "".join(quoted) or "nothing"
    return ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _files(outputs: dict[str, str | list[str]]) -> str:
    paths = [
        p for value in outputs.values() for p in ([value] if isinstance(value, str) else value)
    ]
    return names(paths) if paths else "no files"


def _started(e: StartedEvent) -> str:
    goal = f": “{clip(e.goal)}”" if e.goal else ""
    branch = f", on branch `{e.branch}`" if e.branch else ""
    return f"Started `{e.job}/{e.workflow}`{goal}{branch}"


def _submitted(e: OutputsSubmittedEvent) -> str:
    notes = f"; notes: {clip(e.notes)}" if e.notes else ""
    return f"{names(e.step_ids)} submitted {_files(e.outputs)}{notes}"


def _verdict(e: ReviewVerdictEvent) -> str:
    target = f" on `{e.target_file}`" if e.target_file else ""
    attempt = f" (attempt {e.attempt})" if e.attempt else ""
    outcome = "passed" if e.passed else "failed"
    feedback = f": {clip(e.feedback)}" if e.feedback else ""
    return (
        f"Review {e.review or 'of the step'} of `{e.step_id}`{target} {outcome}{attempt}{feedback}"
    )


def _needs_work(e: NeedsWorkEvent) -> str:
    failed = f", {e.failed_reviews} review(s) failed" if e.failed_reviews else ""
    attempt = f" after attempt {e.attempt}" if e.attempt else ""
    return f"{names(e.step_ids)} sent back to work{attempt}{failed}"


def _go_to(e: GoToStepEvent) -> str:
    cleared = f"; cleared {names(e.cleared_step_ids)}" if e.cleared_step_ids else ""
    return f"Went back from {names(e.from_step_ids)} to {names(e.to_step_ids)}{cleared}"


def _approval(e: ApprovalEvent) -> str:
    decision = "approved" if e.approved else "requested changes to"
    comment = f": {clip(e.comment)}" if e.comment else ""
    who = e.decided_by
    so_far = f" ({e.standing})" if e.standing else ""
    line = f"{who[0].upper()}{who[1:]} {decision} {names(e.step_ids)} on the {e.channel}"
    return line + so_far + comment


def _usage(e: ReviewUsageEvent) -> str:
    where = f"`{e.step_id}` ({e.review})"
    if e.mode == "self":
        return f"Self-review requested for {where}: not metered"
    usage = e.usage
    cost = "cost not reported" if usage.cost_usd is None else f"{usage.cost_usd:.4f} USD"
    return (
        f"Reviewer call for {where}: {e.outcome}, {tokens_text(usage)}, {cost}, {e.seconds:.1f} s"
    )


def _budget(e: BudgetExhaustedEvent) -> str:
    limits = []
    if e.max_cost_usd is not None:
        limits.append(f"{e.max_cost_usd:g} USD")
    if e.max_tokens is not None:
        limits.append(f"{count_text(e.max_tokens)} tokens")
    return (
        f"Review budget spent ({e.spent_usd:.4f} USD, {count_text(e.spent_tokens)} tokens of "
        f"{' / '.join(limits) or 'the budget'}): {names(e.step_ids)} go on with self-review"
    )


_SENTENCES: Final[dict[type[Any], Callable[[Any], str]]] = {
    StartedEvent: _started,
    StepBegunEvent: lambda e: f"Step {names(e.step_ids)} began",
    OutputsSubmittedEvent: _submitted,
    ReviewVerdictEvent: _verdict,
    OverrideEvent: lambda e: f"{names(e.step_ids)} accepted by override: {clip(e.reason)}",
    NeedsWorkEvent: _needs_work,
    GoToStepEvent: _go_to,
    StepFinishedEvent: lambda e: f"{names(e.step_ids)} finished, {finished_label(e)}",
    StaleEvidenceEvent: lambda e: (
        f"Files changed after their step was accepted: {names(s.path for s in e.stale)}"
    ),
    UndeclaredChangesEvent: lambda e: (
        f"Files changed that {names(e.step_ids)} does not declare: {names(e.files)}"
        + (" (strict scope guard)" if e.strict else "")
    ),
    ApprovalRequestedEvent: lambda e: (
        f"Approval asked for {names(e.step_ids)}: {clip(e.prompt)}"
        + (f"; shown {names(s.path for s in e.shown)}" if e.shown else "")
    ),
    ApprovalEvent: _approval,
    ApprovalEndedEvent: lambda e: (
        f"Approval request for {names(e.step_ids)} ended {e.state}: {clip(e.why)}"
    ),
    AbortedEvent: lambda e: f"Aborted: {clip(e.reason)}",
    CompletedEvent: lambda e: (
        "Completed" + (f" ({e.steps_completed} steps)" if e.steps_completed is not None else "")
    ),
    ReviewUsageEvent: _usage,
    ReviewStalledEvent: lambda e: (
        f"Reviewer of `{e.step_id}` ({e.review}) stalled after {e.waited_seconds:g} s "
        f"(try {e.try_number})" + ("; started again" if e.retrying else "")
    ),
    BudgetExhaustedEvent: _budget,
    ParkedEvent: lambda e: (
        f"Parked at {names(e.step_ids)} ({e.reason.replace('_', ' ')})"
        + (f" on {e.machine}" if e.machine else "")
        + ": the agent stopped; a person decides, then `deepwork run --resume`"
    ),
    ResumedEvent: lambda e: (
        f"Resumed at {names(e.step_ids)} on {e.machine} in {e.root}"
        + (
            f" (taken over from {e.from_root} on {e.from_machine})"
            if e.adopted
            else (f" (served from {e.from_root} before)" if e.from_root else "")
        )
    ),
}


def sentence(event: EventRecord) -> str:
    """What `event` means, in one sentence; an unknown kind lists its fields as JSON."""
    render = _SENTENCES.get(type(event))
    if render is not None:
        return str(render(event))
    fields = ", ".join(f"{key}: {json.dumps(value)}" for key, value in event.details().items())
    return clip(f"{event.event}: {fields}" if fields else str(event.event))


def timeline_entry(event: EventRecord) -> TimelineEntry:
    detail = json.dumps(event.details(), ensure_ascii=False, indent=1)
    if len(detail) > DETAIL_CHARS:
        more = len(detail) - DETAIL_CHARS
        detail = f"{detail[:DETAIL_CHARS]}\n… {more} more characters (`deepwork log` has them)"
    return TimelineEntry(
        at=event.ts, kind=str(event.event), sentence=sentence(event), detail=detail
    )
