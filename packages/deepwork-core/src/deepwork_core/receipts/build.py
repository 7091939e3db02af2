"""What a completed run's receipt says, read from its session and event log (docs/verify.md).

For each step of the workflow: its output files with the SHA-256 their verdict covered (the
session's evidence), how they passed (a reviewer's verdicts with the runner, model, depth and
criteria hash of each review call, a self-review, an override with its reason, or no review and
why), the scope guard's result and whether it asks a human; and every approval with exactly the
fields its approver signed. The review calls are in the log of the run's top-level session
(`review_usage` events), the scope guard's findings in the session's own (`undeclared_changes`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from deepwork_core.base.identifiers import SessionId
from deepwork_core.evidence.hashes import OutputEvidence
from deepwork_core.evidence.verdicts import ReusedFrom, VerdictKind
from deepwork_core.gate.checkpoint import has_own_reviews
from deepwork_core.jobs.model import ScopeGuard, Step
from deepwork_core.receipts.definition import ran_under
from deepwork_core.receipts.model import (
    ApprovalEntry,
    HowPassed,
    JobDefinitionHash,
    OutputEntry,
    PassKind,
    ReceiptBody,
    ReceiptStep,
    ReviewEntry,
    ScopeEntry,
)
from deepwork_core.state.approvals.models import ApprovalDecision, ApprovalRecord
from deepwork_core.state.approvals.seal import seal_fields
from deepwork_core.state.event_kinds import ReviewUsageEvent, UndeclaredChangesEvent
from deepwork_core.state.events import read_events
from deepwork_core.state.sessions import QualityEvent, Session
from deepwork_core.state.store.port import Store
from deepwork_core.state.usage.totals import run_id_of

#: How strongly each verdict kind vouches for a file; a step passed as its weakest file did.
_STRENGTH = {
    VerdictKind.REVIEWER: 3,
    VerdictKind.SELF_REVIEW: 2,
    VerdictKind.OVERRIDE: 1,
    VerdictKind.UNREVIEWED: 0,
}
_KINDS: dict[VerdictKind, PassKind] = {
    VerdictKind.REVIEWER: "reviewed",
    VerdictKind.SELF_REVIEW: "self_reviewed",
    VerdictKind.OVERRIDE: "override",
    VerdictKind.UNREVIEWED: "unreviewed",
}


@dataclass(frozen=True, slots=True)
class RunLog:
    """What the receipt reads from the event logs: the review calls of this session (from the
    run's top-level log) and the scope guard's findings (from its own)."""

    usage: list[ReviewUsageEvent]
    undeclared: list[UndeclaredChangesEvent]

    @classmethod
    def read(cls, store: Store, session: Session, load: Callable[[SessionId], Session]) -> RunLog:
        run = run_id_of(session, load)
        own = read_events(store, session.session_id)
        top = own if run == session.session_id else read_events(store, run)
        nested = None if run == session.session_id else session.session_id
        usage = [
            e for e in top if isinstance(e, ReviewUsageEvent) and e.reviewed_session_id == nested
        ]
        undeclared = [e for e in own if isinstance(e, UndeclaredChangesEvent)]
        return cls(usage, undeclared)

    def sources(self) -> list[str]:
        """The project files beside job.yml that defined the reviews the gate ran."""
        return sorted({path for event in self.usage for path in event.sources})

    def applied(self, step_id: str) -> dict[str, str | None]:
        """The rule files of `step_id`'s reviews with their SHA-256 as the gate planned them:
        of the last call of each review (a later one went back to the step or judged again)."""
        latest = {(u.review, u.target_file): u for u in self.usage if u.step_id == step_id}
        return {path: sha for u in latest.values() for path, sha in u.sources_sha256.items()}


def build_body(
    session: Session,
    steps: Sequence[Step],
    guard: ScopeGuard,
    definition: JobDefinitionHash,
    log: RunLog,
    version: str,
) -> ReceiptBody:
    """The body of `session`'s receipt (the session completed; `steps`: its workflow's)."""
    return ReceiptBody(
        deepwork_version=version,
        session_id=session.session_id,
        job=session.job_name,
        workflow=session.workflow_name,
        instance=session.instance_id,
        parent_session_id=session.parent_session_id,
        status=session.status.value,
        started_at=_utc(session.started_at),
        completed_at=_utc(session.completed_at) if session.completed_at else None,
        start_commit=session.start_commit,
        job_definition=definition,
        steps=[_step(session, step, guard, definition, log) for step in steps],
        approvals=approvals(session),
    )


def _step(
    session: Session, step: Step, guard: ScopeGuard, definition: JobDefinitionHash, log: RunLog
) -> ReceiptStep:
    evidence = [item for item in session.evidence if item.step_id == step.id]
    outputs = [OutputEntry(output=e.output, path=e.path, sha256=e.sha256) for e in evidence]
    record = session.step_progress.get(step.id)
    undeclared = sorted(
        {path for event in log.undeclared if step.id in event.step_ids for path in event.files}
    )
    checked = guard is not ScopeGuard.OFF and record is not None and record.began is not None
    recorded = record.definition if record else None
    digest, changed = ran_under(recorded, definition, log.applied(step.id))
    return ReceiptStep(
        step=step.id,
        outputs=outputs,
        passed=how_passed(session, step, evidence, log.usage),
        scope=ScopeEntry(guard=guard.value, checked=checked, undeclared=undeclared),
        approval_required=step.approval is not None,
        definition_sha256=digest,
        definition_changed=changed,
    )


def how_passed(
    session: Session,
    step: Step,
    evidence: Sequence[OutputEvidence],
    usage: Sequence[ReviewUsageEvent],
) -> HowPassed:
    """How `step`'s outputs passed: as their weakest file's verdict did."""
    events = [e for e in session.quality_log if step.id in e.step_ids and e.is_attempt]
    kind = _weakest(evidence) if evidence else _logged_kind(events)
    if kind is VerdictKind.REVIEWER:
        return HowPassed(kind="reviewed", reviews=_reviewed(step.id, events, usage))
    reason = next((e.override_reason for e in evidence if e.override_reason), None)
    if kind is VerdictKind.SELF_REVIEW:
        requested = [u for u in usage if u.step_id == step.id and u.mode == "self"]
        return HowPassed(kind="self_reviewed", reviews=_entries(requested), reason=reason)
    if kind is VerdictKind.OVERRIDE:
        return HowPassed(kind="override", reason=reason)
    return HowPassed(kind="unreviewed", reason=_why_unreviewed(step, events))


def _weakest(evidence: Iterable[OutputEvidence]) -> VerdictKind:
    return min((e.verdict for e in evidence), key=lambda kind: _STRENGTH.get(kind, -1))


def _logged_kind(events: Sequence[QualityEvent]) -> VerdictKind:
    """The kind of a step without file outputs: its last accepted verdict in the gate's log."""
    for event in reversed(events):
        if event.kind is VerdictKind.REVIEWER and event.passed:
            return VerdictKind.REVIEWER
        if event.kind in (VerdictKind.SELF_REVIEW, VerdictKind.OVERRIDE):
            return event.kind
    return VerdictKind.UNREVIEWED


