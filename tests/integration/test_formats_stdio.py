"""The 0.10 fixture jobs, and their converted 0.9 twins, walked through `deepwork serve`.

Each workflow of each job in `tests/fixtures/jobs_v010/` runs end to end over stdio with the
official `mcp` client: outputs of every declared type are submitted, `json_schema` outputs are
checked, `sub_workflow` steps run their workflow nested (across jobs too), and approvals are
answered with `deepwork approve`. The same walk runs on a project whose jobs were converted to the
0.9 format by `deepwork jobs convert`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from deepwork_core.engine.start_inputs import start_parameters
from deepwork_core.jobs.parser import parse_job_dir
from deepwork_core.jobs.steps.parts import InputType
from deepwork_mcp.cli.jobs import jobs

from tests.fixtures.evidence_project import git
from tests.fixtures.stdio_server import Server, serve

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "jobs_v010"
JOB_NAMES = sorted(p.parent.name for p in FIXTURES.glob("*/job.yml"))

#: Output contents that satisfy the fixtures' json_schema declarations.
JSON_CONTENT: dict[str, Any] = {
    "changes.json": {"version": "1.2.0", "entries": [{"kind": "fix", "text": "Faster start"}]},
    "records": {"id": "r1", "title": "First record"},
    "index.json": ["r1"],
}


def _project(tmp_path: Path, fmt: str) -> Path:
    root = tmp_path / f"project-{fmt}"
    shutil.copytree(FIXTURES, root / ".deepwork" / "jobs", ignore=shutil.ignore_patterns("*.md"))
    shutil.copy(FIXTURES / "launch_plan" / "steps" / "outline.md", root / "outline.md")
    (root / ".deepwork" / "jobs" / "launch_plan" / "steps").mkdir(exist_ok=True)
    shutil.move(root / "outline.md", root / ".deepwork/jobs/launch_plan/steps/outline.md")
    if fmt == "0.9":
        for name in JOB_NAMES:
            job_dir = root / ".deepwork" / "jobs" / name
            outcome = CliRunner().invoke(
                jobs, ["convert", str(job_dir), "--to", "0.9", "--in-place"]
            )
            assert outcome.exit_code == 0, outcome.output
    return root


def _outputs(root: Path, step: dict[str, Any]) -> dict[str, Any]:
    """A value of the declared type for every expected output (optional ones included)."""
    outputs: dict[str, Any] = {}
    for expected in step["step_expected_outputs"]:
        name, kind = expected["name"], expected["type"]
        if kind == "string":
            outputs[name] = f"the {name} of {step['step_id']}"
            continue
        relative = f"out/{step['step_id']}/{name}"
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        content = JSON_CONTENT.get(name)
        text = json.dumps(content) if content is not None else f"# {name}\n"
        (root / relative).write_text(text, encoding="utf-8")
        outputs[name] = [relative] if kind == "files" else relative
    return outputs


def _start_inputs(root: Path, job: str, workflow: str) -> dict[str, Any]:
    """A value for every start parameter of `job/workflow` (a project file for a `file_path`)."""
    definition = parse_job_dir(root / ".deepwork" / "jobs" / job).require()
    parameters = start_parameters(definition, definition.workflows_by_name[workflow])
    values: dict[str, Any] = {}
    for name, item in parameters.items():
        values[name] = f"the {name}"
        if item.type is InputType.FILE_PATH:
            values[name] = f"in/{name}"
            (root / "in").mkdir(exist_ok=True)
            (root / "in" / name).write_text(f"# {name}\n", encoding="utf-8")
    return values


async def _walk(server: Server, root: Path, job: str, workflow: str, depth: int = 0) -> None:
    """Run `job/workflow` to completion; a sub-workflow step runs its workflow nested first."""
    answer = await server.ok(
        "start_workflow",
        goal="walk",
        job_name=job,
        workflow_name=workflow,
        inputs=_start_inputs(root, job, workflow),
    )
    step = answer["begin_step"]
    while True:
        target = _sub_workflow_of(step, job)
        if target is not None:
            await _walk(server, root, *target, depth=depth + 1)
        outputs = _outputs(root, step)
        answer = await server.ok("finished_step", outputs=outputs, session_id=step["session_id"])
        if answer["status"] == "awaiting_approval":
            _approve(root, step["session_id"])
            answer = await server.ok(
                "finished_step", outputs=outputs, session_id=step["session_id"]
            )
        if answer["status"] == "workflow_complete":
            assert len(answer["stack"]) == depth
            return
        assert answer["status"] == "next_step", answer
        step = answer["begin_step"]


def _approve(root: Path, session_id: str) -> None:
    """Answer a pending approval the way a human does: `deepwork approve` in another process."""
    done = subprocess.run(
        [sys.executable, "-m", "deepwork_mcp", "approve", session_id, "--path", str(root), "--yes"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def _sub_workflow_of(step: dict[str, Any], job: str) -> tuple[str, str] | None:
    """(job, workflow) a sub-workflow step asks the agent to start, read from its instructions."""
    text = step["step_instructions"]
    marker = "This step runs the workflow `"
    if marker not in text:
        return None
    workflow = text.split(marker, 1)[1].split("`", 1)[0]
    target_job = text.split("` of job `", 1)[1].split("`", 1)[0]
    return target_job, workflow


@pytest.mark.parametrize("fmt", ["0.10", "0.9"])
async def test_every_fixture_workflow_walks_to_completion(tmp_path: Path, fmt: str) -> None:
    root = _project(tmp_path, fmt)
    async with serve(root, "server", "--no-quality-gate") as server:
        listing = await server.ok("get_workflows")
        assert listing["errors"] == []
        assert set(JOB_NAMES) <= {job["name"] for job in listing["jobs"]}
        for name in JOB_NAMES:
            definition = parse_job_dir(root / ".deepwork" / "jobs" / name).require()
            for workflow in definition.workflows:
                await _walk(server, root, name, workflow.name)


async def test_json_schema_mismatch_is_reported_at_the_checkpoint(tmp_path: Path) -> None:
    root = _project(tmp_path, "0.10")
    (root / "changes.json").write_text(json.dumps({"version": "1.0"}), encoding="utf-8")
    async with serve(root, "server", "--no-quality-gate") as server:
        await server.ok(
            "start_workflow",
            goal="g",
            job_name="release_digest",
            workflow_name="draft",
            inputs={"version": "1.0"},
        )
        text = await server.error(
            "finished_step", "outputs.schema_mismatch", outputs={"changes.json": "changes.json"}
        )
        assert "entries" in text


async def test_string_outputs_reach_later_steps(tmp_path: Path) -> None:
    root = _project(tmp_path, "0.10")
    async with serve(root, "server", "--no-quality-gate") as server:
        started = await server.ok(
            "start_workflow",
            goal="g",
            job_name="meeting_digest",
            workflow_name="digest",
            inputs={"transcript": "Ann: we ship on Friday."},
        )
        assert started["begin_step"]["step_id"] == "extract"
        kinds = {o["name"]: o["type"] for o in started["begin_step"]["step_expected_outputs"]}
        assert kinds == {"decisions": "string", "actions": "string"}
        await server.error(
            "finished_step", "outputs.wrong_type", outputs={"decisions": ["x"], "actions": "y"}
        )
        publish = await server.ok(
            "finished_step", outputs={"decisions": "Ship on Friday", "actions": "Ann: tag it"}
        )
        inputs = {i["name"]: i for i in publish["begin_step"]["step_inputs"]}
        assert inputs["decisions"]["value"] == "Ship on Friday"
        assert inputs["decisions"]["paths"] == []


async def test_a_missing_required_start_input_is_refused_naming_it(tmp_path: Path) -> None:
    root = _project(tmp_path, "0.10")
    async with serve(root, "server", "--no-quality-gate") as server:
        for given in ({}, {"version": " "}):
            text = await server.error(
                "start_workflow",
                "inputs.missing",
                goal="g",
                job_name="release_digest",
                workflow_name="draft",
                inputs=given,
            )
            assert "version (The version being released, e.g. 2.3.0)" in text
            assert "Ask the user" in text
        assert (await server.ok("get_active_workflow"))["stack"] == []
        # An optional parameter may be left out: `severity` of bug_triage/quick.
        started = await server.ok(
            "start_workflow",
            goal="g",
            job_name="bug_triage",
            workflow_name="quick",
            inputs={"report": "It crashes on start."},
        )
        assert started["begin_step"]["step_id"] == "quick__reproduce"


async def test_start_inputs_reach_the_steps_that_declare_them(tmp_path: Path) -> None:
    root = _project(tmp_path, "0.10")
    async with serve(root, "server", "--no-quality-gate") as server:
        await server.error(
            "start_workflow",
            "inputs.unknown",
            goal="g",
            job_name="release_digest",
            workflow_name="draft",
            inputs={"colour": "red"},
        )
        started = await server.ok(
            "start_workflow",
            goal="g",
            job_name="release_digest",
            workflow_name="draft",
            inputs={"version": "2.0.0"},
        )
        [version] = started["begin_step"]["step_inputs"]
        assert (version["name"], version["value"]) == ("version", "2.0.0")
        (root / "changes.json").write_text(json.dumps(JSON_CONTENT["changes.json"]))
        write = await server.ok("finished_step", outputs={"changes.json": "changes.json"})
        given = {i["name"]: i for i in write["begin_step"]["step_inputs"]}
        assert given["version"]["value"] == "2.0.0"
        assert given["changes.json"]["paths"] == ["changes.json"]
        (root / "notes.md").write_text("# Notes\n")
        done = await server.ok("finished_step", outputs={"notes.md": "notes.md"})
        assert done["status"] == "workflow_complete"
        assert "pull request" in done["post_workflow_instructions"]


async def test_a_sub_workflow_step_runs_its_workflow_nested_and_completes_with_it(
    tmp_path: Path,
) -> None:
    root = _project(tmp_path, "0.10")
    (root / "plan.md").write_text("# Plan\n")
    (root / "changes.json").write_text(json.dumps(JSON_CONTENT["changes.json"]))
    (root / "notes.md").write_text("# Notes\n")
    async with serve(root, "server", "--no-quality-gate") as server:
        await server.ok(
            "start_workflow",
            goal="g",
            job_name="launch_plan",
            workflow_name="plan",
            inputs={"product": "Widget"},
        )
        nested = await server.ok("finished_step", outputs={"plan.md": "plan.md"})
        assert nested["begin_step"]["step_id"] == "collect"
        assert [e["workflow"] for e in nested["stack"]] == [
            "launch_plan/plan",
            "release_digest/draft",
        ]
        await server.ok("finished_step", outputs={"changes.json": "changes.json"})
        resumed = await server.ok("finished_step", outputs={"notes.md": "notes.md"})
        assert resumed["status"] == "next_step"
        assert resumed["begin_step"]["step_id"] == "checklist"
        assert [e["workflow"] for e in resumed["stack"]] == ["launch_plan/plan"]
        assert "release_notes" in resumed["summary"]
        assert "pull request" in resumed["summary"]


async def test_the_workflow_agent_is_listed_and_briefed(tmp_path: Path) -> None:
    root = _project(tmp_path, "0.10")
    async with serve(root, "server", "--no-quality-gate") as server:
        listing = await server.ok("get_workflows")
        audit = next(job for job in listing["jobs"] if job["name"] == "code_audit")
        agents = {w["name"]: w.get("agent") for w in audit["workflows"]}
        assert agents == {"full_audit": "general-purpose", "audit_module": None}
        started = await server.ok(
            "start_workflow",
            goal="g",
            job_name="code_audit",
            workflow_name="full_audit",
            inputs={"target_dir": "src"},
        )
        assert started["begin_step"]["agent"] == "general-purpose"


@pytest.mark.parametrize("fmt", ["0.10", "0.9"])
async def test_the_evidence_fields_of_a_newer_job_guard_scope_and_ask_for_approval(
    tmp_path: Path, fmt: str
) -> None:
    root = _project(tmp_path, fmt)
    git(root, "init", "-q", "-b", "main")
    git(root, "-c", "user.email=t@example.com", "-c", "user.name=T", "add", ".")
    git(root, "-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-qm", "jobs")
    async with serve(root, "server", "--no-quality-gate") as server:
        started = await server.ok(
            "start_workflow", goal="g", job_name="signed_change", workflow_name="change"
        )
        session_id = started["begin_step"]["session_id"]
        (root / "plan.md").write_text("# Plan\n")
        (root / "notes").mkdir()
        (root / "notes" / "idea.md").write_text("allowed by may_change\n")
        (root / "stray.txt").write_text("not declared\n")
        blocked = await server.ok("finished_step", outputs={"plan.md": "plan.md"})
        assert blocked["status"] == "needs_work"  # scope_guard: strict
        assert blocked["evidence"]["undeclared_changes"] == ["stray.txt"]

        (root / "stray.txt").unlink()
        waiting = await server.ok("finished_step", outputs={"plan.md": "plan.md"})
        assert waiting["status"] == "awaiting_approval"
        assert waiting["evidence"]["undeclared_changes"] == []
        assert waiting["evidence"]["approval"]["command"] == f"deepwork approve {session_id}"
        _approve(root, session_id)
        applied = await server.ok("finished_step", outputs={"plan.md": "plan.md"})
        assert applied["status"] == "next_step"
        assert applied["begin_step"]["step_id"] == "apply"

        (root / "applied.md").write_text("# Applied\n")
        done = await server.ok("finished_step", outputs={"applied.md": "applied.md"})
        assert done["status"] == "workflow_complete"
        [approval] = done["evidence"]["approvals"]
        assert (approval["approved"], approval["channel"]) == (True, "cli")
        assert [item["path"] for item in approval["shown"]] == ["plan.md"]
