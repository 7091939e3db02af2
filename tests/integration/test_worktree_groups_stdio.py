"""Concurrent groups in worktrees, and the scope guard inside a worktree, over real stdio:
`deepwork serve` as a subprocess, the official `mcp` client, real git repositories
(docs/fan-out.md, issue 31)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fixtures.stdio_server import serve
from tests.integration.test_fan_out_stdio import fan_job

pytestmark = pytest.mark.slow

GROUP = ["backend", "frontend", "docs"]


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


def repository(root: Path) -> None:
    """`root` as a git repository with one commit holding `shared.txt`."""
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "T")
    (root / ".gitignore").write_text(".deepwork/tmp/\n")
    (root / "shared.txt").write_text("base\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")


def group_job_v09(root: Path, steps: list[str] = GROUP, *, strict: bool = False) -> Path:
    """A 0.9-format job `grp/build`: the steps of `steps` as a concurrent group in worktrees,
    each writing `<step>.md`, then `join` reading them all."""
    job_dir = root / ".deepwork" / "jobs" / "grp"
    (job_dir / "steps").mkdir(parents=True)
    defined: list[dict[str, Any]] = []
    for step_id in [*steps, "join"]:
        (job_dir / "steps" / f"{step_id}.md").write_text(f"# {step_id}\n\nDo {step_id}.\n")
        defined.append(
            {
                "id": step_id,
                "name": step_id.title(),
                "description": f"The {step_id} step",
                "instructions_file": f"steps/{step_id}.md",
                "outputs": {
                    f"{step_id}.md": {"type": "file", "description": "Its file", "required": True}
                },
                "reviews": [],
            }
        )
    for step in defined[:-1]:
        step["isolation"] = "worktree"
    defined[-1]["inputs"] = [{"file": f"{s}.md", "from_step": s} for s in steps]
    defined[-1]["dependencies"] = list(steps)
    job: dict[str, Any] = {
        "name": "grp",
        "version": "1.0.0",
        "summary": "A group in worktrees",
        "common_job_info_provided_to_all_steps_at_runtime": "A test job.",
        "steps": defined,
        "workflows": [{"name": "build", "summary": "Build", "steps": [list(steps), "join"]}],
    }
    if strict:
        job["scope_guard"] = "strict"
    (job_dir / "job.yml").write_text(yaml.safe_dump(job, sort_keys=False), encoding="utf-8")
    return root


def group_job_v010(root: Path, *, strict: bool = False) -> Path:
    """The same job in the 0.10 format: the group is `concurrent_group: build`."""
    arguments = [
        {"name": f"{s}.md", "description": f"The {s} file", "type": "file_path"}
        for s in [*GROUP, "join"]
    ]
    steps: list[dict[str, Any]] = [
        {
            "name": s,
            "instructions": f"Do {s}.",
            "outputs": {f"{s}.md": {}},
            "concurrent_group": "build",
            "isolation": "worktree",
        }
        for s in GROUP
    ]
    steps.append(
        {
            "name": "join",
            "instructions": "Join them.",
            "inputs": {f"{s}.md": {} for s in GROUP},
            "outputs": {"join.md": {}},
        }
    )
    job: dict[str, Any] = {
        "name": "grp",
        "summary": "A group in worktrees",
        "step_arguments": arguments,
        "workflows": {"build": {"summary": "Build", "steps": steps}},
    }
    if strict:
        job["scope_guard"] = "strict"
    job_dir = root / ".deepwork" / "jobs" / "grp"
    job_dir.mkdir(parents=True)
    (job_dir / "job.yml").write_text(yaml.safe_dump(job, sort_keys=False), encoding="utf-8")
    return root


def status_text(root: Path) -> str:
    return subprocess.run(
        [sys.executable, "-m", "deepwork_mcp", "status", "--path", str(root)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip


@pytest.mark.parametrize("make", [group_job_v09, group_job_v010], ids=["0.9", "0.10"])
async def test_a_group_runs_each_step_in_its_own_worktree_and_merges_in_declared_order(
    tmp_path: Path, make: Any
) -> None:
    root = make(tmp_path / "project")
    repository(root)
    async with serve(root, "server", "--no-quality-gate") as agent:
        started = await agent.ok("start_workflow", goal="g", job_name="grp", workflow_name="build")
        fan = started["begin_step"]["fan_out"]
        assert fan["group"] == GROUP
        assert [i["item"] for i in fan["instances"]] == GROUP
        assert "CONCURRENT GROUP IN WORKTREES" in started["begin_step"]["step_instructions"]
        parent = fan["parent_session_id"]
        folders = {i["item"]: root / i["worktree"] for i in fan["instances"]}
        assert all(
            i["worktree"].endswith(i["session_id"]) and folders[i["item"]].is_dir()
            for i in fan["instances"]
        )
        branches = git(root, "branch", "--list", "deepwork/*")
        assert all(f"deepwork/{parent}/{i['session_id']}" in branches for i in fan["instances"])
        for step_id, folder in folders.items():  # all edit before any finishes
            (folder / f"{step_id}.md").write_text(f"{step_id}\n")
        for step_id, folder in folders.items():  # nobody sees the others' changes
            assert not any((folder / f"{o}.md").exists() for o in GROUP if o != step_id)
        # Two steps change the same line: `docs`, merged after `backend`, conflicts.
        (folders["backend"] / "shared.txt").write_text("from backend\n")
        (folders["docs"] / "shared.txt").write_text("from docs\n")

        await agent.error("finished_step", "fan_out.incomplete", outputs={}, session_id=parent)
        for instance in fan["instances"]:
            sid, step_id = instance["session_id"], instance["item"]
            brief = await agent.ok("get_active_workflow", session_id=sid)
            assert brief["begin_step"]["step_id"] == step_id
            assert f"Do {step_id}." in brief["begin_step"]["step_instructions"]
            assert instance["worktree"] in brief["begin_step"]["step_instructions"]
            done = await agent.ok(
                "finished_step", outputs={f"{step_id}.md": f"{step_id}.md"}, session_id=sid
            )
            assert done["status"] == "workflow_complete"

        conflict = await agent.error(
            "finished_step", "fan_out.merge_conflict", outputs={}, session_id=parent
        )
        assert "step 'docs'" in conflict
        assert "shared.txt" in conflict
        assert (root / "shared.txt").read_text() == "from backend\n"  # as before that merge
        assert git(root, "status", "--porcelain") == ""
        assert (root / "frontend.md").exists()
        assert not (root / "docs.md").exists()
        assert folders["docs"].is_dir()  # kept to resolve
        assert not folders["backend"].exists()
        docs = fan["instances"][2]
        assert f"{docs['worktree']}: instance 3 (docs) waits for fan-in" in status_text(root)

        subprocess.run(["git", "merge", "-q", "main"], cwd=folders["docs"], capture_output=True)
        (folders["docs"] / "shared.txt").write_text("from backend and docs\n")
        git(folders["docs"], "add", "-A")
        git(folders["docs"], "commit", "-q", "-m", "resolve")
        joined = await agent.ok("finished_step", outputs={}, session_id=parent)
        assert joined["status"] == "next_step"
        assert joined["begin_step"]["step_id"] == "join"
        inputs = {i["name"]: i["paths"] for i in joined["begin_step"]["step_inputs"]}
        assert inputs == {f"{s}.md": [f"{s}.md"] for s in GROUP}
        (root / "join.md").write_text("joined\n")
        final = await agent.ok("finished_step", outputs={"join.md": "join.md"}, session_id=parent)
        assert final["status"] == "workflow_complete"
        assert {k: v for k, v in final["all_outputs"].items() if k != "join.md"} == {
            f"{s}.md": f"{s}.md" for s in GROUP
        }
    assert (root / "shared.txt").read_text() == "from backend and docs\n"
    assert [
        line.split(": ", 1)[1]
        for line in git(root, "log", "--format=%s").splitlines()
        if line.startswith("Merge grp/")
    ] == [f"step {s!r} of the concurrent group" for s in reversed(GROUP)]
    assert not any(folder.exists() for folder in folders.values())
    assert "deepwork/" not in git(root, "branch", "--list")
    assert "waits for fan-in" not in status_text(root)


async def test_aborting_the_run_removes_the_group_worktrees(tmp_path: Path) -> None:
    root = group_job_v09(tmp_path / "project")
    repository(root)
    async with serve(root, "server", "--no-quality-gate") as agent:
        started = await agent.ok("start_workflow", goal="g", job_name="grp", workflow_name="build")
        fan = started["begin_step"]["fan_out"]
        folders = [root / i["worktree"] for i in fan["instances"]]
        assert all(folder.is_dir() for folder in folders)
        await agent.ok(
            "abort_workflow", explanation="changed my mind", session_id=fan["parent_session_id"]
        )
        assert (await agent.ok("get_active_workflow"))["stack"] == []
    assert not any(folder.exists() for folder in folders)
    assert "deepwork/" not in git(root, "branch", "--list")


@pytest.mark.parametrize("kind", ["group", "for_each"])
async def test_a_strict_scope_violation_in_a_worktree_answers_needs_work(
    tmp_path: Path, kind: str
) -> None:
    if kind == "group":
        root = group_job_v010(tmp_path / "project", strict=True)
        output = "backend.md"
    else:
        root = fan_job(tmp_path / "project", isolation="worktree", strict=True)
        output = "section.md"
    repository(root)
    async with serve(root, "server", "--no-quality-gate") as agent:
        start: dict[str, Any] = {"goal": "g", "job_name": "grp", "workflow_name": "build"}
        if kind == "for_each":
            start = {"goal": "g", "job_name": "fan", "workflow_name": "write",
                     "inputs": {"topics": ["x", "y"]}}  # fmt: skip
        started = await agent.ok("start_workflow", **start)
        first = started["begin_step"]["fan_out"]["instances"][0]
        folder, sid = root / first["worktree"], first["session_id"]
        (folder / "mine.md").write_text("mine\n")
        (folder / "shared.txt").write_text("not declared\n")  # a change the step does not declare
        (root / "unrelated.txt").write_text("the run's own tree is not this instance's\n")
        answer = await agent.ok("finished_step", outputs={output: "mine.md"}, session_id=sid)
        assert answer["status"] == "needs_work"
        assert answer["evidence"]["undeclared_changes"] == ["shared.txt"]
        assert "shared.txt" in answer["feedback"]
        state = await agent.ok("get_active_workflow", session_id=sid)
        assert state["begin_step"]["step_id"] == ("backend" if kind == "group" else "sections")

        git(folder, "checkout", "--", "shared.txt")  # undone: the instance passes
        answer = await agent.ok("finished_step", outputs={output: "mine.md"}, session_id=sid)
        assert answer["status"] == "workflow_complete"
