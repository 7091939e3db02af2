"""Which workflow of a job a `start_workflow` call means (see `docs/runtime.md`)."""

from __future__ import annotations

from deepwork_core.base.errors import WorkflowNotFoundError
from deepwork_core.jobs.discovery import LoadedJob
from deepwork_core.jobs.model import Workflow


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
