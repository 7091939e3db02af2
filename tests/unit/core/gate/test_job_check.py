"""A job.yml submitted by a `deepwork_jobs` step is validated before any reviewer runs (issue 33).

The checkpoint answers `needs_work` with the lines `deepwork jobs validate` prints, runs no
review and counts no attempt; a valid job goes on to the gate as before.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from deepwork_core.engine.results import FinishStatus
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.gate.job_check import submitted_job_feedback
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.jobs.model import Step
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store
from deepwork_mcp.cli.group import cli

from tests.fixtures.reviewer import ScriptedGate, passes_every_step

VALID = """\
name: demo
version: "1.0.0"
summary: A demo job
common_job_info_provided_to_all_steps_at_runtime: Context.
workflows:
  - name: main
    summary: The one workflow
    steps: [write]
steps:
  - id: write
    name: Write
    description: Write the thing
    instructions_file: steps/write.md
    outputs:
      report: {type: file, description: The report, required: true}
    reviews: []
"""
#: An unknown key (line 8), and so a step no workflow reaches (a warning, line 11).
INVALID = VALID.replace(
    "    summary: The one workflow\n", "    summary: The one workflow\n    colour: red\n"
).replace("steps: [write]", "steps: [wirte]")
JOB_FILE = ".deepwork/jobs/demo/job.yml"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = (tmp_path / "project").resolve()
    (project / ".deepwork" / "jobs" / "demo").mkdir(parents=True)
    (project / ".deepwork" / "jobs" / "demo" / "DESIGN.md").write_text("# Design\n")
    return project


@pytest.fixture
def store(root: Path, make_store: Callable[..., Store]) -> Store:
    """The store of the project `root`."""
    return make_store(root)


def _engine(store: Store, root: Path, gate: ScriptedGate | None) -> WorkflowEngine:
    return WorkflowEngine(root, JobCatalog.for_project(root), SessionStore(store, root), gate=gate)


def _write(root: Path, text: str) -> None:
    (root / JOB_FILE).write_text(text, encoding="utf-8")


def _validate_lines(root: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.chdir(root)
    result = CliRunner().invoke(cli, ["jobs", "validate", ".deepwork/jobs/demo"])
    return [line for line in result.stdout.splitlines() if line.startswith(JOB_FILE)]


OUTPUTS = {"job_definition": JOB_FILE, "design_notes": ".deepwork/jobs/demo/DESIGN.md"}


def test_an_invalid_job_gets_the_validate_lines_and_no_review(
    root: Path, monkeypatch: pytest.MonkeyPatch, store: Store
) -> None:
    gate = ScriptedGate(otherwise=passes_every_step)
    engine = _engine(store, root, gate)
    started = engine.start("a demo job", "deepwork_jobs", "new_job", inputs={"job_purpose": "x"})
    _write(root, INVALID)

    answer = engine.finish(OUTPUTS)

    assert answer.status is FinishStatus.NEEDS_WORK
    assert answer.feedback is not None
    expected = _validate_lines(root, monkeypatch)
    # The unknown key, the unknown step `wirte` (checked although its workflow has a shape
    # error), the missing instruction file, and the step no workflow reaches (a warning).
    assert len(expected) == 4
    assert all(line in answer.feedback.splitlines() for line in expected)
    assert f"{JOB_FILE}:8: job.unknown_key" in answer.feedback
    assert gate.seen == []
    session = SessionStore(store, root).load(started.brief.session_id)
    assert all(r.quality_attempts == 0 for r in session.step_progress.values())

    _write(root, VALID)
    answer = engine.finish(OUTPUTS)
    assert answer.status is FinishStatus.NEXT_STEP
    assert len(gate.seen) == 1


def test_a_dry_run_shows_the_same_problems(root: Path, store: Store) -> None:
    engine = _engine(store, root, None)
    engine.start("a demo job", "deepwork_jobs", "new_job", inputs={"job_purpose": "x"})
    _write(root, INVALID)

    answer = engine.dry_run(OUTPUTS)

    assert answer.status is FinishStatus.DRY_RUN
    assert answer.feedback is not None
    assert f"{JOB_FILE}:8: job.unknown_key" in answer.feedback


def _steps(step_id: str) -> list[Step]:
    catalog = JobCatalog.for_project(Path("/nonexistent"))
    return [catalog.get("deepwork_jobs").definition.step(step_id)]


def test_define_is_not_held_to_instruction_files_but_iterate_is(root: Path) -> None:
    _write(root, VALID)  # names steps/write.md, which does not exist yet

    at_define = submitted_job_feedback(root, "deepwork_jobs", _steps("define"), OUTPUTS)
    at_iterate = submitted_job_feedback(
        root, "deepwork_jobs", _steps("iterate"), {"job_definition": JOB_FILE}
    )

    assert at_define is None
    assert at_iterate is not None
    assert f"{JOB_FILE}:13: job.file_missing" in at_iterate


def test_other_jobs_and_other_files_are_not_checked(root: Path) -> None:
    _write(root, INVALID)
    assert submitted_job_feedback(root, "demo", _steps("define"), OUTPUTS) is None
    notes_only = {"design_notes": ".deepwork/jobs/demo/DESIGN.md"}
    assert submitted_job_feedback(root, "deepwork_jobs", _steps("define"), notes_only) is None
