"""Background reviews: review tasks as durable jobs, run by this server's workers
(docs/quality-gate.md, "Background reviews").

`BackgroundReviews.run` turns a checkpoint's tasks into rows of the project's `review_jobs`
table, named by a key over the session, the attempt, the outputs and the content hashes of the
files under review. A repeated call with the same key joins the jobs already there; a new key
cancels the session's other jobs (their processes are stopped). It then waits at most
`wait_seconds` and returns the verdicts in task order, or a `GateReviewing` listing each job.

The jobs are rows of the store's `review_jobs` queue (`deepwork_core.state.store.review_jobs`),
one per task, enqueued under a dedupe key (`<key>:<task>`), so joining is enqueueing again.
Workers claim jobs with a lease they renew, run at most `max_parallel` at once, and record each
result with `complete`, which succeeds once per claim: jobs left by a server that stopped or was
killed are claimed again once their lease runs out, and run once. Each verdict is bound to the
hashes it judged: when the files changed meanwhile it is marked stale, and the call answers
`quality_gate.outputs_changed`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

from deepwork_core.base.config import ReviewBudget
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError, QualityGateError
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
from deepwork_core.state.store.opening import shared_store
from deepwork_core.state.store.review_jobs import (
    ReviewClaim,
    ReviewJob,
    ReviewJobs,
    ReviewJobState,
)

logger = logging.getLogger("deepwork.gate")

#: How often a waiting call looks at jobs another process runs (its own wake it at once).
_POLL_SECONDS = 0.5
#: A claim's lease; the worker renews it every third of it while the review runs, and looks
#: for work left by others (a lease that ran out) as often.
LEASE_SECONDS = 15.0
#: The `kind` of the gate's jobs in the queue.
KIND = "gate_review"
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


class BackgroundReviews:
    """The review jobs of one project and the workers that run them. Thread-safe."""

    def __init__(
        self,
        project_root: Path,
        reviewer: Reviewer,
        load_job: Callable[[str], JobDefinition],
        max_parallel: int,
        jobs: ReviewJobs | None = None,
    ) -> None:
        self.root = project_root
        self.reviewer = reviewer
        self.load_job = load_job
        self.max_parallel = max_parallel
        self.jobs = jobs if jobs is not None else ReviewJobs(shared_store(project_root))
        self.worker = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._changed = threading.Condition()
        self._running: dict[str, tuple[ReviewClaim, threading.Event]] = {}
        #: How many jobs this process finished; a waiter that saw it change looks again.
        self._finished = 0
        self._closed = threading.Event()
        self._pool = ThreadPoolExecutor(max_parallel, thread_name_prefix="deepwork-review")
        self._keeper = threading.Thread(target=self._keep, name="deepwork-lease", daemon=True)
        self._keeper.start()
        self.pump()  # jobs a stopped server left behind, once their lease ran out

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
        self._cancel(checkpoint.session_id, keep=key)
        ids = self._enqueue(key, checkpoint, tasks, hashes)
        self.pump()
        told: set[str] = set()
        while True:
            with self._changed:
                seen = self._finished
            jobs = [self.jobs.get(job_id) for job_id in ids]
            told = _tell(progress, jobs, told)
            outcome = self._outcome(checkpoint.session_id, jobs)
            if outcome is not None:
                return outcome
            left = deadline - time.monotonic()
            if left <= 0:
                return reviewing(jobs)
            with self._changed:  # woken by a job of ours finishing; jobs elsewhere are polled
                if self._finished == seen:
                    self._changed.wait(min(left, _POLL_SECONDS))

    def _enqueue(
        self,
        key: str,
        checkpoint: Checkpoint,
        tasks: Sequence[QualityReviewTask],
        hashes: Sequence[dict[str, str]],
    ) -> list[str]:
        """The job ids of the submission: its jobs in the queue, or new ones. A job cancelled
        earlier (the outputs changed, then changed back) is followed by a fresh one."""
        ids = []
        for index, payload in enumerate(_payloads(key, checkpoint, tasks, hashes)):
            dedupe = f"{key}:{index}"
            while True:
                job_id = self.jobs.enqueue(
                    KIND, payload, session_id=checkpoint.session_id, dedupe_key=dedupe
                )
                if self.jobs.get(job_id).state is not ReviewJobState.CANCELLED:
                    break  # a new job, or one to join
                dedupe = f"{key}:{index}:after:{job_id}"
            ids.append(job_id)
        return ids

    def _outcome(self, session_id: str, jobs: list[ReviewJob]) -> tuple[ReviewVerdict, ...] | None:
        """The verdicts once every job is done; raises for a failed or stale one."""
        for job in jobs:
            result = job.verdict or {}
            if job.state is ReviewJobState.CANCELLED or result.get("result") == "stale":
                self._cancel(session_id, keep="")
                raise QualityGateError(
                    f"the files of review {job.payload.get('label')!r} changed while it ran, "
                    "so its verdict was not recorded. Call finished_step again once the files "
                    "are final (not an attempt).",
                    code=ErrorCode.QUALITY_GATE_OUTPUTS_CHANGED,
                )
            if result.get("result") == "error":
                self._cancel(session_id, keep="")
                message = str(result.get("message") or "the review failed")
                raise QualityGateError(message, code=_code(result.get("code")))
        if any(job.state is not ReviewJobState.DONE for job in jobs):
            return None
        return tuple(ReviewVerdict.model_validate((job.verdict or {})["verdict"]) for job in jobs)

    def _cancel(self, session_id: str, keep: str) -> None:
        """Cancel the session's live jobs other than those of submission `keep`."""
        live = [ReviewJobState.QUEUED, ReviewJobState.CLAIMED]
        for job in self.jobs.list(session_id=session_id, states=live):
            if job.kind == KIND and job.payload.get("key") != keep:
                self.jobs.cancel(job.job_id)
                with self._changed:
                    running = self._running.get(job.job_id)
                if running is not None:
                    running[1].set()

    # --- the workers -------------------------------------------------------------------------

    def pump(self) -> None:
        """Claim jobs while a worker is free, and start them."""
        while not self._closed.is_set():
            with self._changed:
                if len(self._running) >= self.max_parallel:
                    return
                claim = self.jobs.claim(self.worker, lease_s=LEASE_SECONDS, kinds=[KIND])
                if claim is None:
                    return
                self._running[claim.job.job_id] = (claim, threading.Event())
            self._pool.submit(self._work, claim)

    def _work(self, claim: ReviewClaim) -> None:
        job_id = claim.job.job_id
        try:
            with self._changed:
                cancelled = self._running[job_id][1]
            result = self._judge(claim.job, cancelled)
            if not cancelled.is_set():
                with self._changed:
                    current = self._running[job_id][0]
                self.jobs.complete(current, result)  # False: no longer ours to answer
        except Exception as exc:  # the store failed: the lease runs out and the job runs again
            logger.warning("review job %s: %s", job_id, exc)
        finally:
            with self._changed:
                self._running.pop(job_id, None)
                self._finished += 1
                self._changed.notify_all()
        with suppress(Exception):  # the keeper tries again
            self.pump()

    def _judge(self, job: ReviewJob, cancelled: threading.Event) -> dict[str, Any]:
        try:
            checkpoint, task = self._decode(job.payload)
            verdict = self.reviewer.review_task(checkpoint, task, cancelled)
        except DeepWorkError as exc:
            return {"result": "error", "code": str(exc.code), "message": exc.message}
        except Exception as exc:  # an adapter's bug must fail the review, not the worker
            reason = f"{type(exc).__name__}: {exc}"[:500]
            code = ErrorCode.QUALITY_GATE_REVIEWER_FAILED
            return {"result": "error", "code": str(code), "message": reason}
        hashes: dict[str, str] = job.payload["hashes"]
        if file_hashes(self.root, list(hashes)) != hashes:
            return {"result": "stale"}
        return {"result": "verdict", "verdict": verdict.model_dump(mode="json")}

    def _decode(self, payload: dict[str, Any]) -> tuple[Checkpoint, QualityReviewTask]:
        fields = dict(payload["checkpoint"])
        fields["job"] = self.load_job(fields.pop("job_name"))
        fields["step_ids"] = tuple(fields["step_ids"])
        fields["undeclared_changes"] = tuple(fields["undeclared_changes"])
        fields["input_files"] = [ResolvedInput(**item) for item in fields["input_files"]]
        checkpoint = Checkpoint(project_root=self.root, **fields)
        return checkpoint, QualityReviewTask.model_validate(payload["task"])

    def _keep(self) -> None:
        """Renew the leases of running jobs (stopping one whose claim was lost or cancelled),
        and take up work others left."""
        while not self._closed.wait(LEASE_SECONDS / 3):
            try:
                self._renew()
                self.pump()
            except Exception as exc:  # the store is gone or down: try again next round
                logger.warning("background reviews of %s: %s", self.root, exc)

    def _renew(self) -> None:
        with self._changed:
            running = dict(self._running)
        for job_id, (claim, cancelled) in running.items():
            renewed = self.jobs.heartbeat(claim, lease_s=LEASE_SECONDS)
            if renewed is None:
                cancelled.set()
                continue
            with self._changed:
                if job_id in self._running:
                    self._running[job_id] = (renewed, cancelled)

    def close(self) -> None:
        """Stop the workers; running reviews are stopped and claimed again by a later server."""
        self._closed.set()
        with self._changed:
            for _, cancelled in self._running.values():
                cancelled.set()
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._keeper.join()


