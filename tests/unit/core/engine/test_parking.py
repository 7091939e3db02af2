"""A headless engine parks a run where an attended one would wait for a person, reads no decision
while it is parked, and hands it over only through `resume`, which re-runs nothing and refuses a
changed completed output (docs/headless.md)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import QualityGateError, SessionError
from deepwork_core.base.identifiers import SessionId
from deepwork_core.engine.approver import HumanAnswer
from deepwork_core.engine.headless.parking import resume
from deepwork_core.engine.results import FinishStatus
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.evidence.verdicts import ReviewVerdict
from deepwork_core.gate.checkpoint import GateNeedsWork, GatePassed
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.events import read_events
from deepwork_core.state.read_model.runs import ListedStatus, listed_status
from deepwork_core.state.sessions import ParkReason, SessionStore
from deepwork_core.state.store.port import Store

from tests.fixtures.evidence_project import decide_outside, key_of
from tests.fixtures.reviewer import ScriptedGate
from tests.fixtures.signed_jobs import make_signed_project


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_signed_project(tmp_path / "project")


def _engine(
    store: Store, root: Path, *, headless: bool = True, gate: ScriptedGate | None = None
) -> WorkflowEngine:
    catalog, sessions = JobCatalog.for_project(root), SessionStore(store, root)
    return WorkflowEngine(
        root, catalog, sessions, gate=gate, approval_key=key_of(root), headless=headless
    )


def _to_the_gate(engine: WorkflowEngine, root: Path) -> SessionId:
    engine.start("g", "signed", "main")
    session_id = engine.stack()[0].session_id
    (root / "prep.md").write_text("prep\n")
    assert engine.finish({"prep": "prep.md"}).status is FinishStatus.NEXT_STEP
    (root / "sig.md").write_text("signed\n")
    return session_id


def test_a_human_gate_parks_the_run_and_reads_no_decision_until_it_is_resumed(
    root: Path, make_store: Callable[..., Store]
) -> None:
    store = make_store(root)
    engine = _engine(store, root)
    session_id = _to_the_gate(engine, root)

    parked = engine.finish({"sig": "sig.md"})
    assert parked.status is FinishStatus.AWAITING_APPROVAL
    assert "Stop now" in (parked.feedback or "")
    assert f"deepwork run --resume {session_id}" in (parked.feedback or "")
    session = engine.store.load(session_id)
    assert session.parked is not None
    assert session.parked.reason is ParkReason.AWAITING_APPROVAL
    assert session.parked.request_id == session.pending_approval.request_id  # type: ignore[union-attr]
    assert listed_status(session) is ListedStatus.PARKED

    # A decision made while it is parked is not read by the run (it may come from inside it).
    decide_outside(store, root, session_id)
    again = engine.finish({"sig": "sig.md"})
    assert again.status is FinishStatus.AWAITING_APPROVAL
    assert engine.store.load(session_id).parked is not None

    resumed = resume(engine.store, session_id, lambda: datetime.now(UTC))
    assert resumed.parked is None
    assert resumed.current_step_ids == ["sign"]  # prep is not run again
    kinds = [event.event for event in read_events(store, session_id)]
    assert kinds.count("parked") == 1
    assert kinds[-1] == "resumed"
    assert engine.finish({"sig": "sig.md"}).status is FinishStatus.WORKFLOW_COMPLETE


def test_an_attended_engine_never_parks(root: Path, make_store: Callable[..., Store]) -> None:
    store = make_store(root)
    engine = _engine(store, root, headless=False)
    session_id = _to_the_gate(engine, root)
    waiting = engine.finish({"sig": "sig.md"})
    assert waiting.status is FinishStatus.AWAITING_APPROVAL
    assert "Stop now" not in (waiting.feedback or "")
    assert engine.store.load(session_id).parked is None


def test_resume_refuses_a_changed_completed_output_and_leaves_the_run_parked(
    root: Path, make_store: Callable[..., Store]
) -> None:
    store = make_store(root)
    engine = _engine(store, root)
    session_id = _to_the_gate(engine, root)
    assert engine.finish({"sig": "sig.md"}).status is FinishStatus.AWAITING_APPROVAL
    (root / "prep.md").write_text("prep, edited on another machine\n")

    with pytest.raises(SessionError) as refused:
        resume(engine.store, session_id, lambda: datetime.now(UTC))
    assert refused.value.code == ErrorCode.RUN_OUTPUT_CHANGED
    assert "prep.md (step prep, changed)" in refused.value.message
    assert engine.store.load(session_id).parked is not None


def test_resume_refuses_a_finished_run(root: Path, make_store: Callable[..., Store]) -> None:
    store = make_store(root)
    engine = _engine(store, root)
    session_id = _to_the_gate(engine, root)
    engine.abort("no longer wanted")
    with pytest.raises(SessionError) as refused:
        resume(engine.store, session_id, lambda: datetime.now(UTC))
    assert refused.value.code == ErrorCode.RUN_NOT_RESUMABLE


def test_attempts_running_out_park_the_run_and_it_stays_parked(
    root: Path, make_store: Callable[..., Store]
) -> None:
    failed = ReviewVerdict(step_id="prep", review_run_each="prep", passed=False, feedback="vague")
    gate = ScriptedGate(answers=[GateNeedsWork(feedback="vague", reviews=(failed,))] * 3)
    store = make_store(root)
    engine = _engine(store, root, gate=gate)
    engine.start("g", "signed_reviewed", "main")
    session_id = engine.stack()[0].session_id
    (root / "prep.md").write_text("prep\n")
    for _ in range(2):
        assert engine.finish({"prep": "prep.md"}).status is FinishStatus.NEEDS_WORK
    with pytest.raises(QualityGateError) as exhausted:
        engine.finish({"prep": "prep.md"})
    assert exhausted.value.code == ErrorCode.QUALITY_GATE_MAX_ATTEMPTS
    assert "Stop now" in exhausted.value.message
    parked = engine.store.load(session_id).parked
    assert parked is not None
    assert parked.reason is ParkReason.ATTEMPTS_EXHAUSTED

    with pytest.raises(SessionError) as still:
        engine.finish({"prep": "prep.md"})
    assert still.value.code == ErrorCode.SESSION_PARKED
    assert len(gate.seen) == 3  # a parked run is not reviewed again


def test_a_headless_engine_offers_no_form(root: Path, make_store: Callable[..., Store]) -> None:
    asked: list[object] = []

    def approver(prompt: object) -> HumanAnswer:
        asked.append(prompt)
        return HumanAnswer(approved=True, comment=None, client="the agent itself")

    store = make_store(root)
    engine = _engine(store, root)
    session_id = _to_the_gate(engine, root)
    result = engine.finish({"sig": "sig.md"}, approver=approver)
    assert result.status is FinishStatus.AWAITING_APPROVAL
    assert asked == []
    assert engine.store.load(session_id).parked is not None


def test_a_spent_budget_parks_the_run(root: Path, make_store: Callable[..., Store]) -> None:
    spent = QualityGateError("budget spent", code=ErrorCode.QUALITY_GATE_BUDGET_EXHAUSTED)
    store = make_store(root)
    engine = _engine(store, root, gate=ScriptedGate(answers=[spent]))
    engine.start("g", "signed_reviewed", "main")
    session_id = engine.stack()[0].session_id
    (root / "prep.md").write_text("prep\n")
    with pytest.raises(QualityGateError) as exhausted:
        engine.finish({"prep": "prep.md"})
    assert exhausted.value.code == ErrorCode.QUALITY_GATE_BUDGET_EXHAUSTED
    assert "Stop now" in exhausted.value.message
    parked = engine.store.load(session_id).parked
    assert parked is not None
    assert parked.reason is ParkReason.BUDGET_EXHAUSTED


def test_a_missing_reviewer_parks_the_run_until_it_is_resumed(
    root: Path, make_store: Callable[..., Store]
) -> None:
    missing = QualityGateError("claude is not on PATH", code=ErrorCode.QUALITY_GATE_NOT_INSTALLED)
    gate = ScriptedGate(answers=[missing, GatePassed(feedback="clear")])
    store = make_store(root)
    engine = _engine(store, root, gate=gate)
    engine.start("g", "signed_reviewed", "main")
    session_id = engine.stack()[0].session_id
    (root / "prep.md").write_text("prep\n")
    with pytest.raises(QualityGateError) as stopped:
        engine.finish({"prep": "prep.md"})
    assert stopped.value.code == ErrorCode.QUALITY_GATE_NOT_INSTALLED
    assert "Stop now" in stopped.value.message
    parked = engine.store.load(session_id).parked
    assert parked is not None
    assert parked.reason is ParkReason.REVIEWER_MISSING
    with pytest.raises(SessionError) as still:
        engine.finish({"prep": "prep.md"})
    assert still.value.code == ErrorCode.SESSION_PARKED
    assert len(gate.seen) == 1  # a parked run is not reviewed again

    resume(engine.store, session_id, lambda: datetime.now(UTC))  # the reviewer is installed
    assert engine.finish({"prep": "prep.md"}).status is FinishStatus.NEXT_STEP


def test_an_attended_engine_does_not_park_for_a_missing_reviewer(
    root: Path, make_store: Callable[..., Store]
) -> None:
    missing = QualityGateError("claude is not on PATH", code=ErrorCode.QUALITY_GATE_NOT_INSTALLED)
    store = make_store(root)
    engine = _engine(store, root, headless=False, gate=ScriptedGate(answers=[missing]))
    engine.start("g", "signed_reviewed", "main")
    session_id = engine.stack()[0].session_id
    (root / "prep.md").write_text("prep\n")
    with pytest.raises(QualityGateError) as stopped:
        engine.finish({"prep": "prep.md"})
    assert "Stop now" not in stopped.value.message
    assert engine.store.load(session_id).parked is None
