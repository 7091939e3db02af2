"""Review-job rows as the store holds them: the gate's payload and the tagged results, rows the
previous version wrote (untyped JSON in the same columns), and rows this version cannot read."""

from __future__ import annotations

import json

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.gate.review_queue import KIND, ReviewPayload
from deepwork_core.state.store.errors import StoreCode
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.tables.review_jobs import (
    Cancelled,
    Failed,
    Judged,
    ReviewJobs,
    ReviewJobState,
    Stale,
)

from tests.fixtures.review_queue import gate_payload, judged

#: A payload exactly as the version before typed payloads wrote it (`_payloads` built dicts).
OLD_PAYLOAD = {
    "key": "0f3c",
    "label": "write: all outputs",
    "checkpoint": {
        "session_id": "sess_old",
        "job_name": "demo",
        "step_ids": ["write"],
        "outputs": {"report": "out/report.md", "pages": ["out/a.md"]},
        "input_files": [
            {
                "step_id": "write",
                "name": "notes",
                "description": None,
                "from_step": "gather",
                "paths": ["notes.md"],
                "value": None,
            }
        ],
        "notes": "author notes",
        "attempt": 2,
        "work_summary": None,
        "undeclared_changes": ["stray.txt"],
        "run_id": None,
        "log_length": 3,
    },
    "task": {
        "step_id": "write",
        "run_each": "step",
        "target_file": None,
        "files": ["out/report.md"],
        "criteria": {"Clear": "Is it clear?"},
        "guidance": None,
        "depth": "standard",
        "agent": None,
        "context": [],
    },
    "hashes": {"out/report.md": "ab" * 32},
}
OLD_VERDICT = {
    "step_id": "write",
    "review_run_each": "step",
    "target_file": None,
    "passed": True,
    "feedback": "ok",
    "criteria_results": [{"criterion": "Clear", "passed": True, "feedback": ""}],
}


def _insert(store: Store, job_id: str, payload: object, state: str, result: object) -> None:
    """A row written by hand, as another version of DeepWork would have."""
    with store.write() as tx:
        tx.execute(
            "INSERT INTO review_jobs (job_id, project_id, session_id, kind, payload, state, "
            "enqueued_at, attempts, verdict) VALUES (?, ?, 'sess_old', ?, ?, ?, ?, 1, ?)",
            (
                job_id,
                store.project.project_id,
                KIND,
                json.dumps(payload),
                state,
                store.now(),
                None if result is None else json.dumps(result),
            ),
        )


def test_the_gate_payload_and_result_round_trip_as_models(any_store: Store) -> None:
    jobs = ReviewJobs(any_store, ReviewPayload)
    payload = gate_payload("write: all outputs")
    job_id = jobs.enqueue(KIND, payload, session_id="sess_test")
    claim = jobs.claim("w", kinds=[KIND])
    assert claim is not None
    assert claim.job.payload == payload
    assert jobs.complete(claim, judged(True, step_id="write"))
    assert jobs.get(job_id).result == judged(True, step_id="write")
    other = jobs.enqueue(KIND, gate_payload("again", key="k2"))
    assert jobs.cancel(other)
    assert jobs.get(other).result == Cancelled()


def test_rows_the_previous_version_wrote_still_read(any_store: Store) -> None:
    _insert(
        any_store, "rj-judged", OLD_PAYLOAD, "done", {"result": "verdict", "verdict": OLD_VERDICT}
    )
    error = {"result": "error", "code": "quality_gate.timeout", "message": "too slow"}
    _insert(any_store, "rj-error", OLD_PAYLOAD, "done", error)
    _insert(any_store, "rj-stale", OLD_PAYLOAD, "done", {"result": "stale"})
    _insert(any_store, "rj-cancelled", OLD_PAYLOAD, "cancelled", None)
    _insert(any_store, "rj-queued", OLD_PAYLOAD, "queued", None)
    jobs = ReviewJobs(any_store, ReviewPayload)

    judged_job = jobs.get("rj-judged")
    assert judged_job.payload is not None
    # Keys added since (the review's `sources` and their hashes) read as their defaults; the
    # rest is as written.
    task = judged_job.payload.task
    assert (task.sources, task.sources_sha256) == ([], {})
    added = {"task": {"sources", "sources_sha256"}}
    assert judged_job.payload.model_dump(mode="json", exclude=added) == OLD_PAYLOAD
    record = judged_job.payload.checkpoint
    assert (record.step_ids, record.undeclared_changes) == (("write",), ("stray.txt",))
    assert record.input_files[0].paths == ["notes.md"]
    assert isinstance(judged_job.result, Judged)
    assert judged_job.result.verdict.model_dump(mode="json") == OLD_VERDICT
    assert jobs.get("rj-error").result == Failed(
        code=ErrorCode.QUALITY_GATE_TIMEOUT, message="too slow"
    )
    assert jobs.get("rj-stale").result == Stale()
    assert jobs.get("rj-cancelled").result == Cancelled()
    assert jobs.get("rj-queued").result is None
    claim = jobs.claim("w", kinds=[KIND])  # a queued old job runs here
    assert claim is not None
    assert claim.job.job_id == "rj-queued"
    assert claim.job.payload == judged_job.payload


def test_a_row_this_version_cannot_read_is_told_not_raised(any_store: Store) -> None:
    _insert(any_store, "rj-odd", {"label": "x", "shape": "newer"}, "queued", None)
    _insert(any_store, "rj-future", OLD_PAYLOAD, "done", {"result": "judged_twice", "n": 2})
    future_code = {"result": "error", "code": "quality_gate.from_the_future", "message": "m"}
    _insert(any_store, "rj-code", OLD_PAYLOAD, "done", future_code)
    jobs = ReviewJobs(any_store, ReviewPayload)

    assert [job.job_id for job in jobs.list()] == ["rj-code", "rj-future", "rj-odd"]
    odd = jobs.get("rj-odd")
    assert odd.payload is None
    assert odd.state is ReviewJobState.QUEUED
    future = jobs.get("rj-future").result
    assert isinstance(future, Failed)
    assert future.code == StoreCode.STORE_JOB_UNREADABLE
    assert jobs.get("rj-code").result == Failed(code=ErrorCode.QUALITY_GATE_ERROR, message="m")
