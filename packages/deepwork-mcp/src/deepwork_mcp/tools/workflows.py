"""The workflow tools (docs/runtime.md, JOBS-REQ-001.2–001.6; go_to_step and
get_active_workflow in docs/navigation.md).

Each tool is a module function: it parses the session id it is given (once: the layers below
take the `SessionId` and trust it), takes the call's project from `services()`
(`deepwork_mcp.tools.services`), calls its `WorkflowEngine` in a worker thread (the engine does
file I/O and may wait on a lock; the event loop must not) and validates the response model from
its result. Errors are mapped in one place, the `deepwork_mcp.tool_errors.ToolErrors` middleware.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import cache, partial
from typing import TYPE_CHECKING, Annotated, Any

from anyio import from_thread, to_thread
from deepwork_core.base.identifiers import parse_optional_session_id
from fastmcp import Context, FastMCP
from fastmcp.tools.base import Tool, ToolResult
from mcp.types import ToolAnnotations
from pydantic import Field

from deepwork_mcp.responses import (
    AbortWorkflowResponse,
    ActiveStackEntry,
    ActiveStepInfo,
    FinishedStepResponse,
    GetActiveWorkflowResponse,
    StartWorkflowResponse,
)
from deepwork_mcp.tools.answers import structured
from deepwork_mcp.tools.schemas import listed, load_output_schemas
from deepwork_mcp.tools.services import services

if TYPE_CHECKING:
    from deepwork_core.engine.approver import Approver
    from deepwork_core.engine.results import FinishResult
    from deepwork_core.engine.workflow import WorkflowEngine

_READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
# readOnlyHint and idempotentHint default to false; destructiveHint defaults to true.
_CHANGES_STATE = ToolAnnotations(destructive_hint=False, open_world_hint=False)

SessionIdArg = Annotated[str | None, Field(description="Default: the top of the stack.")]
#: Explained once in the server instructions: every description is paid in every conversation.
AgentIdArg = str | None
#: Start parameters: name -> text, or file path(s). Loosely typed here (the engine checks each
#: value against its parameter) so that the listed schema stays small.
InputsArg = dict[str, Any] | None
OutputsArg = Annotated[
    dict[str, str | list[str]],
    Field(description="Output name -> path, paths, or text (string outputs)."),
]
WorkSummaryArg = str | None
OverrideReasonArg = Annotated[
    str | None, Field(description="Self-review outcome, or why the user skips it.")
]


def get_workflows() -> ToolResult:
    """List the jobs and workflows you can start. Call this first."""
    found = services()
    return found.listing.get(found.project().catalog)


async def start_workflow(
    goal: str,
    job_name: str,
    workflow_name: Annotated[str, Field(description="Required; a one-workflow job takes any.")],
    instance_id: Annotated[str | None, Field(description="Run name, e.g. 'acme'.")] = None,
    agent_id: AgentIdArg = None,
    inputs: InputsArg = None,
) -> ToolResult:
    """Start a workflow (nested if one is running); returns its first step."""
    engine = services().project().engine
    result = await to_thread.run_sync(
        partial(engine.start, goal, job_name, workflow_name, instance_id, agent_id, inputs)
    )
    return structured(StartWorkflowResponse.model_validate(result))


async def finished_step(
    outputs: OutputsArg,
    ctx: Context,
    notes: str | None = None,
    work_summary: WorkSummaryArg = None,
    quality_review_override_reason: OverrideReasonArg = None,
    session_id: SessionIdArg = None,
    agent_id: AgentIdArg = None,
    dry_run: Annotated[bool, Field(description="Only check; list the reviews.")] = False,
) -> ToolResult:
    """Submit this step's outputs; act on `status`."""
    target = parse_optional_session_id(session_id)
    found = services(ctx)
    engine: WorkflowEngine = found.project().engine
    if dry_run:  # check and list reviews only (docs/quality-gate.md, "Dry run")
        checked = await to_thread.run_sync(
            lambda: engine.dry_run(
                outputs,
                notes=notes,
                work_summary=work_summary,
                session_id=target,
                agent_id=agent_id,
            )
        )
        return structured(FinishedStepResponse.model_validate(checked))
    progress, approver = _progress(ctx), _approver(ctx)
    result = await to_thread.run_sync(
        lambda: engine.finish(
            outputs,
            notes=notes,
            override_reason=quality_review_override_reason,
            session_id=target,
            progress=progress,
            agent_id=agent_id,
            work_summary=work_summary,
            approver=approver,
        )
    )
    return structured(FinishedStepResponse.model_validate(with_launch(result, found.launch)))


async def abort_workflow(
    explanation: str,
    session_id: SessionIdArg = None,
    agent_id: AgentIdArg = None,
) -> ToolResult:
    """Abort a workflow; its parent resumes."""
    target = parse_optional_session_id(session_id)
    engine = services().project().engine
    result = await to_thread.run_sync(partial(engine.abort, explanation, target, agent_id))
    return structured(AbortWorkflowResponse.model_validate(result))


async def go_to_step(
    step_id: str, session_id: str | None = None, agent_id: AgentIdArg = None
) -> ToolResult:
    """Redo from an earlier step (files kept)."""
    target = parse_optional_session_id(session_id)
    engine = services().project().engine
    from deepwork_core.engine.navigation import go_back

    result = await to_thread.run_sync(partial(go_back, engine, step_id, target, agent_id))
    return structured(StartWorkflowResponse.model_validate(result))


async def get_active_workflow(
    session_id: str | None = None, agent_id: AgentIdArg = None
) -> ToolResult:
    """Your stack and the current begin_step, to resume."""
    target = parse_optional_session_id(session_id)
    engine = services().project().engine
    from deepwork_core.engine.navigation import active_workflow

    found = await to_thread.run_sync(partial(active_workflow, engine, target, agent_id))
    response = GetActiveWorkflowResponse(
        stack=[ActiveStackEntry.of(entry) for entry in found.stack],
        begin_step=None if found.brief is None else ActiveStepInfo.model_validate(found.brief),
        review_usage=found.review_usage,
    )
    return structured(response)


def register_workflow_tools(mcp: FastMCP) -> None:
    """List the workflow tools on `mcp`, in this order (their services: `services()`)."""
    for tool in workflow_tools():
        mcp.add_tool(tool)


@cache
def workflow_tools() -> tuple[Tool, ...]:
    """The workflow tools, built once per process: each server lists the same objects (building
    one from its function's signature is most of what a server start costs)."""
    schemas = load_output_schemas()
    return (
        listed(get_workflows, _READ_ONLY, schemas["get_workflows"]),
        listed(start_workflow, _CHANGES_STATE, schemas["start_workflow"]),
        listed(finished_step, _CHANGES_STATE, schemas["finished_step"]),
        listed(abort_workflow, _CHANGES_STATE, schemas["abort_workflow"]),
        listed(go_to_step, _CHANGES_STATE, None),
        listed(get_active_workflow, _READ_ONLY, None),
    )


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


def _progress(ctx: Context) -> Callable[[int, int, str], None]:
    """Progress of the call's reviews, from the engine's thread to the client (sent only when
    the client gave a progress token)."""

    def report(done: int, total: int, message: str) -> None:
        from_thread.run(ctx.report_progress, done, total, message)

    return report


def _approver(ctx: Context) -> Approver:
    """The approver of one `finished_step` call, imported when a step first asks for approval."""
    from deepwork_mcp.approvals.elicitation import ElicitingApprover

    return ElicitingApprover(ctx)
