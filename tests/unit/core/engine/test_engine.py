"""WorkflowEngine transitions over real job folders and a real SessionStore."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from deepwork_core.base.errors import DeepWorkError, QualityGateError
from deepwork_core.base.identifiers import parse_session_id
from deepwork_core.engine.branching import BranchOutcome
from deepwork_core.engine.results import FinishStatus
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.evidence.verdicts import ReviewVerdict
from deepwork_core.gate.checkpoint import (
    GateNeedsWork,
    GatePassed,
    GateSelfReviewRequested,
)
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.sessions import SessionStatus, SessionStore
from deepwork_core.state.store.port import Store

from tests.fixtures.paths import FIXTURES
from tests.fixtures.reviewer import ScriptedGate
from tests.fixtures.state_rows import session_json
from tests.fixtures.workflow_project import make_project, write_files, write_job


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


@pytest.fixture
def store(root: Path, make_store: Callable[..., Store]) -> Store:
    """The store of the project `root`."""
    return make_store(root)


def make_engine(store: Store, root: Path, **kwargs: object) -> WorkflowEngine:
    sessions = SessionStore(store, root)
    return WorkflowEngine(root, JobCatalog.for_project(root), sessions, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def engine(store: Store, root: Path) -> WorkflowEngine:
    return make_engine(store, root)


def raises(code: str, call: object, *args: object, **kwargs: object) -> DeepWorkError:
    with pytest.raises(DeepWorkError) as caught:
        call(*args, **kwargs)  # type: ignore[operator]
    assert caught.value.code == code, caught.value.message
    return caught.value


def session_file(store: Store, session_id: str) -> dict[str, object]:
    data: dict[str, object] = session_json(store, session_id)
    return data


# --- start ---------------------------------------------------------------------------------------


def test_start_begins_the_first_step(root: Path, engine: WorkflowEngine, store: Store) -> None:
    result = engine.start("write it", "three_step", "main", "acme")
    brief = result.brief
    assert brief.step_id == "gather"
    assert brief.job_dir == root / ".deepwork/jobs/three_step"
    assert brief.instructions.startswith("# gather")
    assert brief.common_job_info == "Shared context for every step."
    assert [(o.name, o.syntax_for_finished_step_tool) for o in brief.expected_outputs] == [
        ("notes", "filepath")
    ]
    assert [(i.name, i.description, i.paths) for i in brief.inputs] == [
        ("topic", "What to write about", [])
    ]
    assert [(s.workflow, s.step) for s in result.stack] == [("three_step/main", "gather")]
    state = session_file(store, brief.session_id)
    assert state["status"] == "active"
    assert state["instance_id"] == "acme"
    assert state["goal"] == "write it"
    assert state["current_step_ids"] == ["gather"]
    assert "gather" in state["step_progress"]  # type: ignore[operator]


def test_single_workflow_is_selected_whatever_the_name(engine: WorkflowEngine) -> None:
    assert engine.start("g", "three_step", "no_such_name").brief.step_id == "gather"


def test_unknown_workflow_of_a_multi_workflow_job_lists_the_names(engine: WorkflowEngine) -> None:
    error = raises("workflow.not_found", engine.start, "g", "multi", "gamma")
    assert "alpha, beta" in error.message
    assert engine.start("g", "multi", "beta").brief.step_id == "two"


def test_a_job_without_workflows_cannot_be_started(engine: WorkflowEngine) -> None:
    raises("workflow.not_found", engine.start, "g", "no_workflows", "x")


def test_unknown_job_is_not_found(engine: WorkflowEngine) -> None:
    raises("job.not_found", engine.start, "g", "nope", "main")


@pytest.mark.parametrize("bad", ["../x", "/etc", "../../.deepwork/jobs/multi", "Multi"])
def test_job_names_are_checked_before_any_file_access(engine: WorkflowEngine, bad: str) -> None:
    raises("identifier.invalid", engine.start, "g", bad, "main")


def test_missing_instruction_file_is_a_clear_error_and_starts_nothing(
    root: Path, engine: WorkflowEngine
) -> None:
    (root / ".deepwork/jobs/three_step/steps/gather.md").unlink()
    raises("job.file_missing", engine.start, "g", "three_step", "main")
    assert engine.stack() == []


# --- finish --------------------------------------------------------------------------------------


def run_three_steps(root: Path, engine: WorkflowEngine) -> str:
    session_id = engine.start("g", "three_step", "main").brief.session_id
    write_files(root, "notes.md", "d/1.md", "d/2.md", "final.md")
    second = engine.finish({"notes": "notes.md"}, notes="gathered")
    assert second.status is FinishStatus.NEXT_STEP
    assert second.brief is not None
    assert second.brief.step_id == "draft"
    assert [(i.name, i.from_step, i.paths) for i in second.brief.inputs] == [
        ("notes", "gather", ["notes.md"])
    ]
    third = engine.finish({"drafts": ["d/1.md", "d/2.md"]})
    assert third.brief is not None
    assert third.brief.step_id == "publish"
    return session_id


def test_three_steps_end_to_end(root: Path, engine: WorkflowEngine, store: Store) -> None:
    session_id = run_three_steps(root, engine)
    done = engine.finish({"final": "final.md"})
    assert done.status is FinishStatus.WORKFLOW_COMPLETE
    assert done.summary == "Workflow 'three_step/main' completed successfully!"
    assert done.all_outputs == {
        "notes": "notes.md",
        "drafts": ["d/1.md", "d/2.md"],
        "final": "final.md",
    }
    assert done.stack == []
    state = session_file(store, session_id)
    assert state["status"] == "completed"
    assert state["completed_at"]
    progress = state["step_progress"]
    assert isinstance(progress, dict)
    assert progress["gather"]["notes"] == "gathered"
    assert all(record["completed_at"] for record in progress.values())


def test_a_new_engine_continues_where_the_old_one_stopped(
    root: Path, store: Store, make_store: Callable[..., Store]
) -> None:
    first = make_engine(store, root)
    session_id = first.start("g", "three_step", "main").brief.session_id
    write_files(root, "notes.md")
    first.finish({"notes": "notes.md"})
    second = make_engine(make_store(root), root)  # a new server process
    assert [s.step for s in second.stack()] == ["draft"]
    write_files(root, "d/1.md")
    result = second.finish({"drafts": ["d/1.md"]})
    assert result.brief is not None
    assert result.brief.step_id == "publish"
    assert result.brief.session_id == session_id


def test_finish_without_a_session_is_a_state_error(engine: WorkflowEngine) -> None:
    raises("session.none_active", engine.finish, {})
    raises("session.none_active", engine.abort, "why")


def test_invalid_outputs_leave_the_session_where_it_was(
    root: Path, engine: WorkflowEngine, store: Store
) -> None:
    session_id = engine.start("g", "three_step", "main").brief.session_id
    before = session_file(store, session_id)
    raises("outputs.file_not_found", engine.finish, {"notes": "absent.md"})
    raises("path.outside_project", engine.finish, {"notes": "../x"})
    assert session_file(store, session_id) == before


def test_concurrent_group_is_one_checkpoint(
    root: Path, engine: WorkflowEngine, store: Store
) -> None:
    engine.start("g", "concurrent", "par")
    write_files(root, "first.md", "left.md", "r1.md", "r2.md")
    group = engine.finish({"first_out": "first.md"})
    brief = group.brief
    assert brief is not None
    assert brief.step_ids == ("left", "right")
    assert brief.step_id == "left"
    assert {o.name for o in brief.expected_outputs} == {"left_out", "right_out"}
    assert "**CONCURRENT STEPS**" in brief.instructions
    assert "`right`" in brief.instructions
    assert str(root / ".deepwork/jobs/concurrent/steps/right.md") in brief.instructions

    error = raises("outputs.missing", engine.finish, {"left_out": "left.md"})
    assert "right_out" in error.message
    assert [s.step for s in engine.stack()] == ["left"]

    last = engine.finish({"left_out": "left.md", "right_out": ["r1.md", "r2.md"]})
    assert last.brief is not None
    assert last.brief.step_id == "last"
    progress = session_file(store, brief.session_id)["step_progress"]
    assert isinstance(progress, dict)
    assert progress["left"]["outputs"] == {"left_out": "left.md"}
    assert progress["right"]["outputs"] == {"right_out": ["r1.md", "r2.md"]}
    assert progress["left"]["completed_at"]
    assert progress["right"]["completed_at"]


def test_job_edited_mid_run_is_reported(root: Path, engine: WorkflowEngine) -> None:
    engine.start("g", "three_step", "main")
    job_yml = root / ".deepwork/jobs/three_step/job.yml"
    job_yml.write_text(job_yml.read_text().replace("[gather, draft, publish]", "[draft, publish]"))
    write_files(root, "notes.md")
    raises("session.job_changed", engine.finish, {"notes": "notes.md"})


# --- nesting, targeting, abort -------------------------------------------------------------------


def test_nested_workflows_push_and_pop(root: Path, engine: WorkflowEngine, store: Store) -> None:
    outer = engine.start("outer", "three_step", "main").brief.session_id
    inner = engine.start("inner", "multi", "alpha").brief.session_id
    state = session_file(store, inner)
    assert state["parent_session_id"] == outer
    assert [s.workflow for s in engine.stack()] == ["three_step/main", "multi/alpha"]
    write_files(root, "one.md")
    done = engine.finish({"one_out": "one.md"})
    assert done.status is FinishStatus.WORKFLOW_COMPLETE
    assert "Resume the parent workflow 'three_step/main' at step 'gather'" in (done.summary or "")
    assert [s.session_id for s in done.stack] == [outer]


def test_session_id_targets_a_session_below_the_top(root: Path, engine: WorkflowEngine) -> None:
    outer = engine.start("outer", "three_step", "main").brief.session_id
    engine.start("inner", "multi", "alpha")
    write_files(root, "notes.md")
    result = engine.finish({"notes": "notes.md"}, session_id=outer)
    assert result.brief is not None
    assert result.brief.step_id == "draft"
    assert [s.step for s in result.stack] == ["draft", "one"]


def test_abort_resumes_the_parent(root: Path, engine: WorkflowEngine, store: Store) -> None:
    engine.start("outer", "three_step", "main")
    inner = engine.start("inner", "multi", "beta").brief.session_id
    result = engine.abort("cannot do it")
    assert result.aborted_workflow == "multi/beta"
    assert result.aborted_step == "two"
    assert result.explanation == "cannot do it"
    assert result.resumed_workflow == "three_step/main"
    assert result.resumed_step == "gather"
    state = session_file(store, inner)
    assert state["status"] == "aborted"
    assert state["abort_reason"] == "cannot do it"


def test_abort_of_the_only_workflow_resumes_nothing(engine: WorkflowEngine) -> None:
    engine.start("g", "multi", "alpha")
    result = engine.abort("no")
    assert (result.stack, result.resumed_workflow, result.resumed_step) == ([], None, None)


def test_abort_mid_stack_by_session_id(engine: WorkflowEngine) -> None:
    bottom = engine.start("a", "three_step", "main").brief.session_id
    middle = engine.start("b", "multi", "alpha").brief.session_id
    top = engine.start("c", "multi", "beta").brief.session_id
    result = engine.abort("stale", session_id=middle)
    assert [s.session_id for s in result.stack] == [bottom, top]
    assert result.resumed_workflow == "multi/beta"


def test_finished_or_unknown_sessions_cannot_be_targeted(
    root: Path, engine: WorkflowEngine
) -> None:
    done = engine.start("g", "multi", "alpha").brief.session_id
    engine.abort("x")
    engine.start("g", "multi", "beta")
    raises("session.not_active", engine.finish, {}, session_id=done)
    raises("session.not_active", engine.abort, "x", session_id=done)
    raises("session.not_found", engine.finish, {}, session_id="abcdefgh")
    # The engine takes parsed `SessionId`s: a malformed id stops where it comes in.
    raises("identifier.invalid", lambda: engine.finish({}, session_id=parse_session_id("../../x")))
    raises("identifier.invalid", lambda: engine.abort("x", session_id=parse_session_id("../../x")))
    assert not (root.parent / "x").exists()


# --- branches -----------------------------------------------------------------------------------


def test_branch_is_made_for_top_level_workflows_only(root: Path, store: Store) -> None:
    calls: list[tuple[str, str]] = []

    def maker(job: str, label: str) -> BranchOutcome:
        calls.append((job, label))
        return BranchOutcome(branch_name=f"deepwork/{job}-{label}", previous_branch="main")

    engine = make_engine(store, root, branch_maker=maker)
    top = engine.start("g", "three_step", "main", "acme")
    nested = engine.start("g", "multi", "alpha")
    assert calls == [("three_step", "acme")]
    assert top.branch_name == "deepwork/three_step-acme"
    assert nested.branch_name == "deepwork/three_step-acme"  # stays on the parent's branch
    assert session_file(store, nested.brief.session_id)["branch_name"] == top.branch_name
    assert engine.abort("x").branch_note is None  # the nested one made no branch
    aborted = engine.abort("x")
    assert aborted.branch_note is not None
    assert "`deepwork/three_step-acme` still exists" in aborted.branch_note
    assert "`git switch main`" in aborted.branch_note
    engine.start("g", "multi", "beta")
    assert calls[-1] == ("multi", "beta")


def test_branch_note_is_passed_on(root: Path, store: Store) -> None:
    engine = make_engine(
        store, root, branch_maker=lambda job, label: BranchOutcome(branch_name=None, note="no git")
    )
    result = engine.start("g", "multi", "alpha")
    assert result.branch_name is None
    # Outside git the scope guard's note follows the branch note (docs/evidence.md).
    assert (result.branch_note or "").startswith("no git Scope guard off")


# --- quality gate (engine side; the real gates are tested through the server) ---------------------


FAIL = GateNeedsWork(
    feedback="too short",
    reviews=(
        ReviewVerdict(step_id="write", review_run_each="step", passed=False, feedback="too short"),
    ),
)
PASS = GatePassed(
    feedback="fine",
    reviews=(ReviewVerdict(step_id="write", review_run_each="step", passed=True, feedback="ok"),),
)


def start_reviewed(
    store: Store, root: Path, gate: ScriptedGate, **kwargs: object
) -> tuple[WorkflowEngine, str]:
    engine = make_engine(store, root, gate=gate, **kwargs)
    session_id = engine.start("g", "reviewed", "main").brief.session_id
    write_files(root, "report.md", "final.md")
    return engine, session_id


def test_steps_without_reviews_never_reach_the_gate(root: Path, store: Store) -> None:
    gate = ScriptedGate()
    engine = make_engine(store, root, gate=gate)
    engine.start("g", "multi", "alpha")
    write_files(root, "one.md")
    assert engine.finish({"one_out": "one.md"}).status is FinishStatus.WORKFLOW_COMPLETE
    assert gate.seen == []


def test_failed_reviews_count_attempts_up_to_the_limit(root: Path, store: Store) -> None:
    gate = ScriptedGate(answers=[FAIL, FAIL, FAIL, PASS])
    engine, session_id = start_reviewed(store, root, gate, max_quality_attempts=3)
    for attempt in (1, 2):
        result = engine.finish({"report": "report.md"})
        assert result.status is FinishStatus.NEEDS_WORK
        assert result.feedback == "too short"
        assert [r.review_run_each for r in result.failed_reviews] == ["step"]
        assert gate.seen[-1].attempt == attempt
    error = raises("quality_gate.max_attempts", engine.finish, {"report": "report.md"})
    assert "3 attempts" in error.message
    assert "too short" in error.message
    passed = engine.finish({"report": "report.md"})
    assert passed.status is FinishStatus.NEXT_STEP
    state = session_file(store, session_id)
    progress = state["step_progress"]
    assert isinstance(progress, dict)
    assert progress["write"]["quality_attempts"] == 4
    log = state["quality_log"]
    assert isinstance(log, list)
    assert [(e["kind"], e["attempt"], e["passed"]) for e in log] == [
        ("review", 1, False),
        ("review", 2, False),
        ("review", 3, False),
        ("review", 4, True),
    ]


def test_the_gate_sees_inputs_from_earlier_steps(root: Path, store: Store) -> None:
    gate = ScriptedGate(answers=[PASS, PASS])
    engine, _ = start_reviewed(store, root, gate)
    engine.finish({"report": "report.md"}, notes="first")
    engine.finish({"final": "final.md"})
    polish = gate.seen[1]
    assert polish.step_ids == ("polish",)
    assert polish.outputs == {"final": "final.md"}
    assert [(i.name, i.from_step, i.paths) for i in polish.input_files] == [
        ("report", "write", ["report.md"])
    ]


def test_override_skips_the_gate_and_is_recorded(root: Path, store: Store) -> None:
    gate = ScriptedGate()
    engine, session_id = start_reviewed(store, root, gate)
    result = engine.finish({"report": "report.md"}, override_reason="reviewed by a sub-agent")
    assert result.status is FinishStatus.NEXT_STEP
    assert gate.seen == []
    log = session_file(store, session_id)["quality_log"]
    assert isinstance(log, list)
    assert [(e["kind"], e["override_reason"]) for e in log] == [
        ("override", "reviewed by a sub-agent")
    ]


def test_empty_override_reason_is_rejected(root: Path, store: Store) -> None:
    engine, _ = start_reviewed(store, root, ScriptedGate())
    raises(
        "quality_gate.override_reason_empty", engine.finish, {"report": "r"}, override_reason=" "
    )


def test_self_review_is_needs_work_without_counting_attempts(root: Path, store: Store) -> None:
    verdict = GateSelfReviewRequested(feedback="review it", review_file=".deepwork/tmp/q.md")
    gate = ScriptedGate(external=False, answers=[verdict] * 5)
    engine, session_id = start_reviewed(store, root, gate, max_quality_attempts=1)
    for _ in range(3):
        result = engine.finish({"report": "report.md"})
        assert result.status is FinishStatus.NEEDS_WORK
        assert result.feedback == "review it"
    state = session_file(store, session_id)
    progress = state["step_progress"]
    assert isinstance(progress, dict)
    assert progress["write"]["quality_attempts"] == 0
    log = state["quality_log"]
    assert isinstance(log, list)
    assert {e["kind"] for e in log} == {"self_review"}
    assert log[0]["review_file"] == ".deepwork/tmp/q.md"


def test_reviewer_errors_count_as_attempts_and_are_recorded(root: Path, store: Store) -> None:
    gate = ScriptedGate(answers=[QualityGateError("boom", code="quality_gate.timeout")])
    engine, session_id = start_reviewed(store, root, gate)
    raises("quality_gate.timeout", engine.finish, {"report": "report.md"})
    state = session_file(store, session_id)
    log = state["quality_log"]
    assert isinstance(log, list)
    assert [(e["kind"], e["error_code"], e["attempt"]) for e in log] == [
        ("error", "quality_gate.timeout", 1)
    ]
    assert [s.step for s in engine.stack()] == ["write"]


def test_a_session_that_moved_on_during_review_is_not_advanced(root: Path, store: Store) -> None:
    gate = ScriptedGate(answers=[PASS])
    engine, _ = start_reviewed(store, root, gate)
    other = make_engine(store, root)
    gate.on_evaluate = lambda: other.abort("gave up meanwhile")
    raises("session.changed", engine.finish, {"report": "report.md"})
    assert engine.stack() == []


def test_completed_and_aborted_sessions_stay_on_disk(
    root: Path, engine: WorkflowEngine, make_store: Callable[..., Store]
) -> None:
    first = engine.start("g", "multi", "alpha").brief.session_id
    engine.abort("x")
    second = engine.start("g", "multi", "beta").brief.session_id
    write_files(root, "two.md")
    engine.finish({"two_out": "two.md"})
    store = SessionStore(make_store(root), root)
    assert store.load(first).status is SessionStatus.ABORTED
    assert store.load(second).status is SessionStatus.COMPLETED


def test_doc_spec_is_injected_into_the_instructions(root: Path, engine: WorkflowEngine) -> None:
    brief = engine.start("g", "speced", "main").brief
    assert "## Document specification: Monthly report" in brief.instructions
    assert "Has summary" in brief.instructions
    assert "Team leads" in brief.instructions


def test_broken_doc_spec_is_reported(root: Path, engine: WorkflowEngine) -> None:
    (root / ".deepwork/doc_specs/report.md").write_text("no frontmatter")
    with pytest.raises(DeepWorkError) as caught:
        engine.start("g", "speced", "main")
    assert caught.value.code.startswith("doc_spec.")


def test_jobs_from_additional_folders_can_be_started(
    tmp_path: Path, root: Path, make_store: Callable[..., Store]
) -> None:
    extra = tmp_path / "extra"
    write_job(extra.parent, "extra_job", _rename(root, "multi", "extra_job"))
    folder = extra.parent / ".deepwork" / "jobs"
    engine = WorkflowEngine(
        root, JobCatalog.for_project(root, [folder]), SessionStore(make_store(root), root)
    )
    assert engine.start("g", "extra_job", "alpha").brief.job_dir == folder / "extra_job"


def _rename(root: Path, job: str, new: str) -> str:
    text = (root / ".deepwork/jobs" / job / "job.yml").read_text()
    return text.replace(f"name: {job}", f"name: {new}", 1)


def test_a_nested_session_starts_at_the_engine_clock(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    root = tmp_path / "project"
    fixtures = FIXTURES / "jobs_v010"
    shutil.copytree(fixtures, root / ".deepwork" / "jobs")
    (root / "plan.md").write_text("# Plan\n")
    store = make_store(root)
    fixed = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    engine = make_engine(store, root, clock=lambda: fixed)
    engine.start("g", "launch_plan", "plan", inputs={"product": "p"})
    nested = engine.finish({"plan.md": "plan.md"})
    assert nested.brief is not None
    child = session_file(store, nested.brief.session_id)
    assert child["started_for_step"] == "release_notes"
    assert datetime.fromisoformat(str(child["started_at"])) == fixed


def _nesting_job(root: Path, name: str, other: str) -> None:
    job_dir = root / ".deepwork" / "jobs" / name
    job_dir.mkdir(parents=True)
    (job_dir / "job.yml").write_text(
        f"name: {name}\n"
        f'summary: "Runs a workflow of {other}"\n'
        "step_arguments: []\n"
        "workflows:\n"
        "  main:\n"
        '    summary: "Nests"\n'
        "    steps:\n"
        "      - name: nest\n"
        "        sub_workflow:\n"
        f"          workflow_job: {other}\n"
        "          workflow_name: main\n"
    )


def test_a_sub_workflow_loop_across_jobs_stops_at_the_depth_limit(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    root = tmp_path / "project"
    _nesting_job(root, "ping", "pong")
    _nesting_job(root, "pong", "ping")
    engine = make_engine(make_store(root), root)
    raises("workflow.sub_workflow_depth", engine.start, "g", "ping", "main")
    assert engine.stack() == []  # the failed start left nothing on the stack
