"""A reviewer's reply may give a criterion `feedback: null`, or leave it out when the criterion
passed: both read as empty feedback (docs/quality-gate.md)."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from deepwork_core.base.errors import QualityGateError
from deepwork_core.gate.quality import QualityReviewTask, review_reply_schema, verdict_from_reply

TASK = QualityReviewTask(
    step_id="write",
    run_each="step",
    files=["out.md"],
    criteria={"Clear": "Is it clear?", "Short": "Is it short?"},
)


def _reply(*results: dict[str, Any]) -> dict[str, Any]:
    return {"passed": True, "feedback": "overall", "criteria_results": list(results)}


def test_null_feedback_on_a_passed_criterion_is_empty() -> None:
    reply = _reply(
        {"criterion": "Clear", "passed": True, "feedback": None},
        {"criterion": "Short", "passed": True, "feedback": "fine"},
    )
    verdict = verdict_from_reply(TASK, reply)
    assert verdict.passed
    assert [r.feedback for r in verdict.criteria_results] == ["", "fine"]


def test_a_passed_criterion_may_leave_feedback_out() -> None:
    reply = _reply({"criterion": "Clear", "passed": True}, {"criterion": "Short", "passed": True})
    verdict = verdict_from_reply(TASK, reply)
    assert verdict.passed
    assert [r.feedback for r in verdict.criteria_results] == ["", ""]


def test_a_failed_criterion_with_null_feedback_fails_with_empty_feedback() -> None:
    reply = _reply(
        {"criterion": "Clear", "passed": False, "feedback": None},
        {"criterion": "Short", "passed": True, "feedback": None},
    )
    verdict = verdict_from_reply(TASK, reply)
    assert not verdict.passed
    assert verdict.criteria_results[0].feedback == ""


def test_a_failed_criterion_must_not_leave_feedback_out() -> None:
    reply = _reply({"criterion": "Clear", "passed": False}, {"criterion": "Short", "passed": True})
    with pytest.raises(QualityGateError) as exc:
        verdict_from_reply(TASK, reply)
    assert exc.value.code == "quality_gate.bad_output"
    assert "criteria_results/0" in exc.value.message


def test_feedback_of_another_type_is_still_refused() -> None:
    reply = _reply(
        {"criterion": "Clear", "passed": True, "feedback": 3},
        {"criterion": "Short", "passed": True},
    )
    with pytest.raises(QualityGateError) as exc:
        verdict_from_reply(TASK, reply)
    assert exc.value.code == "quality_gate.bad_output"


def test_the_schema_the_reviewer_is_given_allows_null_and_a_left_out_feedback() -> None:
    schema = review_reply_schema(TASK)
    jsonschema.validate(_reply({"criterion": "Clear", "passed": True, "feedback": None}), schema)
    jsonschema.validate(_reply({"criterion": "Clear", "passed": True}), schema)
    assert review_reply_schema(TASK) is not schema  # a fresh copy each time


SPEC_TASK = QualityReviewTask(
    step_id="write",
    run_each="report",
    files=["report.md"],
    criteria={
        "Accurate": "Is it accurate?",
        "Monthly report: Has summary": "Does it open with a summary?",
        "Monthly report: Short": "Is it short?",
        "Weekly report: Short": "Is it short?",
    },
)


@pytest.mark.parametrize(
    ("given", "counted_as"),
    [
        ("Accurate", "Accurate"),
        ("**accurate**:", "Accurate"),  # case, bold and a colon aside
        ("Has summary", "Monthly report: Has summary"),  # the spec's own name
        ("monthly report:  has summary", "Monthly report: Has summary"),
        ("Short", None),  # two specs name it: no guess
        ("Something else", None),
    ],
)
def test_which_criterion_an_entry_answers(given: str, counted_as: str | None) -> None:
    """Issue 43, item 10: an entry naming a doc-spec criterion as the spec does was no answer,
    so the same brief was asked again."""
    from deepwork_core.gate.quality import unjudged_criteria

    reply = _reply({"criterion": given, "passed": False, "feedback": "no"})
    verdict = verdict_from_reply(SPEC_TASK, reply)
    failed = [r.criterion for r in verdict.criteria_results if r.feedback == "no"]
    assert failed == ([] if counted_as is None else [counted_as])
    unjudged = unjudged_criteria(SPEC_TASK, reply)
    assert len(unjudged) == len(SPEC_TASK.criteria) - (counted_as is not None)
    assert counted_as not in unjudged
