"""How `deepwork run` starts the Gemini CLI (docs/headless.md, "The agents"): the DeepWork
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
