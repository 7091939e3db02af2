"""Fault test: 4 processes make 10,000 claims of 1,000 review jobs; no claim is ever doubled.

Every claim here is made with a lease that has already run out, so each job is claimed again
and again (as after workers that died). A claim bumps the job's `attempts` in the same statement
that hands it out, so two processes that got the same job at the same moment would show the
same (job, attempt) pair. At the end every process tries to complete each claim it got: exactly
one verdict per job lands, from the newest claim.
"""

from __future__ import annotations

import multiprocessing
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from deepwork_core.state.store.opening import open_store
from deepwork_core.state.store.tables.review_jobs import ReviewClaim, ReviewJobs, ReviewJobState

from tests.fixtures.review_queue import Note, judged

JOBS = 1000
WORKERS = 4
CLAIMS_EACH = 2500


def _worker(url: str, root: str, name: str, out: Any, claimed: Any) -> None:
    store = open_store(url, Path(root))
    jobs = ReviewJobs(store, Note)
    claims: list[ReviewClaim[Note]] = []
    for _ in range(CLAIMS_EACH):
        claim = jobs.claim(name, lease_s=-1.0)
        assert claim is not None
        claims.append(claim)
    claimed.wait(timeout=600)  # nobody completes while another still claims
    completed = sum(jobs.complete(claim, judged(True, step_id=name)) for claim in claims)
    out.put(([(c.job.job_id, c.job.attempts, c.token) for c in claims], completed))
    store.close()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_ten_thousand_claims_of_a_thousand_jobs_are_never_doubled(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = (
        f"sqlite:///{tmp_path / 'race.sqlite3'}"
        if kind == "sqlite"
        else request.getfixturevalue("pg_url")
    )
    store = open_store(url, tmp_path)
    jobs = ReviewJobs(store, Note)
    for number in range(JOBS):
        jobs.enqueue("review", Note(n=number))
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    claimed = context.Barrier(WORKERS)
    workers = [
        context.Process(target=_worker, args=(url, str(tmp_path), f"w{i}", out, claimed))
        for i in range(WORKERS)
    ]
    for worker in workers:
        worker.start()
    results = [out.get(timeout=600) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    claims = [claim for got, _ in results for claim in got]
    assert len(claims) == WORKERS * CLAIMS_EACH
    pairs = Counter((job_id, attempt) for job_id, attempt, _ in claims)
    assert [pair for pair, count in pairs.items() if count > 1] == []  # 0 double claims
    assert len({token for _, _, token in claims}) == len(claims)
    final = {job.job_id: job for job in jobs.list()}
    per_job = Counter(job_id for job_id, _, _ in claims)
    assert all(final[job_id].attempts == count for job_id, count in per_job.items())
    completed = sum(done for _, done in results)
    assert completed == len(per_job)  # one verdict per claimed job, never two
    assert all(final[j].state is ReviewJobState.DONE for j in per_job)
    store.close()
