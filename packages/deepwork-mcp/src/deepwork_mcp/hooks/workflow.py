"""`workflow`: run the job-level hooks of the workflow step that is active in the project.

- `after_agent` (and the deprecated `stop_hooks`): the step's prompts become the reason the
  agent keeps working. Once per turn: when the platform says the agent is already continuing
  because of a stop hook (`stop_hook_active`), the prompts are handed over as context and the
  agent may stop — it may be waiting for the user, and blocking again would loop.
- `before_tool`, `before_prompt`: prompts are context for the agent.
- A `script` gets the normalised event on stdin and its decision is passed on as it is.
A script that fails is reported to the agent like a prompt; it never blocks the tool call or the
prompt it was meant to judge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deepwork_core import DeepWorkError
from deepwork_core.base.error_codes import ErrorCode

from deepwork_mcp.hooks.active import load_active_workflow, may_have_job_hooks, stack_is_empty
from deepwork_mcp.hooks.platforms import AFTER_AGENT, BEFORE_PROMPT, BEFORE_TOOL
from deepwork_mcp.hooks.result import NO_OP, HookResult, combine, join_texts

if TYPE_CHECKING:
    from pathlib import Path

    from deepwork_core.jobs.model import Step
    from deepwork_core.jobs.steps.parts import HookAction

    from deepwork_mcp.hooks.active import HookedWorkflow
    from deepwork_mcp.hooks.event import HookEvent
    from deepwork_mcp.hooks.runner import HookContext

_JOB_EVENTS = (AFTER_AGENT, BEFORE_TOOL, BEFORE_PROMPT)
#: A hook's prompt_file larger than this is refused (`hook.prompt_file`).
MAX_PROMPT_FILE_BYTES = 256 * 1024


def workflow(event: HookEvent, context: HookContext) -> HookResult:
    """Run the active step's actions for `event` (a no-op when no workflow is active)."""
    root = context.project_root
    if event.event not in _JOB_EVENTS or root is None or stack_is_empty(root):
        return NO_OP
    folders = context.settings.additional_jobs_folders
    if not may_have_job_hooks(root, event.event, folders):
        return NO_OP
    active = load_active_workflow(root, folders, context.settings.store_url)
    if active is None:
        return NO_OP
    texts: list[str] = []  # prompts and failures: what the agent should read
    decisions: list[HookResult] = []  # what scripts decided
    for step in active.steps:
        for action in step.hook_actions(event.event):
            try:
                _run_action(action, step, active, event, root, context, texts, decisions)
            except DeepWorkError as error:
                texts.append(
                    f"A DeepWork hook of step `{step.id}` failed ({error.code}): {error.message}"
                )
    return combine([*decisions, _prompts_result(event, active, texts)])


def _run_action(
    action: HookAction,
    step: Step,
    active: HookedWorkflow,
    event: HookEvent,
    root: Path,
    context: HookContext,
    texts: list[str],
    decisions: list[HookResult],
) -> None:
    from deepwork_core.base.fsutil import read_text_file
    from deepwork_core.base.identifiers import resolve_inside

    job_dir = active.job.job_dir.resolve()
    if action.prompt is not None:
        texts.append(action.prompt)
    elif action.prompt_file is not None:
        path = resolve_inside(job_dir, action.prompt_file, what="prompt_file")
        try:
            texts.append(read_text_file(path, limit=MAX_PROMPT_FILE_BYTES))
        except DeepWorkError as exc:
            raise DeepWorkError(
                f"cannot read prompt_file {action.prompt_file}: {exc.message}",
                code=ErrorCode.HOOK_PROMPT_FILE,
            ) from None
    elif action.script is not None:
        from deepwork_mcp.hooks.scripts import run_script

        script = resolve_inside(job_dir, action.script, what="script")
        outcome = run_script(
            script,
            _script_payload(event, active, step, root),
            cwd=root,
            timeout=context.settings.script_timeout,
            label=action.script,
        )
        decisions.append(
            HookResult(block=outcome.block, reason=outcome.reason, context=outcome.context)
        )


def _script_payload(
    event: HookEvent, active: HookedWorkflow, step: Step, root: Path
) -> dict[str, Any]:
    session = active.session
    return {
        **event.to_json(),
        "deepwork": {
            "project_root": str(root),
            "session_id": session.session_id,
            "job_name": session.job_name,
            "workflow_name": session.workflow_name,
            "step_id": step.id,
            "job_dir": str(active.job.job_dir),
        },
    }


def _prompts_result(event: HookEvent, active: HookedWorkflow, texts: list[str]) -> HookResult:
    body = join_texts(texts)
    if body is None:
        return NO_OP
    session = active.session
    steps = ", ".join(f"`{step.id}`" for step in active.steps)
    where = f"DeepWork workflow `{session.workflow_label}`, step {steps}"
    if event.event != AFTER_AGENT:
        return HookResult(context=f"[{where}]\n{body}")
    reason = (
        f"{where} is still in progress (session `{session.session_id}`).\n\n{body}\n\n"
        "When the step's outputs are ready, submit them with the DeepWork `finished_step` "
        "tool; if the workflow should stop, use `abort_workflow`."
    )
    if event.stop_hook_active:
        return HookResult(context=reason, system_message=reason)
    return HookResult(block=True, reason=reason)
