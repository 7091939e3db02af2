"""Response models and their compact output schemas."""

from __future__ import annotations

from typing import Any

import jsonschema
from deepwork_mcp.responses import (
    AbortWorkflowResponse,
    FinishedStepResponse,
    GetWorkflowsResponse,
    StackEntry,
    StartWorkflowResponse,
    output_schema,
)
from pydantic import BaseModel


def test_schema_spells_out_top_level_fields_and_nullable_types() -> None:
    schema = output_schema(AbortWorkflowResponse)
    assert schema["required"] == [
        "aborted_workflow",
        "aborted_step",
        "explanation",
        "stack",
        "resumed_workflow",
        "resumed_step",
    ]
    assert schema["properties"]["resumed_step"] == {"type": ["string", "null"]}
    assert schema["properties"]["stack"] == {"type": "array", "items": {"type": "object"}}
    assert "$defs" not in str(schema)
    assert "title" not in str(schema)


def test_detail_depth_controls_nesting() -> None:
    deep = output_schema(GetWorkflowsResponse, detail_depth=2)
    job = deep["properties"]["jobs"]["items"]
    assert set(job["properties"]) == {"name", "summary", "description", "workflows"}
    assert job["properties"]["workflows"] == {"type": "array", "items": {"type": "object"}}


def _valid(model: type[BaseModel], value: BaseModel) -> None:
    jsonschema.validate(value.model_dump(mode="json"), output_schema(model))


def test_real_responses_validate_against_their_schemas() -> None:
    stack = [StackEntry(workflow="j/w", step="s", session_id="abcdefgh")]
    _valid(
        FinishedStepResponse,
        FinishedStepResponse.model_validate(
            {
                "status": "workflow_complete",
                "summary": "done",
                "all_outputs": {"a": ["x"]},
                "stack": stack,
            }
        ),
    )
    _valid(
        AbortWorkflowResponse,
        AbortWorkflowResponse(
            aborted_workflow="j/w",
            aborted_step="s",
            explanation="e",
            stack=stack,
            resumed_workflow=None,
            resumed_step=None,
        ),
    )


def test_every_response_model_compacts() -> None:
    for model in (GetWorkflowsResponse, StartWorkflowResponse, FinishedStepResponse):
        schema: dict[str, Any] = output_schema(model)
        assert schema["type"] == "object"
        assert schema["required"]
