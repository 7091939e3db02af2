"""The checkpoint a session stands at, read against the job as it is now, and its attempts
(docs/runtime.md, "Checkpoints")."""

from __future__ import annotations

from datetime import datetime

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import SessionError
from deepwork_core.jobs.discovery import JobCatalog, LoadedJob
from deepwork_core.jobs.model import Step
from deepwork_core.state.sessions import NOT_AN_ATTEMPT, Session, StepRecord

#: Gate errors that are not an attempt: the reviewer stalled, the budget is spent, or the files
#: changed under a background review (docs/quality-gate.md, "Attempts").
UNCOUNTED = NOT_AN_ATTEMPT | {ErrorCode.QUALITY_GATE_OUTPUTS_CHANGED}


def current_checkpoint(catalog: JobCatalog, session: Session) -> tuple[LoadedJob, list[Step]]:
    """The job and the steps of the session's current entry, as the job is now."""
    job = catalog.get(session.job_name)
    workflow = job.definition.workflows_by_name.get(session.workflow_name)
    entries = workflow.entries if workflow is not None else []
    index = session.current_entry_index
    expected = list(entries[index]) if index < len(entries) else []
    of = session.instance_of
    if of is not None and of.group and of.item in expected:
        expected = [of.item]  # one step of a concurrent group run in worktrees
    if expected != session.current_step_ids:
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


def next_attempt(session: Session) -> int:
    """The number the next gate attempt of the checkpoint will have (nothing is counted yet:
    an attempt is counted when its verdict or error is recorded, never while it is reviewing)."""
    counts = [
        record.quality_attempts
        for step_id in session.current_step_ids
        if (record := session.step_progress.get(step_id)) is not None
    ]
    return max(counts, default=0) + 1
