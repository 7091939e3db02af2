"""Walk every workflow of every shipped and library job end to end through the MCP server.

Each step gets placeholder output files and the quality gate is off: this proves that every
workflow can be started, that every step's instructions load, that the declared outputs are
accepted, and that the workflow reaches `workflow_complete` in the order `job.yml` gives.
Library jobs run the way a user runs them: copied into the project's `.deepwork/jobs/`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from click.testing import CliRunner
from deepwork_core.engine.start_inputs import start_parameters
from deepwork_core.jobs.discovery import STANDARD_JOBS_DIR
from deepwork_core.jobs.model import JobDefinition, Workflow
from deepwork_core.jobs.parser import parse_job_dir
from deepwork_core.jobs.steps.parts import InputType

pytest.importorskip("deepwork_mcp.server", reason="the MCP server (branch server) is not merged")

from deepwork_mcp.cli.jobs.new import new
from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config

pytestmark = pytest.mark.slow  # every library workflow walked end to end

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
    """One placeholder per expected output: a file (a list of one for `files`), or text."""
    outputs: dict[str, str | list[str]] = {}
    for expected in step["step_expected_outputs"]:
        if expected["type"] == "string":
            outputs[expected["name"]] = f"placeholder for {expected['name']}"
            continue
        slug = re.sub(r"[^A-Za-z0-9_.-]", "_", expected["name"])
        relative = f"walkthrough/{step['step_id']}/{slug}.md"
        (project / relative).parent.mkdir(parents=True, exist_ok=True)
        (project / relative).write_text(f"placeholder for {expected['name']}\n")
        outputs[expected["name"]] = [relative] if expected["type"] == "files" else relative
    return outputs


def _start_inputs(project: Path, job: JobDefinition, workflow: Workflow) -> dict[str, Any]:
    """What a user gives `start_workflow` for the workflow's start parameters (0.10-format jobs)."""
    inputs: dict[str, Any] = {}
    for name, parameter in start_parameters(job, workflow).items():
        if parameter.type is InputType.FILE_PATH:
            relative = f"walkthrough/start/{name}.md"
            (project / relative).parent.mkdir(parents=True, exist_ok=True)
            (project / relative).write_text(f"placeholder for {name}\n")
            inputs[name] = relative
        elif parameter.type is InputType.STRING:
            inputs[name] = f"walkthrough {name}"
    return inputs


class Checkpoint(NamedTuple):
    """One checkpoint the agent is handed, and how deep the workflow stack is then."""

    step_ids: tuple[str, ...]
    workflow: Workflow
    depth: int


def _checkpoints(job: JobDefinition, workflow: Workflow, depth: int = 1) -> list[Checkpoint]:
    """The checkpoints in the order the server hands them out; a `sub_workflow` step of the same
    job is replaced by the checkpoints of the workflow it runs nested."""
    found: list[Checkpoint] = []
    for entry in workflow.entries:
        ref = job.step(entry[0]).sub_workflow if len(entry) == 1 else None
        if ref is None:
            found.append(Checkpoint(entry, workflow, depth))
            continue
        assert ref.workflow_job is None, "library sub-workflows stay inside their job"
        found += _checkpoints(job, job.workflows_by_name[ref.workflow_name], depth + 1)
    return found


async def _walk_instances(
    client: Client, project: Path, step: dict[str, Any], declared: set[str]
) -> None:
    """Each instance of a fanned-out step does the step and completes on its own."""
    for instance in step["fan_out"]["instances"]:
        session_id = instance["session_id"]
        brief = await _call(client, "get_active_workflow", {"session_id": session_id})
        own = brief["begin_step"]
        assert {o["name"] for o in own["step_expected_outputs"]} == declared
        arguments = {"outputs": _placeholder_outputs(project, own), "session_id": session_id}
        done = await _call(client, "finished_step", arguments)
        assert done["status"] == "workflow_complete", done


