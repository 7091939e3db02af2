"""The checkpoint a session stands at, read against the job as it is now, and its attempts
(docs/runtime.md, "Checkpoints")."""

from __future__ import annotations

from datetime import datetime

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import SessionError
from deepwork_core.jobs.discovery import JobCatalog, LoadedJob
from deepwork_core.jobs.model import Step
from deepwork_core.state.sessions import Session, StepRecord


def current_checkpoint(catalog: JobCatalog, session: Session) -> tuple[LoadedJob, list[Step]]:
    """The job and the steps of the session's current entry, as the job is now."""
    job = catalog.get(session.job_name)
    workflow = job.definition.workflows_by_name.get(session.workflow_name)
    entries = workflow.entries if workflow is not None else []
    index = session.current_entry_index
    if index >= len(entries) or list(entries[index]) != session.current_step_ids:
        raise SessionError(
            f"job {session.job_name!r} changed while workflow {session.workflow_label!r} "
            f"was running: its entry {index} is no longer {session.current_step_ids}. "
            "Call abort_workflow and start the workflow again.",
            code=ErrorCode.SESSION_JOB_CHANGED,
        )
    return job, [job.definition.step(step_id) for step_id in session.current_step_ids]


def count_attempt(session: Session, now: datetime) -> int:
    """Count one more gate attempt for each step of the checkpoint; the highest count."""
    attempt = 0
    for step_id in session.current_step_ids:
        record = session.step_progress.setdefault(
            step_id, StepRecord(step_id=step_id, started_at=now)
        )
        record.quality_attempts += 1
        attempt = max(attempt, record.quality_attempts)
    return attempt
