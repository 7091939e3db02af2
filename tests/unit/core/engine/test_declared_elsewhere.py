"""Files another session declared are no undeclared change of the step that waited for it
(docs/evidence.md): a workflow started on top of a step (nested by hand, as `deepwork_jobs`'
`test` step runs the job it tests) and a finished sibling instance of a step fanned out in the
shared tree. Under `scope_guard: strict` an instance is never told to undo what may be a
running sibling's output."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from deepwork_core.engine.navigation import active_workflow
from deepwork_core.engine.results import FinishStatus
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store

from tests.fixtures.git_repo import commit_all
from tests.integration.test_fan_out_stdio import fan_job

OUTER = """\
name: outer
summary: "Try another job, then write what it showed"
scope_guard: strict
step_arguments:
  - {name: notes.md, description: "What the run showed", type: file_path}
workflows:
  main:
    summary: "Run the other job nested, then write the notes"
    steps:
      - name: try_it
        instructions: "Run inner/main on top of this step, then write notes.md."
        outputs: {notes.md: {}}
"""
INNER = """\
name: inner
summary: "Write a draft and a summary"
step_arguments:
  - {name: draft.md, description: "The draft", type: file_path}
  - {name: summary.md, description: "The summary", type: file_path}
workflows:
  main:
    summary: "Draft, then summary"
    steps:
      - name: draft
        instructions: "Write draft.md."
        outputs: {draft.md: {}}
      - name: summarise
        instructions: "Write summary.md."
        outputs: {summary.md: {}}
"""


def _engine(make_store: Callable[..., Store], root: Path) -> WorkflowEngine:
    return WorkflowEngine(
        root, JobCatalog.for_project(root, []), SessionStore(make_store(root), root)
    )


def _write_jobs(root: Path, **jobs: str) -> Path:
    for name, text in jobs.items():
        (root / ".deepwork" / "jobs" / name).mkdir(parents=True)
        (root / ".deepwork" / "jobs" / name / "job.yml").write_text(text)
    (root / "README.md").write_text("project\n")
    commit_all(root)
    return root.resolve()


def test_a_workflow_run_on_top_of_a_step_hands_it_the_files_it_declared(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    root = _write_jobs(tmp_path / "p", outer=OUTER, inner=INNER)
    engine = _engine(make_store, root)
    engine.start("g", "outer", "main")
    engine.start("try the inner job", "inner", "main")  # nested by hand, on top of try_it
    (root / "draft.md").write_text("draft\n")
    assert engine.finish({"draft.md": "draft.md"}).status is FinishStatus.NEXT_STEP
    (root / "summary.md").write_text("summary\n")
    done = engine.finish({"summary.md": "summary.md"})
    assert done.status is FinishStatus.WORKFLOW_COMPLETE
    assert [item.step for item in engine.stack()] == ["try_it"]

    (root / "notes.md").write_text("the run wrote draft.md and summary.md\n")
    (root / "README.md").write_text("project, edited without declaring it\n")
    answer = engine.finish({"notes.md": "notes.md"})
    assert answer.status is FinishStatus.NEEDS_WORK  # strict: README.md is still this step's
    assert answer.evidence is not None
    assert answer.evidence.undeclared_changes == ["README.md"]
    assert "Undo those changes" in (answer.feedback or "")


def test_an_aborted_nested_run_hands_over_what_its_accepted_steps_declared(
    tmp_path: Path,
    make_store: Callable[..., Store],
) -> None:
    root = _write_jobs(tmp_path / "p", outer=OUTER, inner=INNER)
    engine = _engine(make_store, root)
    engine.start("g", "outer", "main")
    engine.start("try the inner job", "inner", "main")
    (root / "draft.md").write_text("draft\n")
    engine.finish({"draft.md": "draft.md"})
    engine.abort("the summary step needs data we do not have")
    (root / "notes.md").write_text("the run stopped after the draft\n")
    assert engine.finish({"notes.md": "notes.md"}).status is FinishStatus.WORKFLOW_COMPLETE


def test_a_siblings_submitted_output_in_the_shared_tree_is_no_undeclared_change(
    tmp_path: Path,
    make_store: Callable[..., Store],
) -> None:
    root = fan_job(tmp_path / "p", strict=True)
    (root / "README.md").write_text("project\n")
    commit_all(root)
    root = root.resolve()
    engine = _engine(make_store, root)
    started = engine.start("g", "fan", "write", inputs={"topics": ["a", "b", "c"]})
    fan = started.brief.fan_out
    assert fan is not None
    first, second, third = (i.session_id for i in fan.instances)

    (root / "a.md").write_text("section a\n")
    assert engine.finish({"section.md": "a.md"}, session_id=first).status is (
        FinishStatus.WORKFLOW_COMPLETE
    )
    (root / "b.md").write_text("section b\n")
    # The third instance is still writing c.md: the second is not told to undo it.
    (root / "c.md").write_text("section c, half written\n")
    blocked = engine.finish({"section.md": "b.md"}, session_id=second)
    assert blocked.status is FinishStatus.NEEDS_WORK
    assert blocked.evidence is not None
    assert blocked.evidence.undeclared_changes == ["c.md"]  # not a.md: its sibling's
    feedback = blocked.feedback or ""
    assert "Undo those changes" not in feedback
    assert "leave them" in feedback

    # b.md was submitted, so it is no change of the third instance, which finishes at once.
    (root / "c.md").write_text("section c\n")
    assert engine.finish({"section.md": "c.md"}, session_id=third).status is (
        FinishStatus.WORKFLOW_COMPLETE
    )
    again = engine.finish({"section.md": "b.md"}, session_id=second)
    assert again.status is FinishStatus.WORKFLOW_COMPLETE, again.feedback
    brief = active_workflow(engine, started.brief.session_id).brief
    assert brief is not None
    assert brief.fan_out is not None
    assert brief.fan_out.counts["done"] == 3
