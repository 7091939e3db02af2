"""Evidence over real stdio: `deepwork serve` as a subprocess, the official `mcp` client, a fake
`claude` reviewer on PATH, and `deepwork approve` run as a separate process (docs/evidence.md)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.evidence_project import make_evidence_project
from tests.fixtures.reviewer import ScriptedReviewer
from tests.fixtures.stdio_server import serve

pytestmark = pytest.mark.slow


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_evidence_project(tmp_path / "project")


@pytest.fixture
def env(scripted_reviewer: ScriptedReviewer) -> dict[str, str]:
    return {**scripted_reviewer.env, "PYTHONUNBUFFERED": "1"}


async def test_an_output_edited_after_its_review_is_reviewed_again(
    root: Path, env: dict[str, str], scripted_reviewer: ScriptedReviewer
) -> None:
    plan, result = root / "plan.md", root / "result.md"
    async with serve(root, "server", "--external-runner", "claude", env=env) as agent:
        await agent.ok("start_workflow", goal="g", job_name="evidenced", workflow_name="main")
        plan.write_text("the plan\n")
        reviewed_hash = sha(plan)
        step2 = await agent.ok("finished_step", outputs={"plan": "plan.md"})
        assert step2["status"] == "next_step"

        plan.write_text("the plan, quietly changed after its review\n")
        result.write_text("the result\n")
        blocked = await agent.ok("finished_step", outputs={"result": "result.md"})
        assert blocked["status"] == "needs_work"
        [stale] = blocked["evidence"]["stale_evidence"]
        assert (stale["output"], stale["step"], stale["path"]) == ("plan", "plan", "plan.md")
        assert (stale["old_sha256"], stale["new_sha256"]) == (reviewed_hash, sha(plan))
        assert blocked["evidence"]["undeclared_changes"] == [
            "plan.md"
        ]  # changed during step `build`

        done = await agent.ok("finished_step", outputs={"result": "result.md"})
        assert done["status"] == "workflow_complete"
        summary = {item["path"]: item for item in done["evidence"]["outputs"]}
        assert set(summary) == {"plan.md", "result.md"}
        assert summary["plan.md"]["sha256"] == sha(plan)
        assert summary["result.md"]["sha256"] == sha(result)
        assert {item["verdict"] for item in summary.values()} == {"reviewer"}

    reviewed = [call["stdin"] for call in scripted_reviewer.calls()]
    # The last round of reviews saw the changed plan, and was told `build` changed it.
    assert any("quietly changed" in payload for payload in reviewed[-2:])
    assert any(
        "BEGIN UNDECLARED CHANGES" in payload and "- plan.md" in payload
        for payload in reviewed[-2:]
    )


async def test_deepwork_approve_from_another_process_unblocks_the_step(
    root: Path, env: dict[str, str]
) -> None:
    async with serve(root, "server", env=env) as agent:
        started = await agent.ok(
            "start_workflow", goal="g", job_name="approved", workflow_name="main"
        )
        session_id = started["begin_step"]["session_id"]
        (root / "plan.md").write_text("the plan\n")
        waiting = await agent.ok("finished_step", outputs={"plan": "plan.md"})
        assert waiting["status"] == "awaiting_approval"
        command = waiting["evidence"]["approval"]["command"]
        assert command == f"deepwork approve {session_id}"

        # The agent's own tool calls cannot get past the human.
        again = await agent.ok(
            "finished_step",
            outputs={"plan": "plan.md"},
            quality_review_override_reason="I approve this myself",
        )
        assert again["status"] == "awaiting_approval"

        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "deepwork_mcp",
                "approve",
                session_id,
                "--path",
                str(root),
                "--yes",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        moved = await agent.ok("finished_step", outputs={"plan": "plan.md"})
        assert moved["status"] == "next_step"
        (root / "result.md").write_text("the result\n")
        complete = await agent.ok("finished_step", outputs={"result": "result.md"})
        [approval] = complete["evidence"]["approvals"]
        assert (approval["approved"], approval["channel"]) == (True, "cli")
        assert approval["terminal"] is None
        assert approval["shown"][0]["sha256"] == sha(root / "plan.md")
