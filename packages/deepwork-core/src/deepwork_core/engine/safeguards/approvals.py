"""Human approvals at a checkpoint (see `docs/evidence.md`).

`ApprovalGuards` opens a request for the person, judges what became of it against the outputs
now, closes it and records an answer given in the client's form. `Safeguards` builds on it; it
changes the session object it is given, and the engine saves it in its transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.engine.approver import HumanAnswer
from deepwork_core.engine.results import ApprovalPrompt, prompt_of
from deepwork_core.engine.safeguards.findings import Findings
from deepwork_core.evidence.verdicts import VerdictKind
from deepwork_core.jobs.model import Step
from deepwork_core.state.approvals.decide import record_decision, rehash
from deepwork_core.state.approvals.ending import EndState
from deepwork_core.state.approvals.models import (
    ApprovalChannel,
    ApprovalError,
    ApprovalRecord,
    ApprovalRequest,
    new_request_id,
    shown_outputs,
)
from deepwork_core.state.approvals.policy import RequestPolicy, request_policy, why_unmeetable
from deepwork_core.state.approvals.store import ApprovalStore, expired
from deepwork_core.state.event_kinds import ApprovalRequestedEvent, KnownEvent, decided_by
from deepwork_core.state.events import append_event
from deepwork_core.state.sessions import PendingApproval, Session


class ApprovalOutcome(StrEnum):
    WAIT = "wait"  # no decision yet
    APPROVED = "approved"
    REJECTED = "rejected"
    VOID = "void"  # the outputs changed since the request: review and ask again


class ApprovalGuards:
    """The approvals of the sessions of one project, in its store (where the events go too)."""

    def __init__(
        self, project_root: Path, clock: Callable[[], datetime], approvals: ApprovalStore
    ) -> None:
        self.project_root = project_root
        self.clock = clock
        #: The project's approvals, in its store (where the events go too).
        self.approvals = approvals

    def needs_approval(self, steps: Sequence[Step]) -> bool:
        return any(step.approval is not None for step in steps)

    def open_approval(
        self,
        session: Session,
        steps: Sequence[Step],
        findings: Findings,
        verdict: VerdictKind,
        override_reason: str | None,
        rereviewed: Sequence[str],
        job_file: Path | None = None,
    ) -> ApprovalPrompt:
        """Open a request for the human; the session waits for it (`pending_approval`).

        Raises `approval.policy_unmeetable` (naming `job_file`, the job's definition) when the
        approvers trusted on the base ref can never meet the steps' policy: nothing is opened.
        """
        asks = [step.approval for step in steps if step.approval is not None]
        names = [name for ask in asks for name in ask.show]
        now = self.clock()
        policy = request_policy(asks, session.author, now)
        self._check_meetable(policy, steps, job_file)
        request = ApprovalRequest(
            request_id=new_request_id(),
            session_id=session.session_id,
            job_name=session.job_name,
            workflow_name=session.workflow_name,
            step_ids=list(session.current_step_ids),
            prompt="\n\n".join(ask.prompt for ask in asks),
            shown=shown_outputs(findings.audit.hashes, names),
            requested_at=now,
            policy=policy,
        )
        self.approvals.open_request(request)
        session.pending_approval = PendingApproval(
            request_id=request.request_id,
            entry_index=session.current_entry_index,
            step_ids=list(session.current_step_ids),
            verdict=verdict,
            override_reason=override_reason,
            hashes=list(findings.audit.hashes),
            rereviewed=list(rereviewed),
        )
        self._write(
            ApprovalRequestedEvent(
                ts=self.clock(),
                session_id=session.session_id,
                step_ids=list(request.step_ids),
                request_id=request.request_id,
                prompt=request.prompt,
                shown=list(request.shown),
            )
        )
        return prompt_of(ApprovalRecord(request=request))

    def _check_meetable(
        self, policy: RequestPolicy | None, steps: Sequence[Step], job_file: Path | None
    ) -> None:
        if policy is None or not policy.needs_signatures:
            return
        why = why_unmeetable(policy, self.approvals.trusted.names())
        if why is None:
            return
        where = (
            "the job's job.yml" if job_file is None else _shown_path(self.project_root, job_file)
        )
        ids = ", ".join(step.id for step in steps if step.approval is not None)
        raise ApprovalError(
            f"{where}: the approval policy of step {ids} cannot be met: {why}. No approval "
            "was requested and nothing was recorded: merge more approvers' keys into the base "
            "branch (docs/team.md), or change the step's `approval:`",
            code=ErrorCode.APPROVAL_POLICY_UNMEETABLE,
        )

    def approval_outcome(
        self, session: Session, findings: Findings
    ) -> tuple[ApprovalOutcome, ApprovalRecord | None]:
        """What became of the session's open request, judged against the outputs now.

        A request that is not the one this server opened (its seal does not verify, or its steps
        or files are not the ones the session waits on) is void: the server asks anew, and no
        decision on it counts. Raises `approval.unverified` for a decision that is not sealed
        (or signed, where required) or has no `approval` event in the log: the session stays as
        it is, waiting.
        """
        pending = session.pending_approval
        assert pending is not None
        if _keys(findings.audit.hashes) != _keys(pending.hashes):
            return ApprovalOutcome.VOID, None
        record = self.approvals.load(session.session_id)
        if record is None or not _asks_for(record, pending):
            return ApprovalOutcome.VOID, None
        if self.approvals.why_request_unverified(record) is not None:
            return ApprovalOutcome.VOID, None
        record = self.approvals.load_verified(session.session_id)
        if record is None or not _asks_for(record, pending):
            return ApprovalOutcome.VOID, None
        policy = record.request.policy
        if record.decision is None and policy is not None and policy.expired(self.clock()):
            raise expired(session.session_id, policy)  # nothing completes, nothing is recorded
        if record.decision is None:
            return ApprovalOutcome.WAIT, record
        if not record.decision_holds(rehash(self.project_root, record.request.shown)):
            return ApprovalOutcome.VOID, record
        if record.decision.approved:
            return ApprovalOutcome.APPROVED, record
        return ApprovalOutcome.REJECTED, record

    def close_approval(
        self, session: Session, record: ApprovalRecord | None, end: EndState, why: str
    ) -> None:
        """Close the open request, storing how it ended (`end`, `why`); keep an approved or
        rejected record in the session's approvals."""
        if record is not None and record.decision is not None and end in _DECIDED:
            session.approvals.append(record)
        session.pending_approval = None
        self.approvals.clear(session.session_id, end, why, self.clock())

    def record_elicited(self, prompt: ApprovalPrompt, answer: HumanAnswer) -> None:
        """Record the answer a human gave in the client's form (never from a tool argument)."""
        record_decision(
            self.approvals,
            prompt.session_id,
            approved=answer.approved,
            comment=answer.comment,
            channel=ApprovalChannel.ELICITATION,
            actor=answer.client,
            terminal=None,
            now=self.clock(),
            request_id=prompt.request_id,
        )

    def _write(self, event: KnownEvent) -> None:
        append_event(self.approvals.store, event)


_DECIDED = (EndState.APPROVED, EndState.REJECTED)


def ended_by(outcome: ApprovalOutcome, record: ApprovalRecord | None) -> tuple[EndState, str]:
    """How a request ends with `outcome` (the server used it, or found it void), and why."""
    decision = None if record is None else record.decision
    if outcome is ApprovalOutcome.APPROVED and record is not None and decision is not None:
        several = record.request.policy is not None and record.request.policy.required > 1
        who = record.standing().text() if several else decided_by(decision.signer, decision.actor)
        return EndState.APPROVED, f"approved: {who}"
    if outcome is ApprovalOutcome.REJECTED and decision is not None:
        said = f": {decision.comment}" if decision.comment else ""
        return (
            EndState.REJECTED,
            f"changes requested by {decided_by(decision.signer, decision.actor)}{said}",
        )
    if decision is not None and decision.approved:
        why = "what was approved is not what the step holds now (a shown file changed, or a step "
        return EndState.FAILED, why + "is stale): the step is reviewed and asked anew"
    return EndState.FAILED, (
        "the request is not the one the step waits on (its files changed, or its seal does not "
        "verify): the step is reviewed and asked anew"
    )


def _shown_path(root: Path, path: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _asks_for(record: ApprovalRecord, pending: PendingApproval) -> bool:
    """True when `record` is the request `pending` waits on: same id, steps and shown files."""
    request = record.request
    hashes = {(h.output, h.path, h.sha256) for h in pending.hashes}
    return (
        request.request_id == pending.request_id
        and request.step_ids == pending.step_ids
        and all((s.output, s.path, s.sha256) in hashes for s in request.shown)
    )


def _keys(hashes: Sequence[Any]) -> set[tuple[str, str, str, str | None]]:
    return {(h.step_id, h.output, h.path, h.sha256) for h in hashes}
