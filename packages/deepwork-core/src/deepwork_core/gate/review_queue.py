"""The gate's jobs on the review queue (docs/quality-gate.md, "Background reviews"): what one
holds (`ReviewPayload`, under the name of its submission, `review_key`, with the hashes of the
files it judges), how a submission's jobs read to the agent and the dashboard (`shown_state`,
progress notes, the `reviewing` answer), and cancelling them where no worker of this process
runs them. The workers that claim and judge them are `deepwork_core.gate.background`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from deepwork_core.base.config import QualityGateConfig
from deepwork_core.base.errors import DeepWorkError
from deepwork_core.base.identifiers import resolve_inside
from deepwork_core.evidence.verdicts import unset
from deepwork_core.gate.checkpoint import (
    Checkpoint,
    CheckpointRecord,
    GateReviewing,
    ProgressReporter,
    ReviewProgress,
)
from deepwork_core.gate.costs.quotes import TaskPrice
from deepwork_core.gate.tasks import QualityReviewTask
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.tables.review_jobs import (
    Judged,
    ReviewJob,
    ReviewJobs,
    ReviewJobState,
)
from deepwork_core.state.usage.pair import tokens_text
from deepwork_core.state.usage.totals import run_usage

#: The `kind` of the gate's jobs in the queue.
KIND = "gate_review"
_MISSING = "missing"
#: Review jobs that still run, or will.
LIVE = (ReviewJobState.QUEUED, ReviewJobState.CLAIMED)


class ReviewPayload(BaseModel):
    """One job of the gate on the review queue: which submission (`key`), what it judges
    (`label`), the checkpoint and task to judge, and the hashes of the files under review."""

    #: Keys a newer version added are ignored, so its jobs still run here.
    model_config = ConfigDict(extra="ignore", frozen=True)

    key: str
    label: str
    checkpoint: CheckpointRecord
    task: QualityReviewTask
    hashes: dict[str, str]
    #: What the review was expected to cost when it was queued (the dashboard shows it).
    expected: TaskPrice | None = Field(default=None, exclude_if=unset)
    #: The gate settings of the server that queued it: a server taking the job over judges it
    #: under them, not its own.
    settings: QualityGateConfig | None = Field(default=None, exclude_if=unset)


#: A job of the gate, as the queue gives it back.
GateJob = ReviewJob[ReviewPayload]


def review_key(checkpoint: Checkpoint, tasks: Sequence[QualityReviewTask], hashes: object) -> str:
    """The name of one submission: same session, attempt, outputs, tasks and bytes."""
    material = {
        "session": checkpoint.session_id,
        "steps": checkpoint.step_ids,
        "round": checkpoint.log_length,
        "attempt": checkpoint.attempt,
        "outputs": checkpoint.outputs,
        "notes": checkpoint.notes,
        "summary": checkpoint.work_summary,
        "undeclared": checkpoint.undeclared_changes,
        "tasks": [task.model_dump(mode="json") for task in tasks],
        "hashes": hashes,
    }
    text = json.dumps(material, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def file_hashes(root: Path, paths: Sequence[str]) -> dict[str, str]:
    """SHA-256 of each file's bytes (`missing` when it cannot be read inside the project)."""
    found: dict[str, str] = {}
    for path in paths:
        try:
            found[path] = hashlib.sha256(resolve_inside(root, path).read_bytes()).hexdigest()
        except (OSError, DeepWorkError):
            found[path] = _MISSING
    return found


def cancel_reviews(store: Store, session_ids: Sequence[str]) -> None:
    """Cancel every live gate job of these sessions in `store`, where no `BackgroundReviews`
    of this process runs them: a server running one stops its reviewer when its next lease
    renewal finds the job cancelled."""
    jobs = ReviewJobs(store, ReviewPayload)
    for session_id in session_ids:
        for job in jobs.list(session_id=session_id, states=LIVE):
            if job.kind == KIND:
                jobs.cancel(job.job_id)


def job_payloads(
    key: str,
    checkpoint: Checkpoint,
    tasks: Sequence[QualityReviewTask],
    hashes: Sequence[dict[str, str]],
    expected: Sequence[TaskPrice] | None = None,
    settings: QualityGateConfig | None = None,
) -> list[ReviewPayload]:
    record = CheckpointRecord.of(checkpoint)
    return [
        ReviewPayload(
            key=key,
            label=task.label,
            checkpoint=record,
            task=task,
            hashes=hashes[index],
            expected=expected[index] if expected is not None else None,
            settings=settings,
        )
        for index, task in enumerate(tasks)
    ]


def shown_state(job: GateJob) -> str:
    """`queued`, `running`, `passed` or `failed`."""
    if job.state is ReviewJobState.DONE:
        result = job.result
        return "passed" if isinstance(result, Judged) and result.verdict.passed else "failed"
    return "running" if job.state is ReviewJobState.CLAIMED else str(job.state)


def job_label(job: GateJob) -> str:
    return job.payload.label if job.payload is not None else job.job_id


def tell_progress(
    progress: ProgressReporter | None, jobs: list[GateJob], told: set[str], checkpoint: Checkpoint
) -> set[str]:
    """One progress notification per review that finished since the last look, with the
    tokens the run's reviews used so far (docs/quality-gate.md)."""
    done = [job for job in jobs if job.state is ReviewJobState.DONE and job.job_id not in told]
    if progress is None or not done:
        return told
    tokens = tokens_text(run_usage(checkpoint.store, checkpoint.resolved_run_id))
    for job in done:
        told = {*told, job.job_id}
        message = f"review {job_label(job)}: {shown_state(job)}; {tokens} so far"
        progress(len(told), len(jobs), message)
    return told


def reviewing_verdict(jobs: Sequence[GateJob]) -> GateReviewing:
    shown = tuple(ReviewProgress(job.job_id, job_label(job), shown_state(job)) for job in jobs)
    finished = sum(1 for job in jobs if job.state is ReviewJobState.DONE)
    feedback = (
        f"{finished} of {len(jobs)} review(s) finished; the others still run in the background. "
        "Call finished_step again with the same outputs to wait for them (not an attempt); "
        "changing the outputs cancels them and starts new reviews."
    )
    return GateReviewing(feedback=feedback, reviews=shown)
