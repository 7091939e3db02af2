"""Background reviews: review tasks as durable jobs, run by this server's workers
(docs/quality-gate.md, "Background reviews").

`BackgroundReviews.run` turns a checkpoint's tasks into rows of the project's `review_jobs`
table, named by a key over the session, the attempt, the outputs and the content hashes of the
files under review. A repeated call with the same key joins the jobs already there; a new key
cancels the session's other jobs (their processes are stopped). It then waits at most
`wait_seconds` and returns the verdicts in task order, or a `GateReviewing` listing each job.

Workers claim jobs with a lease (`ReviewJobStore.claim`) and run at most `max_parallel` at once,
so jobs left by a server that stopped or was killed are claimed again and run once. Each verdict
is recorded bound to the hashes it judged: when the files changed meanwhile it is dropped
(`stale`), and the next call answers `quality_gate.outputs_changed`.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

from deepwork_core.base.config import ReviewBudget
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError, QualityGateError, SessionError
from deepwork_core.base.identifiers import resolve_inside
from deepwork_core.evidence.verdicts import ReviewVerdict
from deepwork_core.gate.checkpoint import (
    Checkpoint,
    GateReviewing,
    ProgressReporter,
    ResolvedInput,
    ReviewProgress,
)
from deepwork_core.gate.tasks import QualityReviewTask
from deepwork_core.jobs.model import JobDefinition
from deepwork_core.state.review_jobs import (
    LEASE_SECONDS,
    JobState,
    NewReviewJob,
    ReviewJob,
    ReviewJobStore,
    new_owner,
)

#: How often a waiting call looks at jobs another process runs (its own wake it at once).
_POLL_SECONDS = 0.5
_MISSING = "missing"


class Reviewer(Protocol):
    """The port a reviewer adapter implements: judge one task, synchronously, in a worker thread.

    It raises `QualityGateError` (with its code) when it can give no verdict, and stops soon
    after `cancelled` is set (its process killed). `budget` is what a run may spend.
    """

    @property
    def budget(self) -> ReviewBudget: ...

    def review_task(
        self, checkpoint: Checkpoint, task: QualityReviewTask, cancelled: threading.Event
    ) -> ReviewVerdict: ...


def review_key(checkpoint: Checkpoint, tasks: Sequence[QualityReviewTask], hashes: object) -> str:
    """The name of one submission: same session, attempt, outputs, tasks and bytes."""
    material = {
        "session": checkpoint.session_id,
        "steps": checkpoint.step_ids,
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


class BackgroundReviews:
    """The review jobs of one project and the workers that run them. Thread-safe."""

    def __init__(
        self,
        project_root: Path,
        reviewer: Reviewer,
        load_job: Callable[[str], JobDefinition],
        max_parallel: int,
        store: ReviewJobStore | None = None,
    ) -> None:
        self.root = project_root
        self.reviewer = reviewer
        self.load_job = load_job
        self.max_parallel = max_parallel
        self.store = store if store is not None else ReviewJobStore(project_root)
        self.owner = new_owner()
        self._changed = threading.Condition()
        self._running: dict[str, threading.Event] = {}
        self._closed = threading.Event()
        self._pool = ThreadPoolExecutor(max_parallel, thread_name_prefix="deepwork-review")
        self._renewer = threading.Thread(target=self._renew, name="deepwork-lease", daemon=True)
        self._renewer.start()
        self.pump()  # jobs a stopped server left behind

    # --- a finished_step call ----------------------------------------------------------------

    def run(
        self,
        checkpoint: Checkpoint,
        tasks: Sequence[QualityReviewTask],
        wait_seconds: float,
        progress: ProgressReporter | None = None,
    ) -> tuple[ReviewVerdict, ...] | GateReviewing:
        """Join or start the jobs of this submission and wait for them (see the module)."""
        deadline = time.monotonic() + wait_seconds
        hashes = [file_hashes(checkpoint.project_root, task.files) for task in tasks]
        key = review_key(checkpoint, tasks, hashes)
        self._stop(self.store.cancel_others(checkpoint.session_id, key))
        if not self.store.jobs(key):
            self.store.enqueue(_new_jobs(key, checkpoint, tasks, hashes))
        self.pump()
        told: set[str] = set()
        while True:
            jobs = self.store.jobs(key)
            told = _tell(progress, jobs, told)
            outcome = self._outcome(checkpoint.session_id, key, jobs)
            if outcome is not None:
                return outcome
            left = deadline - time.monotonic()
            if left <= 0:
                return reviewing(jobs)
            with self._changed:
                self._changed.wait(min(left, _POLL_SECONDS))

    def _outcome(
        self, session_id: str, key: str, jobs: list[ReviewJob]
    ) -> tuple[ReviewVerdict, ...] | None:
        """The verdicts once every job is done; raises for a failed or stale one."""
        for job in jobs:
            if job.state in (JobState.FAILED, JobState.STALE):
                self._stop(self.store.cancel_others(session_id, ""))
                self.store.consume(key)
            if job.state is JobState.FAILED:
                code = _code(job.error_code)
                raise QualityGateError(job.error_message or "the review failed", code=code)
            if job.state is JobState.STALE:
                raise QualityGateError(
                    f"the files of review {job.label!r} changed while it ran, so its verdict "
                    "was not recorded. Call finished_step again once the files are final "
                    "(not an attempt).",
                    code=ErrorCode.QUALITY_GATE_OUTPUTS_CHANGED,
                )
        if any(job.state is not JobState.DONE for job in jobs):
            return None
        if not self.store.consume(key):
            raise SessionError(
                "another finished_step call already recorded these reviews; call "
                "get_active_workflow to see where the workflow stands",
                code=ErrorCode.SESSION_CHANGED,
            )
        return tuple(ReviewVerdict.model_validate(job.verdict) for job in jobs)

    # --- the workers -------------------------------------------------------------------------

    def pump(self) -> None:
        """Claim as many jobs as there are free workers, and start them."""
        with self._changed:
            free = self.max_parallel - len(self._running)
            claimed = self.store.claim(self.owner, free)
            for job in claimed:
                self._running[job.job_id] = threading.Event()
        for job in claimed:
            self._pool.submit(self._work, job)

    def _work(self, job: ReviewJob) -> None:
        cancelled = self._running[job.job_id]
        try:
            state, verdict, error = self._judge(job, cancelled)
            if not cancelled.is_set():
                self.store.complete(job.job_id, self.owner, state, verdict, error)
        finally:
            with self._changed:
                self._running.pop(job.job_id, None)
                self._changed.notify_all()
            self.pump()

    def _judge(
        self, job: ReviewJob, cancelled: threading.Event
    ) -> tuple[JobState, dict[str, Any] | None, tuple[str, str] | None]:
        try:
            checkpoint, task = self._decode(job.payload)
            verdict = self.reviewer.review_task(checkpoint, task, cancelled)
        except QualityGateError as exc:
            return JobState.FAILED, None, (exc.code, exc.message)
        except DeepWorkError as exc:
            return JobState.FAILED, None, (exc.code, exc.message)
        except Exception as exc:  # an adapter's bug must fail the review, not the worker
            reason = f"{type(exc).__name__}: {exc}"[:500]
            return JobState.FAILED, None, (ErrorCode.QUALITY_GATE_REVIEWER_FAILED, reason)
        if file_hashes(self.root, list(job.hashes)) != job.hashes:
            return JobState.STALE, None, None
        return JobState.DONE, verdict.model_dump(mode="json"), None

    def _decode(self, payload: dict[str, Any]) -> tuple[Checkpoint, QualityReviewTask]:
        fields = dict(payload["checkpoint"])
        fields["job"] = self.load_job(fields.pop("job_name"))
        fields["step_ids"] = tuple(fields["step_ids"])
        fields["undeclared_changes"] = tuple(fields["undeclared_changes"])
        fields["input_files"] = [ResolvedInput(**item) for item in fields["input_files"]]
        checkpoint = Checkpoint(project_root=self.root, **fields)
        return checkpoint, QualityReviewTask.model_validate(payload["task"])

    def close(self) -> None:
        """Stop the running reviews (their rows stay claimable) and the workers."""
        self._closed.set()
        self._stop(list(self._running))
        self._pool.shutdown(wait=True, cancel_futures=True)
        self.store.close()

    def _stop(self, job_ids: Sequence[str]) -> None:
        """Tell this process's workers running `job_ids` to stop (the rows are cancelled)."""
        with self._changed:
            for job_id in job_ids:
                event = self._running.get(job_id)
                if event is not None:
                    event.set()

    def _renew(self) -> None:
        """Keep the leases of running jobs; stop a job another process cancelled."""
        while not self._closed.wait(LEASE_SECONDS / 3):
            with self._changed:
                running = dict(self._running)
            if not running:
                continue
            self.store.renew(self.owner, list(running))
            for job_id, event in running.items():
                row = self.store.get(job_id)
                if row is None or row.state is not JobState.RUNNING or row.owner != self.owner:
                    event.set()


