"""`deepwork stats` reads each counted line for its fields only: what it reads must be what the
whole record gives (docs/evidence.md defines the figures)."""

from __future__ import annotations

import json

import pytest
from deepwork_core.state.event_kinds import EventLogError, ReviewUsageEvent, parse_line
from deepwork_core.state.stats import _of_record, _read_counted

from tests.fixtures.paths import FIXTURES

LINES = [
    line
    for log in sorted((FIXTURES / "event_logs").glob("*.jsonl"))
    for line in log.read_text().splitlines()
    if line.strip()
]
HEADER = {"v": 1, "ts": "2026-01-02T03:04:05+00:00", "session_id": "sess_x"}


def _line(**fields: object) -> str:
    return json.dumps({**HEADER, **fields})


ODD = [
    # a newer writer's key the model does not know: still counted
    _line(event="step_begun", step_ids=["a"], entry_index=0, added_later={"k": 1}),
    # a known kind whose fields do not fit: passed by (the whole read makes it OtherEvent)
    _line(event="step_begun", step_ids="a"),
    _line(event="step_finished", step_ids=["a"], verdict="not-a-verdict"),
    _line(event="review_verdict", step_id="a", passed=True, criteria=[{"criterion": "c"}]),
    _line(event="aborted"),
    # kinds the figures do not count, and one this version does not know
    _line(event="outputs_submitted", step_ids=["a"]),
    _line(event="from_the_future", anything=1),
    # a review's costs: read whole
    _line(event="review_usage", job="j", step_id="a", review="r", outcome="passed", seconds=2.5),
]


@pytest.mark.parametrize("raw", LINES + ODD)
def test_a_counted_line_reads_as_its_whole_record(raw: str) -> None:
    assert _read_counted(raw, "here") == _of_record(parse_line(raw, "here"))


def test_the_costs_of_a_review_are_the_whole_record() -> None:
    read = _read_counted(ODD[-1], "here")
    assert isinstance(read, ReviewUsageEvent)
    assert (read.job, read.outcome, read.seconds) == ("j", "passed", 2.5)


def test_the_fixture_logs_hold_every_counted_kind() -> None:
    kinds = {json.loads(line)["event"] for line in LINES}
    assert {"started", "step_begun", "review_verdict", "override", "step_finished"} <= kinds
    assert {"completed", "aborted"} <= kinds


NO_RECORD = ["not json", "[1, 2]", json.dumps({"event": "started", "ts": "soon"})]


@pytest.mark.parametrize("raw", NO_RECORD)
def test_a_line_that_is_no_record_is_corrupt(raw: str) -> None:
    with pytest.raises(EventLogError) as caught:
        _read_counted(raw, "store s, session x, event #3")
    assert caught.value.code == "events.corrupt"
    assert "store s, session x, event #3" in caught.value.message
