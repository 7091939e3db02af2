"""The rendered hook commands start `uvx` only when the hook can have something to do.

Each command is run as the clients run it (a POSIX shell, the event on stdin), with a fake `uvx`
first on PATH that records its arguments and the stdin it received.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[3]
FAKE_UVX = """#!/bin/sh
printf '%s\\n' "$*" > "$UVX_LOG"
cat > "$UVX_LOG.stdin"
echo '{"from": "deepwork"}'
"""


def _commands(platform: str, hook: str) -> list[str]:
    manifest = json.loads((REPO / f"plugins/{platform}/hooks/hooks.json").read_text("utf-8"))
    return [
        handler["command"]
        for groups in manifest["hooks"].values()
        for group in groups
        for handler in group["hooks"]
        if handler["command"].endswith(f" hook {hook}") or f" hook {hook};" in handler["command"]
    ]


def _run(command: str, project: Path, event: dict[str, object], tmp_path: Path) -> tuple[str, Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    uvx = bin_dir / "uvx"
    uvx.write_text(FAKE_UVX, encoding="utf-8")
    uvx.chmod(0o755)
    log = tmp_path / "uvx.log"
    log.unlink(missing_ok=True)
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "UVX_LOG": str(log),
        "CLAUDE_PROJECT_DIR": str(project),
    }
    result = subprocess.run(
        ["sh", "-c", command],
        input=json.dumps(event),
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
        timeout=30,
        check=True,
    )
    return result.stdout, log


@pytest.mark.parametrize("platform", ["claude", "gemini"])
@pytest.mark.parametrize("hook", ["workflow", "session_start"])
def test_workflow_hooks_start_nothing_without_an_active_workflow(
    platform: str, hook: str, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    (project / ".deepwork" / "tmp").mkdir(parents=True)
    commands = _commands(platform, hook)
    assert commands, f"no {hook} hook in the {platform} manifest"
    for command in commands:
        stdout, log = _run(command, project, {"hook_event_name": "Stop"}, tmp_path)
        assert stdout == ""
        assert not log.exists(), "uvx was started with no workflow active"

        (project / ".deepwork" / "tmp" / "stack.json").write_text("{}", encoding="utf-8")
        stdout, log = _run(command, project, {"hook_event_name": "Stop"}, tmp_path)
        (project / ".deepwork" / "tmp" / "stack.json").unlink()
        assert json.loads(stdout) == {"from": "deepwork"}
        assert log.read_text(encoding="utf-8").endswith(f"hook {hook}\n")
        assert json.loads(Path(f"{log}.stdin").read_text(encoding="utf-8")) == {
            "hook_event_name": "Stop"
        }


@pytest.mark.parametrize("platform", ["claude", "gemini"])
def test_post_commit_reminder_starts_only_for_a_commit(platform: str, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (command,) = _commands(platform, "post_commit_reminder")
    listing = {"tool_name": "Bash", "tool_input": {"command": "ls -la"}}
    stdout, log = _run(command, project, listing, tmp_path)
    assert stdout == ""
    assert not log.exists()

    commit = {"tool_name": "Bash", "tool_input": {"command": "git commit -m 'x'"}}
    stdout, log = _run(command, project, commit, tmp_path)
    assert json.loads(stdout) == {"from": "deepwork"}
    assert json.loads(Path(f"{log}.stdin").read_text(encoding="utf-8")) == commit


def test_an_unknown_guard_is_a_render_error(render_tool: ModuleType) -> None:
    platform = render_tool.CLAUDE
    with pytest.raises(ValueError, match="unknown `when`"):
        platform.hook_command("1.0.0", {"name": "x", "when": "sometimes"})
