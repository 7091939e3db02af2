"""Platform formatters: the task list an agent dispatches to parallel reviewers (docs/reviews.md).

`claude` lists Task-tool calls (`name`, `description`, `subagent_type`, `prompt: "@file"`).
`gemini` lists the same tasks as Gemini CLI sub-agent calls (`invoke_agent` with the agent's name,
`generalist` being built in, as the Gemini skill says too); the prompt asks the sub-agent to read
the instruction file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import ReviewError

from deepwork_review.tasks import ReviewTask

CLAUDE_HEADER = "Invoke the following list of Tasks in parallel:"
GEMINI_HEADER = (
    "Run the following review tasks in parallel as Gemini CLI sub-agents, all in the same turn: "
    "for each task, call the `invoke_agent` tool with `agent_name` set to the task's `agent` and "
    "the task's `prompt` (where the client lists each sub-agent as a tool of its own name, call "
    "that tool with the prompt instead)."
)
DEFAULT_AGENT = {"claude": "general-purpose", "gemini": "generalist"}
REPORTING_NOTE = (
    "Each instruction file ends with how to report a pass: a reviewer that finds no issues "
    "calls `mark_review_as_passed` with the task's review id, and that review is not handed "
    "out again until its rule or files change."
)

_Formatter = Callable[[Sequence[ReviewTask], Sequence[str]], str]


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _agent(task: ReviewTask, platform: str) -> str:
    return task.rule.agent_for(platform) or DEFAULT_AGENT[platform]


def format_claude(tasks: Sequence[ReviewTask], files: Sequence[str]) -> str:
    lines = [CLAUDE_HEADER, ""]
    for task, path in zip(tasks, files, strict=True):
        lines += [
            f"name: {_quote(task.title)}",
            f"\tdescription: Review {task.rule.display_name}",
            f"\tsubagent_type: {_agent(task, 'claude')}",
            f"\tprompt: {_quote('@' + path)}",
            "",
        ]
    return "\n".join(lines)


def format_gemini(tasks: Sequence[ReviewTask], files: Sequence[str]) -> str:
    lines = [GEMINI_HEADER, ""]
    for task, path in zip(tasks, files, strict=True):
        prompt = f"Read the file {path} and carry out the review it describes."
        lines += [
            f"- name: {_quote(task.title)}",
            f"  description: Review {task.rule.display_name}",
            f"  agent: {_agent(task, 'gemini')}",
            f"  prompt: {_quote(prompt)}",
            "",
        ]
    return "\n".join(lines)


FORMATTERS: dict[str, _Formatter] = {"claude": format_claude, "gemini": format_gemini}
PLATFORMS: tuple[str, ...] = tuple(FORMATTERS)


def check_platform(platform: str) -> str:
    if platform not in FORMATTERS:
        raise ReviewError(
            f"no review formatter for platform {platform!r}; use one of {', '.join(PLATFORMS)}",
            code=ErrorCode.REVIEW_UNSUPPORTED_PLATFORM,
        )
    return platform


def format_tasks(
    platform: str, tasks: Sequence[ReviewTask], files: Sequence[str], *, already_passed: int = 0
) -> str:
    """The text handed to the agent: the task list, then how passes are reported."""
    text = FORMATTERS[check_platform(platform)](tasks, files)
    notes = [REPORTING_NOTE]
    if already_passed:
        notes.append(f"{already_passed} more review(s) already passed and are not listed again.")
    return text + "\n" + "\n".join(notes) + "\n"
