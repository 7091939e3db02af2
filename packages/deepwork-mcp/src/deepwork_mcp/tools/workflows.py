"""The four workflow tools (seed 000, JOBS-REQ-001.2–001.6).

Each adapter parses its arguments, calls the `WorkflowEngine` in a worker thread (the engine does
file I/O and may wait on a lock; the event loop must not) and builds the response model. Errors
are mapped by `deepwork_mcp.errors.tool_errors`.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import Annotated

from anyio import to_thread
from deepwork_core.engine import WorkflowEngine
from fastmcp import Context, FastMCP
from mcp.types import ToolAnnotations
from pydantic import Field

from deepwork_mcp.errors import tool_errors
from deepwork_mcp.responses import (
    AbortWorkflowResponse,
    FinishedStepResponse,
    GetWorkflowsResponse,
    StartWorkflowResponse,
    output_schema,
)

_READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
# readOnlyHint and idempotentHint default to false; destructiveHint defaults to true.
_CHANGES_STATE = ToolAnnotations(destructive_hint=False, open_world_hint=False)

SessionIdArg = Annotated[
    str | None, Field(description="Target this session instead of the top of the stack.")
]


class _ListingCache:
    """`get_workflows` answers, reused while no job.yml changed (by catalog fingerprint)."""

    def __init__(self, engine: WorkflowEngine) -> None:
        self._engine = engine
        self._lock = threading.Lock()
        self._cached: tuple[int, GetWorkflowsResponse] | None = None

    def get(self) -> GetWorkflowsResponse:
        catalog = self._engine.list_jobs()
        with self._lock:
            if self._cached is not None and self._cached[0] == catalog.fingerprint:
                return self._cached[1]
        response = GetWorkflowsResponse.from_catalog(catalog)
        with self._lock:
            self._cached = (catalog.fingerprint, response)
        return response


def register_workflow_tools(mcp: FastMCP, engine: WorkflowEngine) -> None:
    """Register get_workflows, start_workflow, finished_step and abort_workflow on `mcp`."""
    listing = _ListingCache(engine)

    @mcp.tool(
        annotations=_READ_ONLY, output_schema=output_schema(GetWorkflowsResponse, detail_depth=2)
    )
    def get_workflows() -> GetWorkflowsResponse:
        """List the jobs and workflows you can start. Call this first. Jobs that failed to load
        are listed in `errors`."""
        with tool_errors("get_workflows"):
            return listing.get()

    @mcp.tool(annotations=_CHANGES_STATE, output_schema=output_schema(StartWorkflowResponse))
    async def start_workflow(
        goal: Annotated[str, Field(description="What the user wants to accomplish.")],
        job_name: str,
        workflow_name: Annotated[
            str, Field(description="Auto-selected when the job has only one workflow.")
        ],
        instance_id: Annotated[
            str | None, Field(description="Optional name for this run, e.g. 'acme'.")
        ] = None,
    ) -> StartWorkflowResponse:
        """Start a workflow and get its first step in `begin_step`. Starting while another
        workflow runs nests the new one on the stack. A top-level workflow gets a git branch."""
        with tool_errors("start_workflow"):
            result = await to_thread.run_sync(
                partial(engine.start, goal, job_name, workflow_name, instance_id)
            )
            return StartWorkflowResponse.from_result(result)

    @mcp.tool(annotations=_CHANGES_STATE, output_schema=output_schema(FinishedStepResponse))
    async def finished_step(
        outputs: Annotated[
            dict[str, str | list[str]],
            Field(
                description="Output name -> project-relative path (type file) or list of paths "
                "(type files), per step_expected_outputs."
            ),
        ],
        ctx: Context,
        notes: Annotated[str | None, Field(description="Notes on the work done.")] = None,
        quality_review_override_reason: Annotated[
            str | None, Field(description="Skips the quality review; say why.")
        ] = None,
        session_id: SessionIdArg = None,
    ) -> FinishedStepResponse:
        """Report the current step (or concurrent group) done. Returns `needs_work` (fix per
        feedback, call again), `next_step` (do `begin_step`) or `workflow_complete`."""
        with tool_errors("finished_step"):
            result = await to_thread.run_sync(
                partial(
                    engine.finish,
                    outputs,
                    notes=notes,
                    override_reason=quality_review_override_reason,
                    session_id=session_id,
                    progress=ctx.report_progress,
                )
            )
            return FinishedStepResponse.from_result(result)

    @mcp.tool(annotations=_CHANGES_STATE, output_schema=output_schema(AbortWorkflowResponse))
    async def abort_workflow(
        explanation: Annotated[str, Field(description="Why the workflow is aborted.")],
        session_id: SessionIdArg = None,
    ) -> AbortWorkflowResponse:
        """Abort a workflow that cannot be completed; its parent (if any) resumes."""
        with tool_errors("abort_workflow"):
            result = await to_thread.run_sync(partial(engine.abort, explanation, session_id))
            return AbortWorkflowResponse.from_result(result)
