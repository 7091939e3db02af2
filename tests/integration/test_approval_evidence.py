"""Through the real server and the real `deepwork approve` (docs/evidence.md): a human's approval
at the last checkpoint does not complete a workflow whose earlier output went stale, nor let an
undeclared change through a strict scope guard."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config
from tests.fixtures.signed_jobs import make_signed_project
from tests.fixtures.tool_calls import call_ok


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_signed_project(tmp_path / "project")


@pytest.fixture
async def client(root: Path) -> AsyncIterator[Client[Any]]:
    async with Client(create_server(root, config())) as connected:
        yield connected


def deepwork_approve(root: Path, session_id: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "deepwork_mcp", "approve", session_id, "--path", str(root), "--yes"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, done.stderr


async def test_an_approval_does_not_complete_over_a_stale_earlier_output(
    client: Client[Any], root: Path
) -> None:
    started = await call_ok(
        client, "start_workflow", goal="g", job_name="signed", workflow_name="main"
    )
    session_id = started["begin_step"]["session_id"]
    (root / "prep.md").write_text("prep\n")
    assert (await call_ok(client, "finished_step", outputs={"prep": "prep.md"}))["status"] == (
        "next_step"
    )
    (root / "sig.md").write_text("signed\n")
    waiting = await call_ok(client, "finished_step", outputs={"sig": "sig.md"})
    assert waiting["status"] == "awaiting_approval"
    (root / "prep.md").write_text("prep, changed after it was accepted\n")
    deepwork_approve(root, session_id)

    blocked = await call_ok(client, "finished_step", outputs={"sig": "sig.md"})
    assert blocked["status"] == "needs_work"
    assert [item["path"] for item in blocked["evidence"]["stale_evidence"]] == ["prep.md"]


async def test_an_approval_does_not_let_an_undeclared_change_through_a_strict_guard(
    client: Client[Any], root: Path
) -> None:
    started = await call_ok(
        client, "start_workflow", goal="g", job_name="signed_strict", workflow_name="main"
    )
    session_id = started["begin_step"]["session_id"]
    (root / "sig.md").write_text("signed\n")
    waiting = await call_ok(client, "finished_step", outputs={"sig": "sig.md"})
    assert waiting["status"] == "awaiting_approval"
    (root / "src.txt").write_text("source, edited without declaring it\n")
    deepwork_approve(root, session_id)

    blocked = await call_ok(client, "finished_step", outputs={"sig": "sig.md"})
    assert blocked["status"] == "needs_work"
    assert blocked["evidence"]["undeclared_changes"] == ["src.txt"]
