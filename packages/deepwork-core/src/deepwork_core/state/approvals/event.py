"""The `approval` event that logs a decision, and whether an event is the log of one."""

from __future__ import annotations

from deepwork_core.state.approvals.models import ApprovalDecision, ApprovalRequest
from deepwork_core.state.event_kinds import ApprovalEvent


def approval_event(
    session_id: str,
    request: ApprovalRequest,
    decision: ApprovalDecision,
    standing: str | None = None,
) -> ApprovalEvent:
    """The `approval` event of `decision` on `request`, stamped when the human decided;
    `standing`: where a request several must sign stands with it."""
    event = ApprovalEvent(
        ts=decision.decided_at,
        session_id=session_id,
        step_ids=list(request.step_ids),
        request_id=request.request_id,
        approved=decision.approved,
        comment=decision.comment,
        channel=decision.channel.value,
        actor=decision.actor,
        terminal=decision.terminal,
        decided_at=decision.decided_at,
        shown=list(decision.shown),
        signer=decision.signer,
    )  # a log line has `standing` only where several must sign
    return event if standing is None else event.model_copy(update={"standing": standing})


def logs(event: object, decision: ApprovalDecision) -> bool:
    """True when `event` is the `approval` event of `decision`."""
    return (
        isinstance(event, ApprovalEvent)
        and event.request_id == decision.request_id
        and event.approved == decision.approved
        and event.channel == decision.channel.value
        and event.decided_at == decision.decided_at
    )
