"""An aborted run, or one sent back past the step under review, pays for no review after: its
queued review jobs are cancelled and the running reviewer is stopped (docs/quality-gate.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from deepwork_core.engine.results import FinishStatus
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.gate.calls import ReviewCalls
from deepwork_core.gate.gates import ExternalGate
from deepwork_core.gate.review_queue import ReviewPayload
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.tables.review_jobs import ReviewJobs, ReviewJobState

from tests.fixtures.workflow_project import make_project, write_files
from tests.unit.core.gate.test_background import LONG, GatedReviewer


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


@pytest.fixture
def reviewer() -> GatedReviewer:
    return GatedReviewer()


@pytest.fixture
def gate(reviewer: GatedReviewer) -> Iterator[ExternalGate]:
    """One reviewer call at a time, and no waiting: the polish step's three reviews are one
    running and two queued when `finished_step` answers."""
    found = ExternalGate(ReviewCalls(reviewer), wait_seconds=0.0, max_parallel=1)
    try:
        yield found
    finally:
        reviewer.release.set()
        found.close()


@pytest.fixture
def engine(root: Path, make_store: Callable[..., Store], gate: ExternalGate) -> WorkflowEngine:
    sessions = SessionStore(make_store(root), root)
    return WorkflowEngine(root, JobCatalog.for_project(root), sessions, gate=gate)


def polish_under_review(engine: WorkflowEngine, root: Path, reviewer: GatedReviewer) -> str:
    """A `reviewed` run at `polish`, its three reviews queued behind one that runs; its id."""
    session_id = str(engine.start("review it", "reviewed", "main", "acme").brief.session_id)
    write_files(root, "report.md", "final.md", "a.md", "b.md")
    reviewer.release.set()
    passed = engine.finish({"report": "report.md"})
    while passed.status is FinishStatus.REVIEWING:
        passed = engine.finish({"report": "report.md"})
    assert passed.status is FinishStatus.NEXT_STEP
    reviewer.release.clear()
    answer = engine.finish({"final": "final.md", "appendix": ["a.md", "b.md"]})
    assert answer.status is FinishStatus.REVIEWING
    for _ in range(2):  # the write step's review, then the first of polish
        assert reviewer.started.acquire(timeout=LONG)
    return session_id


def polish_jobs(engine: WorkflowEngine, session_id: str) -> list[ReviewJobState]:
    jobs = ReviewJobs(engine.store.store, ReviewPayload).list(session_id=session_id)
    return [job.state for job in jobs if job.payload and job.payload.task.step_id == "polish"]


def test_abort_cancels_the_queued_reviews_and_stops_the_running_one(
    root: Path, engine: WorkflowEngine, gate: ExternalGate, reviewer: GatedReviewer
) -> None:
    session_id = polish_under_review(engine, root, reviewer)
    assert sorted(polish_jobs(engine, session_id)) == ["claimed", "queued", "queued"]
    engine.abort("given up")
    assert polish_jobs(engine, session_id) == [ReviewJobState.CANCELLED] * 3
    gate.close()  # waits for the workers
    assert len(reviewer.calls) == 2  # no review of the aborted run started after
    assert len(reviewer.cancelled) == 1  # the running one was stopped, not answered


def test_going_back_past_the_step_cancels_its_reviews(
    root: Path, engine: WorkflowEngine, gate: ExternalGate, reviewer: GatedReviewer
) -> None:
    from deepwork_core.engine.navigation import go_back

    session_id = polish_under_review(engine, root, reviewer)
    go_back(engine, "write")
    assert polish_jobs(engine, session_id) == [ReviewJobState.CANCELLED] * 3
    gate.close()
    assert len(reviewer.calls) == 2
