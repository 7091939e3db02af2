"""What the background path of the quality gate adds to a review that finishes at once.

The same review task is judged twice per sample by a reviewer that answers at once: directly
(`ReviewCalls.judge` over the `Reviewer` port), and through `BackgroundReviews.run` (a job
enqueued in the project's store, claimed by a worker, its result recorded and read back). The
figure is the difference of the medians (docs/quality-gate.md, "Background reviews"); both
paths build the brief and log the call's usage event.

The path makes three durable commits (enqueue, claim, result) beyond the usage event both
paths write. The SQLite store now runs at
`synchronous=NORMAL` itself (WAL: safe against a killed process; docs/runtime-layout.md), so
the two figures measure the same store; the second one sets it explicitly.
"""

from __future__ import annotations

import statistics
import threading
import time
from pathlib import Path
from typing import Any

from deepwork_core.gate.background import BackgroundReviews, ReviewPayload
from deepwork_core.gate.calls import ReviewCalls
from deepwork_core.gate.checkpoint import Checkpoint
from deepwork_core.gate.quality import plan_review_tasks
from deepwork_core.gate.reviewer import ReviewBrief, ReviewerReply
from deepwork_core.gate.tasks import QualityReviewTask
from deepwork_core.jobs.discovery import STANDARD_JOBS_DIR
from deepwork_core.jobs.parser import load_job
from deepwork_core.state.store.opening import shared_store
from deepwork_core.state.store.review_jobs import ReviewJobs
from deepwork_core.state.store.sqlite import SqliteStore
from pydantic import JsonValue


class _InstantReviewer:
    """A `Reviewer` that passes every criterion at once."""

    name = "instant"

    def review(self, brief: ReviewBrief, cancelled: threading.Event) -> ReviewerReply:
        results: list[JsonValue] = [
            {"criterion": name, "passed": True, "feedback": ""} for name in brief.task.criteria
        ]
        return ReviewerReply(reply={"passed": True, "feedback": "ok", "criteria_results": results})


def _checkpoint(root: Path) -> tuple[Checkpoint, QualityReviewTask]:
    """The first review of the standard jobs, its output files written under `root`."""
    for job_dir in sorted(p for p in STANDARD_JOBS_DIR.iterdir() if p.is_dir()):
        job = load_job(job_dir)
        for step in job.steps:
            if not step.reviews:
                continue
            outputs: dict[str, Any] = {}
            for name, spec in step.outputs.items():
                path = f"out/{name}.md"
                (root / "out").mkdir(parents=True, exist_ok=True)
                (root / path).write_text(f"# {name}\n\nSome content.\n")
                outputs[name] = [path] if spec.type.value == "files" else path
            checkpoint = Checkpoint(
                project_root=root,
                session_id="bench_background",
                job=job,
                step_ids=(step.id,),
                outputs=outputs,
                input_files=[],
            )
            return checkpoint, plan_review_tasks(checkpoint)[0]
    raise RuntimeError("no standard job has a review")


def background_overhead(
    root: Path, samples: int, *, fsync: bool = True
) -> tuple[float, float, float]:
    """(overhead, direct, background) medians in milliseconds over `samples` reviews."""
    root.mkdir(parents=True, exist_ok=True)
    checkpoint, task = _checkpoint(root)
    calls = ReviewCalls(_InstantReviewer())
    # The store the server uses for both the queue and the event log (the usage events): two
    # connections to one SQLite file would make each wait on the other's write lock.
    store = shared_store(root)
    if not fsync and isinstance(store, SqliteStore):
        store._conn.execute("PRAGMA synchronous = NORMAL")  # the bench's variant only
    jobs = ReviewJobs(store, ReviewPayload)
    reviews = BackgroundReviews(root, calls, lambda _n: checkpoint.job, 4, jobs=jobs)
    direct: list[float] = []
    background: list[float] = []
    try:
        for sample in range(samples + 1):
            fresh = Checkpoint(  # another submission each time: nothing to join
                project_root=root,
                session_id=checkpoint.session_id,
                job=checkpoint.job,
                step_ids=checkpoint.step_ids,
                outputs=checkpoint.outputs,
                input_files=[],
                notes=f"sample {sample}",
            )
            began = time.perf_counter()
            calls.judge(fresh, task, threading.Event())
            middle = time.perf_counter()
            answer = reviews.run(fresh, [task], 5.0)
            ended = time.perf_counter()
            if not isinstance(answer, tuple):
                raise RuntimeError(f"the background review did not finish: {answer}")
            if sample:  # the first one opens the store
                direct.append((middle - began) * 1000)
                background.append((ended - middle) * 1000)
    finally:
        reviews.close()
    direct_ms, background_ms = statistics.median(direct), statistics.median(background)
    return background_ms - direct_ms, direct_ms, background_ms
