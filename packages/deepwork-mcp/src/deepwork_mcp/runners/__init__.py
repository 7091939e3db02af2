"""The reviewer CLIs the external quality gate can run (docs/quality-gate.md).

`runner_for(name)` gives the `ReviewRunner` of `--external-runner` / `quality_gate.
external_runner`: `claude` (`claude --print`), `codex` (`codex exec`) or `gemini` (the Gemini CLI
headless). Each turns one review task into a command line and reads its output; the rest (limits,
retries, usage events) is `deepwork_mcp.reviewer`'s.
"""

from __future__ import annotations

from deepwork_mcp.runners.claude import ClaudeRunner
from deepwork_mcp.runners.codex import CodexRunner
from deepwork_mcp.runners.events import ReviewRunner
from deepwork_mcp.runners.gemini import GeminiRunner


def runner_for(name: str) -> ReviewRunner:
    """The runner called `name`; a `ValueError` for a name that is none of them."""
    runners: dict[str, ReviewRunner] = {
        "claude": ClaudeRunner(),
        "codex": CodexRunner(),
        "gemini": GeminiRunner(),
    }
    if name not in runners:
        raise ValueError(f"unknown reviewer runner {name!r}; one of {sorted(runners)}")
    return runners[name]
