"""What a workflow call is about: the workflow to start, and the checks on `finished_step`'s
arguments (see `docs/runtime.md`)."""

from __future__ import annotations

from collections.abc import Mapping

from deepwork_core.discovery import LoadedJob
from deepwork_core.errors import OutputsError, QualityGateError, WorkflowNotFoundError
from deepwork_core.identifiers import check_text
from deepwork_core.models import Workflow


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


def check_finish_arguments(
    outputs: Mapping[str, object],
    notes: str | None,
    override_reason: str | None,
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
    check_text(notes, what="notes")
    check_text(override_reason, what="quality_review_override_reason")
