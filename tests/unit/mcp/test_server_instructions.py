"""The project part of the server's instructions: workflows named (capped), load errors."""

from __future__ import annotations

from pathlib import Path

from deepwork_core.jobs.discovery import Catalog, JobCatalog
from deepwork_mcp.server_instructions import (
    MAX_NAMED_WORKFLOWS,
    REPAIR_WORKFLOW,
    build_instructions,
    project_lines,
)

from tests.fixtures.workflow_project import MULTI, make_project, write_job


def test_the_project_workflows_are_named(tmp_path: Path) -> None:
    catalog = JobCatalog.for_project(make_project(tmp_path / "p")).scan()
    text = build_instructions("LIFECYCLE", catalog)
    first, second = text.splitlines()[:2]
    assert first == "LIFECYCLE"
    assert second.startswith("Workflows: ")
    assert "concurrent/par" in second
    assert "failed to load" not in text


def test_a_long_list_is_capped(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    for number in range(MAX_NAMED_WORKFLOWS):
        write_job(root, f"copy_{number}", MULTI.replace("name: multi", f"name: copy_{number}"))
    catalog = JobCatalog.for_project(root).scan()
    total = sum(len(job.workflows) for job in catalog.jobs)
    assert total > MAX_NAMED_WORKFLOWS
    [line] = project_lines(catalog)
    assert line.endswith(f" and {total - MAX_NAMED_WORKFLOWS} more.")
    assert line.count(", ") == MAX_NAMED_WORKFLOWS - 1


def test_broken_jobs_point_at_repair(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    broken = root / ".deepwork/jobs/broken"
    broken.mkdir()
    (broken / "job.yml").write_text("name: broken\n")
    lines = project_lines(JobCatalog.for_project(root).scan())
    assert "1 job(s) failed to load (broken)" in lines[-1]
    assert REPAIR_WORKFLOW in lines[-1]


def test_a_project_without_workflows_says_so() -> None:
    assert project_lines(Catalog((), (), 0)) == ["No workflows are defined here yet."]


def test_without_a_catalog_only_the_lifecycle_is_sent() -> None:
    assert build_instructions("LIFECYCLE", None) == "LIFECYCLE"
