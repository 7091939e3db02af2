"""A hostile `json_schema` against the real `deepwork serve` and `jobs validate` (issue 22).

A catastrophically backtracking pattern used to hold the server's event loop for minutes; a
remote `$ref` made it open a connection. Now the server keeps answering other calls while it
checks such an output, and a remote reference is refused when the job loads, with file and line.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from deepwork_mcp.cli import cli

from tests.fixtures.stdio_server import serve

pytestmark = pytest.mark.slow

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "jobs_v010" / "release_digest"
#: Far beyond any test's patience for a backtracking engine; the test itself waits this long.
GENEROUS_TIMEOUT = 120


def _project(tmp_path: Path, version_schema: dict[str, Any]) -> Path:
    """A project with `release_digest`, its `changes.json` holding `version` to the schema."""
    root = tmp_path / "project"
    job_dir = root / ".deepwork" / "jobs" / "release_digest"
    shutil.copytree(FIXTURE, job_dir, ignore=shutil.ignore_patterns("*.md"))
    data = yaml.safe_load((job_dir / "job.yml").read_text(encoding="utf-8"))
    data["step_arguments"][1]["json_schema"]["properties"]["version"] = version_schema
    (job_dir / "job.yml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return root


async def test_the_server_answers_other_calls_while_a_hostile_pattern_is_checked(
    tmp_path: Path,
) -> None:
    root = _project(tmp_path, {"type": "string", "pattern": "^(a+)+$"})
    entries = [{"kind": "fix", "text": "t"}]
    hostile = {"version": "a" * 40 + "!", "entries": entries}
    (root / "changes.json").write_text(json.dumps(hostile), encoding="utf-8")
    async with serve(root, "server", "--no-quality-gate") as server:
        await server.ok(
            "start_workflow",
            goal="g",
            job_name="release_digest",
            workflow_name="draft",
            inputs={"version": "2.3.0"},
        )

        async def submit() -> str:
            return await server.error(
                "finished_step", "outputs.schema_mismatch", outputs={"changes.json": "changes.json"}
            )

        checking = asyncio.create_task(submit())
        listing = await asyncio.wait_for(server.ok("get_workflows"), GENEROUS_TIMEOUT)
        assert "release_digest" in {job["name"] for job in listing["jobs"]}
        text = await asyncio.wait_for(checking, GENEROUS_TIMEOUT)
        assert "does not match '^(a+)+$'" in text


async def test_get_workflows_reports_a_remote_ref_with_file_and_line(tmp_path: Path) -> None:
    root = _project(tmp_path, {"$ref": "http://127.0.0.1:9/x.json"})
    job_file = root / ".deepwork" / "jobs" / "release_digest" / "job.yml"
    line = _line_of(job_file, "$ref")
    async with serve(root, "server", "--no-quality-gate") as server:
        listing = await server.ok("get_workflows")
        assert "release_digest" not in {job["name"] for job in listing["jobs"]}
        (error,) = [e for e in listing["errors"] if e["job_name"] == "release_digest"]
        assert (
            f"line {line}: step_arguments[1].json_schema.properties.version.$ref"
            in (error["error"])
        )
        assert "refers outside the schema" in error["error"]
        assert error["job_dir"] == str(job_file.parent)


def test_jobs_validate_reports_a_remote_ref_with_file_and_line(tmp_path: Path) -> None:
    root = _project(tmp_path, {"$ref": "http://127.0.0.1:9/x.json"})
    job_file = root / ".deepwork" / "jobs" / "release_digest" / "job.yml"
    result = CliRunner().invoke(
        cli,
        ["jobs", "validate", "--path", str(root)],
        env={"DEEPWORK_ADDITIONAL_JOBS_FOLDERS": ""},
    )
    assert result.exit_code == 1
    (reported,) = result.stdout.splitlines()
    assert reported.startswith(f"{job_file}:{_line_of(job_file, '$ref')}: ")
    assert "job.json_schema_external_ref" in reported


def _line_of(path: Path, key: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(number for number, text in enumerate(lines, 1) if key in text)