def _reviewed(
    step_id: str, events: Sequence[QualityEvent], usage: Sequence[ReviewUsageEvent]
) -> list[ReviewEntry]:
    """The verdicts of the last round of reviews that passed the step, each with its call."""
    passing = next(
        (e for e in reversed(events) if e.kind is VerdictKind.REVIEWER and e.passed), None
    )
    if passing is None:
        return []
    # A reused verdict's call is its `reused` use: the runner, model and criteria it was kept
    # under, at no cost.
    calls = [u for u in usage if u.step_id == step_id and u.mode in ("external", "reused")]
    entries = []
    for verdict in passing.reviews:
        if verdict.step_id != step_id:
            continue
        key = (verdict.review_run_each, verdict.target_file)
        call = next(
            (
                u
                for u in reversed(calls)
                if (u.review, u.target_file) == key and u.attempt in (passing.attempt, None)
            ),
            None,
        )
        entries.append(
            ReviewEntry(
                review=verdict.review_run_each,
                target_file=verdict.target_file,
                runner=call.runner if call else None,
                model=call.model if call else None,
                depth=call.depth if call else None,
                criteria_sha256=call.criteria_sha256 if call else None,
                verdict="passed" if verdict.passed else "failed",
                attempt=passing.attempt,
                reused_from=_origin(verdict.reused_from),
            )
        )
    return entries


def _origin(reused_from: ReusedFrom | None) -> str | None:
    """`<session>/<step>, <when>` of a reused verdict (docs/verify.md); None: judged here."""
    if reused_from is None:
        return None
    return reused_from.text.removeprefix("reused from ")


def _entries(requested: Sequence[ReviewUsageEvent]) -> list[ReviewEntry]:
    """One entry per self-review task (the last request of each)."""
    latest = {(u.review, u.target_file): u for u in requested}
    return [
        ReviewEntry(
            review=u.review,
            target_file=u.target_file,
            depth=u.depth,
            criteria_sha256=u.criteria_sha256,
            verdict="requested",
            attempt=u.attempt,
        )
        for u in latest.values()
    ]


def _why_unreviewed(step: Step, events: Sequence[QualityEvent]) -> str:
    if step.sub_workflow is not None:
        return "a sub_workflow step: the workflow it ran has a receipt of its own"
    if any(e.kind is VerdictKind.UNREVIEWED for e in events):
        return "no review applied: the step declares none and no .deepreview rule matched"
    if has_own_reviews([step]):
        return "the server ran without a quality gate"
    return "the step declares no reviews"


def approvals(session: Session) -> list[ApprovalEntry]:
    """Every signature that counted toward an approval of the run (each distinct approver of a
    request several must sign, oldest first), with the fields it covers."""
    entries = []
    for record in session.approvals:
        if record.decision is None or not record.decision.approved:
            continue
        for decision in _counted(record):
            entries.append(_entry(session, record, decision))
    return entries


def _counted(record: ApprovalRecord) -> list[ApprovalDecision]:
    """The approvals that counted toward `record`'s request (the deciding one alone when the
    record keeps no list of decisions, as records before policies did)."""
    counted = [record.decisions[i] for i in record.standing().counted]
    approvals = [decision for decision in counted if decision.approved]
    return approvals or ([] if record.decision is None else [record.decision])


def _entry(session: Session, record: ApprovalRecord, decision: ApprovalDecision) -> ApprovalEntry:
    entry = {
        "step_ids": list(record.request.step_ids),
        "request_id": record.request.request_id,
        "signer": decision.signer,
        "signature": decision.signature,
        "decided_at": _utc(decision.decided_at),
        "fields": seal_fields(session.session_id, record.request, decision),
    }
    return ApprovalEntry.model_validate(entry)


def _utc(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat()