def _common_info(job: JobDefinition, workflow: Workflow) -> str | None:
    own = workflow.common_job_info_provided_to_all_steps_at_runtime
    return own or job.common_job_info_provided_to_all_steps_at_runtime


class HumanAtTheClient:
    """An elicitation handler that approves every request and remembers what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, message: str, response_type: Any, params: Any, context: Any) -> Any:
        self.asked.append(message)
        return {"decision": "approve", "comment": "Approved in the walkthrough."}


def _approval_prompts(job: JobDefinition, checkpoints: list[Checkpoint]) -> list[str]:
    return [
        approval.prompt
        for checkpoint in checkpoints
        for step_id in checkpoint.step_ids
        if (approval := job.step(step_id).approval) is not None
    ]


async def _walk(client: Client, project: Path, job: JobDefinition, workflow_name: str) -> None:
    workflow = job.workflows_by_name[workflow_name]
    started = await _call(
        client,
        "start_workflow",
        {
            "goal": "walkthrough",
            "job_name": job.name,
            "workflow_name": workflow_name,
            "inputs": _start_inputs(project, job, workflow),
        },
    )
    step = started["begin_step"]
    checkpoints = _checkpoints(job, workflow)
    for position, checkpoint in enumerate(checkpoints, 1):
        assert step["step_id"] == checkpoint.step_ids[0]
        assert step["step_instructions"].strip()
        assert step["common_job_info"] == _common_info(job, checkpoint.workflow)
        declared = {name for step_id in checkpoint.step_ids for name in job.step(step_id).outputs}
        if step.get("fan_out"):
            # A `for_each` step: every instance does the step; the parent only fans in.
            await _walk_instances(client, project, step, declared)
            outputs: dict[str, str | list[str]] = {}
            session_id = step["fan_out"]["parent_session_id"]
        else:
            assert {o["name"] for o in step["step_expected_outputs"]} == declared
            outputs, session_id = _placeholder_outputs(project, step), step["session_id"]
        # A step shared by workflows gets files only from steps this workflow ran.
        from_steps = [i for i in step["step_inputs"] if i.get("from_step")]
        assert all(i["paths"] or i.get("value") for i in from_steps), step["step_inputs"]

        answer = await _call(
            client, "finished_step", {"outputs": outputs, "session_id": session_id}
        )
        if position == len(checkpoints):
            assert answer["status"] == "workflow_complete", answer
        else:
            assert answer["status"] == "next_step", answer
            step = answer["begin_step"]
            assert len(answer["stack"]) == checkpoints[position].depth, answer["stack"]
    assert answer["stack"] == []


@pytest.mark.parametrize(("job_dir", "workflow_name"), _cases())
async def test_every_workflow_walks_to_completion(
    project: Path, job_dir: Path, workflow_name: str
) -> None:
    """A human at an elicitation-capable client approves each approval step when it asks."""
    if job_dir.parent == LIBRARY_DIR:
        shutil.copytree(job_dir, project / ".deepwork" / "jobs" / job_dir.name)
    job = parse_job_dir(job_dir).require()
    human = HumanAtTheClient()

    async with Client(_server(project), mode="legacy", elicitation_handler=human) as client:
        await _walk(client, project, job, workflow_name)
    prompts = _approval_prompts(job, _checkpoints(job, job.workflows_by_name[workflow_name]))
    assert len(human.asked) == len(prompts)
    assert all(prompt in asked for prompt, asked in zip(prompts, human.asked, strict=True))


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


def _review_names(job: JobDefinition, step_id: str) -> list[str]:
    """What the self-review file must name: each criterion, or each requirement (0.10-format jobs,
    whose review criteria are written as `- **name**: question` lines of the instructions)."""
    step = job.step(step_id)
    names = [c for r in step.reviews for c in r.quality_criteria]
    for review in step.reviews:
        if not review.quality_criteria:
            names += re.findall(r"^- \*\*(.+?)\*\*:", review.additional_review_guidance or "", re.M)
    return names + list(step.process_requirements or {})


async def _self_reviewed(
    client: Client,
    project: Path,
    job: JobDefinition,
    step: dict[str, Any],
    arguments: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Submit the step, check its self-review file names every criterion, then pass it."""
    if arguments is None:
        arguments = {
            "outputs": _placeholder_outputs(project, step),
            "session_id": step["session_id"],
        }
    gate = await _call(client, "finished_step", arguments)
    assert gate["status"] == "needs_work", gate
    tmp = project / ".deepwork" / "tmp"
    text = (tmp / f"quality_review_{step['session_id']}_{step['step_id']}.md").read_text(
        encoding="utf-8"
    )
    names = _review_names(job, step["step_id"])
    assert names, step["step_id"]
    assert [name for name in names if name not in text] == [], step["step_id"]
    reason = {"quality_review_override_reason": "Scripted self-review passed."}
    answer: dict[str, Any] = await _call(client, "finished_step", {**arguments, **reason})
    return answer


