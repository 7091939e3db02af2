"""The four workflow tools (docs/runtime.md, JOBS-REQ-001.2–001.6).

Each adapter calls the `WorkflowEngine` in a worker thread (the engine does file I/O and may wait
on a lock; the event loop must not) and validates the response model from its result. Errors are
mapped in one place, the `deepwork_mcp.tool_errors.ToolErrors` middleware.
"""

from __future__ import annotations

import json
import threading
from functools import partial
from typing import Annotated, Any

from anyio import to_thread
from deepwork_core import WorkflowEngine
from fastmcp import Context, FastMCP
from fastmcp.tools.base import ToolResult
from mcp.types import TextContent, ToolAnnotations
from pydantic import Field

from deepwork_mcp.listing import output_schema
from deepwork_mcp.responses import (
    AbortWorkflowResponse,
    FinishedStepResponse,
    GetWorkflowsResponse,
    StartWorkflowResponse,
)

_READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
# readOnlyHint and idempotentHint default to false; destructiveHint defaults to true.
_CHANGES_STATE = ToolAnnotations(destructive_hint=False, open_world_hint=False)

SessionIdArg = Annotated[str | None, Field(description="Default: the top of the stack.")]
#: Start parameters: name -> text, or file path(s). Loosely typed here (the engine checks each
#: value against its parameter) so that the listed schema stays small.
InputsArg = dict[str, Any] | None
OutputsArg = Annotated[
    dict[str, str | list[str]],
    Field(description="Output name -> path, list of paths, or text (type string)."),
]
WorkSummaryArg = str | None


class _ListingCache:
    """The serialised `get_workflows` answer, reused while no job changed (catalog fingerprint).

    With a thousand jobs, building and serialising the response costs more than scanning the
    job folders, so the finished tool result (text and structured content) is what is cached.
    """

    def __init__(self, engine: WorkflowEngine) -> None:
        self._engine = engine
        self._lock = threading.Lock()
        self._cached: tuple[int, ToolResult] | None = None

    def get(self) -> ToolResult:
        catalog = self._engine.list_jobs()
        with self._lock:
            cached = self._cached
        if cached is None or cached[0] != catalog.fingerprint:
            # The text is the same compact JSON as `model_dump_json`, written from the dict so
            # the response model is gone before the text exists (a lower first-call peak).
            structured = GetWorkflowsResponse.model_validate(catalog).model_dump(mode="json")
            text = json.dumps(structured, ensure_ascii=False, separators=(",", ":"))
            result = ToolResult(
                content=[TextContent(type="text", text=text)], structured_content=structured
            )
            cached = (catalog.fingerprint, result)
            with self._lock:
                self._cached = cached
        return cached[1].model_copy()


def register_workflow_tools(mcp: FastMCP, engine: WorkflowEngine) -> None:
    """Register get_workflows, start_workflow, finished_step and abort_workflow on `mcp`."""
    listing = _ListingCache(engine)

    @mcp.tool(annotations=_READ_ONLY, output_schema=output_schema(GetWorkflowsResponse))
    def get_workflows() -> ToolResult:
        """List the jobs and workflows you can start. Call this first."""
        return listing.get()

    @mcp.tool(annotations=_CHANGES_STATE, output_schema=output_schema(StartWorkflowResponse))
    async def start_workflow(
        goal: str,
        job_name: str,
        workflow_name: Annotated[str, Field(description="Any name if the job has only one.")],
        instance_id: Annotated[str | None, Field(description="Run name, e.g. 'acme'.")] = None,
        inputs: InputsArg = None,
    ) -> StartWorkflowResponse:
        """Start a workflow (nested if one is running); returns its first step."""
        result = await to_thread.run_sync(
            partial(engine.start, goal, job_name, workflow_name, instance_id, inputs)
        )
        return StartWorkflowResponse.model_validate(result)

    @mcp.tool(annotations=_CHANGES_STATE, output_schema=output_schema(FinishedStepResponse))
    async def finished_step(
        outputs: OutputsArg,
        ctx: Context,
        notes: str | None = None,
        work_summary: WorkSummaryArg = None,
        quality_review_override_reason: Annotated[
            str | None, Field(description="Self-review outcome, or why the user skips it.")
        ] = None,
        session_id: SessionIdArg = None,
    ) -> FinishedStepResponse:
        """Submit the current step's outputs. Returns needs_work, next_step or
        workflow_complete."""
        result = await to_thread.run_sync(
            partial(
                engine.finish,
                outputs,
                notes=notes,
                override_reason=quality_review_override_reason,
                session_id=session_id,
                progress=ctx.report_progress,
                work_summary=work_summary,
            )
        )
        return FinishedStepResponse.model_validate(result)

    @mcp.tool(annotations=_CHANGES_STATE, output_schema=output_schema(AbortWorkflowResponse))
    async def abort_workflow(
        explanation: str,
        session_id: SessionIdArg = None,
    ) -> AbortWorkflowResponse:
        """Abort a workflow; its parent resumes."""
        result = await to_thread.run_sync(partial(engine.abort, explanation, session_id))
        return AbortWorkflowResponse.model_validate(result)
