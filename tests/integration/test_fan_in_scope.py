"""Fan-in merges only what the gates judged, and judges the run's own tree like any checkpoint
(docs/fan-out.md), through the server's tools with the in-memory client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config
from tests.fixtures.git_repo import git, init_repo
from tests.fixtures.tool_calls import call_ok
from tests.integration.test_fan_out_stdio import fan_job


def _project(tmp_path: Path, *, strict: bool) -> Path:
    root = fan_job(tmp_path / "project", isolation="worktree", strict=strict)
    init_repo(root)
    (root / ".gitignore").write_text(".deepwork/tmp/\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


@pytest.fixture
async def agent(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    strict = bool(getattr(request, "param", False))
    root = _project(tmp_path, strict=strict)
    async with Client(create_server(root, config(enabled=False))) as client:
        yield client, root


async def _finish_instances(client: Client[Any], root: Path) -> dict[str, Any]:
    """Start `fan/write` over a and b; each instance writes its section in its worktree and
    passes. The fan-out's answer."""
    started = await call_ok(
        client, "start_workflow", goal="g", job_name="fan", workflow_name="write",
        inputs={"topics": ["a", "b"]},
    )  # fmt: skip
    fan: dict[str, Any] = started["begin_step"]["fan_out"]
    for instance in fan["instances"]:
        folder = root / instance["worktree"]
        (folder / f"{instance['item']}.md").write_text("as accepted\n")
        done = await call_ok(
            client, "finished_step", outputs={"section.md": f"{instance['item']}.md"},
            session_id=instance["session_id"],
        )  # fmt: skip
        assert done["status"] == "workflow_complete"
    return fan


async def test_what_an_instance_writes_after_it_passed_is_not_merged(agent: Any) -> None:
    """Issue 43, item 2: only what the gate accepted is merged; the rest is reported and kept."""
    client, root = agent
    fan = await _finish_instances(client, root)
    worktree = fan["instances"][1]["worktree"]
    (root / worktree / "late.txt").write_text("written after b passed\n")
    (root / worktree / "b.md").write_text("changed after b passed\n")
    joined = await call_ok(client, "finished_step", outputs={}, session_id=fan["parent_session_id"])
    assert joined["status"] == "next_step"
    assert (root / "b.md").read_text() == "as accepted\n"
    assert not (root / "late.txt").exists()
    assert sorted(joined["evidence"]["undeclared_changes"]) == [
        f"{worktree}/b.md",
        f"{worktree}/late.txt",
    ]
    [warning] = [w for w in joined["warnings"] if w.startswith("fan_out.unjudged_changes")]
    assert "b.md, late.txt" in warning
    kept = "deepwork/unmerged/" + fan["parent_session_id"] + "/" + fan["instances"][1]["session_id"]
    assert kept in warning
    assert git(root, "show", f"{kept}:late.txt") == "written after b passed"
    assert git(root, "status", "--porcelain") == ""


@pytest.mark.parametrize("agent", [True], indirect=True)
async def test_the_strict_guard_refuses_a_fan_in_with_unjudged_files(agent: Any) -> None:
    """Under `scope_guard: strict` nothing is merged until the agent undoes them or says why."""
    client, root = agent
    fan = await _finish_instances(client, root)
    worktree = fan["instances"][0]["worktree"]
    (root / worktree / "late.txt").write_text("written after a passed\n")
    head = git(root, "rev-parse", "HEAD")
    parent = fan["parent_session_id"]
    refused = await call_ok(client, "finished_step", outputs={}, session_id=parent)
    assert refused["status"] == "needs_work"
    assert refused["evidence"]["undeclared_changes"] == [f"{worktree}/late.txt"]
    assert "after the instance was accepted" in refused["feedback"]
    assert git(root, "rev-parse", "HEAD") == head  # nothing merged
    joined = await call_ok(
        client, "finished_step", outputs={}, session_id=parent,
        quality_review_override_reason="late.txt is the index the section needs",
    )  # fmt: skip
    assert joined["status"] == "next_step"
    assert (root / "late.txt").read_text() == "written after a passed\n"


@pytest.mark.parametrize("agent", [False, True], indirect=True)
async def test_the_runs_own_tree_is_judged_at_fan_in(agent: Any) -> None:
    """Issue 43, item 3: a file written into the run's checkout while the instances work in
    worktrees is an undeclared change of the step (strict: the fan-in waits)."""
    client, root = agent
    fan = await _finish_instances(client, root)
    (root / "stray.txt").write_text("written in the run's tree during the fan-out\n")
    joined = await call_ok(client, "finished_step", outputs={}, session_id=fan["parent_session_id"])
    assert joined["evidence"]["undeclared_changes"] == ["stray.txt"]
    strict = "scope_guard: strict" in (root / ".deepwork/jobs/fan/job.yml").read_text()
    assert joined["status"] == ("needs_work" if strict else "next_step")
    assert (root / "a.md").exists() is (not strict)
