"""Fan-out over real stdio: `deepwork serve` as a subprocess, the official `mcp` client, a fake
`claude` reviewer on PATH (docs/fan-out.md, issue 31)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.fixtures.reviewer import ScriptedReviewer
from tests.fixtures.stdio_server import serve

pytestmark = pytest.mark.slow


def fan_job(
    root: Path, *, isolation: str | None = None, allow_partial: bool = False, strict: bool = False
) -> Path:
    """A project with `fan/write`: one section per topic, then a report joining them."""
    fanned: dict[str, object] = {
        "name": "sections",
        "instructions": "Write a section about {{ item }}.",
        "inputs": {"topics": {}},
        "outputs": {"section.md": {}},
        "for_each": "topics",
        "max_parallel": 4,
        "process_requirements": {"on_topic": "The section MUST be about its topic."},
    }
    if isolation:
        fanned["isolation"] = isolation
    if allow_partial:
        fanned["allow_partial"] = True
    job = {
        "name": "fan",
        "summary": "One section per topic",
        "step_arguments": [
            {"name": "topics", "description": "The topics", "type": "string"},
            {"name": "section.md", "description": "One section", "type": "file_path"},
            {"name": "report.md", "description": "The report", "type": "file_path"},
        ],
        "workflows": {
            "write": {
                "summary": "Sections, then a report",
                "steps": [
                    fanned,
                    {
                        "name": "join",
                        "instructions": "Join the sections.",
                        "inputs": {"section.md": {}},
                        "outputs": {"report.md": {}},
                    },
                ],
            }
        },
    }
    if strict:
        job["scope_guard"] = "strict"
    job_dir = root / ".deepwork" / "jobs" / "fan"
    job_dir.mkdir(parents=True)
    (job_dir / "job.yml").write_text(yaml.safe_dump(job, sort_keys=False), encoding="utf-8")
    return root


async def test_fifty_items_are_gated_one_by_one_and_fan_in_in_item_order(
    tmp_path: Path, scripted_reviewer: ScriptedReviewer
) -> None:
    root = fan_job(tmp_path / "project")
    topics = [f"topic-{n:03d}" for n in range(50)]
    scripted_reviewer.answer("fail", when="DRAFT")
    env = {**scripted_reviewer.env, "PYTHONUNBUFFERED": "1"}
    async with serve(root, "server", "--external-runner", "claude", env=env) as agent:
        started = await agent.ok(
            "start_workflow", goal="g", job_name="fan", workflow_name="write",
            inputs={"topics": topics},
        )  # fmt: skip
        fan = started["begin_step"]["fan_out"]
        assert [i["item"] for i in fan["instances"]] == topics
        assert fan["max_parallel"] == 4
        assert fan["counts"]["running"] == 50
        assert "sub-agent" in started["begin_step"]["step_instructions"]
        parent = fan["parent_session_id"]

        # Fan-in before the instances are done is refused.
        await agent.error("finished_step", "fan_out.incomplete", outputs={}, session_id=parent)
        for instance in fan["instances"]:
            sid, item = instance["session_id"], instance["item"]
            brief = await agent.ok("get_active_workflow", session_id=sid)
            assert f"about {item}." in brief["begin_step"]["step_instructions"]
            path = root / f"{item}.md"
            path.write_text(f"# {item}\n" + ("DRAFT\n" if item == "topic-007" else ""))
            answer = await agent.ok(
                "finished_step", outputs={"section.md": f"{item}.md"}, session_id=sid,
                work_summary=f"wrote {item}",
            )  # fmt: skip
            if item == "topic-007":
                assert answer["status"] == "needs_work"  # its own gate; the others go on
                path.write_text(f"# {item}\nfinal\n")
                answer = await agent.ok(
                    "finished_step", outputs={"section.md": f"{item}.md"}, session_id=sid,
                    work_summary=f"wrote {item}",
                )  # fmt: skip
            assert answer["status"] == "workflow_complete"
            # A completed instance is never run again.
            await agent.error(
                "finished_step", "session.not_active", outputs={"section.md": f"{item}.md"},
                session_id=sid,
            )  # fmt: skip
        state = await agent.ok("get_active_workflow", session_id=parent)
        assert state["begin_step"]["fan_out"]["counts"]["done"] == 50

        joined = await agent.ok("finished_step", outputs={}, session_id=parent)
        assert joined["status"] == "next_step"
        [section_input] = joined["begin_step"]["step_inputs"]
        assert section_input["paths"] == [f"{t}.md" for t in topics]
    reviewed = scripted_reviewer.calls()
    assert len(reviewed) == 51  # one per instance, and the second try of topic-007


async def test_a_fan_out_over_ten_thousand_items_is_refused_before_anything_exists(
    tmp_path: Path,
) -> None:
    root = fan_job(tmp_path / "project")
    topics = [f"t{n}" for n in range(10_000)]
    async with serve(root, "server", "--no-quality-gate") as agent:
        await agent.error(
            "start_workflow", "fan_out.too_many_instances", goal="g", job_name="fan",
            workflow_name="write", inputs={"topics": topics},
        )  # fmt: skip
        state = await agent.ok("get_active_workflow")
        assert state["stack"] == []
    tmp = root / ".deepwork" / "tmp"
    assert not list(tmp.glob("session_*.json"))
    assert not (tmp / "stack.json").exists()


async def test_limits_max_instances_in_the_config_bounds_a_fan_out(tmp_path: Path) -> None:
    root = fan_job(tmp_path / "project")
    (root / ".deepwork" / "config.yml").write_text("limits:\n  max_instances: 2\n")
    async with serve(root, "server", "--no-quality-gate") as agent:
        refused = await agent.error(
            "start_workflow", "fan_out.too_many_instances", goal="g", job_name="fan",
            workflow_name="write", inputs={"topics": ["a", "b", "c"]},
        )  # fmt: skip
        assert "(2)" in refused
        started = await agent.ok(
            "start_workflow", goal="g", job_name="fan", workflow_name="write",
            inputs={"topics": ["a", "b"]},
        )  # fmt: skip
        assert len(started["begin_step"]["fan_out"]["instances"]) == 2


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


async def test_worktree_instances_work_apart_merge_back_and_report_a_conflict(
    tmp_path: Path,
) -> None:
    root = fan_job(tmp_path / "project", isolation="worktree")
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "T")
    (root / ".gitignore").write_text(".deepwork/tmp/\n")
    (root / "shared.txt").write_text("base\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    topics = [f"w{n}" for n in range(8)]
    async with serve(root, "server", "--no-quality-gate") as agent:
        started = await agent.ok(
            "start_workflow", goal="g", job_name="fan", workflow_name="write",
            inputs={"topics": topics},
        )  # fmt: skip
        fan = started["begin_step"]["fan_out"]
        parent = fan["parent_session_id"]
        folders = [root / i["worktree"] for i in fan["instances"]]
        for folder, topic in zip(folders, topics, strict=True):  # all edit before any finishes
            (folder / f"{topic}.md").write_text(f"{topic}\n")
        for folder, topic in zip(folders, topics, strict=True):
            others = {f"{t}.md" for t in topics} - {f"{topic}.md"}
            assert not any((folder / name).exists() for name in others)
        # Two instances change the same line of a tracked file: the second merge conflicts.
        (folders[2] / "shared.txt").write_text("from w2\n")
        (folders[5] / "shared.txt").write_text("from w5\n")
        for instance, topic in zip(fan["instances"], topics, strict=True):
            done = await agent.ok(
                "finished_step", outputs={"section.md": f"{topic}.md"},
                session_id=instance["session_id"],
            )  # fmt: skip
            assert done["status"] == "workflow_complete"
        conflict = await agent.error(
            "finished_step", "fan_out.merge_conflict", outputs={}, session_id=parent
        )
        assert "instance 6 (w5)" in conflict
        assert "shared.txt" in conflict
        assert (root / "shared.txt").read_text() == "from w2\n"  # as before the failed merge
        assert git(root, "status", "--porcelain") == ""
        assert not (root / "w5.md").exists()
        assert (root / "w4.md").exists()
        assert folders[5].is_dir()
        assert not folders[0].exists()

        status = subprocess.run(
            [sys.executable, "-m", "deepwork_mcp", "status", "--path", str(root)],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        assert f"{fan['instances'][5]['worktree']}: instance 6 (w5) waits for fan-in" in status
        subprocess.run(["git", "merge", "-q", "main"], cwd=folders[5], capture_output=True)
        (folders[5] / "shared.txt").write_text("from w2 and w5\n")
        git(folders[5], "add", "-A")
        git(folders[5], "commit", "-q", "-m", "resolve")
        joined = await agent.ok("finished_step", outputs={}, session_id=parent)
        assert joined["status"] == "next_step"
        [section_input] = joined["begin_step"]["step_inputs"]
        assert section_input["paths"] == [f"{t}.md" for t in topics]
    assert (root / "shared.txt").read_text() == "from w2 and w5\n"
    assert all((root / f"{t}.md").is_file() for t in topics)
    assert not any(folder.exists() for folder in folders)
    assert "deepwork/" not in git(root, "branch", "--list")


@pytest.mark.parametrize("allow_partial", [False, True])
async def test_an_item_given_up_is_recorded_and_fan_in_needs_allow_partial(
    tmp_path: Path, allow_partial: bool
) -> None:
    root = fan_job(tmp_path / "project", allow_partial=allow_partial)
    async with serve(root, "server", "--no-quality-gate") as agent:
        started = await agent.ok(
            "start_workflow", goal="g", job_name="fan", workflow_name="write",
            inputs={"topics": ["a", "b"]},
        )  # fmt: skip
        fan = started["begin_step"]["fan_out"]
        first, second = fan["instances"]
        (root / "a.md").write_text("a\n")
        await agent.ok(
            "finished_step", outputs={"section.md": "a.md"}, session_id=first["session_id"]
        )
        await agent.ok("abort_workflow", explanation="no source", session_id=second["session_id"])
        state = await agent.ok("get_active_workflow", session_id=fan["parent_session_id"])
        shown = state["begin_step"]["fan_out"]
        assert shown["counts"] == {"done": 1, "running": 0, "needs_work": 0, "aborted": 1}
        assert shown["instances"][1]["state"] == "aborted"
        assert shown["instances"][1]["abort_reason"] == "no source"
        parent = fan["parent_session_id"]
        if not allow_partial:
            await agent.error("finished_step", "fan_out.incomplete", outputs={}, session_id=parent)
            return
        joined = await agent.ok("finished_step", outputs={}, session_id=parent)
        assert joined["status"] == "next_step"
        [section_input] = joined["begin_step"]["step_inputs"]
        assert section_input["paths"] == ["a.md"]


async def test_bytes_changed_after_the_instance_finished_are_warned_at_fan_in(
    tmp_path: Path,
) -> None:
    root = fan_job(tmp_path / "project", isolation="worktree")
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "T")
    (root / ".gitignore").write_text(".deepwork/tmp/\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    async with serve(root, "server", "--no-quality-gate") as agent:
        started = await agent.ok(
            "start_workflow", goal="g", job_name="fan", workflow_name="write",
            inputs={"topics": ["a", "b"]},
        )  # fmt: skip
        fan = started["begin_step"]["fan_out"]
        for instance in fan["instances"]:
            folder = root / instance["worktree"]
            (folder / f"{instance['item']}.md").write_text("as finished\n")
            await agent.ok(
                "finished_step", outputs={"section.md": f"{instance['item']}.md"},
                session_id=instance["session_id"],
            )  # fmt: skip
        # After its instance finished, `b.md` changes in the worktree: nobody judged those bytes,
        # so the ones its review covered are merged and the change is warned about and kept.
        (root / fan["instances"][1]["worktree"] / "b.md").write_text("changed later\n")
        joined = await agent.ok("finished_step", outputs={}, session_id=fan["parent_session_id"])
        assert joined["status"] == "next_step"
        warned = [w for w in joined.get("warnings", []) if w.startswith("fan_out.unjudged_changes")]
        assert len(warned) == 1
        assert "b.md" in warned[0]
        assert not [w for w in joined["warnings"] if w.startswith("fan_out.evidence_changed")]
    assert (root / "b.md").read_text() == "as finished\n"
