"""How `deepwork run` starts each agent's CLI unattended, with DeepWork's server configured for it
(docs/headless.md, "The agents"). Flags as the CLIs' own help lists them: Claude Code 2.1.197,
codex-cli 0.169.0, Gemini CLI 0.61.0.

- Claude Code: `claude -p --mcp-config JSON --strict-mcp-config --permission-mode acceptEdits
  --allowedTools mcp__deepwork Bash -- PROMPT` (only this server; its tools, file edits and
  shell commands need no prompt, as a job's steps run commands such as `git log` or the tests,
  which Codex's workspace sandbox and Gemini's yolo mode allow too; the variadic flags end
  before `--`).
- Codex: `codex exec --skip-git-repo-check --sandbox workspace-write -c approval_policy="never"
  -c mcp_servers.deepwork.command=… -c mcp_servers.deepwork.args=[…] -C ROOT PROMPT`.
- Gemini CLI: `gemini --prompt PROMPT --approval-mode yolo --skip-trust --extensions deepwork
  --allowed-mcp-server-names deepwork`, with the DeepWork extension installed or linked (its
  server inherits `DEEPWORK_RUN`, so it is headless).

`tools/check_headless.py` (`nox -s headless_agents`) runs these command lines with the real CLIs.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Final

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError

AGENTS: Final = ("claude", "codex", "gemini")
#: The server's name in each agent's configuration (its tools are `mcp__deepwork__*` in Claude).
SERVER: Final = "deepwork"


class AgentMissingError(DeepWorkError):
    """The agent's CLI (or the Gemini extension) is not installed."""


def server_argv(root: Path) -> list[str]:
    """The headless DeepWork server for `root`, run by this same Python."""
    return [sys.executable, "-m", "deepwork_mcp", "serve", "--path", str(root), "--headless"]


def start_prompt(arguments: dict[str, object]) -> str:
    """What a new run's agent is told: start the workflow, follow every answer to the end."""
    return (
        "Run a DeepWork workflow to its end, unattended: no person is here to answer. Use the "
        f"`{SERVER}` MCP server's tools. Call start_workflow with exactly these arguments:\n"
        f"{json.dumps(arguments, sort_keys=True)}\n" + _FOLLOW
    )


def resume_prompt(session_id: str) -> str:
    """What a resumed run's agent is told: continue the session at its current step."""
    return (
        f"Continue the DeepWork session {session_id} to its end, unattended: no person is here "
        f"to answer. Use the `{SERVER}` MCP server's tools. Call get_active_workflow with "
        f"exactly these arguments:\n{json.dumps({'session_id': session_id})}\nto get its "
        "current step (the steps before it are done; do not redo them). " + _FOLLOW
    )


_FOLLOW = (
    "Then do each step's work as its instructions say and call finished_step with its "
    "outputs, following every answer, until the workflow is complete. When an answer tells "
    "you to stop (a parked run, awaiting_approval, an error), stop at once and end your turn."
)


def agent_argv(agent: str, root: Path, prompt: str, home: Path) -> list[str]:
    """The command line of `agent` (one of `AGENTS`) for `prompt` in `root`. Raises
    `run.agent_missing` when its CLI is not on `PATH` or (Gemini) the extension is missing."""
    found = shutil.which(agent)
    if found is None:
        raise AgentMissingError(
            f'`{agent}` is not on PATH: install it (docs/headless.md, "The agents")',
            code=ErrorCode.RUN_AGENT_MISSING,
        )
    server = server_argv(root)
    if agent == "claude":
        config = {"mcpServers": {SERVER: {"command": server[0], "args": server[1:]}}}
        return [
            found, "-p", "--mcp-config", json.dumps(config), "--strict-mcp-config",
            "--permission-mode", "acceptEdits", "--allowedTools", f"mcp__{SERVER}", "Bash",
            "--", prompt,
        ]  # fmt: skip
    if agent == "codex":
        return [
            found, "exec", "--skip-git-repo-check", "--sandbox", "workspace-write",
            "-c", 'approval_policy="never"',
            "-c", f"mcp_servers.{SERVER}.command={json.dumps(server[0])}",
            "-c", f"mcp_servers.{SERVER}.args={json.dumps(server[1:])}",
            "-C", str(root), prompt,
        ]  # fmt: skip
    if not _gemini_extension_installed(home):
        raise AgentMissingError(
            "the DeepWork extension of the Gemini CLI is not installed in "
            f"{home / '.gemini' / 'extensions'}: `gemini extensions install` it "
            '(docs/platforms.md), then run again (docs/headless.md, "The agents")',
            code=ErrorCode.RUN_AGENT_MISSING,
        )
    return [
        found, "--prompt", prompt, "--approval-mode", "yolo", "--skip-trust",
        "--extensions", SERVER, "--allowed-mcp-server-names", SERVER,
    ]  # fmt: skip


#: What the Gemini CLI leaves in `~/.gemini/extensions/<name>/`: the manifest itself after
#: `gemini extensions install` (a copy), only a record of the source after `... link`.
GEMINI_EXTENSION_FILES: Final = ("gemini-extension.json", ".gemini-extension-install.json")


def _gemini_extension_installed(home: Path) -> bool:
    folder = home / ".gemini" / "extensions" / SERVER
    return any((folder / name).is_file() for name in GEMINI_EXTENSION_FILES)


def agent_home(environ: dict[str, str] | os._Environ[str]) -> Path:
    """The home folder the agent's CLI reads its configuration from."""
    return Path(environ.get("HOME") or Path.home())
