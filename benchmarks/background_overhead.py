"""What the background path of the quality gate adds to a review that finishes at once.

The same review task is judged twice per sample by a judge that answers at once (what
`ReviewCalls` is in the server: the `Reviewer` port under the gate's policy): directly, and
through `BackgroundReviews.run` (a job enqueued in the project's store, claimed by a worker,
its result recorded and read back). The figure is the difference of the medians
(docs/quality-gate.md, "Background reviews").

The path makes three durable commits (enqueue, claim, result). The SQLite store now runs at
`synchronous=NORMAL` itself (WAL: safe against a killed process; docs/runtime-layout.md), so
the two figures measure the same store; the second one sets it explicitly.
"""

from __future__ import annotations

import statistics
import threading
import time
from pathlib import Path
from typing import Any

from deepwork_core.evidence.verdicts import ReviewVerdict
from deepwork_core.gate.background import BackgroundReviews, ReviewPayload
from deepwork_core.gate.checkpoint import Checkpoint
from deepwork_core.gate.quality import plan_review_tasks
from deepwork_core.gate.tasks import QualityReviewTask
from deepwork_core.jobs.discovery import STANDARD_JOBS_DIR
from deepwork_core.jobs.parser import load_job
from deepwork_core.state.store.opening import open_store
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.sqlite import SqliteStore
from deepwork_core.state.store.tables.review_jobs import ReviewJobs


class _InstantJudge:
    """Judges every task passed, at once (the `TaskJudge` that `ReviewCalls` is in the server)."""

    shares_spending = False

    def judge(
        self,
        checkpoint: Checkpoint,
        task: QualityReviewTask,
        cancelled: threading.Event,
        *,
        slots: int = 1,
    ) -> ReviewVerdict:
        return ReviewVerdict(
            step_id=task.step_id, review_run_each=task.run_each, passed=True, feedback="ok"
        )


def _checkpoint(root: Path, store: Store) -> tuple[Checkpoint, QualityReviewTask]:
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
                store=store,
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
    store = open_store(None, root)
    checkpoint, task = _checkpoint(root, store)
    judge = _InstantJudge()
    if not fsync and isinstance(store, SqliteStore):
        store._conn.execute("PRAGMA synchronous = NORMAL")  # the bench's variant only
    jobs = ReviewJobs(store, ReviewPayload)
    reviews = BackgroundReviews(root, judge, lambda _n: checkpoint.job, 4, jobs=jobs)
    direct: list[float] = []
    background: list[float] = []
    try:
        for sample in range(samples + 1):
            fresh = Checkpoint(  # another submission each time: nothing to join
                project_root=root,
                store=store,
                session_id=checkpoint.session_id,
                job=checkpoint.job,
                step_ids=checkpoint.step_ids,
                outputs=checkpoint.outputs,
                input_files=[],
                notes=f"sample {sample}",
            )
            began = time.perf_counter()
            judge.judge(fresh, task, threading.Event())
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
        store.close()
    direct_ms, background_ms = statistics.median(direct), statistics.median(background)
    return background_ms - direct_ms, direct_ms, background_ms
