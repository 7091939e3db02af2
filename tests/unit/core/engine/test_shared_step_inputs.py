"""A step shared by two workflows takes each file input from the step its workflow runs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from deepwork_core.engine.results import FinishStatus
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store

from tests.fixtures.workflow_project import write_files, write_job

SHARED = """
name: shared
version: "1.0.0"
summary: Two ways into one shared step
common_job_info_provided_to_all_steps_at_runtime: Shared context.
workflows:
  - name: from_scratch
    summary: Interview, then build
    steps: [interview, build]
  - name: from_session
    summary: Reconstruct, then build
    steps: [reconstruct, build]
steps:
  - id: interview
    name: Interview
    description: Ask the user
    instructions_file: steps/interview.md
    outputs:
      plan: {type: file, description: The plan, required: true}
    reviews: []
  - id: reconstruct
    name: Reconstruct
    description: Read the session
    instructions_file: steps/reconstruct.md
    outputs:
      plan: {type: file, description: The plan, required: true}
    reviews: []
  - id: build
    name: Build
    description: Build from the plan
    instructions_file: steps/build.md
    inputs:
      - file: plan
        from_step: interview
      - file: plan
        from_step: reconstruct
      - name: audience
        description: Who reads it
    dependencies: [interview, reconstruct]
    outputs:
      result: {type: file, description: The result, required: true}
    reviews: []
"""


@pytest.fixture
def engine(tmp_path: Path, make_store: Callable[..., Store]) -> WorkflowEngine:
    root = tmp_path / "project"
    write_job(root, "shared", SHARED)
    root = root.resolve()
    write_files(root, "plan.md")
    return WorkflowEngine(root, JobCatalog.for_project(root), SessionStore(make_store(root), root))


@pytest.mark.parametrize(
    ("workflow", "first_step"), [("from_scratch", "interview"), ("from_session", "reconstruct")]
)
def test_the_shared_step_reads_the_plan_of_the_step_that_ran(
    engine: WorkflowEngine, workflow: str, first_step: str
) -> None:
    engine.start("build it", "shared", workflow)
    answer = engine.finish({"plan": "plan.md"})
    assert answer.status is FinishStatus.NEXT_STEP
    assert answer.brief is not None
    assert answer.brief.step_id == "build"
    # The input from the step this workflow does not run is left out, not shown empty;
    # parameters are kept.
    assert [(i.name, i.from_step, i.paths) for i in answer.brief.inputs] == [
        ("plan", first_step, ["plan.md"]),
        ("audience", None, []),
    ]
