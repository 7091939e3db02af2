"""Asking the human for a step's approval through MCP elicitation (docs/evidence.md).

The form goes to the client, which shows it to its user; the model never sees or fills it. Only
clients that declared the elicitation capability (form mode) on a connection with a back-channel
are asked; for the others the step waits for `deepwork approve`.
"""

from __future__ import annotations

from typing import Literal

from anyio import from_thread
from deepwork_core.engine.approver import HumanAnswer
from deepwork_core.engine.results import ApprovalPrompt
from fastmcp import Context
from fastmcp.exceptions import ToolError
from fastmcp.server.elicitation import AcceptedElicitation
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, Field


class ApprovalForm(BaseModel):
    """The form the human fills in."""

    decision: Literal["approve", "request_changes"] = Field(
        title="Decision", description="Approve the step, or send it back with a comment."
    )
    comment: str = Field(
        default="", title="Comment", description="What should change (or a note for the record)."
    )


def client_can_elicit(ctx: Context) -> bool:
    """True when the connected client declared form elicitation."""
    try:
        capabilities = ctx.session.client_capabilities
    except (RuntimeError, AttributeError):
        return False
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is None:
        return False
    # Before form/url modes existed, an empty capability meant forms.
    return elicitation.form is not None or elicitation.url is None


def client_identity(ctx: Context) -> str:
    try:
        params = ctx.session.client_params
    except (RuntimeError, AttributeError):
        params = None
    info = params.client_info if params is not None else None
    if info is None:
        return "unknown client"
    return f"{info.name} {info.version}".strip()


def approval_message(request: ApprovalPrompt) -> str:
    lines = [
        f"DeepWork: step {', '.join(request.step_ids)} of "
        f"{request.job_name}/{request.workflow_name} needs your approval.",
        "",
        request.prompt,
    ]
    if request.shown:
        lines += ["", "Files (as reviewed):"]
        lines += [f"- {s.path} (sha256 {(s.sha256 or 'missing')[:12]})" for s in request.shown]
    return "\n".join(lines)


async def ask_human(ctx: Context, request: ApprovalPrompt) -> HumanAnswer | None:
    """The human's answer, or None when the client cannot ask or the form was dismissed."""
    if not client_can_elicit(ctx):
        return None
    try:
        result = await ctx.elicit(approval_message(request), ApprovalForm)
    except (ToolError, MCPError, RuntimeError):
        return None  # no back-channel on this connection, or the client refused the request
    if not isinstance(result, AcceptedElicitation) or not isinstance(result.data, ApprovalForm):
        return None
    comment = result.data.comment.strip() or None
    return HumanAnswer(result.data.decision == "approve", comment, client_identity(ctx))


class ElicitingApprover:
    """The engine's `Approver` for one `finished_step` call: asks through this call's client.

    The engine runs in a worker thread; the form is shown from the event loop it came from.
    """

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    def __call__(self, prompt: ApprovalPrompt) -> HumanAnswer | None:
        return from_thread.run(ask_human, self._ctx, prompt)
