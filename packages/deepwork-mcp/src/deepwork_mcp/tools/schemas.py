"""The output schemas the tools list, shipped as `output_schemas.json` (docs/runtime.md).

Building them from the response models (`deepwork_mcp.listing.output_schema`) cost about 30 ms of
every server start, and needed the review package imported before the first answer. They change
only when a response model does, so they are generated once and read from the file at start-up;
a test fails when the file no longer matches the models. Regenerate after changing a response
model of `deepwork_mcp.responses` or `deepwork_review.ConfiguredRule`:

    uv run python -m deepwork_mcp.tools.schemas          # rewrite the shipped file
    uv run python -m deepwork_mcp.tools.schemas --check  # exit 1 when it is out of date

`listed` makes a tool as it is listed, with its output schema and annotations.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from fastmcp.tools.base import Tool
    from mcp.types import ToolAnnotations

OUTPUT_SCHEMAS_PATH = Path(__file__).resolve().parent / "output_schemas.json"
REGENERATE_COMMAND = "uv run python -m deepwork_mcp.tools.schemas"


def load_output_schemas() -> dict[str, dict[str, Any]]:
    """The shipped schemas by tool name (a new object on each call: FastMCP keeps what it gets)."""
    schemas: dict[str, dict[str, Any]] = json.loads(OUTPUT_SCHEMAS_PATH.read_text("utf-8"))
    return schemas


def listed(
    function: Callable[..., Any], annotations: ToolAnnotations, schema: dict[str, Any] | None
) -> Tool:
    """The tool of `function` as `FastMCP.tool` registers it (no task support, run in a
    thread), with these annotations and output schema (None: listed without one)."""
    from fastmcp.tools.base import Tool

    return Tool.from_function(
        function, annotations=annotations, output_schema=schema, task=False, run_in_thread=True
    )


def output_schemas() -> dict[str, dict[str, Any]]:
    """The schemas by tool name, built from the response models."""
    from deepwork_review import ConfiguredRule
    from pydantic import BaseModel

    from deepwork_mcp.listing import output_schema
    from deepwork_mcp.responses import (
        AbortWorkflowResponse,
        FinishedStepResponse,
        GetWorkflowsResponse,
        StartWorkflowResponse,
    )

    class _RuleList(BaseModel):
        result: list[ConfiguredRule]

    return {
        "get_workflows": output_schema(GetWorkflowsResponse),
        "start_workflow": output_schema(StartWorkflowResponse),
        "finished_step": output_schema(FinishedStepResponse),
        "abort_workflow": output_schema(AbortWorkflowResponse),
        # `{"result": [ConfiguredRule, ...]}`, as FastMCP wraps a list result.
        "get_configured_reviews": {
            **output_schema(_RuleList),
            "required": ["result"],
            "x-fastmcp-wrap-result": True,
        },
    }


def render_output_schemas() -> str:
    """The file's exact text. Keys keep their order: it is the order `tools/list` sends."""
    return json.dumps(output_schemas(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = render_output_schemas()
    if args == ["--check"]:
        current = OUTPUT_SCHEMAS_PATH.read_text("utf-8") if OUTPUT_SCHEMAS_PATH.exists() else ""
        if current != text:
            print(
                f"{OUTPUT_SCHEMAS_PATH} is out of date; run: {REGENERATE_COMMAND}", file=sys.stderr
            )
            return 1
        return 0
    if args:
        print("usage: python -m deepwork_mcp.tools.schemas [--check]", file=sys.stderr)
        return 2
    OUTPUT_SCHEMAS_PATH.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT_SCHEMAS_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
