"""Finding what a workflow call is about: the workflow to start, the session to act on, and
the checks on `finished_step`'s arguments (see `docs/quality-gate.md`)."""

from __future__ import annotations

from collections.abc import Mapping

from deepwork_core.discovery import LoadedJob
from deepwork_core.errors import (
    OutputsError,
    QualityGateError,
    SessionError,
    WorkflowNotFoundError,
)
from deepwork_core.identifiers import check_session_id, check_text
from deepwork_core.models import Workflow
from deepwork_core.sessions import Session, StateTransaction


def select_workflow(job: LoadedJob, workflow_name: str) -> Workflow:
    """The named workflow; a job with exactly one workflow gets it whatever the name."""
    workflows = job.definition.workflows
    if len(workflows) == 1:
        return workflows[0]
    found = job.definition.workflows_by_name.get(workflow_name)
    if found is not None:
        return found
    available = ", ".join(w.name for w in workflows)
    if not available:
        raise WorkflowNotFoundError(
            f"job {job.name!r} defines no workflows, so it cannot be started; "
            "call get_workflows to see startable workflows"
        )
    raise WorkflowNotFoundError(
        f"workflow {workflow_name!r} not found in job {job.name!r}. "
        f"Available workflows: {available}"
    )


def target_session(tx: StateTransaction, session_id: str | None) -> Session:
    ids = tx.stack_ids()
    if session_id is None:
        top = tx.top()
        if top is None:
            raise SessionError(
                "no active workflow session; call start_workflow to begin a workflow",
                code="session.none_active",
            )
        return top
    if session_id in ids:
        return tx.load(session_id)
    session = tx.load(session_id)  # raises session.not_found
    raise SessionError(
        f"session {session_id!r} is {session.status.value}, not active; active sessions: "
        f"{', '.join(ids) or 'none'}",
        code="session.not_active",
    )


def check_finish_arguments(
    outputs: Mapping[str, object],
    notes: str | None,
    override_reason: str | None,
    session_id: str | None,
) -> None:
    if not isinstance(outputs, Mapping):
        raise OutputsError(
            "outputs must be an object mapping output names to paths", code="outputs.wrong_type"
        )
    if override_reason is not None and not override_reason.strip():
        raise QualityGateError(
            "quality_review_override_reason is empty; explain why the review is not needed "
            "or leave it out",
            code="quality_gate.override_reason_empty",
        )
    if session_id is not None:
        check_session_id(session_id)
    check_text(notes, what="notes")
    check_text(override_reason, what="quality_review_override_reason")
