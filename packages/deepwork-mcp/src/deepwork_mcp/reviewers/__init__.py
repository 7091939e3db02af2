"""The reviewer CLIs the external quality gate runs, one folder (docs/quality-gate.md).

`CliReviewer` (`cli`) is the adapter of the core gate's `Reviewer` port: one bounded process per
call, stopped with its process group. Its `ReviewRunner` (`stream`) is one of `claude`
(`claude --print`), `codex` (`codex exec`) or `gemini` (the Gemini CLI headless): each turns a
call into a command line and reads its output into a `ReviewerReply`. Everything else (briefs,
budgets, retries, usage and stall events, the review queue) is the gate's, in
`deepwork_core.gate`.
"""

from __future__ import annotations

from deepwork_mcp.reviewers.claude import ClaudeRunner
from deepwork_mcp.reviewers.codex import CodexRunner
from deepwork_mcp.reviewers.gemini import GeminiRunner
from deepwork_mcp.reviewers.stream import ReviewRunner


def runner_for(name: str) -> ReviewRunner:
    """The runner called `name` (`--external-runner`, `quality_gate.external_runner`); a
    `ValueError` for a name that is none of them."""
    runners: dict[str, ReviewRunner] = {
        "claude": ClaudeRunner(),
        "codex": CodexRunner(),
        "gemini": GeminiRunner(),
    }
    if name not in runners:
        raise ValueError(f"unknown reviewer runner {name!r}; one of {sorted(runners)}")
    return runners[name]
