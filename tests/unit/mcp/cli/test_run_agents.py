"""How `deepwork run` starts the agents (docs/headless.md, "The agents"): Claude Code may use the
server's tools, edit files and run shell commands without a prompt; the Gemini CLI's DeepWork
extension counts as installed whether `gemini extensions install` copied it into
`~/.gemini/extensions/deepwork/` or `gemini extensions link` left only its record of the source
there (what Gemini CLI 0.61.0 writes); with neither, `run.agent_missing` before anything starts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from deepwork_core.base.error_codes import ErrorCode
from deepwork_mcp.cli.headless.agents import AgentMissingError, agent_argv


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gemini").write_text("#!/bin/sh\n")
    (bin_dir / "gemini").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return tmp_path / "home"


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("gemini-extension.json", {"name": "deepwork", "version": "1.0.0"}),  # installed
        (".gemini-extension-install.json", {"source": "/src/plugins/gemini", "type": "link"}),
    ],
)
def test_an_installed_or_linked_extension_is_used(home: Path, name: str, body: object) -> None:
    folder = home / ".gemini" / "extensions" / "deepwork"
    folder.mkdir(parents=True)
    (folder / name).write_text(json.dumps(body))
    argv = agent_argv("gemini", home.parent, "PROMPT", home)
    assert argv[1:] == [
        "--prompt", "PROMPT", "--approval-mode", "yolo", "--skip-trust",
        "--extensions", "deepwork", "--allowed-mcp-server-names", "deepwork",
    ]  # fmt: skip


def test_no_extension_is_refused(home: Path) -> None:
    (home / ".gemini" / "extensions" / "other").mkdir(parents=True)
    with pytest.raises(AgentMissingError) as refused:
        agent_argv("gemini", home.parent, "PROMPT", home)
    assert refused.value.code == ErrorCode.RUN_AGENT_MISSING


def test_an_unattended_claude_may_run_the_shell_commands_a_step_runs(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude = home.parent / "bin" / "claude"
    claude.write_text("#!/bin/sh\n")
    claude.chmod(0o755)
    argv = agent_argv("claude", home.parent, "PROMPT", home)
    allowed = argv[argv.index("--allowedTools") + 1 : argv.index("--")]
    assert allowed == ["mcp__deepwork", "Bash"]  # the server's tools and the shell, no prompts
    assert argv[argv.index("--permission-mode") + 1] == "acceptEdits"
    assert argv[-2:] == ["--", "PROMPT"]