def _payloads(
    key: str,
    checkpoint: Checkpoint,
    tasks: Sequence[QualityReviewTask],
    hashes: Sequence[dict[str, str]],
) -> list[dict[str, Any]]:
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
        "log_length": checkpoint.log_length,
    }
    return [
        {
            "key": key,
            "label": task.label,
            "checkpoint": shared,
            "task": task.model_dump(mode="json"),
            "hashes": hashes[index],
        }
        for index, task in enumerate(tasks)
    ]


def _shown_state(job: ReviewJob) -> str:
    """`queued`, `running`, `passed` or `failed`."""
    if job.state is ReviewJobState.DONE:
        verdict = (job.verdict or {}).get("verdict")
        return "passed" if isinstance(verdict, dict) and verdict.get("passed") else "failed"
    return "running" if job.state is ReviewJobState.CLAIMED else str(job.state)


def _label(job: ReviewJob) -> str:
    return str(job.payload.get("label", job.job_id))


def _tell(progress: ProgressReporter | None, jobs: list[ReviewJob], told: set[str]) -> set[str]:
    """One progress notification per review that finished since the last look."""
    done = [job for job in jobs if job.state is ReviewJobState.DONE]
    if progress is None:
        return told
    for job in done:
        if job.job_id not in told:
            told = {*told, job.job_id}
            progress(len(told), len(jobs), f"review {_label(job)}: {_shown_state(job)}")
    return told


def reviewing(jobs: Sequence[ReviewJob]) -> GateReviewing:
    shown = tuple(ReviewProgress(job.job_id, _label(job), _shown_state(job)) for job in jobs)
    finished = sum(1 for job in jobs if job.state is ReviewJobState.DONE)
    feedback = (
        f"{finished} of {len(jobs)} review(s) finished; the others still run in the background. "
        "Call finished_step again with the same outputs to wait for them (not an attempt); "
        "changing the outputs cancels them and starts new reviews."
    )
    return GateReviewing(feedback=feedback, reviews=shown)


def _code(code: object) -> ErrorCode:
    try:
        return ErrorCode(code) if isinstance(code, str) else ErrorCode.QUALITY_GATE_ERROR
    except ValueError:
        return ErrorCode.QUALITY_GATE_ERROR
