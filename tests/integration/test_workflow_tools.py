"""The workflow tools through an in-memory FastMCP client (JOBS-REQ-001, docs/runtime.md)."""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from deepwork_core.base.config import DeepWorkConfig, QualityGateConfig
from deepwork_core.engine.results import FinishStatus
from deepwork_core.gate.gates import ExternalGate, SelfReviewGate
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store
from deepwork_mcp.responses import FinishedStepResponse
from deepwork_mcp.reviewers.cli import CliReviewer
from deepwork_mcp.server import build_gate, create_server
from fastmcp import Client, FastMCP
from fastmcp.tools import FunctionTool

from tests.fixtures.configs import config
from tests.fixtures.state_rows import session_json, write_session_json
from tests.fixtures.tool_calls import call_error, call_ok
from tests.fixtures.workflow_project import make_project, write_files, write_job

LIFECYCLE = ("Discover", "Start", "Execute", "Checkpoint", "Iterate", "Continue", "Complete")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


@pytest.fixture
def server(root: Path) -> FastMCP:
    return create_server(root, config())


@pytest.fixture
async def client(server: FastMCP) -> AsyncIterator[Client[Any]]:
    async with Client(server) as connected:
        yield connected


def session_state(store: Store, session_id: str) -> dict[str, Any]:
    data: dict[str, Any] = session_json(store, session_id)
    return data


async def tool_function(server: FastMCP, name: str) -> FunctionTool:
    tool = await server.get_tool(name)
    assert isinstance(tool, FunctionTool)
    return tool


# --- JOBS-REQ-001.1: server creation ---------------------------------------------------------


@pytest.mark.req("JOBS-REQ-001.1.1")
@pytest.mark.req("JOBS-REQ-001.1.10")
def test_create_server_returns_a_fastmcp_named_deepwork(server: FastMCP) -> None:
    assert isinstance(server, FastMCP)
    assert server.name == "deepwork"


