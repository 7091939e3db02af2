"""Approving works however DeepWork was started (issue 34): the approval answer gives the
command that runs in the user's setup, here `uvx --from <this checkout> deepwork`, and that very
command records the decision (docs/evidence.md)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from deepwork_mcp.approvals.launch import launch_prefix
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.fixtures.evidence_project import make_evidence_project
from tests.fixtures.stdio_server import Server

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("parent", "prefix"),
    [
        (
            ["/usr/bin/uv", "tool", "uvx", "--from", "/src/dw", "deepwork", "serve", "-x"],
            "uvx --from /src/dw deepwork",
        ),
        (
            ["/home/u/.local/bin/uvx", "deepwork==1.0.0", "serve", "--path", "."],
            "uvx deepwork==1.0.0",
        ),
        (["uv", "tool", "run", "deepwork", "serve"], "uvx deepwork"),
        (["/usr/bin/bash", "-c", "deepwork serve"], "deepwork"),
        (["/usr/bin/python3", "-m", "pytest"], "deepwork"),
        ([], "deepwork"),
        (
            ["uvx", "--from", "/a path/with space", "deepwork", "serve"],
            "uvx --from '/a path/with space' deepwork",
        ),
    ],
)
def test_the_launch_prefix_is_what_started_the_server(parent: list[str], prefix: str) -> None:
    assert launch_prefix(parent) == prefix


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("uvx") is None, reason="needs uvx on PATH")
async def test_the_answers_command_approves_a_project_served_with_uvx_from_a_clone(
    tmp_path: Path,
) -> None:
    root = make_evidence_project(tmp_path / "project", with_git=False)
    params = StdioServerParameters(
        command="uvx",
        args=["--from", str(REPO), "deepwork", "serve", "--path", str(root), "--no-branch"],
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    with (tmp_path / "server.stderr").open("a") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            agent = Server(session, tmp_path / "no.pid")
            started = await agent.ok(
                "start_workflow", goal="g", job_name="approved", workflow_name="main"
            )
            session_id = started["begin_step"]["session_id"]
            (root / "plan.md").write_text("the plan\n")
            waiting = await agent.ok("finished_step", outputs={"plan": "plan.md"})
            command = waiting["evidence"]["approval"]["command"]
            assert command == f"uvx --from {REPO} deepwork approve {session_id}"
            assert f"`{command}`" in waiting["feedback"]
            assert "uvx --from" in waiting["feedback"].split("dashboard")[0]
            done = subprocess.run(
                [*shlex.split(command), "--path", str(root), "--yes"],
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            assert done.returncode == 0, done.stderr
            moved = await agent.ok("finished_step", outputs={"plan": "plan.md"})
            assert moved["status"] == "next_step"