def _new_jobs(
    key: str,
    checkpoint: Checkpoint,
    tasks: Sequence[QualityReviewTask],
    hashes: Sequence[dict[str, str]],
) -> list[NewReviewJob]:
    shared = {
        "session_id": checkpoint.session_id,
        "job_name": checkpoint.job.name,
        "step_ids": list(checkpoint.step_ids),
        "outputs": checkpoint.outputs,
        "input_files": [asdict(item) for item in checkpoint.input_files],
        "notes": checkpoint.notes,
        "attempt": checkpoint.attempt,
        "work_summary": checkpoint.work_summary,
        "undeclared_changes": list(checkpoint.undeclared_changes),
        "run_id": checkpoint.run_id,
    }
    return [
        NewReviewJob(
            job_id=f"rv-{uuid.uuid4().hex[:12]}",
            review_key=key,
            session_id=checkpoint.session_id,
            position=index,
            label=task.label,
            payload={"checkpoint": shared, "task": task.model_dump(mode="json")},
            hashes=hashes[index],
        )
        for index, task in enumerate(tasks)
    ]


def _shown_state(job: ReviewJob) -> str:
    if job.state is JobState.DONE and job.verdict is not None:
        return "passed" if job.verdict.get("passed") else "failed"
    return str(job.state)


def _tell(progress: ProgressReporter | None, jobs: list[ReviewJob], told: set[str]) -> set[str]:
    """One progress notification per review that finished since the last look."""
    done = [job for job in jobs if job.state is JobState.DONE]
    if progress is None:
        return told
    for job in done:
        if job.job_id not in told:
            told = {*told, job.job_id}
            progress(len(told), len(jobs), f"review {job.label}: {_shown_state(job)}")
    return told


def reviewing(jobs: Sequence[ReviewJob]) -> GateReviewing:
    shown = tuple(ReviewProgress(job.job_id, job.label, _shown_state(job)) for job in jobs)
    finished = sum(1 for job in jobs if job.state is JobState.DONE)
    feedback = (
        f"{finished} of {len(jobs)} review(s) finished; the others still run in the background. "
        "Call finished_step again with the same outputs to wait for them (not an attempt); "
        "changing the outputs cancels them and starts new reviews."
    )
    return GateReviewing(feedback=feedback, reviews=shown)


def _code(code: str | None) -> ErrorCode:
    try:
        return ErrorCode(code) if code else ErrorCode.QUALITY_GATE_ERROR
    except ValueError:
        return ErrorCode.QUALITY_GATE_ERROR
