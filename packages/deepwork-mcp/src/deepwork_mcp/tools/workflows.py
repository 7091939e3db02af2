"""The workflow tools (docs/runtime.md, JOBS-REQ-001.2–001.6; go_to_step and
get_active_workflow in docs/navigation.md).

Each adapter takes the current call's `WorkflowEngine` (one per project folder, see
`deepwork_mcp.roots`), calls it in a worker thread (the engine does file I/O and may wait
on a lock; the event loop must not) and validates the response model from its result. Errors are
mapped in one place, the `deepwork_mcp.tool_errors.ToolErrors` middleware.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any

from anyio import from_thread, to_thread
from fastmcp import Context, FastMCP
from fastmcp.tools.base import ToolResult
from mcp.types import TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from deepwork_mcp.responses import (
    AbortWorkflowResponse,
    ActiveStackEntry,
    ActiveStepInfo,
    FinishedStepResponse,
    GetActiveWorkflowResponse,
    GetWorkflowsResponse,
    StartWorkflowResponse,
)
from deepwork_mcp.tools.schemas import load_output_schemas

if TYPE_CHECKING:
    from deepwork_core.engine.approver import Approver
    from deepwork_core.engine.results import FinishResult
    from deepwork_core.engine.workflow import WorkflowEngine
    from deepwork_core.jobs.discovery import JobCatalog

_READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
# readOnlyHint and idempotentHint default to false; destructiveHint defaults to true.
_CHANGES_STATE = ToolAnnotations(destructive_hint=False, open_world_hint=False)

SessionIdArg = Annotated[str | None, Field(description="Default: the top of the stack.")]
#: Explained once in the server instructions: every description is paid in every conversation.
AgentIdArg = str | None
Engines = Callable[[], "WorkflowEngine"]
Catalogs = Callable[[], "JobCatalog"]
#: Start parameters: name -> text, or file path(s). Loosely typed here (the engine checks each
#: value against its parameter) so that the listed schema stays small.
InputsArg = dict[str, Any] | None
OutputsArg = Annotated[
    dict[str, str | list[str]],
    Field(description="Output name -> path, paths, or text (string outputs)."),
]
WorkSummaryArg = str | None


class _ListingCache:
    """The serialised `get_workflows` answer, reused while no job changed (catalog fingerprint).

    With a thousand jobs, building and serialising the response costs more than scanning the
    job folders, so the finished tool result (text and structured content) is what is cached.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cached: tuple[JobCatalog, int, ToolResult] | None = None

    def get(self, jobs: JobCatalog) -> ToolResult:
        catalog = jobs.scan()
        with self._lock:
            cached = self._cached
        if cached is None or cached[0] is not jobs or cached[1] != catalog.fingerprint:
            # The text is the same compact JSON as `model_dump_json`, written from the dict so
            # the response model is gone before the text exists (a lower first-call peak).
            structured = GetWorkflowsResponse.model_validate(catalog).model_dump(mode="json")
            cached = (jobs, catalog.fingerprint, _tool_result(structured))
            with self._lock:
                self._cached = cached
        return cached[2].model_copy()


def with_launch(result: FinishResult, launch: str) -> FinishResult:
    """`result` whose approval commands run the way this DeepWork was started (`uvx …`), and
    that names the dashboard as the other way to answer."""
    evidence = result.evidence
    approval = evidence.approval if evidence is not None else None
    if evidence is None or approval is None:
        return result
    command = f"{launch} approve {approval.session_id}"
    feedback = (result.feedback or "").replace(approval.command, command)
    feedback += (
        f" They can also approve in the browser: `{launch} dashboard`, page Approvals, which "
        "shows the files before they decide."
    )
    approval = replace(approval, command=command)
    return replace(result, feedback=feedback, evidence=replace(evidence, approval=approval))


