"""`go_to_step` onto a step that runs a `sub_workflow` starts that workflow again, nested, as
reaching the step the first time did (docs/navigation.md)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from deepwork_core.engine.navigation import go_back
from deepwork_core.engine.results import FinishStatus
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store

JOB = """\
name: nested_loop
summary: "Plan, run a child workflow, wrap up"
step_arguments:
  - name: plan.md
    description: "The plan"
    type: file_path
  - name: part.md
    description: "One part"
    type: file_path
  - name: wrap.md
    description: "The wrap-up"
    type: file_path
workflows:
  main:
    summary: "Plan, part, wrap"
    steps:
      - name: plan
        instructions: "Write plan.md."
        outputs:
          plan.md: {}
      - name: part
        sub_workflow:
          workflow_name: child
      - name: wrap
        instructions: "Write wrap.md."
        outputs:
          wrap.md: {}
  child:
    summary: "Write one part"
    steps:
      - name: write_part
        instructions: "Write part.md."
        outputs:
          part.md: {}
"""


def test_going_back_to_a_sub_workflow_step_starts_its_workflow_again(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    root = tmp_path.resolve()
    job_dir = root / ".deepwork" / "jobs" / "nested_loop"
    job_dir.mkdir(parents=True)
    (job_dir / "job.yml").write_text(JOB)
    engine = WorkflowEngine(
        root, JobCatalog.for_project(root), SessionStore(make_store(root), root)
    )
    engine.start("g", "nested_loop", "main")
    for name in ("plan.md", "part.md", "wrap.md"):
        (root / name).write_text(f"{name}\n")
    engine.finish({"plan.md": "plan.md"})
    assert [item.workflow for item in engine.stack()] == ["nested_loop/main", "nested_loop/child"]
    back_in_parent = engine.finish({"part.md": "part.md"})
    assert back_in_parent.status is FinishStatus.NEXT_STEP
    assert [item.step for item in engine.stack()] == ["wrap"]

    again = go_back(engine, "part")
    stack = engine.stack()
    assert [(item.workflow, item.step) for item in stack] == [
        ("nested_loop/main", "part"),
        ("nested_loop/child", "write_part"),
    ]
    assert again.brief.session_id == stack[-1].session_id
    assert again.brief.step_ids == ("write_part",)
    assert engine.finish({"part.md": "part.md"}).status is FinishStatus.NEXT_STEP
    assert [item.step for item in engine.stack()] == ["wrap"]
