"""Review tasks of 0.10 jobs: instructions as criteria, strategies, text outputs, processes."""

from __future__ import annotations

from pathlib import Path

import pytest
from deepwork_core.evidence.verdicts import CriterionVerdict, ReviewVerdict
from deepwork_core.gate.checkpoint import Checkpoint
from deepwork_core.gate.process_review import PROCESS_REQUIREMENTS, RULE_PREFIX, task_scope
from deepwork_core.gate.quality import combined_feedback, plan_review_tasks, write_self_review_file
from deepwork_core.jobs.parser import load_job
from deepwork_core.state.store.port import Store

JOB_YML = """\
name: newer
summary: A 0.10-format job
step_arguments:
  - name: topic
    description: The topic
    type: string
  - name: pages
    description: Pages
    type: file_path
    review: {strategy: individual, instructions: "Each page MUST have a title."}
  - name: bundle
    description: A set of files
    type: file_path
    review: {strategy: matches_together, instructions: "The files MUST agree."}
  - name: verdict
    description: A one-line verdict
    type: string
    review: {strategy: matches_together, instructions: "The verdict MUST be one line."}
workflows:
  main:
    summary: Main
    steps:
      - name: write
        instructions: Write.
        inputs: {topic: {}}
        outputs: {pages: {}, bundle: {}, verdict: {}}
        process_requirements:
          asked_user: "The user MUST be asked for the audience."
"""


@pytest.fixture
def checkpoint(tmp_path: Path, store: Store) -> Checkpoint:
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    (job_dir / "job.yml").write_text(JOB_YML, encoding="utf-8")
    for name in ("p1.md", "p2.md", "b1.md", "b2.md"):
        (tmp_path / name).write_text(f"# {name}\n", encoding="utf-8")
    return Checkpoint(
        project_root=tmp_path,
        store=store,
        session_id="session-1",
        job=load_job(job_dir),
        step_ids=("write",),
        outputs={
            "pages": ["p1.md", "p2.md"],
            "bundle": ["b1.md", "b2.md"],
            "verdict": "Ship it.",
        },
        input_files=[],
        work_summary="I asked the user; they said engineers.",
    )


def test_strategies_instructions_text_outputs_and_process(checkpoint: Checkpoint) -> None:
    tasks = plan_review_tasks(checkpoint)
    shapes = [(t.run_each, tuple(t.files), t.target_file) for t in tasks]
    assert shapes == [
        ("pages", ("p1.md",), "p1.md"),  # individual: a task per file
        ("pages", ("p2.md",), "p2.md"),
        ("bundle", ("b1.md", "b2.md"), None),  # matches_together: one task
        ("verdict", (), None),  # a string output is no file ...
        (PROCESS_REQUIREMENTS, ("p1.md", "p2.md", "b1.md", "b2.md"), None),
    ]
    assert tasks[0].criteria == {"Review instructions": "Each page MUST have a title."}
    assert tasks[3].guidance is not None
    assert "Ship it." in tasks[3].guidance  # ... its text is in the guidance
    assert tasks[4].criteria == {"asked_user": "The user MUST be asked for the audience."}
    assert tasks[4].guidance is not None
    assert "they said engineers" in tasks[4].guidance


def test_without_a_work_summary_the_reviewer_is_told_so(checkpoint: Checkpoint) -> None:
    bare = Checkpoint(
        project_root=checkpoint.project_root,
        store=checkpoint.store,
        session_id=checkpoint.session_id,
        job=checkpoint.job,
        step_ids=checkpoint.step_ids,
        outputs=checkpoint.outputs,
        input_files=[],
    )
    [process] = [t for t in plan_review_tasks(bare) if t.run_each == PROCESS_REQUIREMENTS]
    assert process.guidance is not None
    assert "No work summary was given" in process.guidance


def test_the_self_review_file_names_process_and_text_reviews(checkpoint: Checkpoint) -> None:
    path = write_self_review_file(checkpoint, plan_review_tasks(checkpoint))
    text = path.read_text(encoding="utf-8")
    assert "the process requirements" in text
    assert "Ship it." in text


def test_scopes_read_as_words() -> None:
    assert task_scope("step") == "all outputs"
    assert task_scope(PROCESS_REQUIREMENTS) == "the process requirements"
    assert task_scope(f"{RULE_PREFIX}docs/style") == "rule 'docs/style'"
    assert task_scope("report") == "output 'report'"
    failed = ReviewVerdict(
        step_id="write",
        review_run_each=f"{RULE_PREFIX}style",
        target_file=None,
        passed=False,
        feedback="bad",
        criteria_results=[CriterionVerdict(criterion="style", passed=False, feedback="x")],
    )
    assert "Review of write: rule 'style' failed: bad" in combined_feedback([failed])
