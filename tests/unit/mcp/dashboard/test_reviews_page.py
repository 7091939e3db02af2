"""The background reviews on the dashboard (docs/dashboard.md, "Reviews"): the jobs of a real
SQLite store, in each state, as `/reviews`, its fragment and the run page show them."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.gate.costs.quotes import TaskPrice
from deepwork_core.gate.review_queue import KIND, ReviewPayload
from deepwork_core.state.store.tables.review_jobs import Failed, JobResult, ReviewJobs
from deepwork_mcp.dashboard.reviews import review_rows
from starlette.testclient import TestClient

from tests.fixtures.review_queue import gate_payload, judged
from tests.unit.mcp.dashboard.conftest import Waiting

PASSED = judged(True)
FAILED = judged(False)
ERROR = Failed(code=ErrorCode.QUALITY_GATE_TIMEOUT, message="too slow")


def _enqueue(jobs: ReviewJobs[ReviewPayload], session_id: str, label: str) -> str:
    return jobs.enqueue(KIND, gate_payload(label, session_id), session_id=session_id)


def _finish(jobs: ReviewJobs[ReviewPayload], verdict: JobResult) -> None:
    claim = jobs.claim("w", kinds=[KIND])
    assert claim is not None
    assert jobs.complete(claim, verdict)


def _states(html: str) -> dict[str, str]:
    """What each row shows: judges -> data-state."""
    rows = re.findall(r'data-state="([^"]+)"><td class="judges">([^<]+)</td>', html)
    return {judges: state for state, judges in rows}


def _jobs_in_every_state(waiting: Waiting) -> ReviewJobs[ReviewPayload]:
    jobs = ReviewJobs(waiting.store, ReviewPayload)
    sid = waiting.session_id
    for label, verdict in (("ok <b>", PASSED), ("bad", FAILED), ("slow", ERROR)):
        _enqueue(jobs, sid, label)
        _finish(jobs, verdict)
    _enqueue(jobs, sid, "running")
    assert jobs.claim("w", kinds=[KIND]) is not None
    _enqueue(jobs, sid, "waiting")
    jobs.cancel(_enqueue(jobs, sid, "dropped"))
    jobs.enqueue("other_kind", gate_payload("not a review", sid), session_id=sid)
    return jobs


def test_the_reviews_page_lists_live_reviews_first_then_finished_ones(
    waiting: Waiting, client_for: Callable[..., TestClient]
) -> None:
    _jobs_in_every_state(waiting)
    client = client_for(waiting.root)
    page = client.get("/reviews").text
    assert 'data-refresh="/fragment/reviews"' in page
    assert '<a href="/reviews">Reviews</a>' in page
    fragment = client.get("/fragment/reviews").text
    assert _states(page) == _states(fragment)  # the page starts with what the script fetches
    shown = _states(fragment)
    assert shown == {
        "running": "running",
        "waiting": "queued",
        "ok &lt;b&gt;": "passed",  # a label is text, never markup
        "bad": "failed",
        "slow": "error",
        "dropped": "cancelled",
    }
    assert list(shown)[:2] == ["running", "waiting"]
    assert "quality_gate.timeout" in fragment
    assert "1 running, 1 queued, 4 finished" in fragment
    assert f'href="/run/{waiting.session_id}"' in fragment


def test_a_run_page_shows_its_own_reviews_and_refreshes_them(
    waiting: Waiting, tmp_path: Path, client_for: Callable[..., TestClient]
) -> None:
    jobs = _jobs_in_every_state(waiting)
    _enqueue(jobs, "someone_else", "another run's review")
    client = client_for(waiting.root)
    page = client.get(f"/run/{waiting.session_id}").text
    url = f"/fragment/reviews?session={waiting.session_id}"
    assert f'data-refresh="{url}"' in page
    fragment = client.get(url).text
    assert _states(page) == _states(fragment)
    assert "another run&#x27;s review" not in fragment
    assert "running" in _states(fragment)
    assert client.get("/fragment/reviews?session=..%2Fx").status_code == 404


def test_a_server_that_stopped_leaves_its_review_shown_as_queued_again(
    waiting: Waiting, client_for: Callable[..., TestClient]
) -> None:
    jobs = ReviewJobs(waiting.store, ReviewPayload)
    _enqueue(jobs, waiting.session_id, "orphan")
    assert jobs.claim("gone", lease_s=-1, kinds=[KIND]) is not None  # its lease already ran out
    fragment = client_for(waiting.root).get("/fragment/reviews").text
    assert _states(fragment) == {"orphan": "queued"}
    assert "its server stopped" in fragment


def test_a_project_without_a_store_has_no_reviews_and_gets_none(
    tmp_path: Path, client_for: Callable[..., TestClient]
) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    assert review_rows(None) == []  # what the dashboard shows until the project has a store
    fragment = client_for(root).get("/fragment/reviews").text
    assert "No review has run in the background yet." in fragment
    assert not (root / ".deepwork").exists()  # the dashboard made none for asking


def test_a_queued_review_shows_what_it_is_expected_to_cost(
    waiting: Waiting, client_for: Callable[..., TestClient]
) -> None:
    jobs = ReviewJobs(waiting.store, ReviewPayload)
    price = TaskPrice(label="priced", tokens=4100, usd=0.0123, basis="estimated from size")
    payload = gate_payload("priced", waiting.session_id).model_copy(update={"expected": price})
    jobs.enqueue(KIND, payload, session_id=waiting.session_id)
    _enqueue(jobs, waiting.session_id, "unpriced")
    fragment = client_for(waiting.root).get("/fragment/reviews").text
    assert '<td class="expected">0.0123 USD, 4,100 tokens (estimated from size)</td>' in fragment
    assert '<td class="expected">-</td>' in fragment
    total = "expected 0.0123 USD, 4,100 tokens for 1 review(s) (1 estimated from size)"
    assert f'<p class="review-price">Still to run: {total}.</p>' in fragment


def test_the_reviews_still_to_run_are_priced_in_total_with_their_basis(
    waiting: Waiting, client_for: Callable[..., TestClient]
) -> None:
    jobs = ReviewJobs(waiting.store, ReviewPayload)
    prices = [
        TaskPrice(label="done", tokens=9000, usd=0.5, basis="estimated from size"),
        TaskPrice(label="a", tokens=4000, usd=0.012, basis="from 12 earlier reviews"),
        TaskPrice(label="b", tokens=1000, usd=0.004, basis="estimated from size"),
    ]
    for price in prices:
        payload = gate_payload(price.label, waiting.session_id).model_copy(
            update={"expected": price}
        )
        jobs.enqueue(KIND, payload, session_id=waiting.session_id)
        if price.label == "done":  # finished: no longer to run
            _finish(jobs, PASSED)
    assert jobs.claim("w", kinds=[KIND]) is not None  # "a" runs, "b" waits
    page = client_for(waiting.root).get(f"/run/{waiting.session_id}").text
    total = "expected 0.0160 USD, 5,000 tokens for 2 review(s)"
    assert f"Still to run: {total} (1 from earlier reviews, 1 estimated from size)." in page


def test_the_reviews_page_names_each_run_and_says_what_taken_up_counts(
    waiting: Waiting, client_for: Callable[..., TestClient]
) -> None:
    other = waiting.engine.start("plan the search", "approved", "main", "search", agent_id="b")
    jobs = ReviewJobs(waiting.store, ReviewPayload)
    _enqueue(jobs, waiting.session_id, "first")
    _enqueue(jobs, other.brief.session_id, "second")
    _enqueue(jobs, "pruned_run_01", "orphaned")
    client = client_for(waiting.root)
    fragment = client.get("/fragment/reviews").text
    assert '<div class="scroll"><table class="reviews">' in fragment  # scrolls in its box
    assert "<th>Claims</th>" not in fragment
    assert '<th class="num">Taken up</th>' in fragment
    assert "Taken up: how many times a server took the review up to run it" in fragment
    cells = dict(re.findall(r'<td class="judges">([^<]+)</td><td>(.*?)</td>', fragment))
    sid, oid = waiting.session_id, other.brief.session_id
    assert cells["first"] == (
        f'<a href="/run/{sid}">approved/main</a>'
        f'<br><span class="muted">ship the plan · <code>{sid}</code></span>'
    )
    assert cells["second"] == (
        f'<a href="/run/{oid}">approved/main</a> <span class="instance">search</span>'
        f'<br><span class="muted">plan the search · <code>{oid}</code></span>'
    )
    assert cells["orphaned"] == '<a href="/run/pruned_run_01">pruned_run_01</a>'  # no session
    assert client.get("/reviews").text.count('<table class="reviews">') == 1
