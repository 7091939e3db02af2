"""The usage pair (docs/quality-gate.md, "What reviews cost"): one request's usage, a run's sum,
summed one way, and the `review_usage` event's fields read back as a request."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from deepwork_core.state.event_kinds import ReviewUsageEvent, parse_line
from deepwork_core.state.read_model.timeline import sentence
from deepwork_core.state.usage.pair import SELF_REVIEW_NOTE, RequestUsage, RunUsage, cost_text
from deepwork_core.state.usage.totals import sum_usage
from pydantic import ValidationError


def _event(**fields: object) -> ReviewUsageEvent:
    base: dict[str, object] = {
        "ts": datetime(2026, 11, 22, 8, 13, 20, tzinfo=UTC),
        "session_id": "sess_a",
        "job": "report",
        "step_id": "write",
        "review": "step",
        "outcome": "passed",
    }
    return ReviewUsageEvent.model_validate({**base, **fields})


def test_a_run_sums_its_requests_and_counts_the_unpriced_ones() -> None:
    requests = [
        RequestUsage(input_tokens=10, output_tokens=2, cache_read_tokens=5, cost_usd=0.25),
        RequestUsage(input_tokens=1, cache_creation_tokens=3, cost_usd=None, model="gpt-5"),
    ]
    run = RunUsage.of(requests, self_reviews=2)
    assert (run.calls, run.input_tokens, run.output_tokens) == (2, 11, 2)
    assert (run.cache_read_tokens, run.cache_creation_tokens) == (5, 3)
    assert (run.cost_usd, run.unpriced_calls, run.self_reviews) == (0.25, 1, 2)
    assert run.tokens == sum(r.tokens for r in requests) == 21
    assert run.all_input_tokens == 19
    assert run.note is not None
    assert run.note.startswith(SELF_REVIEW_NOTE)
    assert "1 reviewer call(s) reported no cost" in run.note
    assert cost_text(run) == "0.2500 USD (cost not reported for 1 call(s))"
    assert RunUsage.of([]) == RunUsage()


def test_a_request_refuses_figures_no_reviewer_can_have_used() -> None:
    with pytest.raises(ValidationError):
        RequestUsage(input_tokens=-1)
    with pytest.raises(ValidationError):
        RequestUsage(cost_usd=float("inf"))


def test_the_event_holds_a_request_flat_and_gives_it_back() -> None:
    usage = RequestUsage(input_tokens=900, output_tokens=80, cache_read_tokens=1000, cost_usd=None)
    event = _event(**usage.model_dump())
    assert event.usage == usage
    line = event.model_dump_json()
    assert '"input_tokens":900' in line  # the log's shape: flat fields, never nested
    assert "usage" not in parse_line(line, "test").model_dump()


def test_the_events_of_a_run_are_summed_like_requests() -> None:
    events = [
        _event(input_tokens=4, cost_usd=0.5),
        _event(output_tokens=6, cost_usd=None),
        _event(mode="self", outcome="requested", cost_usd=None),
    ]
    external = [e.usage for e in events if e.mode == "external"]
    assert sum_usage(events) == RunUsage.of(external, self_reviews=1)


def test_an_unpriced_call_reads_as_a_sentence() -> None:
    told = sentence(_event(input_tokens=4, output_tokens=6, cost_usd=None, seconds=1.25))
    assert told == "Reviewer call for `write` (step): passed, 10 tokens, cost not reported, 1.2 s"
    priced = sentence(_event(input_tokens=4, cost_usd=0.03))
    assert "4 tokens, 0.0300 USD" in priced
