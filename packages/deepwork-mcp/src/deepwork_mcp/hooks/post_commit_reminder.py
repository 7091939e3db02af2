"""`post_commit_reminder`: after a shell command that made a git commit, suggest a review.

The reminder names the `.deepreview` rules whose reviews of the committed files have not passed
yet, and stays silent when there are none (every review already passed, or no rule matches).
When the open reviews cannot be worked out (no git, a broken rule file), it reminds in general.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepwork_core import DeepWorkError

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
    open_rules = _open_rules(event, context)
    if open_rules == ():
        return NO_OP
    which = (
        "the DeepWork reviews"
        if open_rules is None
        else "the DeepWork reviews still open for it ("
        + ", ".join(open_rules[:10])
        + (f" and {len(open_rules) - 10} more" if len(open_rules) > 10 else "")
        + ")"
    )
    return HookResult(
        context=(
            f"A git commit was just made. Ask the user whether they want {which} run on the "
            f"committed changes now (the `{skill}` skill) before you move on."
        )
    )


def _open_rules(event: HookEvent, context: HookContext) -> tuple[str, ...] | None:
    """Rules with unpassed reviews of the files of HEAD; None when that cannot be known.

    The project is the one holding `.deepwork/`, else the git work tree the event ran in.
    """
    # Imported here: the module is loaded for every commit event, the review stack only now.
    from deepwork_core.base.git import run_git
    from deepwork_review import open_review_rules

    settings = context.settings
    start = settings.project_dir or (Path(event.cwd) if event.cwd else settings.fallback_cwd)
    try:
        project_root = context.project_root
        if project_root is None and start is not None:
            top = run_git(["rev-parse", "--show-toplevel"], cwd=start, timeout=5, check=False)
            project_root = Path(top.stdout.strip()) if top.returncode == 0 else None
        if project_root is None:
            return None
        shown = run_git(
            ["show", "-z", "--name-only", "--relative", "--no-renames", "--format=", "HEAD"],
            cwd=project_root,
            timeout=5,
        )
        return open_review_rules(project_root, filter(None, shown.stdout.split("\0")))
    except (DeepWorkError, OSError):
        return None


def _failed(response: Any) -> bool:
    """True when the tool response says the command failed (Gemini reports `error`)."""
    if not isinstance(response, dict):
        return False
    return bool(response.get("error"))
