"""Walk every workflow of every shipped and library job end to end through the MCP server.

Each step gets placeholder output files and the quality gate is off: this proves that every
workflow can be started, that every step's instructions load, that the declared outputs are
accepted, and that the workflow reaches `workflow_complete` in the order `job.yml` gives.
Library jobs run the way a user runs them: copied into the project's `.deepwork/jobs/`.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from deepwork_core.discovery import STANDARD_JOBS_DIR
from deepwork_core.models import JobDefinition
from deepwork_core.parser import parse_job_dir

pytest.importorskip("deepwork_mcp.server", reason="the MCP server (branch server) is not merged")

from deepwork_mcp.cli.jobs_new import new
from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config

REPO = Path(__file__).resolve().parents[2]
LIBRARY_DIR = REPO / "library" / "jobs"
STANDARD_JOBS = sorted(p.parent for p in STANDARD_JOBS_DIR.glob("*/job.yml"))
LIBRARY_JOBS = sorted(p.parent for p in LIBRARY_DIR.glob("*/job.yml"))


def _cases() -> list[Any]:
    cases = []
    for job_dir in STANDARD_JOBS + LIBRARY_JOBS:
        for workflow in parse_job_dir(job_dir).require().workflows:
            cases.append(pytest.param(job_dir, workflow.name, id=f"{job_dir.name}/{workflow.name}"))
    return cases


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".deepwork" / "jobs").mkdir(parents=True)
    return root


def _server(project: Path) -> Any:
    return create_server(project, config(enabled=False))


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def _placeholder_outputs(project: Path, step: dict[str, Any]) -> dict[str, str | list[str]]:
    """Write one placeholder file per expected output; `files` outputs get a list of one."""
    outputs: dict[str, str | list[str]] = {}
    for expected in step["step_expected_outputs"]:
        slug = re.sub(r"[^A-Za-z0-9_.-]", "_", expected["name"])
        relative = f"walkthrough/{step['step_id']}/{slug}.md"
        (project / relative).parent.mkdir(parents=True, exist_ok=True)
        (project / relative).write_text(f"placeholder for {expected['name']}\n")
        outputs[expected["name"]] = relative if expected["type"] == "file" else [relative]
    return outputs


async def _walk(client: Client, project: Path, job: JobDefinition, workflow_name: str) -> None:
    workflow = job.workflows_by_name[workflow_name]
    started = await _call(
        client,
        "start_workflow",
        {"goal": "walkthrough", "job_name": job.name, "workflow_name": workflow_name},
    )
    step = started["begin_step"]
    entries = workflow.entries
    for position, entry in enumerate(entries, 1):
        assert step["step_id"] == entry[0]
        assert step["step_instructions"].strip()
        assert step["common_job_info"] == job.common_job_info_provided_to_all_steps_at_runtime
        declared = {name for step_id in entry for name in job.step(step_id).outputs}
        assert {o["name"] for o in step["step_expected_outputs"]} == declared

        answer = await _call(
            client,
            "finished_step",
            {"outputs": _placeholder_outputs(project, step), "session_id": step["session_id"]},
        )
        if position == len(entries):
            assert answer["status"] == "workflow_complete", answer
        else:
            assert answer["status"] == "next_step", answer
            step = answer["begin_step"]
    assert answer["stack"] == []


@pytest.mark.parametrize(("job_dir", "workflow_name"), _cases())
async def test_every_workflow_walks_to_completion(
    project: Path, job_dir: Path, workflow_name: str
) -> None:
    if job_dir.parent == LIBRARY_DIR:
        shutil.copytree(job_dir, project / ".deepwork" / "jobs" / job_dir.name)
    job = parse_job_dir(job_dir).require()

    async with Client(_server(project)) as client:
        await _walk(client, project, job, workflow_name)


async def test_every_job_is_listed_without_errors(project: Path) -> None:
    for job_dir in LIBRARY_JOBS:
        shutil.copytree(job_dir, project / ".deepwork" / "jobs" / job_dir.name)
    async with Client(_server(project)) as client:
        listing = await _call(client, "get_workflows", {})
    assert listing["errors"] == []
    names = {job["name"] for job in listing["jobs"]}
    assert {p.name for p in STANDARD_JOBS + LIBRARY_JOBS} <= names


async def test_a_scaffolded_job_can_be_started_and_completed(project: Path) -> None:
    outcome = CliRunner().invoke(new, ["demo", "--path", str(project)])
    assert outcome.exit_code == 0, outcome.output
    job = parse_job_dir(project / ".deepwork" / "jobs" / "demo", expected_name="demo").require()

    async with Client(_server(project)) as client:
        await _walk(client, project, job, "demo")


@pytest.mark.parametrize("job_dir", LIBRARY_JOBS, ids=[p.name for p in LIBRARY_JOBS])
async def test_library_workflows_pass_the_self_review_gate(project: Path, job_dir: Path) -> None:
    """With the gate on, every step hands its criteria to a self-review, then moves on."""
    shutil.copytree(job_dir, project / ".deepwork" / "jobs" / job_dir.name)
    job = parse_job_dir(job_dir).require()
    (workflow,) = job.workflows

    server = create_server(project, config())
    async with Client(server) as client:
        step = (
            await _call(
                client,
                "start_workflow",
                {"goal": "walkthrough", "job_name": job.name, "workflow_name": workflow.name},
            )
        )["begin_step"]
        for position, entry in enumerate(workflow.entries, 1):
            outputs = _placeholder_outputs(project, step)
            arguments = {"outputs": outputs, "session_id": step["session_id"]}
            gate = await _call(client, "finished_step", arguments)
            assert gate["status"] == "needs_work", gate
            review = (
                project
                / ".deepwork"
                / "tmp"
                / (f"quality_review_{step['session_id']}_{entry[0]}.md")
            )
            text = review.read_text(encoding="utf-8")
            criteria = [c for r in job.step(entry[0]).reviews for c in r.quality_criteria]
            assert criteria, entry
            assert [name for name in criteria if name not in text] == [], entry

            answer = await _call(
                client,
                "finished_step",
                {**arguments, "quality_review_override_reason": "Scripted self-review passed."},
            )
            expected = "workflow_complete" if position == len(workflow.entries) else "next_step"
            assert answer["status"] == expected, answer
            if expected == "next_step":
                step = answer["begin_step"]
