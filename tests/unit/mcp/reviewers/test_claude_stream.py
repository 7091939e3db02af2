"""Each way a reviewer's stream-json output can end has its own coded outcome."""

from __future__ import annotations

import json

import pytest
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.process import Completed
from deepwork_mcp.reviewers.claude import read_stream

INIT = {"type": "system", "subtype": "init", "model": "m1"}
USAGE = {
    "input_tokens": 10,
    "output_tokens": 2,
    "cache_read_input_tokens": 3,
    "cache_creation_input_tokens": 4,
}


def done(*lines: object, returncode: int = 0, stderr: str = "") -> Completed:
    text = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines)
    return Completed(("claude",), returncode, text + "\n", stderr)


def result(**fields: object) -> dict[str, object]:
    return {"type": "result", "subtype": "success", "is_error": False, **fields}


def test_a_success_gives_the_reply_and_the_usage() -> None:
    outcome = read_stream(
        "t", done(INIT, result(structured_output={"a": 1}, usage=USAGE, total_cost_usd=0.5))
    )
    assert outcome.error is None
    assert outcome.reply == {"a": 1}
    assert (outcome.usage.input_tokens, outcome.usage.cache_creation_tokens) == (10, 4)
    assert outcome.usage.tokens == 19
    assert outcome.usage.cost_usd == 0.5
    assert outcome.usage.model == "m1"


@pytest.mark.parametrize(
    ("subtype", "code"),
    [
        ("error_max_budget_usd", ErrorCode.QUALITY_GATE_BUDGET_EXHAUSTED),
        ("error_max_turns", ErrorCode.QUALITY_GATE_MAX_TURNS),
        ("error_during_execution", ErrorCode.QUALITY_GATE_EXECUTION_ERROR),
        ("error_max_structured_output_retries", ErrorCode.QUALITY_GATE_STRUCTURED_OUTPUT_RETRIES),
        ("error_brand_new", ErrorCode.QUALITY_GATE_UNKNOWN_SUBTYPE),
    ],
)
def test_every_error_subtype_has_its_code_and_keeps_the_usage(
    subtype: str, code: ErrorCode
) -> None:
    line = result(
        subtype=subtype, is_error=True, result="x" * 2000, usage=USAGE, total_cost_usd=0.2
    )
    outcome = read_stream("t", done(INIT, line, returncode=1))
    assert outcome.error is not None
    assert outcome.error.code == code
    assert len(outcome.error.message) < 700  # the reviewer's message is bounded
    assert outcome.usage.cost_usd == 0.2


def test_is_error_on_a_success_is_its_own_outcome() -> None:
    outcome = read_stream("t", done(result(is_error=True, result="Not logged in")))
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.QUALITY_GATE_IS_ERROR
    assert "Not logged in" in outcome.error.message


def test_non_json_truncated_and_missing_reply() -> None:
    bad = read_stream("t", done(INIT, "not json {"))
    cut = read_stream("t", done(INIT, {"type": "assistant"}))
    empty = read_stream("t", done(result()))
    exited = read_stream("t", done("", returncode=3, stderr="fatal"))
    assert bad.error is not None
    assert bad.error.code == ErrorCode.QUALITY_GATE_BAD_OUTPUT
    assert cut.error is not None
    assert cut.error.code == ErrorCode.QUALITY_GATE_TRUNCATED
    assert empty.error is not None
    assert empty.error.code == ErrorCode.QUALITY_GATE_BAD_OUTPUT
    assert exited.error is not None
    assert exited.error.code == ErrorCode.QUALITY_GATE_EXIT_CODE
    assert "fatal" in exited.error.message
