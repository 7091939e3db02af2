"""Recording a human's decision on the open approval request of a session, bound to the shown
outputs' hashes (docs/security.md, "Approvals")."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.identifiers import SessionId
from deepwork_core.evidence.hashes import ShownOutput, sha256_file
from deepwork_core.state.approvals.models import (
    ApprovalChannel,
    ApprovalDecision,
    ApprovalError,
    ApprovalRecord,
)
from deepwork_core.state.approvals.store import ApprovalStore, nothing_to_decide


def rehash(project_root: Path, shown: Iterable[ShownOutput]) -> list[ShownOutput]:
    return [s.model_copy(update={"sha256": sha256_file(project_root, s.path)}) for s in shown]


def record_decision(
    store: ApprovalStore,
    session_id: SessionId,
    *,
    approved: bool,
    comment: str | None,
    channel: ApprovalChannel,
    actor: str,
    terminal: str | None,
    now: datetime,
    request_id: str | None = None,
) -> ApprovalRecord:
    """Decide the open request of `session_id`, bound to the shown outputs' current hashes
    (on a shared store: to the request's hashes, which the serving machine compares with its
    files' bytes before it uses the decision).

    `request_id` pins the request the human looked at (None: the open one). Raises
    `approval.outputs_changed` when a shown output changed since the request was opened: the
    human would approve bytes the reviewers never saw.
    """
    record = store.load(session_id)
    if record is None:
        raise nothing_to_decide(session_id)
    if store.trusted.shared:
        # Decided from any machine: the request's seal and the files' bytes are the serving
        # machine's to check when it uses the decision; this checkout may hold other bytes.
        current = list(record.request.shown)
    else:
        store.check_request(record)
        current = rehash(store.project_root, record.request.shown)
    if current != record.request.shown:
        changed = ", ".join(
            s.path for s, c in zip(record.request.shown, current, strict=True) if s != c
        )
        raise ApprovalError(
            f"shown output(s) changed since the approval was requested: {changed}; the agent "
            "must call finished_step again so the new content is reviewed first",
            code=ErrorCode.APPROVAL_OUTPUTS_CHANGED,
        )
    decision = ApprovalDecision(
        request_id=request_id or record.request.request_id,
        approved=approved,
        comment=comment,
        decided_at=now,
        channel=channel,
        actor=actor,
        terminal=terminal,
        shown=current,
    )
    return store.decide(session_id, decision)
