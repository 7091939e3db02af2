"""A `.deepwork/tmp` that is no folder is refused with a code naming it, and reading commands
never create a store (issue 43, item 13)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from deepwork_mcp.cli import cli
from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config
from tests.fixtures.tool_calls import call_error
from tests.fixtures.workflow_project import make_project

UNKNOWN = "AAAAAAAAAAAAAAAA"


def _bare(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "project")
    tmp = root / ".deepwork" / "tmp"
    if tmp.exists():
        for path in sorted(tmp.rglob("*"), reverse=True):
            path.rmdir() if path.is_dir() else path.unlink()
        tmp.rmdir()
    return root


@pytest.mark.parametrize("kind", ["fifo", "file"])
async def test_a_runtime_folder_that_is_no_folder_is_refused_with_its_path(
    tmp_path: Path, kind: str
) -> None:
    root = _bare(tmp_path)
    tmp = root / ".deepwork" / "tmp"
    os.mkfifo(tmp) if kind == "fifo" else tmp.write_text("not a folder\n")
    async with Client(create_server(root, config())) as client:
        text = await call_error(
            client, "start_workflow", "store.not_a_folder", goal="g", job_name="three_step",
            workflow_name="main",
        )  # fmt: skip
    assert ".deepwork/tmp" in text
    assert tmp.exists()
    assert not tmp.is_dir()


@pytest.mark.parametrize(
    "command",
    [["store", "export", UNKNOWN], ["store", "info"], ["log", UNKNOWN], ["status"],
     ["status", "--all"]],
)  # fmt: skip
def test_reading_commands_create_no_store(tmp_path: Path, command: list[str]) -> None:
    root = _bare(tmp_path)
    done = CliRunner().invoke(cli, [*command, "--path", str(root)])
    assert not (root / ".deepwork" / "tmp").exists(), done.output
    if UNKNOWN in command:
        assert done.exit_code == 1
        assert "session.not_found" in done.stderr
        assert "start_workflow" not in done.stderr  # issue 43, item 21: the CLI's own words
        assert "deepwork status" in done.stderr
