"""go_to_step (`go_back`), active_workflow, agent stacks and the events the engine writes."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from deepwork_core.base import layout
from deepwork_core.base.errors import DeepWorkError
from deepwork_core.base.identifiers import parse_session_id
from deepwork_core.engine.navigation import active_workflow, go_back
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.evidence.verdicts import CriterionVerdict, ReviewVerdict, VerdictKind
from deepwork_core.gate.checkpoint import (
    GateNeedsWork,
    GatePassed,
)
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.event_kinds import (
    AbortedEvent,
    GoToStepEvent,
    NeedsWorkEvent,
    OverrideEvent,
    ReviewVerdictEvent,
    StepBegunEvent,
)
from deepwork_core.state.events import read_events
from deepwork_core.state.sessions import QualityEvent, SessionStore, utc_now
from deepwork_core.state.store.port import Store

from tests.fixtures.reviewer import ScriptedGate
from tests.fixtures.workflow_project import make_project, write_files


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = make_project(tmp_path / "project")
    write_files(project, "notes.md", "d/1.md", "final.md", "first.md", "left.md", "r/1.md")
    return project


@pytest.fixture
def engine(root: Path, make_store: Callable[..., Store]) -> WorkflowEngine:
    return WorkflowEngine(root, JobCatalog.for_project(root), SessionStore(make_store(root), root))


def _code(call: object, *args: object, **kwargs: object) -> str:
    with pytest.raises(DeepWorkError) as caught:
        call(*args, **kwargs)  # type: ignore[operator]
    return caught.value.code


def test_going_back_clears_progress_from_the_target_on(engine: WorkflowEngine) -> None:
    session_id = engine.start("g", "three_step", "main").brief.session_id
    engine.finish({"notes": "notes.md"})
    engine.finish({"drafts": ["d/1.md"]})
    with engine.store.transaction() as tx:  # a verdict on the draft step, to be cleared
        session = tx.load(session_id)
        session.quality_log.append(
            QualityEvent(at=utc_now(), kind=VerdictKind.OVERRIDE, step_ids=["draft"])
        )
        tx.save(session)
    result = go_back(engine, "draft")
    assert result.brief.step_id == "draft"
    assert [i.paths for i in result.brief.inputs if i.from_step] == [["notes.md"]]
    session = engine.store.load(session_id)
    assert session.current_step_ids == ["draft"]
    assert session.step_progress["gather"].outputs == {"notes": "notes.md"}
    assert session.step_progress["draft"].completed_at is None
    assert "publish" not in session.step_progress
    assert session.quality_log == []
    events = read_events(engine.store.store, session_id)
    [jump] = [e for e in events if isinstance(e, GoToStepEvent)]
    assert jump.from_step_ids == ["publish"]
    assert jump.cleared_step_ids == ["draft", "publish"]
    assert isinstance(events[-1], StepBegunEvent)
    assert events[-1].step_ids == ["draft"]


def test_only_earlier_or_current_steps_are_targets(engine: WorkflowEngine) -> None:
    engine.start("g", "three_step", "main")
    engine.finish({"notes": "notes.md"})
    assert _code(go_back, engine, "publish") == "navigation.forward_jump"
    assert _code(go_back, engine, "nowhere") == "navigation.unknown_step"
    assert go_back(engine, "draft").brief.step_id == "draft"  # the current step restarts
    bad = "../x"  # the engine takes parsed `SessionId`s: a malformed id stops where it comes in
    assert _code(lambda: go_back(engine, "gather", parse_session_id(bad))) == "identifier.invalid"


def test_a_step_of_a_concurrent_group_restarts_the_whole_group(engine: WorkflowEngine) -> None:
    engine.start("g", "concurrent", "par")
    engine.finish({"first_out": "first.md"})
    engine.finish({"left_out": "left.md", "right_out": ["r/1.md"]})
    result = go_back(engine, "right")
    assert list(result.brief.step_ids) == ["left", "right"]


def test_active_workflow_repeats_the_brief(engine: WorkflowEngine) -> None:
    assert active_workflow(engine).brief is None
    outer = engine.start("outer", "three_step", "main").brief.session_id
    engine.start("inner", "multi", "alpha")
    found = active_workflow(engine)
    assert [e.job for e in found.stack] == ["three_step", "multi"]
    assert found.brief is not None
    assert found.brief.step_id == "one"
    below = active_workflow(engine, session_id=outer)
    assert below.brief is not None
    assert below.brief.step_id == "gather"


def test_agents_have_stacks_of_their_own(engine: WorkflowEngine, root: Path) -> None:
    engine.start("main", "three_step", "main")
    engine.start("a", "multi", "alpha", agent_id="agent-a")
    engine.start("b", "multi", "beta", agent_id="agent-b")
    assert [s.workflow for s in engine.stack()] == ["three_step/main"]
    assert [s.workflow for s in engine.stack("agent-a")] == ["multi/alpha"]
    data = json.loads((root / layout.STACK_PATH).read_text())
    assert set(data[layout.STACK_AGENTS_KEY]) == {"agent-a", "agent-b"}
    assert len(data[layout.STACK_MAIN_KEY]) == 1
    assert list(engine.store.all_stacks()) == [None, "agent-a", "agent-b"]
    assert _code(engine.start, "x", "multi", "alpha", agent_id="bad id") == "identifier.invalid"

    engine.abort("done", agent_id="agent-b")
    engine.abort("done", agent_id="agent-a")
    data = json.loads((root / layout.STACK_PATH).read_text())
    assert layout.STACK_AGENTS_KEY not in data
    engine.abort("done")
    assert not (root / layout.STACK_PATH).exists()


def test_an_agent_without_a_workflow_sees_none(engine: WorkflowEngine) -> None:
    engine.start("main", "three_step", "main")
    assert _code(engine.finish, {}, agent_id="other") == "session.none_active"
    assert active_workflow(engine, agent_id="other").stack == []


def test_every_transition_is_an_event(engine: WorkflowEngine) -> None:
    session_id = engine.start("g", "three_step", "main").brief.session_id
    engine.finish({"notes": "notes.md"}, notes="n")
    engine.finish({"drafts": ["d/1.md"]})
    engine.finish({"final": "final.md"})
    names = [e.event for e in read_events(engine.store.store, session_id)]
    assert names == [
        "started",
        "step_begun",
        "outputs_submitted",
        "step_finished",  # the accepted outputs' hashes (docs/evidence.md)
        "step_begun",
        "outputs_submitted",
        "step_finished",
        "step_begun",
        "outputs_submitted",
        "step_finished",
        "completed",
    ]
    other = engine.start("g", "multi", "alpha").brief.session_id
    engine.abort("stop")
    last = read_events(engine.store.store, other)[-1]
    assert isinstance(last, AbortedEvent)
    assert last.reason == "stop"


def test_events_carry_the_engine_clock(root: Path, make_store: Callable[..., Store]) -> None:
    fixed = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    engine = WorkflowEngine(
        root,
        JobCatalog.for_project(root),
        SessionStore(make_store(root), root),
        clock=lambda: fixed,
    )
    session_id = engine.start("g", "three_step", "main").brief.session_id
    engine.finish({"notes": "notes.md"}, notes="n")
    stamps = {e.as_written()["ts"] for e in read_events(make_store(root), session_id)}
    assert stamps == {fixed.isoformat()}  # the engine's and the safeguards' events alike


def test_pruning_a_session_deletes_its_event_log(engine: WorkflowEngine) -> None:
    session_id = engine.start("g", "multi", "alpha").brief.session_id
    engine.abort("stop")
    store = SessionStore(engine.store.store, engine.project_root, max_age=timedelta(0))
    assert session_id in store.prune(now=utc_now() + timedelta(seconds=5), force=True)
    assert read_events(engine.store.store, session_id) == []


def _fails_once_then_passes() -> ScriptedGate:
    """Fails the first review with one criterion, passes the second."""
    criterion = CriterionVerdict(criterion="Clear", passed=False, feedback="vague")
    failed = ReviewVerdict(
        step_id="write",
        review_run_each="step",
        passed=False,
        feedback="too vague",
        criteria_results=[criterion],
    )
    return ScriptedGate(
        answers=[
            GateNeedsWork(feedback="too vague", reviews=(failed,)),
            GatePassed(feedback="ok", reviews=(failed.model_copy(update={"passed": True}),)),
        ]
    )


def test_verdicts_needs_work_and_overrides_are_events(
    root: Path, make_store: Callable[..., Store]
) -> None:
    engine = WorkflowEngine(
        root,
        JobCatalog.for_project(root),
        SessionStore(make_store(root), root),
        gate=_fails_once_then_passes(),
    )
    write_files(root, "report.md", "final.md")
    session_id = engine.start("g", "reviewed", "main").brief.session_id
    assert engine.finish({"report": "report.md"}).status == "needs_work"
    assert engine.finish({"report": "report.md"}).status == "next_step"
    engine.finish({"final": "final.md"}, override_reason="reviewed by hand")
    events = read_events(make_store(root), session_id)
    verdicts = [e for e in events if isinstance(e, ReviewVerdictEvent)]
    assert [(v.passed, v.attempt) for v in verdicts] == [(False, 1), (True, 2)]
    assert verdicts[0].as_written()["criteria"] == [
        {"criterion": "Clear", "passed": False, "feedback": "vague"}
    ]
    [needs_work] = [e for e in events if isinstance(e, NeedsWorkEvent)]
    assert needs_work.failed_reviews == 1
    [override] = [e for e in events if isinstance(e, OverrideEvent)]
    assert override.reason == "reviewed by hand"
    assert events[-1].event == "completed"
