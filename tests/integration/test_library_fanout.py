"""The per-item patterns of `repo_health_check`, run through the MCP server as its steps say.

`inspect_areas` fans out: each area is one run of the `inspect_area` workflow, started by a
sub-agent on its own agent stack with the inputs `area` and `scope`. `check_one_area` runs the
same workflow nested through a `sub_workflow` step, which hands its findings back up.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("deepwork_mcp.server", reason="the MCP server (branch server) is not merged")

from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config

JOB_DIR = Path(__file__).resolve().parents[2] / "library" / "jobs" / "repo_health_check"
AREAS = ["ci", "tests"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(JOB_DIR, root / ".deepwork" / "jobs" / "repo_health_check")
    return root


async def _call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def _write(project: Path, relative: str) -> str:
    (project / relative).parent.mkdir(parents=True, exist_ok=True)
    (project / relative).write_text(f"# {relative}\n")
    return relative


def _inputs(step: dict[str, Any]) -> dict[str, Any]:
    return {item["name"]: item.get("value") or item.get("paths") for item in step["step_inputs"]}


async def _inspect_in_a_sub_agent(client: Client, project: Path, area: str, scope: str) -> str:
    """One sub-agent: its own agent id, its own run of `inspect_area`, one findings file."""
    agent = f"inspector-{area}"
    started = await _call(
        client,
        "start_workflow",
        goal=f"inspect {area}",
        job_name="repo_health_check",
        workflow_name="inspect_area",
        agent_id=agent,
        inputs={"area": area, "scope": scope},
    )
    step = started["begin_step"]
    assert step["step_id"] == "inspect_area"
    assert _inputs(step) == {"area": area, "scope": [scope]}
    findings = _write(project, f"docs/health/2026-03-02/{area}.md")
    done = await _call(
        client,
        "finished_step",
        outputs={"area_findings": findings},
        session_id=step["session_id"],
        agent_id=agent,
    )
    assert done["status"] == "workflow_complete", done
    assert done["stack"] == []
    return findings


async def test_each_area_runs_its_own_workflow_on_its_own_agent_stack(project: Path) -> None:
    async with Client(create_server(project, config(enabled=False))) as client:
        started = await _call(
            client,
            "start_workflow",
            goal="health check",
            job_name="repo_health_check",
            workflow_name="repo_health_check",
        )
        scope = _write(project, "docs/health/2026-03-02/scope.md")
        main = await _call(
            client,
            "finished_step",
            outputs={"scope": scope},
            session_id=started["begin_step"]["session_id"],
        )
        assert main["begin_step"]["step_id"] == "inspect_areas"

        findings = [await _inspect_in_a_sub_agent(client, project, a, scope) for a in AREAS]

        # The sub-agents' runs left the main agent where it was.
        active = await _call(client, "get_active_workflow")
        assert [entry["step"] for entry in active["stack"]] == ["inspect_areas"], active
        report_step = await _call(
            client,
            "finished_step",
            outputs={"area_findings": findings},
            session_id=main["begin_step"]["session_id"],
        )
        assert report_step["begin_step"]["step_id"] == "repo_health_check__write_report"
        assert _inputs(report_step["begin_step"])["area_findings"] == findings
        report = _write(project, "docs/health/2026-03-02/README.md")
        done = await _call(
            client,
            "finished_step",
            outputs={"health_report": report},
            session_id=report_step["begin_step"]["session_id"],
        )
        assert done["status"] == "workflow_complete", done


async def test_check_one_area_runs_inspect_area_nested_and_takes_its_findings(
    project: Path,
) -> None:
    async with Client(create_server(project, config(enabled=False))) as client:
        started = await _call(
            client,
            "start_workflow",
            goal="check ci",
            job_name="repo_health_check",
            workflow_name="check_one_area",
            inputs={"area": "ci"},
        )
        scope = _write(project, "docs/health/2026-03-02/scope.md")
        nested = await _call(
            client,
            "finished_step",
            outputs={"scope": scope},
            session_id=started["begin_step"]["session_id"],
        )
        step = nested["begin_step"]
        assert step["step_id"] == "inspect_area"
        assert len(nested["stack"]) == 2
        assert _inputs(step) == {"area": "ci", "scope": [scope]}

        findings = _write(project, "docs/health/2026-03-02/ci.md")
        back = await _call(
            client,
            "finished_step",
            outputs={"area_findings": findings},
            session_id=step["session_id"],
        )
        assert back["status"] == "next_step", back
        assert back["begin_step"]["step_id"] == "check_one_area__write_report"
        assert len(back["stack"]) == 1
        assert _inputs(back["begin_step"])["area_findings"] == [findings]
