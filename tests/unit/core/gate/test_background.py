"""Background reviews (docs/quality-gate.md, "Background reviews") over a real SQLite store, with
a reviewer double that implements the `Reviewer` port in this process: it answers when the test
lets it (an event), never after a sleep."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from deepwork_core.base.config import QualityGateConfig, ReviewBudget
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import QualityGateError
from deepwork_core.evidence.verdicts import ReviewVerdict
from deepwork_core.gate.background import BackgroundReviews
from deepwork_core.gate.calls import ReviewCalls
from deepwork_core.gate.checkpoint import CheckpointRecord, GateReviewing
from deepwork_core.gate.quality import plan_review_tasks
from deepwork_core.gate.review_queue import KIND, ReviewPayload
from deepwork_core.gate.reviewer import ReviewBrief, ReviewerReply
from deepwork_core.gate.tasks import QualityReviewTask
from deepwork_core.state.store.errors import StoreCode
from deepwork_core.state.store.opening import open_store
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.tables.review_jobs import Failed, ReviewJobs, ReviewJobState
from pydantic import JsonValue

from tests.fixtures.review_queue import Note
from tests.unit.core.gate.test_quality import make_request
from tests.unit.core.gate.test_quality import project as project

#: Long enough that a test never waits it out; the reviewer double answers much sooner.
LONG = 30.0


class GatedReviewer:
    """A `Reviewer` that passes every criterion once `release` is set; records each call and
    whether it was cancelled."""

    name = "gated"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Semaphore(0)
        self.calls: list[str] = []
        self.cancelled: list[str] = []
        self.error: QualityGateError | None = None
        self.on_review: list[Path] = []

    def review(self, brief: ReviewBrief, cancelled: threading.Event) -> ReviewerReply:
        task = brief.task
        self.calls.append(task.label)
        self.started.release()
        for path in self.on_review:  # the agent edits a file while it is reviewed
            path.write_text("changed meanwhile\n")
        while not self.release.wait(0.01):
            if cancelled.is_set():
                self.cancelled.append(task.label)
                raise QualityGateError("cancelled", code=ErrorCode.QUALITY_GATE_ERROR)
        if self.error is not None:
            raise self.error
        return ReviewerReply(reply=passing_reply(task))


def passing_reply(task: QualityReviewTask) -> dict[str, JsonValue]:
    """A reply that passes every criterion of `task`."""
    results: list[JsonValue] = [
        {"criterion": name, "passed": True, "feedback": ""} for name in task.criteria
    ]
    return {"passed": True, "feedback": "ok", "criteria_results": results}


@pytest.fixture
def store(project: Path) -> Iterator[Store]:
    opened = open_store(None, project)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def reviewer() -> GatedReviewer:
    return GatedReviewer()


def background(
    project: Path, store: Store, calls: ReviewCalls, max_parallel: int = 4
) -> BackgroundReviews:
    """The background reviews of `project` over `store`, judging through `calls`."""
    job = make_request(store, project).job
    jobs = ReviewJobs(store, ReviewPayload)
    return BackgroundReviews(project, calls, lambda _name: job, max_parallel, jobs=jobs)


@pytest.fixture
def reviews(project: Path, store: Store, reviewer: GatedReviewer) -> Iterator[BackgroundReviews]:
    found = background(project, store, ReviewCalls(reviewer))
    try:
        yield found
    finally:
        reviewer.release.set()
        found.close()


def submit(project: Path, reviews: BackgroundReviews, wait: float = 0.0) -> object:
    checkpoint = make_request(reviews.jobs.store, project)
    return reviews.run(checkpoint, plan_review_tasks(checkpoint), wait)


def test_a_slow_review_answers_reviewing_and_a_repeated_call_joins_it(
    project: Path,
    reviews: BackgroundReviews,
    reviewer: GatedReviewer,
) -> None:
    first = submit(project, reviews)
    assert isinstance(first, GateReviewing)
    assert {review.state for review in first.reviews} <= {"queued", "running"}
    total = len(first.reviews)
    for _ in range(total):
        assert reviewer.started.acquire(timeout=LONG)
    second = submit(project, reviews)
    assert isinstance(second, GateReviewing)
    assert [r.review_id for r in second.reviews] == [r.review_id for r in first.reviews]
    reviewer.release.set()
    verdicts = submit(project, reviews, wait=LONG)
    assert isinstance(verdicts, tuple)
    assert len(verdicts) == total
    assert all(v.passed for v in verdicts)
    assert len(reviewer.calls) == total  # joined, never started twice


def test_changed_outputs_cancel_the_reviews_in_flight(
    project: Path,
    reviews: BackgroundReviews,
    reviewer: GatedReviewer,
    store: Store,
) -> None:
    first = submit(project, reviews)
    assert isinstance(first, GateReviewing)
    assert reviewer.started.acquire(timeout=LONG)
    (project / "out" / "report.md").write_text("a better report\n")
    second = submit(project, reviews)
    assert isinstance(second, GateReviewing)
    old = {r.review_id for r in first.reviews}
    assert old.isdisjoint(r.review_id for r in second.reviews)
    states = {job.job_id: job.state for job in ReviewJobs(store, ReviewPayload).list()}
    assert {states[job_id] for job_id in old} == {ReviewJobState.CANCELLED}


def test_a_file_changed_under_review_gives_no_verdict(
    project: Path,
    reviews: BackgroundReviews,
    reviewer: GatedReviewer,
) -> None:
    reviewer.on_review.append(project / "out" / "report.md")
    reviewer.release.set()
    with pytest.raises(QualityGateError) as caught:
        submit(project, reviews, wait=LONG)
    assert caught.value.code == ErrorCode.QUALITY_GATE_OUTPUTS_CHANGED


def test_a_reviewer_error_is_the_calls_error_with_its_code(
    project: Path,
    reviews: BackgroundReviews,
    reviewer: GatedReviewer,
) -> None:
    reviewer.error = QualityGateError("too slow", code=ErrorCode.QUALITY_GATE_TIMEOUT)
    reviewer.release.set()
    with pytest.raises(QualityGateError) as caught:
        submit(project, reviews, wait=LONG)
    assert caught.value.code == ErrorCode.QUALITY_GATE_TIMEOUT


def test_progress_is_told_once_per_finished_review(
    project: Path,
    reviews: BackgroundReviews,
    reviewer: GatedReviewer,
    store: Store,
) -> None:
    told: list[tuple[int, int, str]] = []
    reviewer.release.set()
    checkpoint = make_request(store, project)
    tasks = plan_review_tasks(checkpoint)
    verdicts = reviews.run(checkpoint, tasks, LONG, lambda d, t, m: told.append((d, t, m)))
    assert isinstance(verdicts, tuple)
    assert [(done, total) for done, total, _ in told] == [
        (n, len(tasks)) for n in range(1, len(tasks) + 1)
    ]
    assert all(message.rsplit("; ", 1)[0].endswith(": passed") for _, _, message in told)
    assert all(message.endswith(" tokens so far") for _, _, message in told)


def test_a_job_of_a_dead_worker_runs_again_and_is_answered_once(
    project: Path,
    reviewer: GatedReviewer,
) -> None:
    class Clock:
        t = 1_800_000_000.0

        def __call__(self) -> float:
            return self.t

    clock = Clock()
    store = open_store(None, project, clock=clock)
    checkpoint = make_request(store, project)
    first = background(project, store, ReviewCalls(reviewer), max_parallel=8)
    try:
        answer = first.run(checkpoint, plan_review_tasks(checkpoint), 0.0)
        assert isinstance(answer, GateReviewing)
        total = len(answer.reviews)
        for _ in range(total):
            assert reviewer.started.acquire(timeout=LONG)
        clock.t += 3600  # the first worker stopped renewing: its leases ran out
        second = background(project, store, ReviewCalls(reviewer), max_parallel=8)
        try:
            for _ in range(total):
                assert reviewer.started.acquire(timeout=LONG)
            reviewer.release.set()
            verdicts = second.run(checkpoint, plan_review_tasks(checkpoint), LONG)
            assert isinstance(verdicts, tuple)
            assert len(verdicts) == total
        finally:
            second.close()
    finally:
        first.close()
        store.close()
    reopened = open_store(None, project)
    jobs = ReviewJobs(reopened, ReviewPayload).list()
    reopened.close()
    assert [job.attempts for job in jobs] == [2] * total  # each claimed twice, answered once
    assert all(job.state is ReviewJobState.DONE for job in jobs)


def test_a_job_this_version_cannot_read_is_failed_with_its_code(
    project: Path, store: Store, reviewer: GatedReviewer
) -> None:
    checkpoint = make_request(store, project)
    with store.write() as tx:  # queued by a version whose payload this one does not know
        tx.execute(
            "INSERT INTO review_jobs (job_id, project_id, session_id, kind, payload, state, "
            "enqueued_at) VALUES ('rj-odd', ?, 'sess_elsewhere', ?, '{\"shape\": 2}', 'queued', 0)",
            (store.project.project_id, KIND),
        )
    jobs = ReviewJobs(store, ReviewPayload)
    one_at_a_time = background(project, store, ReviewCalls(reviewer), max_parallel=1)
    try:
        reviewer.release.set()
        verdicts = one_at_a_time.run(checkpoint, plan_review_tasks(checkpoint), LONG)
    finally:
        one_at_a_time.close()
    assert isinstance(verdicts, tuple)  # the odd job ran first, and blocked nothing
    odd = jobs.get("rj-odd")
    assert odd.state is ReviewJobState.DONE
    assert isinstance(odd.result, Failed)
    assert odd.result.code == StoreCode.STORE_JOB_UNREADABLE
    assert len(reviewer.calls) == len(verdicts)  # no reviewer was asked about it


def test_an_unreadable_job_of_the_session_is_replaced_by_a_fresh_one(
    project: Path, store: Store, reviews: BackgroundReviews, reviewer: GatedReviewer
) -> None:
    checkpoint = make_request(store, project)
    with store.write() as tx:
        tx.execute(
            "INSERT INTO review_jobs (job_id, project_id, session_id, kind, payload, state, "
            "enqueued_at) VALUES ('rj-odd', ?, ?, ?, '{}', 'claimed', 0)",
            (store.project.project_id, checkpoint.session_id, KIND),
        )
    reviewer.release.set()
    verdicts = reviews.run(checkpoint, plan_review_tasks(checkpoint), LONG)
    assert isinstance(verdicts, tuple)
    assert all(v.passed for v in verdicts)
    assert ReviewJobs(store, ReviewPayload).get("rj-odd").state is ReviewJobState.CANCELLED


def test_max_parallel_must_be_positive(project: Path, store: Store) -> None:
    with pytest.raises(ValueError):
        background(project, store, ReviewCalls(GatedReviewer()), max_parallel=0)


def test_a_call_shares_the_cost_budget_and_the_day_with_the_live_jobs_of_its_session(
    project: Path, store: Store, reviewer: GatedReviewer
) -> None:
    checkpoint = make_request(store, project)
    jobs = ReviewJobs(store, Note)
    budget = ReviewBudget(max_cost_usd=1.0)
    reviews = background(project, store, ReviewCalls(reviewer, budget=budget), max_parallel=2)
    unbudgeted = background(project, store, ReviewCalls(reviewer), max_parallel=2)
    capped = background(project, store, ReviewCalls(reviewer, max_usd_per_day=1.0), max_parallel=2)
    try:
        assert reviews.slots(checkpoint.session_id) == 1  # nothing else runs
        ids = [jobs.enqueue("other", Note(), session_id=checkpoint.session_id) for _ in range(3)]
        jobs.enqueue("other", Note(), session_id="sess_other")
        assert reviews.slots(checkpoint.session_id) == 2  # three live jobs, at most max_parallel
        assert unbudgeted.slots(checkpoint.session_id) == 1  # no cost budget to share
        assert capped.slots(checkpoint.session_id) == 2  # the day's budget is shared too
        for job_id in ids[1:]:
            jobs.cancel(job_id)
        assert reviews.slots(checkpoint.session_id) == 1
    finally:
        reviews.close()
        unbudgeted.close()
        capped.close()


def test_the_queue_carries_a_checkpoint_whole(project: Path, store: Store) -> None:
    checkpoint = make_request(
        store,
        project,
        attempt=2,
        work_summary="did it",
        undeclared_changes=("stray.txt",),
        run_id="sess_parent",
        log_length=3,
    )
    record = CheckpointRecord.model_validate_json(CheckpointRecord.of(checkpoint).model_dump_json())
    assert record.job_name == checkpoint.job.name
    assert record.checkpoint(project, store, checkpoint.job) == checkpoint


class RecordingJudge:
    """A judge that records what it was asked and fails it, as a server without a reviewer."""

    def __init__(self, budget: ReviewBudget | None = None) -> None:
        self.budget = budget if budget is not None else ReviewBudget()
        self.shares_spending = self.budget.max_cost_usd is not None
        self.asked: list[str] = []

    def judge(
        self, checkpoint: object, task: QualityReviewTask, cancelled: object, *, slots: int = 1
    ) -> ReviewVerdict:
        self.asked.append(task.label)
        raise QualityGateError("no reviewer here", code=ErrorCode.QUALITY_GATE_NOT_INSTALLED)


def test_a_queued_job_is_held_for_its_live_server_then_judged_under_its_settings(
    project: Path, reviewer: GatedReviewer
) -> None:
    class Clock:
        t = 1_800_000_000.0

        def __call__(self) -> float:
            return self.t

    clock = Clock()
    store = open_store(None, project, clock=clock)
    other_store = open_store(None, project, clock=clock)  # a second server on the project
    checkpoint = make_request(store, project)
    job = checkpoint.job
    queued_with = QualityGateConfig(external_runner="claude", timeout_seconds=321)
    first = BackgroundReviews(
        project,
        ReviewCalls(reviewer),
        lambda _name: job,
        1,
        ReviewJobs(store, ReviewPayload),
        settings=queued_with,
    )
    stranger = RecordingJudge()
    built: list[QualityGateConfig] = []
    faithful = ReviewCalls(reviewer)

    def judge_for(settings: QualityGateConfig) -> ReviewCalls:
        built.append(settings)
        return faithful

    second = BackgroundReviews(
        project,
        stranger,
        lambda _name: job,
        4,
        ReviewJobs(other_store, ReviewPayload),
        settings=QualityGateConfig(external_runner="codex"),
        judge_for=judge_for,
    )
    try:
        answer = first.run(checkpoint, plan_review_tasks(checkpoint), 0.0)
        assert isinstance(answer, GateReviewing)
        assert len(answer.reviews) > 1  # one runs on the first server, the others wait there
        assert reviewer.started.acquire(timeout=LONG)
        second.pump()
        assert stranger.asked == []  # the first server lives: its queued jobs are its own
        states = [j.state for j in ReviewJobs(store, ReviewPayload).list()]
        assert states.count(ReviewJobState.QUEUED) == len(answer.reviews) - 1
        clock.t += 3600  # the first server stopped renewing its hold: the others take over
        second.pump()  # before the first server's review ends, as it could claim the rest then
        states = [j.state for j in ReviewJobs(store, ReviewPayload).list()]
        assert ReviewJobState.QUEUED not in states  # every queued job is the second's now
        reviewer.release.set()
        verdicts = second.run(checkpoint, plan_review_tasks(checkpoint), LONG)
        assert isinstance(verdicts, tuple)
        assert all(v.passed for v in verdicts)
        assert stranger.asked == []  # never judged under the second server's settings
        assert built
        assert all(s == queued_with for s in built)
    finally:
        reviewer.release.set()
        second.close()
        first.close()
        other_store.close()
        store.close()