def _approve_in_a_terminal(project: Path, session_id: str) -> None:
    """The human runs `deepwork approve` themselves, as a process of its own."""
    done = subprocess.run(
        # `--`: a session id may begin with "-", which click would read as an option.
        [
            sys.executable,
            "-m",
            "deepwork_mcp",
            "approve",
            "--yes",
            "--path",
            str(project),
            "--",
            session_id,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def _library_workflow_cases() -> list[Any]:
    return [
        pytest.param(job_dir, workflow.name, id=f"{job_dir.name}/{workflow.name}")
        for job_dir in LIBRARY_JOBS
        for workflow in parse_job_dir(job_dir).require().workflows
    ]


@pytest.mark.parametrize(("job_dir", "workflow_name"), _library_workflow_cases())
async def test_library_workflows_pass_the_self_review_gate(
    project: Path, job_dir: Path, workflow_name: str
) -> None:
    """With the gate on, every step hands its criteria to a self-review, then moves on."""
    shutil.copytree(job_dir, project / ".deepwork" / "jobs" / job_dir.name)
    job = parse_job_dir(job_dir).require()
    workflow = job.workflows_by_name[workflow_name]
    checkpoints = _checkpoints(job, workflow)

    server = create_server(project, config())
    async with Client(server) as client:
        start = {"goal": "walkthrough", "job_name": job.name, "workflow_name": workflow.name}
        start["inputs"] = _start_inputs(project, job, workflow)
        step = (await _call(client, "start_workflow", start))["begin_step"]
        for position, checkpoint in enumerate(checkpoints, 1):
            if step.get("fan_out"):
                # A `for_each` step: each instance passes its own self-review; then fan-in.
                for instance in step["fan_out"]["instances"]:
                    brief = await _call(
                        client, "get_active_workflow", {"session_id": instance["session_id"]}
                    )
                    done = await _self_reviewed(client, project, job, brief["begin_step"])
                    assert done["status"] == "workflow_complete", done
                parent = step["fan_out"]["parent_session_id"]
                arguments = {"outputs": {}, "session_id": parent}
                answer = await _call(client, "finished_step", arguments)
            else:
                arguments = {
                    "outputs": _placeholder_outputs(project, step),
                    "session_id": step["session_id"],
                }
                answer = await _self_reviewed(client, project, job, step, arguments)
            if job.step(checkpoint.step_ids[0]).approval is not None:
                assert answer["status"] == "awaiting_approval", answer
                _approve_in_a_terminal(project, step["session_id"])
                answer = await _call(client, "finished_step", arguments)
            expected = "workflow_complete" if position == len(checkpoints) else "next_step"
            assert answer["status"] == expected, answer
            if expected == "next_step":
                step = answer["begin_step"]
    approvals = answer["evidence"]["approvals"]
    assert len(approvals) == len(_approval_prompts(job, checkpoints))
    assert all((a["approved"], a["channel"]) == (True, "cli") for a in approvals), approvals
