"""`create_server()`: the DeepWork MCP server of one project (JOBS-REQ-001.1).

It wires the core services (job catalog, session store, workflow engine, quality gate, branch
maker) to FastMCP and registers the workflow tools and the review tools. Every tool call is logged
to the `deepwork.mcp` logger (stderr under `deepwork serve`) with the tool name and the stack.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import date
from importlib.metadata import version
from pathlib import Path

from anyio import to_thread
from deepwork_core.branching import ensure_workflow_branch
from deepwork_core.discovery import JobCatalog
from deepwork_core.engine import BranchMaker, Gate, WorkflowEngine
from deepwork_core.errors import ConfigError, DeepWorkError
from deepwork_core.sessions import SessionStore
from fastmcp import FastMCP
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import ToolResult
from mcp.types import CallToolRequestParams

from deepwork_mcp.errors import ArgumentErrors
from deepwork_mcp.gating import ExternalGate, SelfReviewGate
from deepwork_mcp.listing import CompactToolListing
from deepwork_mcp.reviewer import ClaudeReviewer
from deepwork_mcp.tools.reviews import register_review_tools
from deepwork_mcp.tools.workflows import register_workflow_tools

logger = logging.getLogger("deepwork.mcp")

SERVER_NAME = "deepwork"
EXTERNAL_RUNNERS = ("claude",)

INSTRUCTIONS = """\
DeepWork runs multi-step workflows with quality gates.
1. Discover: get_workflows.
2. Start: start_workflow returns begin_step.
3. Execute: follow step_instructions; create step_expected_outputs.
4. Checkpoint: finished_step(outputs).
5. Iterate: needs_work -> fix per feedback, call finished_step again.
6. Continue: next_step -> do the new begin_step.
7. Complete: workflow_complete; a nested workflow returns to its parent.
Each stack entry's session_id can target a session below the top."""


def build_gate(
    *, enable_quality_gate: bool, external_runner: str | None, quality_gate_timeout: float
) -> Gate | None:
    """The quality gate for these settings: None (off), self-review, or the Claude CLI runner."""
    if not enable_quality_gate:
        return None
    if external_runner is None:
        return SelfReviewGate()
    if external_runner not in EXTERNAL_RUNNERS:
        raise ConfigError(
            f"unknown external runner {external_runner!r}; use one of: "
            f"{', '.join(EXTERNAL_RUNNERS)} (or none for self-review)"
        )
    return ExternalGate(ClaudeReviewer(external_runner, base_timeout=quality_gate_timeout))


def branch_maker(project_root: Path) -> BranchMaker:
    """Switch `project_root`'s repository to the workflow branch of today (docs/runtime.md)."""

    def make(job_name: str, label: str) -> tuple[str | None, str | None]:
        outcome = ensure_workflow_branch(
            project_root, job_name=job_name, label=label, today=date.today()
        )
        return outcome.branch_name, outcome.note

    return make


def create_server(
    project_root: Path | str,
    *,
    enable_quality_gate: bool = True,
    quality_gate_timeout: int = 120,
    quality_gate_max_attempts: int = 3,
    external_runner: str | None = None,
    platform: str = "claude",
    create_branch: bool = True,
    additional_jobs_folders: Sequence[Path] = (),
) -> FastMCP:
    """Build the server for `project_root` (resolved to an absolute path).

    `quality_gate_timeout` is the external reviewer's per-task timeout in seconds, to which 30 s
    are added per reviewed file beyond five. `deepwork serve` passes the configured value
    (240 s unless `.deepwork/config.yml` or a flag says otherwise).
    """
    root = Path(project_root).resolve()
    if quality_gate_max_attempts < 1:
        raise ConfigError("quality_gate_max_attempts must be at least 1")
    engine = WorkflowEngine(
        root,
        JobCatalog.for_project(root, additional_jobs_folders),
        SessionStore(root),
        gate=build_gate(
            enable_quality_gate=enable_quality_gate,
            external_runner=external_runner,
            quality_gate_timeout=quality_gate_timeout,
        ),
        max_quality_attempts=quality_gate_max_attempts,
        branch_maker=branch_maker(root) if create_branch else None,
    )
    mcp = FastMCP(
        SERVER_NAME,
        instructions=INSTRUCTIONS,
        version=version("deepwork-mcp"),
        mask_error_details=True,
        middleware=[CallLog(engine), ArgumentErrors(), CompactToolListing()],
    )
    register_workflow_tools(mcp, engine)
    register_review_tools(mcp, project_root=root, platform=platform)
    return mcp


class CallLog(Middleware):
    """Logs every tool call with its outcome and the workflow stack after it."""

    def __init__(self, engine: WorkflowEngine) -> None:
        self._engine = engine

    async def on_call_tool(
        self,
        context: MiddlewareContext[CallToolRequestParams],
        call_next: CallNext[CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        name = context.message.name
        try:
            result = await call_next(context)
        except Exception as exc:
            await self._log(name, "error: " + str(exc).split("\n", 1)[0][:300])
            raise
        await self._log(name, "ok")
        return result

    async def _log(self, tool: str, outcome: str) -> None:
        try:
            stack = await to_thread.run_sync(self._engine.stack)
            described = " > ".join(f"{i.workflow}:{i.step}" for i in stack) or "empty"
        except DeepWorkError as exc:
            described = f"unreadable ({exc.code})"
        logger.info("tool=%s %s | stack: %s", tool, outcome, described)
