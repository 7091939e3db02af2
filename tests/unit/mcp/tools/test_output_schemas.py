"""The shipped output schemas agree with the response models they are generated from."""

from __future__ import annotations

from typing import get_args

import pytest
from deepwork_core.engine.results import FinishStatus
from deepwork_core.state.sessions import OutputValue as CoreOutputValue
from deepwork_core.state.usage.pair import RunUsage
from deepwork_mcp.responses import FinishStatusValue, GetActiveWorkflowResponse, OutputValue
from deepwork_mcp.tools.schemas import (
    OUTPUT_SCHEMAS_PATH,
    REGENERATE_COMMAND,
    load_output_schemas,
    main,
    output_schemas,
    render_output_schemas,
)


def test_shipped_schemas_match_the_models() -> None:
    assert OUTPUT_SCHEMAS_PATH.read_text(encoding="utf-8") == render_output_schemas(), (
        f"{OUTPUT_SCHEMAS_PATH} drifted from the response models; regenerate it: "
        f"{REGENERATE_COMMAND}"
    )
    assert load_output_schemas() == output_schemas()


def test_each_load_is_a_new_object() -> None:
    first = load_output_schemas()
    first["start_workflow"]["properties"].clear()
    assert load_output_schemas()["start_workflow"]["properties"]


def test_check_mode_of_the_export_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--check"]) == 0
    assert main(["--bogus"]) == 2
    assert "usage" in capsys.readouterr().err


def test_the_restated_core_types_equal_the_core_ones() -> None:
    assert list(get_args(FinishStatusValue)) == [status.value for status in FinishStatus]
    assert OutputValue == CoreOutputValue


def test_the_answered_review_usage_is_the_core_run_usage() -> None:
    field = GetActiveWorkflowResponse.model_fields["review_usage"]
    assert field.annotation == RunUsage | None
    usage = RunUsage(calls=2, input_tokens=5, cost_usd=0.5, self_reviews=1, note="n")
    answered = GetActiveWorkflowResponse.model_validate(
        {"stack": [], "review_usage": usage, "brief": None}
    )
    assert answered.review_usage is not None
    assert answered.review_usage.model_dump() == usage.model_dump()
