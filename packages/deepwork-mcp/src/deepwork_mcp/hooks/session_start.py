"""`session_start`: brief a new, resumed or compacted agent session on the running workflow.

Only the top of the project's stack is briefed in detail (the workflow the agent works on), with
its age, so an abandoned workflow is recognisable and can be aborted instead of silently resumed.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from deepwork_core import DeepWorkError

from deepwork_mcp.hooks.active import load_stack
from deepwork_mcp.hooks.platforms import SESSION_START
from deepwork_mcp.hooks.result import NO_OP, HookResult

if TYPE_CHECKING:
    from pathlib import Path

    from deepwork_core.state.sessions import Session

    from deepwork_mcp.hooks.event import HookEvent
    from deepwork_mcp.hooks.runner import HookContext


def session_start(event: HookEvent, context: HookContext) -> HookResult:
    """The briefing as context for the agent (a no-op when no workflow is active)."""
    root = context.project_root
    if event.event != SESSION_START or root is None:
        return NO_OP
    # Probes the stack file first: [] without pydantic when empty.
    stack = load_stack(root, context.settings.store_url)
    if not stack:
        return NO_OP
    return HookResult(context=briefing(root, stack, context.settings.additional_jobs_folders))


def briefing(root: Path, stack: list[Session], additional_jobs_folders: str | None) -> str:
    """The text: job, workflow, goal, current step, session id, and how to carry on."""
    session = stack[-1]
    lines = [
        "DeepWork: a workflow is in progress in this project.",
        f"- Workflow: `{session.workflow_label}` (job `{session.job_name}`)",
        f"- Goal: {session.goal}",
    ]
    lines.extend(_step_lines(root, session, additional_jobs_folders))
    lines.append(f"- Session id: `{session.session_id}` (started {_age(session.started_at)})")
    if session.branch_name:
        lines.append(f"- Git branch: `{session.branch_name}`")
    if len(stack) > 1:
        parents = " > ".join(f"`{s.workflow_label}`" for s in stack[:-1])
        lines.append(f"- Nested inside: {parents}")
    lines.append(
        "To continue: call the DeepWork `get_active_workflow` tool to get the current step's "
        "instructions, expected outputs and inputs again, do the step, then submit its outputs "
        f'with `finished_step` (session_id "{session.session_id}"). If the user no longer '
        "wants this workflow, call `abort_workflow` with that session_id instead. "
        "Ask the user before resuming work they may have left long ago."
    )
    return "\n".join(lines)


def _step_lines(root: Path, session: Session, additional_jobs_folders: str | None) -> list[str]:
    from deepwork_core import JobCatalog
    from deepwork_core.jobs.discovery import parse_folder_list

    ids = session.current_step_ids
    try:
        job = JobCatalog.for_project(root, parse_folder_list(additional_jobs_folders)).get(
            session.job_name
        )
        steps = [job.definition.step(step_id) for step_id in ids]
    except DeepWorkError as error:
        return [
            f"- Current step: {', '.join(f'`{i}`' for i in ids)}",
            f"- The job cannot be loaded right now ({error.code}: {error.message})",
        ]
    workflow = job.definition.workflows_by_name.get(session.workflow_name)
    position = ""
    if workflow is not None:
        position = f" — checkpoint {session.current_entry_index + 1} of {len(workflow.entries)}"
    lines = [f"- Current step{position}:"]
    for step in steps:
        if step.instructions_file is not None:
            where = f"`{_relative(job.job_dir / step.instructions_file, root)}`"
        else:
            where = "given by `begin_step` (inline in job.yml)"
        outputs = ", ".join(f"`{name}`" for name in step.outputs) or "none"
        lines.append(
            f"  - `{step.id}` ({step.name}): {step.description} Instructions: {where}. "
            f"Outputs: {outputs}."
        )
    return lines


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def _age(started: datetime) -> str:
    if started.tzinfo is None:  # written without a zone: the store writes UTC
        started = started.replace(tzinfo=UTC)
    seconds = max(0, int((datetime.now(UTC) - started).total_seconds()))
    if seconds < 3600:
        ago = f"{seconds // 60} min ago"
    elif seconds < 86400:
        ago = f"{seconds // 3600} h ago"
    else:
        ago = f"{seconds // 86400} days ago"
    return f"{started.strftime('%Y-%m-%d %H:%M')} UTC, {ago}"
