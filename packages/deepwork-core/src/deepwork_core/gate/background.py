"""Background reviews: review tasks as durable jobs, run by this server's workers
(docs/quality-gate.md, "Background reviews").

`BackgroundReviews.run` turns a checkpoint's tasks into rows of the project's `review_jobs`
table, named by a key over the session, the attempt, the outputs and the content hashes of the
files under review. A repeated call with the same key joins the jobs already there; a new key
cancels the session's other jobs (their processes are stopped). It then waits at most
`wait_seconds` and returns the verdicts in task order, or a `GateReviewing` listing each job.

The jobs are rows of the store's `review_jobs` queue (`state.store.tables.review_jobs`),
one per task, each a `ReviewPayload` (`deepwork_core.gate.review_queue`: the checkpoint as a
`CheckpointRecord`, the task, the hashes) enqueued under a dedupe key (`<key>:<task>`), so
joining is enqueueing again. Workers
are the threads of one pool. A job is held for the server that queued it while that server
lives (the keeper renews its hold with the leases): another server on the same project takes it
only once the hold ran out, and judges it under the gate settings it was queued with (kept in
the payload; `judge_for` builds the judge of other settings). Each worker claims a job with a
lease the keeper thread renews, judges it
synchronously through a `TaskJudge` (in the server `ReviewCalls`: the `Reviewer` port under the
gate's policy), at most `max_parallel` at once, and records one `JobResult` with `complete`,
which succeeds once per claim: jobs left by a server that stopped or was killed are claimed
again once their lease runs out, and run once. Each verdict is bound to the hashes it judged:
when the files changed meanwhile it is `Stale`, and the call answers
`quality_gate.outputs_changed`.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from pathlib import Path
from typing import Protocol

from deepwork_core.base.config import QualityGateConfig
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError, QualityGateError
from deepwork_core.evidence.verdicts import ReviewVerdict
from deepwork_core.gate.checkpoint import (
    Checkpoint,
    GateReviewing,
    ProgressReporter,
)
from deepwork_core.gate.costs.quotes import TaskPrice
from deepwork_core.gate.review_queue import (
    KIND,
    LIVE,
    GateJob,
    ReviewPayload,
    file_hashes,
    job_label,
    job_payloads,
    review_key,
    reviewing_verdict,
    tell_progress,
)
from deepwork_core.gate.tasks import QualityReviewTask
from deepwork_core.jobs.model import JobDefinition
from deepwork_core.state.store.errors import StoreCode
from deepwork_core.state.store.tables.review_jobs import (
    Failed,
    JobResult,
    Judged,
    ReviewClaim,
    ReviewJobs,
    ReviewJobState,
    Stale,
)

logger = logging.getLogger("deepwork.gate")

#: How often a waiting call looks at jobs another process runs (its own wake it at once).
_POLL_SECONDS = 0.5
#: A claim's lease; the worker renews it every third of it while the review runs, and looks
#: for work left by others (a lease that ran out) as often.
LEASE_SECONDS = 15.0


class TaskJudge(Protocol):
    """What judges one task in a worker thread: `ReviewCalls` (the `Reviewer` port under the
    gate's policy), or a double."""

    @property
    def shares_spending(self) -> bool:
        """Whether parallel calls share what is left of a cost budget or of the day's."""
        ...

    def judge(
        self,
        checkpoint: Checkpoint,
        task: QualityReviewTask,
        cancelled: threading.Event,
        *,
        slots: int = 1,
    ) -> ReviewVerdict: ...


#: Builds the judge of a job queued under other gate settings (another server's).
JudgeFactory = Callable[[QualityGateConfig], TaskJudge]


class BackgroundReviews:
    """The review jobs of one project (`jobs`, the queue of its store) and the workers that run
    them. Thread-safe."""

    def __init__(
        self,
        project_root: Path,
        calls: TaskJudge,
        load_job: Callable[[str], JobDefinition],
        max_parallel: int,
        jobs: ReviewJobs[ReviewPayload],
        settings: QualityGateConfig | None = None,
        judge_for: JudgeFactory | None = None,
    ) -> None:
        """`calls` judges one task in a worker thread; at most `max_parallel` run at once.
        `settings`: the gate settings `calls` was built from, kept with each job queued here;
        `judge_for`: the judge of a job queued under other settings (None: `calls` judges all)."""
        if max_parallel < 1:
            raise ValueError("max_parallel must be at least 1")
        self.root = project_root
        self.calls = calls
        self.settings = settings
        self.judge_for = judge_for
        self._judges: dict[str, TaskJudge] = {}
        self.load_job = load_job
        self.max_parallel = max_parallel
        self.jobs = jobs
        self.worker = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._changed = threading.Condition()
        self._running: dict[str, tuple[ReviewClaim[ReviewPayload], threading.Event]] = {}
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
        expected: Sequence[TaskPrice] | None = None,
    ) -> tuple[ReviewVerdict, ...] | GateReviewing:
        """Join or start the jobs of this submission and wait for them (see the module);
        `expected`: what each task is expected to cost, kept with its job."""
        deadline = time.monotonic() + wait_seconds
        hashes = [file_hashes(checkpoint.project_root, task.files) for task in tasks]
        key = review_key(checkpoint, tasks, hashes)
        self._cancel(checkpoint.session_id, keep=key)
        payloads = job_payloads(key, checkpoint, tasks, hashes, expected, self.settings)
        ids = self._enqueue(key, checkpoint.session_id, payloads)
        self.pump()
        told: set[str] = set()
        while True:
            with self._changed:
                seen = self._finished
            jobs = self.jobs.get_many(ids)
            told = tell_progress(progress, jobs, told, checkpoint)
            outcome = self._outcome(checkpoint.session_id, jobs)
            if outcome is not None:
                return outcome
            left = deadline - time.monotonic()
            if left <= 0:
                return reviewing_verdict(jobs)
            with self._changed:  # woken by a job of ours finishing; jobs elsewhere are polled
                if self._finished == seen:
                    self._changed.wait(min(left, _POLL_SECONDS))

    def _enqueue(self, key: str, session_id: str, payloads: Sequence[ReviewPayload]) -> list[str]:
        """The job ids of the submission: its jobs in the queue, or new ones. A job cancelled
        earlier (the outputs changed, then changed back) is followed by a fresh one."""
        ids = []
        for index, payload in enumerate(payloads):
            dedupe = f"{key}:{index}"
            while True:
                job_id = self.jobs.enqueue(
                    KIND,
                    payload,
                    session_id=session_id,
                    dedupe_key=dedupe,
                    owner=self.worker,
                    lease_s=LEASE_SECONDS,
                )
                if self.jobs.state(job_id) is not ReviewJobState.CANCELLED:
                    break  # a new job, or one to join
                dedupe = f"{key}:{index}:after:{job_id}"
            ids.append(job_id)
        return ids

    def _outcome(self, session_id: str, jobs: list[GateJob]) -> tuple[ReviewVerdict, ...] | None:
        """The verdicts once every job is done; raises for a failed or stale one."""
        verdicts = []
        for job in jobs:
            result = job.result
            if job.state is ReviewJobState.CANCELLED or isinstance(result, Stale):
                self._cancel(session_id, keep="")
                raise QualityGateError(
                    f"the files of review {job_label(job)!r} changed while it ran, "
                    "so its verdict was not recorded. Call finished_step again once the files "
                    "are final (not an attempt).",
                    code=ErrorCode.QUALITY_GATE_OUTPUTS_CHANGED,
                )
            if isinstance(result, Failed):
                self._cancel(session_id, keep="")
                raise QualityGateError(result.message or "the review failed", code=result.code)
            if isinstance(result, Judged):
                verdicts.append(result.verdict)
        if len(verdicts) < len(jobs):
            return None
        return tuple(verdicts)

    def cancel_sessions(self, session_ids: Sequence[str]) -> None:
        """Cancel every live job of these sessions and stop their reviewers at once (the run
        was aborted, or went back past the step under review)."""
        for session_id in session_ids:
            self._cancel(session_id, keep="")

    def _cancel(self, session_id: str, keep: str) -> None:
        """Cancel the session's live jobs other than those of submission `keep`, all in one
        transaction (a worker that a stopped review frees claims none of them meanwhile), then
        stop the reviewers of those running here."""
        with self.jobs.store.write():
            doomed = [
                job.job_id
                for job in self.jobs.list(session_id=session_id, states=LIVE)
                if job.kind == KIND and (job.payload.key if job.payload else None) != keep
            ]
            for job_id in doomed:
                self.jobs.cancel(job_id)
        for job_id in doomed:
            with self._changed:
                running = self._running.get(job_id)
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

    def _work(self, claim: ReviewClaim[ReviewPayload]) -> None:
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

    def _judge(self, job: GateJob, cancelled: threading.Event) -> JobResult:
        payload = job.payload
        if payload is None:
            message = (
                f"review job {job.job_id} was queued by a version of DeepWork whose jobs this "
                "one cannot read; call finished_step again to start a new review"
            )
            return Failed(code=StoreCode.STORE_JOB_UNREADABLE, message=message)
        try:
            job_definition = self.load_job(payload.checkpoint.job_name)
            checkpoint = payload.checkpoint.checkpoint(self.root, self.jobs.store, job_definition)
            slots = self.slots(checkpoint.session_id)
            judge = self._judge_of(payload.settings)
            verdict = judge.judge(checkpoint, payload.task, cancelled, slots=slots)
        except DeepWorkError as exc:
            return Failed(code=exc.code, message=exc.message)
        except Exception as exc:  # an adapter's bug must fail the review, not the worker
            reason = f"{type(exc).__name__}: {exc}"[:500]
            return Failed(code=ErrorCode.QUALITY_GATE_REVIEWER_FAILED, message=reason)
        if file_hashes(self.root, list(payload.hashes)) != payload.hashes:
            return Stale()
        return Judged(verdict=verdict)

    def _judge_of(self, settings: QualityGateConfig | None) -> TaskJudge:
        """The judge of a job queued under `settings`: `calls` for this server's own (or
        unknown) settings, else one built from them once."""
        if settings is None or settings == self.settings or self.judge_for is None:
            return self.calls
        text = settings.model_dump_json()
        with self._changed:
            found = self._judges.get(text)
            if found is None:
                found = self._judges[text] = self.judge_for(settings)
        return found

    def slots(self, session_id: str) -> int:
        """How many reviewer calls of the session may run at once, sharing what is left of the
        run's cost budget and of the day's (`quality_gate.max_budget_usd_per_day`): its jobs
        still queued or running (the gate enqueues a checkpoint's tasks together, before any
        starts), at most `max_parallel`; 1 with neither a cost budget nor a day cap."""
        if not self.calls.shares_spending:
            return 1
        live = self.jobs.list(session_id=session_id, states=LIVE)
        return max(1, min(self.max_parallel, len(live)))

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
        self.jobs.hold(self.worker, lease_s=LEASE_SECONDS)
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
