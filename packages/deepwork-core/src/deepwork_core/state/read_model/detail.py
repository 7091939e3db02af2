"""One session in full, as its run page shows it (docs/dashboard.md): `session_detail` reads it as
a `SessionDetail`: its summary first (outcome, steps done, every verdict labelled as what it is,
every approval, review cost), its accepted outputs with whether they went stale, and its timeline
as sentences. The event log is read in bounded memory and time (`scan_events`): the timeline
holds the newest `max_events` events and says how many older ones it left out; the summary lists
the newest `MAX_VERDICTS` accepted checkpoints and counts the older ones without reading them, and
still reads every approval and review call of the log (the review cost is their sum). The
session's own line is the list's (`runs.session_view`).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from deepwork_core.base.errors import DeepWorkError
from deepwork_core.base.identifiers import SessionId
from deepwork_core.evidence.hashes import sha256_file
from deepwork_core.evidence.verdicts import VerdictKind
from deepwork_core.state.event_kinds import (
    ApprovalEndedEvent,
    ApprovalEvent,
    EventName,
    EventRecord,
    OverrideEvent,
    ReviewUsageEvent,
    ReviewVerdictEvent,
    StepFinishedEvent,
)
from deepwork_core.state.event_pages import (
    EventScan,
    ReadRecords,
    last_event_at,
    newest_of_kinds,
    nth_newest_seq,
    scan_events,
)
from deepwork_core.state.read_model.runs import (
    ListedStatus,
    SessionView,
    reviewing_sessions,
    session_view,
)
from deepwork_core.state.read_model.timeline import (
    TimelineEntry,
    clip,
    finished_label,
    timeline_entry,
)
from deepwork_core.state.sessions import Session, SessionStore
from deepwork_core.state.usage.pair import RunUsage
from deepwork_core.state.usage.totals import run_usage

#: Events the timeline of one run page shows (the newest); older ones are counted, not shown.
DEFAULT_MAX_EVENTS: Final = 500
#: Reviewer verdicts and review calls listed in full on one run page (the newest).
MAX_LISTED: Final = 200
#: Accepted checkpoints the summary lists (the newest); older ones are counted, not read.
MAX_VERDICTS: Final = 200
#: What a verdict line is made of: the events of these kinds after the newest checkpoint left
#: out (a checkpoint's reason is in the overrides and reviews before it), `VERDICT_WINDOW` at most.
VERDICT_KINDS: Final = frozenset(
    {EventName.STEP_FINISHED, EventName.OVERRIDE, EventName.REVIEW_VERDICT}
)
VERDICT_WINDOW: Final = 5 * MAX_VERDICTS
#: Kinds the summary reads from the whole log, however long it is.
SUMMARY_KINDS: Final = frozenset({EventName.APPROVAL, EventName.APPROVAL_ENDED})


class _View(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class VerdictLine(_View):
    """How one checkpoint was accepted, labelled as what it is (never "passed" unless a
    reviewer passed it), with the reason given."""

    at: datetime
    step_ids: list[str]
    kind: VerdictKind
    label: str
    reason: str | None


class ApprovalLine(_View):
    at: datetime
    step_ids: list[str]
    approved: bool
    actor: str
    channel: str
    comment: str | None
    #: The trusted approver who signed; None: unsigned.
    signer: str | None = None
    #: Who decided in a person's words (`event_kinds.decided_by`).
    decided_by: str = ""


class EndLine(_View):
    """How one approval request of the run ended (`approval_ended`)."""

    at: datetime
    step_ids: list[str]
    request_id: str
    #: approved, rejected, expired, cancelled or failed.
    state: str
    why: str


class SessionSummary(_View):
    """What a reader wants first: how the run ended and on what it rests."""

    #: How the run stands, in the words that follow its status ("every step of the workflow
    #: done", "why: …", "at step `x`").
    outcome: str
    steps_done: int
    #: The newest accepted checkpoints (at most MAX_VERDICTS), and how many older ones there are.
    verdicts: list[VerdictLine]
    verdicts_omitted: int = 0
    approvals: list[ApprovalLine]
    review_usage: RunUsage
    #: How each of the run's approval requests ended, oldest first.
    ended: list[EndLine] = Field(default_factory=list)


class OutputLine(_View):
    """One accepted output file with the verdict that covers it and whether it went stale."""

    step_id: str
    output: str
    path: str
    sha256: str | None
    verdict: VerdictKind
    current_sha256: str | None
    stale: bool


class SessionDetail(_View):
    run: SessionView
    inputs: dict[str, str | list[str]]
    summary: SessionSummary
    outputs: list[OutputLine]
    #: The newest reviewer verdicts and review calls (at most MAX_LISTED of each).
    reviews: list[ReviewVerdictEvent]
    review_calls: list[ReviewUsageEvent]
    #: The newest events, oldest first, and how many older ones were left out.
    timeline: list[TimelineEntry]
    events_total: int = 0
    events_omitted: int = 0
    #: Why the log could not be read (the summary then rests on the session file alone).
    timeline_problem: str | None = None


def _outcome(run: SessionView) -> str:
    """How the run stands, said after its status (a page shows the status beside it, so the
    text never repeats it)."""
    steps = ", ".join(run.steps)
    if run.status is ListedStatus.COMPLETED:
        return "every step of the workflow done"
    if run.status is ListedStatus.ABORTED:
        return f"why: {clip(run.abort_reason or 'no reason given')}"
    if run.status is ListedStatus.AWAITING_APPROVAL:
        return f"step {steps} waits for a human's decision"
    if run.status is ListedStatus.PARKED:
        return f"at step {steps}, waiting for a person (docs/headless.md)"
    if run.status is ListedStatus.REVIEWING:
        return f"at step {steps}, its reviews still running"
    return f"at step {steps}"


def _verdicts(events: list[EventRecord]) -> list[VerdictLine]:
    """One line per accepted checkpoint, with its reason: the override's, or the passing
    reviews' feedback, or why nothing was reviewed."""
    lines: list[VerdictLine] = []
    override: dict[str, str] = {}
    feedback: dict[str, list[str]] = {}
    for event in events:
        if isinstance(event, OverrideEvent):
            override.update(dict.fromkeys(event.step_ids, event.reason))
        elif isinstance(event, ReviewVerdictEvent) and event.passed and event.feedback:
            feedback.setdefault(event.step_id, []).append(event.feedback)
        elif isinstance(event, StepFinishedEvent):
            steps = event.step_ids
            given = next((e.override_reason for e in event.evidence if e.override_reason), None)
            reason = given or {
                VerdictKind.OVERRIDE: next((override[s] for s in steps if s in override), None),
                VerdictKind.REVIEWER: "; ".join(f for s in steps for f in feedback.get(s, [])),
                VerdictKind.SELF_REVIEW: "the agent followed the review instructions itself",
                VerdictKind.UNREVIEWED: "no review applies to these outputs",
            }.get(event.verdict)
            lines.append(
                VerdictLine(
                    at=event.ts,
                    step_ids=list(steps),
                    kind=event.verdict,
                    label=finished_label(event),
                    reason=clip(reason) if reason else None,
                )
            )
            for step in steps:
                override.pop(step, None)
                feedback.pop(step, None)
    return lines