@pytest.mark.req("JOBS-REQ-001.1.2")
async def test_project_root_is_resolved_to_an_absolute_path(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(root.parent)
    server = create_server("project", config())
    async with Client(server) as client:
        started = await call_ok(
            client, "start_workflow", goal="g", job_name="multi", workflow_name="alpha"
        )
    assert started["begin_step"]["job_dir"] == str(root / ".deepwork/jobs/multi")
    assert Path(started["begin_step"]["job_dir"]).is_absolute()


@pytest.mark.req("JOBS-REQ-001.1.3")
@pytest.mark.req("JOBS-REQ-001.1.4")
@pytest.mark.req("JOBS-REQ-001.1.5")
@pytest.mark.req("JOBS-REQ-001.1.6")
def test_create_server_parameters_and_defaults() -> None:
    assert inspect.signature(create_server).parameters["config"].default is None
    defaults = DeepWorkConfig().quality_gate
    assert defaults.enabled is True
    assert defaults.timeout_seconds == 240
    assert defaults.max_attempts == 3
    assert defaults.external_runner is None


@pytest.mark.req("JOBS-REQ-001.1.6")
@pytest.mark.req("JOBS-REQ-001.1.7")
def test_external_runner_claude_uses_the_claude_cli_with_five_inline_files() -> None:
    gate = build_gate(QualityGateConfig(external_runner="claude", timeout_seconds=77))
    assert isinstance(gate, ExternalGate)
    assert gate.external
    assert isinstance(gate.calls.reviewer, CliReviewer)
    assert gate.calls.reviewer.executable == "claude"
    assert gate.calls.base_timeout == 77
    assert gate.calls.max_inline_files == 5


@pytest.mark.req("JOBS-REQ-001.1.6")
@pytest.mark.req("JOBS-REQ-001.1.8")
def test_no_external_runner_means_self_review_without_inlined_files() -> None:
    gate = build_gate(QualityGateConfig())
    assert isinstance(gate, SelfReviewGate)
    assert not gate.external


@pytest.mark.req("JOBS-REQ-001.1.9")
async def test_disabled_quality_gate_creates_no_gate(root: Path) -> None:
    assert build_gate(QualityGateConfig(enabled=False, external_runner="claude")) is None
    server = create_server(root, config(enabled=False))
    async with Client(server) as client:
        await call_ok(client, "start_workflow", goal="g", job_name="reviewed", workflow_name="main")
        write_files(root, "report.md")
        result = await call_ok(client, "finished_step", outputs={"report": "report.md"})
    assert result["status"] == "next_step"
    assert not list((root / ".deepwork/tmp").glob("quality_review_*"))


def test_unknown_external_runner_is_a_config_error(root: Path) -> None:
    settings = QualityGateConfig().model_copy(update={"external_runner": "gpt"})
    unchecked = config().model_copy(update={"quality_gate": settings})  # skips validation
    with pytest.raises(Exception, match="unknown external runner") as caught:
        create_server(root, unchecked)
    assert getattr(caught.value, "code", None) == "config.invalid"


@pytest.mark.req("JOBS-REQ-001.1.11")
def test_instructions_describe_the_lifecycle(server: FastMCP) -> None:
    instructions = server.instructions or ""
    for word in LIFECYCLE:
        assert word in instructions
    positions = [instructions.index(word) for word in LIFECYCLE]
    assert positions == sorted(positions)


@pytest.mark.req("JOBS-REQ-001.1.12")
async def test_every_tool_call_is_logged_with_name_and_stack(
    client: Client[Any], root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="deepwork.mcp")
    await call_ok(client, "get_workflows")
    await call_ok(client, "start_workflow", goal="g", job_name="three_step", workflow_name="main")
    await call_error(client, "finished_step", "outputs.missing", outputs={})
    lines = [r.getMessage() for r in caplog.records if r.name == "deepwork.mcp"]
    assert lines[0] == "tool=get_workflows ok | stack: empty"
    assert lines[1] == "tool=start_workflow ok | stack: three_step/main:gather"
    assert lines[2].startswith("tool=finished_step error: outputs.missing")
    assert lines[2].endswith("| stack: three_step/main:gather")


def test_version_is_the_package_version(server: FastMCP) -> None:
    from importlib.metadata import version

    assert server.version == version("deepwork-mcp")


# --- tools/list: names, annotations, size ---------------------------------------------------------


async def test_tools_are_annotated_and_have_output_schemas(client: Client[Any]) -> None:
    tools = {tool.name: tool for tool in await client.list_tools()}
    assert {"get_workflows", "start_workflow", "finished_step", "abort_workflow"} <= set(tools)
    for name in ("get_workflows", "start_workflow", "finished_step", "abort_workflow"):
        annotations = tools[name].annotations
        assert annotations is not None
        assert annotations.open_world_hint is False
        assert annotations.destructive_hint is not True
        assert tools[name].output_schema is not None
    get_workflows = tools["get_workflows"].annotations
    assert get_workflows is not None
    assert get_workflows.read_only_hint is True
    for name in ("start_workflow", "finished_step", "abort_workflow"):
        annotations = tools[name].annotations
        assert annotations is not None
        assert not annotations.read_only_hint


async def test_tool_list_and_instructions_stay_small(client: Client[Any], server: FastMCP) -> None:
    listing = await client.session.list_tools()
    size = len(listing.model_dump_json(by_alias=True, exclude_none=True))
    size += len((server.instructions or "").encode())
    assert size < 6960, size  # 7,000 bytes, less the JSON-RPC envelope (34 bytes)


# --- JOBS-REQ-001.2: get_workflows -------------------------------------------------------------


@pytest.mark.req("JOBS-REQ-001.2.1")
@pytest.mark.req("JOBS-REQ-001.3.1")
@pytest.mark.req("JOBS-REQ-001.4.1")
@pytest.mark.req("JOBS-REQ-001.6.1")
async def test_sync_and_async_registration(server: FastMCP) -> None:
    assert not inspect.iscoroutinefunction((await tool_function(server, "get_workflows")).fn)
    for name in ("start_workflow", "finished_step", "abort_workflow"):
        assert inspect.iscoroutinefunction((await tool_function(server, name)).fn)


@pytest.mark.req("JOBS-REQ-001.2.2")
async def test_get_workflows_takes_no_parameters(client: Client[Any]) -> None:
    tool = next(t for t in await client.list_tools() if t.name == "get_workflows")
    assert tool.input_schema.get("properties", {}) == {}
    assert not tool.input_schema.get("required")


@pytest.mark.req("JOBS-REQ-001.2.3")
@pytest.mark.req("JOBS-REQ-001.2.4")
@pytest.mark.req("JOBS-REQ-001.2.5")
async def test_get_workflows_lists_jobs_and_workflows(client: Client[Any]) -> None:
    result = await call_ok(client, "get_workflows")
    jobs = {job["name"]: job for job in result["jobs"]}
    assert {"three_step", "concurrent", "multi", "reviewed", "speced"} <= set(jobs)
    assert jobs["three_step"] == {
        "name": "three_step",
        "summary": "Gather, draft, publish",
        "description": "A three-step job used by the tests.",
        "workflows": [{"name": "main", "summary": "The whole thing"}],
    }
    assert [w["name"] for w in jobs["multi"]["workflows"]] == ["alpha", "beta"]
    assert jobs["multi"]["description"] is None


@pytest.mark.req("JOBS-REQ-001.2.6")
@pytest.mark.req("JOBS-REQ-001.2.7")
async def test_get_workflows_reports_jobs_that_failed_to_load(
    client: Client[Any], root: Path
) -> None:
    broken = root / ".deepwork/jobs/broken"
    broken.mkdir()
    (broken / "job.yml").write_text("name: broken\nversion: '1.0.0'\n")
    result = await call_ok(client, "get_workflows")
    assert "broken" not in {job["name"] for job in result["jobs"]}
    [error] = [e for e in result["errors"] if e["job_name"] == "broken"]
    assert error["job_dir"] == str(broken)
    assert "summary" in error["error"]


@pytest.mark.req("JOBS-REQ-001.2.8")
async def test_get_workflows_loads_every_configured_folder(root: Path, tmp_path: Path) -> None:
    extra_root = tmp_path / "elsewhere"
    text = (root / ".deepwork/jobs/multi/job.yml").read_text().replace("name: multi", "name: extra")
    write_job(extra_root, "extra", text)
    server = create_server(root, config(), additional_jobs_folders=[extra_root / ".deepwork/jobs"])
    async with Client(server) as client:
        result = await call_ok(client, "get_workflows")
        names = {job["name"] for job in result["jobs"]}
        assert {"extra", "three_step"} <= names
        started = await call_ok(
            client, "start_workflow", goal="g", job_name="extra", workflow_name="alpha"
        )
    assert started["begin_step"]["job_dir"] == str(extra_root / ".deepwork/jobs/extra")


async def test_get_workflows_sees_edits(client: Client[Any], root: Path) -> None:
    before = await call_ok(client, "get_workflows")
    job_yml = root / ".deepwork/jobs/multi/job.yml"
    job_yml.write_text(job_yml.read_text().replace("summary: Two workflows", "summary: Renamed"))
    after = await call_ok(client, "get_workflows")
    assert before != after
    assert {j["name"]: j["summary"] for j in after["jobs"]}["multi"] == "Renamed"


# --- JOBS-REQ-001.3: start_workflow ------------------------------------------------------------


async def test_no_listed_schema_uses_a_list_of_types(client: Client[Any]) -> None:
    for tool in await client.list_tools():
        for schema in (tool.input_schema, tool.output_schema or {}):
            assert '"type": [' not in json.dumps(schema), tool.name


@pytest.mark.req("JOBS-REQ-001.3.2")
@pytest.mark.req("JOBS-REQ-001.3.3")
async def test_start_workflow_parameters(client: Client[Any]) -> None:
    tool = next(t for t in await client.list_tools() if t.name == "start_workflow")
    schema = tool.input_schema
    assert sorted(schema["required"]) == ["goal", "job_name", "workflow_name"]
    assert schema["properties"]["instance_id"]["type"] == "string"  # optional: left out for none


@pytest.mark.req("JOBS-REQ-001.3.4")
@pytest.mark.parametrize(
    ("job_name", "code"),
    [("nope", "job.not_found"), ("../x", "identifier.invalid"), ("/etc", "identifier.invalid")],
)
async def test_unknown_or_malformed_job_is_a_tool_error(
    client: Client[Any], job_name: str, code: str
) -> None:
    await call_error(
        client, "start_workflow", code, goal="g", job_name=job_name, workflow_name="main"
    )


@pytest.mark.req("JOBS-REQ-001.3.5")
async def test_the_only_workflow_is_auto_selected(client: Client[Any]) -> None:
    result = await call_ok(
        client, "start_workflow", goal="g", job_name="three_step", workflow_name="whatever"
    )
    assert result["stack"][0]["workflow"] == "three_step/main"


@pytest.mark.req("JOBS-REQ-001.3.5")
@pytest.mark.req("JOBS-REQ-001.3.6")
async def test_unknown_workflow_lists_the_available_names(client: Client[Any]) -> None:
    text = await call_error(
        client,
        "start_workflow",
        "workflow.not_found",
        goal="g",
        job_name="multi",
        workflow_name="gamma",
    )
    assert "Available workflows: alpha, beta" in text


@pytest.mark.req("JOBS-REQ-001.3.7")
async def test_a_workflow_without_steps_cannot_be_started(client: Client[Any], root: Path) -> None:
    job_yml = root / ".deepwork/jobs/multi/job.yml"
    job_yml.write_text(job_yml.read_text().replace("steps: [two]", "steps: []"))
    await call_error(
        client, "start_workflow", "job.invalid", goal="g", job_name="multi", workflow_name="beta"
    )


@pytest.mark.req("JOBS-REQ-001.3.8")
@pytest.mark.req("JOBS-REQ-001.3.9")
@pytest.mark.req("JOBS-REQ-001.3.10")
@pytest.mark.req("JOBS-REQ-001.3.11")
@pytest.mark.req("JOBS-REQ-001.3.12")
async def test_start_workflow_response_and_session(
    client: Client[Any], root: Path, make_store: Callable[..., Store]
) -> None:
    result = await call_ok(
        client,
        "start_workflow",
        goal="write a report",
        job_name="three_step",
        workflow_name="main",
        instance_id="acme",
    )
    begin = result["begin_step"]
    assert set(begin) >= {
        "session_id",
        "step_id",
        "job_dir",
        "step_expected_outputs",
        "step_reviews",
        "step_instructions",
        "common_job_info",
        "step_inputs",
    }
    assert begin["step_id"] == "gather"
    assert begin["step_instructions"] == "# gather\n\nDo the gather step.\n"
    assert begin["common_job_info"] == "Shared context for every step."
    assert begin["step_reviews"] == []
    assert result["stack"] == [
        {"workflow": "three_step/main", "step": "gather", "session_id": begin["session_id"]}
    ]
    assert result["branch_name"] is None
    state = session_state(make_store(root), begin["session_id"])
    assert state["goal"] == "write a report"
    assert state["instance_id"] == "acme"
    assert state["step_progress"]["gather"]["started_at"]
    assert state["step_progress"]["gather"]["completed_at"] is None


@pytest.mark.req("JOBS-REQ-001.3.13")
@pytest.mark.req("JOBS-REQ-001.3.14")
async def test_expected_outputs_carry_type_and_syntax_hints(
    client: Client[Any], root: Path
) -> None:
    await call_ok(client, "start_workflow", goal="g", job_name="three_step", workflow_name="main")
    write_files(root, "notes.md", "d/1.md")
    draft = await call_ok(client, "finished_step", outputs={"notes": "notes.md"})
    assert draft["begin_step"]["step_expected_outputs"] == [
        {
            "name": "drafts",
            "type": "files",
            "description": "Draft files",
            "required": True,
            "syntax_for_finished_step_tool": "array of filepaths for all individual files",
        }
    ]
    publish = await call_ok(client, "finished_step", outputs={"drafts": ["d/1.md"]})
    assert publish["begin_step"]["step_expected_outputs"] == [
        {
            "name": "final",
            "type": "file",
            "description": "The final text",
            "required": True,
            "syntax_for_finished_step_tool": "filepath",
        },
        {
            "name": "extra",
            "type": "file",
            "description": "Optional extra",
            "required": False,
            "syntax_for_finished_step_tool": "filepath",
        },
    ]


async def test_step_reviews_are_listed(client: Client[Any]) -> None:
    result = await call_ok(
        client, "start_workflow", goal="g", job_name="reviewed", workflow_name="main"
    )
    assert result["begin_step"]["step_reviews"] == [
        {
            "run_each": "step",
            "quality_criteria": {"Complete": "Does the report cover the topic?"},
            "additional_review_guidance": None,
        }
    ]


# --- JOBS-REQ-001.4: finished_step -------------------------------------------------------------


@pytest.mark.req("JOBS-REQ-001.4.2")
@pytest.mark.req("JOBS-REQ-001.4.3")
async def test_finished_step_parameters(client: Client[Any]) -> None:
    tool = next(t for t in await client.list_tools() if t.name == "finished_step")
    schema = tool.input_schema
    assert schema["required"] == ["outputs"]
    assert schema["properties"]["outputs"]["type"] == "object"
    for optional in ("notes", "quality_review_override_reason", "session_id"):
        assert schema["properties"][optional]["type"] == "string"
    assert "ctx" not in schema["properties"]


@pytest.mark.req("JOBS-REQ-001.4.4")
async def test_finished_step_without_a_session_is_a_state_error(client: Client[Any]) -> None:
    await call_error(client, "finished_step", "session.none_active", outputs={})


@pytest.mark.req("JOBS-REQ-001.4.5")
async def test_session_id_targets_that_session(client: Client[Any], root: Path) -> None:
    outer = await call_ok(
        client, "start_workflow", goal="g", job_name="three_step", workflow_name="main"
    )
    await call_ok(client, "start_workflow", goal="g", job_name="multi", workflow_name="alpha")
    write_files(root, "notes.md")
    result = await call_ok(
        client,
        "finished_step",
        outputs={"notes": "notes.md"},
        session_id=outer["begin_step"]["session_id"],
    )
    assert result["begin_step"]["step_id"] == "draft"
    assert [entry["step"] for entry in result["stack"]] == ["draft", "one"]


@pytest.mark.req("JOBS-REQ-001.4.6")
@pytest.mark.req("JOBS-REQ-001.5.1")
@pytest.mark.req("JOBS-REQ-001.5.2")
@pytest.mark.req("JOBS-REQ-001.5.4")
@pytest.mark.req("JOBS-REQ-001.5.5")
@pytest.mark.req("JOBS-REQ-001.5.6")
@pytest.mark.req("JOBS-REQ-001.5.8")
@pytest.mark.parametrize(
    ("outputs", "code"),
    [
        ({"notes": "notes.md", "bogus": "x"}, "outputs.unknown"),
        ({}, "outputs.missing"),
        ({"notes": ["notes.md"]}, "outputs.wrong_type"),
        ({"notes": "absent.md"}, "outputs.file_not_found"),
    ],
)
async def test_invalid_outputs_are_tool_errors_with_codes(
    client: Client[Any], root: Path, outputs: dict[str, Any], code: str
) -> None:
    await call_ok(client, "start_workflow", goal="g", job_name="three_step", workflow_name="main")
    write_files(root, "notes.md")
    await call_error(client, "finished_step", code, outputs=outputs)


@pytest.mark.req("JOBS-REQ-001.5.6")
@pytest.mark.req("JOBS-REQ-001.5.7")
@pytest.mark.req("JOBS-REQ-001.5.8")
@pytest.mark.parametrize(
    ("drafts", "code"),
    [
        ("d/1.md", "outputs.wrong_type"),
        (["d/1.md", "d/absent.md"], "outputs.file_not_found"),
        ([], "outputs.empty_list"),
    ],
)
async def test_invalid_files_outputs_are_tool_errors(
    client: Client[Any], root: Path, drafts: Any, code: str
) -> None:
    await call_ok(client, "start_workflow", goal="g", job_name="three_step", workflow_name="main")
    write_files(root, "notes.md", "d/1.md")
    await call_ok(client, "finished_step", outputs={"notes": "notes.md"})
    await call_error(client, "finished_step", code, outputs={"drafts": drafts})


@pytest.mark.req("JOBS-REQ-001.5.7")
async def test_non_string_list_elements_are_rejected(client: Client[Any], root: Path) -> None:
    await call_ok(client, "start_workflow", goal="g", job_name="three_step", workflow_name="main")
    write_files(root, "notes.md", "d/1.md")
    await call_ok(client, "finished_step", outputs={"notes": "notes.md"})
    result = await client.call_tool(
        "finished_step", {"outputs": {"drafts": ["d/1.md", 5]}}, raise_on_error=False
    )
    assert result.is_error
    assert "drafts" in str(result.content)


@pytest.mark.req("JOBS-REQ-001.4.7")
@pytest.mark.req("JOBS-REQ-001.4.15")
@pytest.mark.req("JOBS-REQ-001.4.16")
@pytest.mark.req("JOBS-REQ-001.4.17")
@pytest.mark.req("JOBS-REQ-001.4.19")
async def test_three_step_workflow_to_completion(
    client: Client[Any], root: Path, make_store: Callable[..., Store]
) -> None:
    started = await call_ok(
        client, "start_workflow", goal="g", job_name="three_step", workflow_name="main"
    )
    session_id = started["begin_step"]["session_id"]
    write_files(root, "notes.md", "d/1.md", "d/2.md", "final.md", "extra.md")

    second = await call_ok(client, "finished_step", outputs={"notes": "notes.md"}, notes="n1")
    assert second["status"] == "next_step"
    assert second["begin_step"]["step_id"] == "draft"
    assert second["begin_step"]["session_id"] == session_id
    assert second["begin_step"]["step_inputs"] == [
        {
            "step_id": "draft",
            "name": "notes",
            "description": None,
            "from_step": "gather",
            "paths": ["notes.md"],
        }
    ]
    assert second["stack"] == [
        {"workflow": "three_step/main", "step": "draft", "session_id": session_id}
    ]
    state = session_state(make_store(root), session_id)
    assert state["step_progress"]["gather"]["outputs"] == {"notes": "notes.md"}
    assert state["step_progress"]["gather"]["notes"] == "n1"
    assert state["step_progress"]["gather"]["completed_at"]

    await call_ok(client, "finished_step", outputs={"drafts": ["d/1.md", "d/2.md"]})
    done = await call_ok(
        client, "finished_step", outputs={"final": "final.md", "extra": "extra.md"}
    )
    assert done["status"] == "workflow_complete"
    # The completion answer also tells the agent to commit the run's receipt (docs/verify.md).
    assert done["summary"].startswith("Workflow 'three_step/main' completed successfully! ")
    assert f".deepwork/receipts/three_step/{session_id}.json" in done["summary"]
    assert done["all_outputs"] == {
        "notes": "notes.md",
        "drafts": ["d/1.md", "d/2.md"],
        "final": "final.md",
        "extra": "extra.md",
    }
    assert done["stack"] == []
    assert done["begin_step"] is None
    assert session_state(make_store(root), session_id)["status"] == "completed"


@pytest.mark.req("JOBS-REQ-001.4.18")
async def test_concurrent_group_note_and_single_checkpoint(client: Client[Any], root: Path) -> None:
    await call_ok(client, "start_workflow", goal="g", job_name="concurrent", workflow_name="par")
    write_files(root, "first.md", "left.md", "r1.md")
    group = await call_ok(client, "finished_step", outputs={"first_out": "first.md"})
    begin = group["begin_step"]
    assert begin["step_id"] == "left"
    assert "**CONCURRENT STEPS**" in begin["step_instructions"]
    assert "own sub-agent" in begin["step_instructions"]
    assert "Task tool" not in begin["step_instructions"]  # platform-neutral wording
    assert "`right`" in begin["step_instructions"]
    assert [o["name"] for o in begin["step_expected_outputs"]] == ["left_out", "right_out"]
    await call_error(client, "finished_step", "outputs.missing", outputs={"left_out": "left.md"})
    last = await call_ok(
        client, "finished_step", outputs={"left_out": "left.md", "right_out": ["r1.md"]}
    )
    assert last["begin_step"]["step_id"] == "last"


# --- JOBS-REQ-001.6: abort_workflow ------------------------------------------------------------


@pytest.mark.req("JOBS-REQ-001.6.2")
@pytest.mark.req("JOBS-REQ-001.6.3")
async def test_abort_workflow_parameters(client: Client[Any]) -> None:
    tool = next(t for t in await client.list_tools() if t.name == "abort_workflow")
    assert tool.input_schema["required"] == ["explanation"]
    assert tool.input_schema["properties"]["session_id"]["type"] == "string"


@pytest.mark.req("JOBS-REQ-001.6.4")
async def test_abort_without_a_session_is_a_state_error(client: Client[Any]) -> None:
    await call_error(client, "abort_workflow", "session.none_active", explanation="x")


@pytest.mark.req("JOBS-REQ-001.6.5")
@pytest.mark.req("JOBS-REQ-001.6.6")
@pytest.mark.req("JOBS-REQ-001.6.7")
@pytest.mark.req("JOBS-REQ-001.6.8")
async def test_abort_marks_pops_and_resumes_the_parent(
    client: Client[Any], root: Path, make_store: Callable[..., Store]
) -> None:
    outer = await call_ok(
        client, "start_workflow", goal="g", job_name="three_step", workflow_name="main"
    )
    inner = await call_ok(
        client, "start_workflow", goal="g", job_name="multi", workflow_name="beta"
    )
    result = await call_ok(client, "abort_workflow", explanation="blocked")
    assert result == {
        "aborted_workflow": "multi/beta",
        "aborted_step": "two",
        "explanation": "blocked",
        "stack": [
            {
                "workflow": "three_step/main",
                "step": "gather",
                "session_id": outer["begin_step"]["session_id"],
            }
        ],
        "resumed_workflow": "three_step/main",
        "resumed_step": "gather",
        "branch_note": None,
    }
    state = session_state(make_store(root), inner["begin_step"]["session_id"])
    assert state["status"] == "aborted"
    assert state["abort_reason"] == "blocked"
    last = await call_ok(client, "abort_workflow", explanation="done")
    assert (last["stack"], last["resumed_workflow"], last["resumed_step"]) == ([], None, None)


# --- JOBS-REQ-001.7: serialisation -------------------------------------------------------------


@pytest.mark.req("JOBS-REQ-001.7.1")
async def test_responses_are_plain_dicts_matching_the_models(
    client: Client[Any], root: Path
) -> None:
    await call_ok(client, "start_workflow", goal="g", job_name="multi", workflow_name="alpha")
    write_files(root, "one.md")
    result = await client.call_tool("finished_step", {"outputs": {"one_out": "one.md"}})
    content = result.structured_content
    assert type(content) is dict
    assert FinishedStepResponse.model_validate(content).model_dump(mode="json") == content
    assert json.loads(result.content[0].text) == content  # type: ignore[union-attr]


@pytest.mark.req("JOBS-REQ-001.7.2")
def test_step_status_values() -> None:
    assert [status.value for status in FinishStatus] == [
        "needs_work",
        "next_step",
        "workflow_complete",
        "awaiting_approval",  # a step waits for a human (docs/evidence.md)
        "dry_run",  # finished_step(dry_run=true) (docs/quality-gate.md)
        "reviewing",  # background reviews still run (docs/quality-gate.md)
    ]


# --- robustness -----------------------------------------------------------------------------------


async def test_corrupt_state_is_a_tool_error_naming_the_file(
    client: Client[Any], root: Path, make_store: Callable[..., Store]
) -> None:
    started = await call_ok(
        client, "start_workflow", goal="g", job_name="multi", workflow_name="alpha"
    )
    session_id = started["begin_step"]["session_id"]
    write_session_json(make_store(root), session_id, "{oops")
    text = await call_error(client, "finished_step", "session.state_corrupt", outputs={})
    assert session_id in text
    assert " in store " in text


async def test_unexpected_errors_become_a_generic_tool_error(
    client: Client[Any], root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deepwork_core.engine.workflow import WorkflowEngine

    def explode(*args: object, **kwargs: object) -> None:
        raise RuntimeError("secret internals at /home/x")

    monkeypatch.setattr(WorkflowEngine, "start", explode)
    text = await call_error(
        client, "start_workflow", "internal.error", goal="g", job_name="multi", workflow_name="a"
    )
    assert "secret internals" not in text
    # The server is still alive.
    await call_ok(client, "get_workflows")


@pytest.mark.parametrize(
    ("tool", "arguments", "named"),
    [
        ("start_workflow", {"goal": 5}, "goal"),
        ("start_workflow", {"goal": "g", "job_name": None, "workflow_name": "w"}, "job_name"),
        ("start_workflow", {"goal": "g", "job_name": "j", "workflow_name": ["w"]}, "workflow_name"),
        (
            "start_workflow",
            {"goal": "g", "job_name": "j", "workflow_name": "w", "instance_id": 7},
            "instance_id",
        ),
        ("finished_step", {"outputs": "x"}, "outputs"),
        ("finished_step", {"outputs": {"a": {"b": 1}}}, "outputs.a"),
        ("finished_step", {"outputs": {}, "notes": 5}, "notes"),
        ("finished_step", {"outputs": {}, "session_id": 5}, "session_id"),
        ("finished_step", {"outputs": {}, "quality_review_override_reason": []}, "quality_review"),
        ("abort_workflow", {}, "explanation"),
        ("abort_workflow", {"explanation": "x", "session_id": {}}, "session_id"),
        ("get_workflows", {"x": 1}, "x"),
    ],
)
async def test_bad_arguments_are_tool_errors_with_a_code(
    client: Client[Any], tool: str, arguments: dict[str, Any], named: str
) -> None:
    text = await call_error(client, tool, "arguments.invalid", **arguments)
    assert f"{tool}: " in text
    assert named in text
    await call_ok(client, "get_workflows")


async def test_argument_errors_do_not_echo_the_values(client: Client[Any]) -> None:
    huge = ["z" * 100_000]
    text = await call_error(
        client, "start_workflow", "arguments.invalid", goal=huge, job_name="j", workflow_name="w"
    )
    assert len(text) < 500


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("start_workflow", {"goal": "\udcff", "job_name": "multi", "workflow_name": "alpha"}),
        (
            "start_workflow",
            {"goal": "g", "job_name": "multi", "workflow_name": "alpha", "instance_id": "\ud800"},
        ),
        ("finished_step", {"outputs": {}, "notes": "\udcff"}),
        ("finished_step", {"outputs": {}, "quality_review_override_reason": "\udcff"}),
        ("abort_workflow", {"explanation": "\udcff"}),
    ],
)
async def test_text_with_lone_surrogates_is_refused_before_anything_is_stored(
    client: Client[Any], root: Path, tool: str, arguments: dict[str, Any]
) -> None:
    if tool != "start_workflow":
        await call_ok(client, "start_workflow", goal="g", job_name="multi", workflow_name="alpha")
    await call_error(client, tool, "text.invalid", **arguments)
    await call_ok(client, "get_workflows")  # the server is fine


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("start_workflow", {"goal": "g" * 70_000, "job_name": "multi", "workflow_name": "alpha"}),
        ("finished_step", {"outputs": {}, "notes": "n" * 70_000}),
        ("abort_workflow", {"explanation": "e" * 70_000}),
    ],
)
async def test_overlong_text_is_refused_before_anything_is_stored(
    client: Client[Any],
    root: Path,
    tool: str,
    arguments: dict[str, Any],
    make_store: Callable[..., Store],
) -> None:
    if tool != "start_workflow":
        await call_ok(client, "start_workflow", goal="g", job_name="multi", workflow_name="alpha")
    await call_error(client, tool, "text.too_long", **arguments)
    sessions = SessionStore(make_store(root), root).session_ids()
    assert all(len(json.dumps(session_json(make_store(root), i))) < 60_000 for i in sessions)
