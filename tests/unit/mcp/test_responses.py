"""Response models, their compact output schemas, and the tidied tool listing."""

from __future__ import annotations

import jsonschema
from deepwork_mcp.listing import output_schema, tidy_schema
from deepwork_mcp.responses import (
    AbortWorkflowResponse,
    FinishedStepResponse,
    GetWorkflowsResponse,
    StackEntry,
    StartWorkflowResponse,
)
from pydantic import BaseModel


def test_schema_spells_out_top_level_fields_and_nullable_types() -> None:
    schema = output_schema(AbortWorkflowResponse)
    assert list(schema["properties"]) == [
        "aborted_workflow",
        "aborted_step",
        "explanation",
        "stack",
        "resumed_workflow",
        "resumed_step",
        "branch_note",
    ]
    assert schema["properties"]["resumed_step"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert schema["properties"]["stack"] == {"type": "array"}
    assert "$defs" not in str(schema)
    assert "title" not in str(schema)


def test_detail_depth_controls_nesting() -> None:
    deep = output_schema(GetWorkflowsResponse, detail_depth=2)
    job = deep["properties"]["jobs"]["items"]
    assert set(job["properties"]) == {"name", "summary", "description", "workflows"}
    assert job["properties"]["workflows"] == {"type": "array"}
    assert output_schema(GetWorkflowsResponse)["properties"]["jobs"] == {"type": "array"}


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
        schema = output_schema(model)
        assert schema["type"] == "object"
        # `review_tasks` (dry runs), `reviews` (reviewing) and their `price` are left out of the
        # listed schema.
        unlisted = {"review_tasks", "reviews", "price"}
        assert set(schema["properties"]) == set(model.model_fields) - unlisted


def test_tidy_schema_is_equivalent_and_shorter() -> None:
    original = {
        "type": "object",
        "properties": {
            "description": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "files": {
                "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
                "default": None,
                "description": "Paths.",
            },
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        },
        "required": [],
        "x-fastmcp-wrap-result": True,
    }
    tidy = tidy_schema(original, keep_descriptions=True)
    assert tidy["properties"]["description"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert tidy["properties"]["files"] == {
        "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
        "description": "Paths.",
    }
    assert tidy["properties"]["either"] == original["properties"]["either"]  # type: ignore[index]
    assert tidy["x-fastmcp-wrap-result"] is True
    assert (
        "description" not in tidy_schema(original, keep_descriptions=False)["properties"]["files"]
    )
    for value in ({"description": None, "files": ["a"], "either": 1}, {"files": None}):
        jsonschema.validate(value, original)
        jsonschema.validate(value, tidy)
    for bad in ({"files": "a"}, {"description": 5}):
        for schema in (original, tidy):
            try:
                jsonschema.validate(bad, schema)
            except jsonschema.ValidationError:
                continue
            raise AssertionError(f"{bad} should not validate")