def _approvals(events: list[EventRecord]) -> list[ApprovalLine]:
    return [
        ApprovalLine(
            at=e.decided_at,
            step_ids=list(e.step_ids),
            approved=e.approved,
            actor=e.actor,
            channel=e.channel,
            comment=e.comment,
            signer=e.signer,
            decided_by=e.decided_by,
        )
        for e in events
        if isinstance(e, ApprovalEvent)
    ]


def _ends(events: list[EventRecord]) -> list[EndLine]:
    return [
        EndLine(
            at=e.ts, step_ids=list(e.step_ids), request_id=e.request_id, state=e.state, why=e.why
        )
        for e in events
        if isinstance(e, ApprovalEndedEvent)
    ]


def _outputs(project_root: Path, session: Session) -> list[OutputLine]:
    lines: list[OutputLine] = []
    for item in session.evidence:
        current = sha256_file(project_root, item.path)
        lines.append(
            OutputLine(
                step_id=item.step_id,
                output=item.output,
                path=item.path,
                sha256=item.sha256,
                verdict=item.verdict,
                current_sha256=current,
                stale=current != item.sha256,
            )
        )
    return lines


def _verdict_events(
    store: SessionStore, session_id: SessionId, memo: ReadRecords
) -> tuple[int, list[EventRecord]]:
    """How many checkpoints the session accepted, and the events the newest `MAX_VERDICTS`
    lines are made of (`VERDICT_WINDOW` of them at most)."""
    db = store.store
    after = nth_newest_seq(db, session_id, EventName.STEP_FINISHED, MAX_VERDICTS + 1)
    counts, events = newest_of_kinds(
        db, session_id, VERDICT_KINDS, limit=VERDICT_WINDOW, after=after, memo=memo,
        count=frozenset({EventName.STEP_FINISHED}),
    )  # fmt: skip
    return counts.get(EventName.STEP_FINISHED, 0), events


def session_detail(
    store: SessionStore, session_id: SessionId, *, max_events: int = DEFAULT_MAX_EVENTS
) -> SessionDetail:
    """Everything a run page shows. Raises `session.not_found` for an unknown session."""
    session = store.load(session_id)
    root, db = store.project_root, store.store
    problem, accepted = None, 0
    window: list[EventRecord] = []
    memo: ReadRecords = {}
    try:
        scan = scan_events(db, session_id, keep_last=max_events, kinds=SUMMARY_KINDS, memo=memo)
        accepted, window = _verdict_events(store, session_id, memo)
        _, reviews = newest_of_kinds(
            db, session_id, frozenset({EventName.REVIEW_VERDICT}), limit=MAX_LISTED, memo=memo,
            count=frozenset(),
        )  # fmt: skip
        _, calls = newest_of_kinds(
            db, session_id, frozenset({EventName.REVIEW_USAGE}), limit=MAX_LISTED, memo=memo,
            count=frozenset(),
        )  # fmt: skip
    except DeepWorkError as exc:
        scan, problem, reviews = EventScan(0, [], []), f"{exc.code}: {exc.message}", []
        accepted, window, calls = 0, [], []
    last = last_event_at(db, session_id) if scan.total else None
    reviewing = session_id in reviewing_sessions(db)
    run = session_view(root, session, last_event_at=last, reviewing=reviewing)
    verdicts = _verdicts(window)[-MAX_VERDICTS:]
    summary = SessionSummary(
        outcome=_outcome(run),
        steps_done=sum(1 for record in session.step_progress.values() if record.completed_at),
        verdicts=verdicts,
        verdicts_omitted=max(accepted - len(verdicts), 0),
        approvals=_approvals(scan.selected),
        review_usage=run_usage(db, session_id) if problem is None else RunUsage(),
        ended=_ends(scan.selected),
    )
    return SessionDetail(
        run=run,
        inputs=dict(session.inputs),
        summary=summary,
        outputs=_outputs(root, session),
        reviews=[e for e in reviews if isinstance(e, ReviewVerdictEvent)],
        review_calls=[e for e in calls if isinstance(e, ReviewUsageEvent)],
        timeline=[timeline_entry(event) for event in scan.recent],
        events_total=scan.total,
        events_omitted=scan.omitted,
        timeline_problem=problem,
    )