def register_workflow_tools(
    mcp: FastMCP, *, engines: Engines, catalogs: Catalogs, launch: str = "deepwork"
) -> None:
    """Register the workflow tools (`launch`: how the user runs DeepWork, `with_launch`)."""
    listing, schemas = _ListingCache(), load_output_schemas()

    @mcp.tool(annotations=_READ_ONLY, output_schema=schemas["get_workflows"])
    def get_workflows() -> ToolResult:
        """List the jobs and workflows you can start. Call this first."""
        return listing.get(catalogs())

    @mcp.tool(annotations=_CHANGES_STATE, output_schema=schemas["start_workflow"])
    async def start_workflow(
        goal: str,
        job_name: str,
        workflow_name: Annotated[str, Field(description="Any name if the job has only one.")],
        instance_id: Annotated[str | None, Field(description="Run name, e.g. 'acme'.")] = None,
        agent_id: AgentIdArg = None,
        inputs: InputsArg = None,
    ) -> ToolResult:
        """Start a workflow (nested if one is running); returns its first step."""
        engine = engines()
        result = await to_thread.run_sync(
            partial(engine.start, goal, job_name, workflow_name, instance_id, agent_id, inputs)
        )
        return _structured(StartWorkflowResponse.model_validate(result))

    @mcp.tool(annotations=_CHANGES_STATE, output_schema=schemas["finished_step"])
    async def finished_step(
        outputs: OutputsArg,
        ctx: Context,
        notes: str | None = None,
        work_summary: WorkSummaryArg = None,
        quality_review_override_reason: Annotated[
            str | None, Field(description="Self-review outcome, or why the user skips it.")
        ] = None,
        session_id: SessionIdArg = None,
        agent_id: AgentIdArg = None,
        dry_run: Annotated[bool, Field(description="Only check; list the reviews.")] = False,
    ) -> ToolResult:
        """Submit this step's outputs; act on `status`."""
        engine = engines()
        if dry_run:  # check and list reviews only (docs/quality-gate.md, "Dry run")
            answer = await _dry_run(engine, outputs, notes, work_summary, session_id, agent_id)
            return _structured(answer)
        call = partial(
            engine.finish,
            outputs,
            notes=notes,
            override_reason=quality_review_override_reason,
            session_id=session_id,
            progress=_progress(ctx),
            agent_id=agent_id,
            work_summary=work_summary,
            approver=_approver(ctx),
        )
        result = await to_thread.run_sync(call)
        return _structured(FinishedStepResponse.model_validate(with_launch(result, launch)))

    register_navigation_tools(mcp, engines)


def _progress(ctx: Context) -> Callable[[int, int, str], None]:
    """Progress of the call's reviews, from the engine's thread to the client (sent only when
    the client gave a progress token)."""

    def report(done: int, total: int, message: str) -> None:
        from_thread.run(ctx.report_progress, done, total, message)

    return report


def _approver(ctx: Context) -> Approver:
    """The approver of one `finished_step` call, imported when a step first asks for approval."""
    from deepwork_mcp.approval import ElicitingApprover

    return ElicitingApprover(ctx)


async def _dry_run(
    engine: WorkflowEngine,
    outputs: dict[str, str | list[str]],
    notes: str | None,
    work_summary: str | None,
    session_id: str | None,
    agent_id: str | None,
) -> FinishedStepResponse:
    check = partial(
        engine.dry_run,
        outputs,
        notes=notes,
        work_summary=work_summary,
        session_id=session_id,
        agent_id=agent_id,
    )
    return FinishedStepResponse.model_validate(await to_thread.run_sync(check))


def _structured(model: BaseModel) -> ToolResult:
    """`model` as text and structured content.

    The tools return this rather than the model: FastMCP would otherwise build a second, unused
    output schema from the return annotation at start-up and serialise every answer twice. Some
    tools are listed without an output schema (the schema of `begin_step` is already in
    start_workflow's; listing it again costs every conversation about 1.5 kB).
    """
    return _tool_result(model.model_dump(mode="json"))


def _tool_result(data: dict[str, Any]) -> ToolResult:
    """`data` as compact JSON text (what `model_dump_json` writes) and as structured content."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return ToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def register_navigation_tools(mcp: FastMCP, engines: Engines) -> None:
    """Register abort_workflow, go_to_step and get_active_workflow on `mcp`."""
    schemas = load_output_schemas()

    @mcp.tool(annotations=_CHANGES_STATE, output_schema=schemas["abort_workflow"])
    async def abort_workflow(
        explanation: str,
        session_id: SessionIdArg = None,
        agent_id: AgentIdArg = None,
    ) -> ToolResult:
        """Abort a workflow; its parent resumes."""
        engine = engines()
        result = await to_thread.run_sync(partial(engine.abort, explanation, session_id, agent_id))
        return _structured(AbortWorkflowResponse.model_validate(result))

    @mcp.tool(annotations=_CHANGES_STATE, output_schema=None)
    async def go_to_step(
        step_id: str, session_id: str | None = None, agent_id: AgentIdArg = None
    ) -> ToolResult:
        """Redo from an earlier step (files kept)."""
        engine = engines()
        from deepwork_core.engine.navigation import go_to_step as go_to_step_in

        result = await to_thread.run_sync(
            partial(go_to_step_in, engine, step_id, session_id, agent_id)
        )
        return _structured(StartWorkflowResponse.model_validate(result))

    @mcp.tool(annotations=_READ_ONLY, output_schema=None)
    async def get_active_workflow(
        session_id: str | None = None, agent_id: AgentIdArg = None
    ) -> ToolResult:
        """Your stack and the current begin_step, to resume."""
        engine = engines()
        from deepwork_core.engine.navigation import active_workflow

        found = await to_thread.run_sync(partial(active_workflow, engine, session_id, agent_id))
        response = GetActiveWorkflowResponse(
            stack=[ActiveStackEntry.of(entry) for entry in found.stack],
            begin_step=None if found.brief is None else ActiveStepInfo.model_validate(found.brief),
            review_usage=found.review_usage,
        )
        return _structured(response)
