"""`post_commit_reminder`: after a shell command that made a git commit, suggest a review."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from deepwork_mcp.hooks.platforms import AFTER_TOOL
from deepwork_mcp.hooks.result import NO_OP, HookResult

if TYPE_CHECKING:
    from deepwork_mcp.hooks.event import HookEvent
    from deepwork_mcp.hooks.runner import HookContext

# `git commit`, also behind global options (`git -C dir commit`, `git -c k=v commit`,
# `git --no-pager commit`) and after `&&`, `;`, `|` or `(`; not `git commit-tree`.
_GIT_COMMIT = re.compile(
    r"(?:^|[\s;&|(`])git(?:\s+-[Cc]\s+\S+|\s+--?[A-Za-z][\w-]*(?:=\S+)?)*\s+commit(?![\w-])"
)

_REVIEW_SKILL = {"claude": "/deepwork:review", "gemini": "review"}


def post_commit_reminder(event: HookEvent, context: HookContext) -> HookResult:
    """Remind the agent to offer the review skill after a successful `git commit`."""
    if event.event != AFTER_TOOL or event.tool_name != "shell":
        return NO_OP
    command = event.tool_input.get("command")
    if not isinstance(command, str) or not _GIT_COMMIT.search(command):
        return NO_OP
    if _failed(event.tool_response):
        return NO_OP
    skill = _REVIEW_SKILL[event.platform]
    return HookResult(
        context=(
            "A git commit was just made. Ask the user whether they want the DeepWork reviews "
            f"run on the committed changes now (the `{skill}` skill) before you move on."
        )
    )


def _failed(response: Any) -> bool:
    """True when the tool response says the command failed (Gemini reports `error`)."""
    if not isinstance(response, dict):
        return False
    return bool(response.get("error"))
