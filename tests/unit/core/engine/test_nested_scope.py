"""A nested workflow's steps are watched by the scope guard too (docs/evidence.md): the child's
first step shares the baseline of the parent step that started it, so an undeclared edit made
during the child is reported at the child's checkpoint."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from deepwork_core.engine.results import FinishStatus
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store

from tests.fixtures.git_repo import commit_all

JOB = """\
name: nested_strict
summary: "Plan, then a child workflow writes a part"
scope_guard: strict
step_arguments:
  - name: plan.md
    description: "The plan"
    type: file_path
  - name: part.md
    description: "One part"
    type: file_path
workflows:
  main:
    summary: "Plan, part"
    steps:
      - name: plan
        instructions: "Write plan.md."
        outputs:
          plan.md: {}
      - name: part
        sub_workflow:
          workflow_name: child
  child:
    summary: "Write one part"
    steps:
      - name: write_part
        instructions: "Write part.md."
        outputs:
          part.md: {}
"""


def _project(tmp_path: Path) -> Path:
    root = (tmp_path / "project").resolve()
    job_dir = root / ".deepwork" / "jobs" / "nested_strict"
    job_dir.mkdir(parents=True)
    (job_dir / "job.yml").write_text(JOB)
    (root / "src.txt").write_text("source\n")
    commit_all(root)
    return root


def test_an_undeclared_edit_in_a_nested_workflow_is_reported(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    root = _project(tmp_path)
    engine = WorkflowEngine(
        root, JobCatalog.for_project(root), SessionStore(make_store(root), root)
    )
    engine.start("g", "nested_strict", "main")
    (root / "plan.md").write_text("plan\n")
    assert engine.finish({"plan.md": "plan.md"}).status is FinishStatus.NEXT_STEP
    assert [item.step for item in engine.stack()] == ["part", "write_part"]

    (root / "src.txt").write_text("source, edited by the child without declaring it\n")
    (root / "part.md").write_text("part\n")
    blocked = engine.finish({"part.md": "part.md"})
    assert blocked.status is FinishStatus.NEEDS_WORK
    assert blocked.evidence is not None
    assert blocked.evidence.undeclared_changes == ["src.txt"]
