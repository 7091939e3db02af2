"""The review job queue on SQLite and PostgreSQL: claims, leases, one verdict per job."""

from __future__ import annotations

from pathlib import Path

import pytest
from deepwork_core.state.store.errors import StoreCode, StoreError
from deepwork_core.state.store.opening import open_store
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.tables.review_jobs import ReviewJobs, ReviewJobState

from tests.fixtures.review_queue import Note, judged
from tests.unit.core.state.store.conftest import ManualClock


def test_a_job_goes_from_queued_to_done_once(any_store: Store) -> None:
    jobs = ReviewJobs(any_store, Note)
    job_id = jobs.enqueue("step_review", Note(step="draft", files=["a.md"]), session_id="s1")
    assert jobs.get(job_id).state is ReviewJobState.QUEUED
    claim = jobs.claim("w1")
    assert claim is not None
    assert claim.job.job_id == job_id
    assert claim.job.payload == Note(step="draft", files=["a.md"])
    assert claim.job.attempts == 1
    assert jobs.claim("w2") is None  # held by w1
    assert jobs.complete(claim, judged(True))
    assert not jobs.complete(claim, judged(False))  # exactly once
    done = jobs.get(job_id)
    assert done.state is ReviewJobState.DONE
    assert done.result == judged(True)
    assert jobs.claim("w2") is None


def test_an_expired_lease_is_claimed_again_and_the_old_claim_is_void(
    any_store: Store, clock: ManualClock
) -> None:
    jobs = ReviewJobs(any_store, Note)
    jobs.enqueue("step_review", Note())
    first = jobs.claim("w1", lease_s=30)
    assert first is not None
    clock.advance(20)
    renewed = jobs.heartbeat(first, lease_s=30)
    assert renewed is not None
    clock.advance(20)  # inside the renewed lease
    assert jobs.claim("w2") is None
    clock.advance(11)  # past it: w1 is presumed dead
    second = jobs.claim("w2")
    assert second is not None
    assert second.job.attempts == 2
    assert jobs.heartbeat(first) is None
    assert not jobs.complete(first, judged(True))
    assert jobs.complete(second, judged(False))
    assert jobs.get(second.job.job_id).result == judged(False)


def test_a_job_queued_with_an_owner_is_its_own_while_the_owner_holds_it(
    any_store: Store, clock: ManualClock
) -> None:
    jobs = ReviewJobs(any_store, Note)
    held_id = jobs.enqueue("a", Note(n=1), owner="w1", lease_s=30)
    clock.advance(1)
    free_id = jobs.enqueue("a", Note(n=2))
    other = jobs.claim("w2")
    assert other is not None
    assert other.job.job_id == free_id  # the older job is w1's: w2 takes the free one
    assert jobs.claim("w2") is None
    assert jobs.complete(other, judged(True))
    clock.advance(20)
    assert jobs.hold("w1", lease_s=30) == 1
    clock.advance(20)  # past the first lease, inside the renewed one
    assert jobs.claim("w2") is None
    own = jobs.claim("w1")
    assert own is not None
    assert own.job.job_id == held_id
    assert jobs.hold("w1") == 0  # claimed: nothing queued is held any more
    assert jobs.complete(own, judged(True))
    late_id = jobs.enqueue("a", Note(n=3), owner="w1", lease_s=30)
    clock.advance(31)  # w1 stopped renewing: anyone takes its job
    taken = jobs.claim("w2")
    assert taken is not None
    assert taken.job.job_id == late_id


def test_cancel_stops_a_queued_or_claimed_job(any_store: Store) -> None:
    jobs = ReviewJobs(any_store, Note)
    queued = jobs.enqueue("a", Note())
    assert jobs.cancel(queued)
    assert not jobs.cancel(queued)
    held_id = jobs.enqueue("a", Note())
    held = jobs.claim("w1")
    assert held is not None
    assert held.job.job_id == held_id
    assert jobs.cancel(held_id)
    assert not jobs.complete(held, judged(True))
    assert jobs.get(held_id).state is ReviewJobState.CANCELLED
    assert jobs.claim("w1") is None


def test_claims_take_the_oldest_of_the_asked_kinds(any_store: Store, clock: ManualClock) -> None:
    jobs = ReviewJobs(any_store, Note)
    first = jobs.enqueue("a", Note(n=1))
    clock.advance(1)
    second = jobs.enqueue("b", Note(n=2))
    clock.advance(1)
    third = jobs.enqueue("a", Note(n=3))
    got_b = jobs.claim("w", kinds=["b"])
    assert got_b is not None
    assert got_b.job.job_id == second
    got = [jobs.claim("w"), jobs.claim("w")]
    assert [c.job.job_id for c in got if c is not None] == [first, third]
    assert [j.job_id for j in jobs.list(states=[ReviewJobState.CLAIMED])] == [first, second, third]


def test_a_dedupe_key_queues_a_job_once(any_store: Store) -> None:
    jobs = ReviewJobs(any_store, Note)
    one = jobs.enqueue("a", Note(), session_id="s", dedupe_key="s:draft:1")
    assert jobs.enqueue("a", Note(other=1), session_id="s", dedupe_key="s:draft:1") == one
    assert jobs.enqueue("a", Note(), session_id="s") != one
    assert len(jobs.list(session_id="s")) == 2


def test_jobs_belong_to_their_project(store_url: str | None, tmp_path: Path) -> None:
    url = store_url or f"sqlite:///{tmp_path / 'shared.sqlite3'}"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = open_store(url, tmp_path / "a")
    b = open_store(url, tmp_path / "b")
    try:
        job_id = ReviewJobs(a, Note).enqueue("x", Note())
        assert ReviewJobs(b, Note).claim("w") is None
        with pytest.raises(StoreError) as caught:
            ReviewJobs(b, Note).get(job_id)
        assert caught.value.code == StoreCode.STORE_JOB_NOT_FOUND
        assert ReviewJobs(a, Note).claim("w") is not None
    finally:
        a.close()
        b.close()


def test_a_job_column_nested_without_end_is_a_corrupt_store_not_a_crash(any_store: Store) -> None:
    jobs = ReviewJobs(any_store, Note)
    job_id = jobs.enqueue("step_review", Note(step="draft"))
    with any_store.write() as tx:
        tx.execute(
            "UPDATE review_jobs SET payload = ? WHERE job_id = ?",
            ("[" * 100_000 + "]" * 100_000, job_id),
        )
    with pytest.raises(StoreError) as caught:
        jobs.get(job_id)
    assert caught.value.code == StoreCode.STORE_CORRUPT


def test_jobs_are_read_together_in_the_order_asked(any_store: Store, clock: ManualClock) -> None:
    jobs = ReviewJobs(any_store, Note)
    first = jobs.enqueue("a", Note(n=1))
    clock.advance(1)
    second = jobs.enqueue("a", Note(n=2))
    assert [job.payload for job in jobs.get_many([second, first])] == [Note(n=2), Note(n=1)]
    assert jobs.state(second) is ReviewJobState.QUEUED
    for missing in (lambda: jobs.get_many([first, "rj-none"]), lambda: jobs.state("rj-none")):
        with pytest.raises(StoreError) as caught:
            missing()
        assert caught.value.code == StoreCode.STORE_JOB_NOT_FOUND
