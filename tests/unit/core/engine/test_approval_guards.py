"""An approval never waves evidence through (docs/evidence.md): at the checkpoint a human approved,
stale outputs of earlier steps and undeclared changes under a strict scope guard still send the
agent back, exactly as without the approval."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from deepwork_core.engine.results import FinishStatus
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.approvals.decide import record_decision
from deepwork_core.state.approvals.models import ApprovalChannel
from deepwork_core.state.approvals.store import ApprovalStore
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store

from tests.fixtures.evidence_project import key_of
from tests.fixtures.reviewer import ScriptedGate, passes_every_step
from tests.fixtures.signed_jobs import make_signed_project


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_signed_project(tmp_path / "project")


def _engine(store: Store, root: Path, gate: ScriptedGate | None = None) -> WorkflowEngine:
    catalog, sessions = JobCatalog.for_project(root), SessionStore(store, root)
    return WorkflowEngine(root, catalog, sessions, gate=gate, approval_key=key_of(root))


def _approve(store: Store, root: Path, session_id: str) -> None:
    record_decision(
        ApprovalStore(store, root, key_of(root)),
        session_id,
        approved=True,
        comment=None,
        channel=ApprovalChannel.CLI,
        actor="alice@host",
        terminal=None,
        now=datetime.now(UTC),
    )


def test_an_approval_does_not_complete_over_stale_earlier_evidence(
    root: Path, make_store: Callable[..., Store]
) -> None:
    store = make_store(root)
    engine = _engine(store, root)
    engine.start("g", "signed", "main")
    session_id = engine.stack()[0].session_id
    (root / "prep.md").write_text("prep\n")
    assert engine.finish({"prep": "prep.md"}).status is FinishStatus.NEXT_STEP
    (root / "sig.md").write_text("signed\n")
    assert engine.finish({"sig": "sig.md"}).status is FinishStatus.AWAITING_APPROVAL
    (root / "prep.md").write_text("prep, changed after it was accepted\n")
    _approve(store, root, session_id)

    blocked = engine.finish({"sig": "sig.md"})
    assert blocked.status is FinishStatus.NEEDS_WORK
    assert blocked.evidence is not None
    assert [item.path for item in blocked.evidence.stale_evidence] == ["prep.md"]
    # Undoing the edit lets the approval given for the unchanged signature stand.
    (root / "prep.md").write_text("prep\n")
    assert engine.finish({"sig": "sig.md"}).status is FinishStatus.WORKFLOW_COMPLETE


def test_an_approval_does_not_let_undeclared_changes_through_a_strict_guard(
    root: Path, make_store: Callable[..., Store]
) -> None:
    store = make_store(root)
    engine = _engine(store, root)
    engine.start("g", "signed_strict", "main")
    session_id = engine.stack()[0].session_id
    (root / "sig.md").write_text("signed\n")
    assert engine.finish({"sig": "sig.md"}).status is FinishStatus.AWAITING_APPROVAL
    (root / "src.txt").write_text("source, edited without declaring it\n")
    _approve(store, root, session_id)

    blocked = engine.finish({"sig": "sig.md"})
    assert blocked.status is FinishStatus.NEEDS_WORK
    assert blocked.evidence is not None
    assert blocked.evidence.undeclared_changes == ["src.txt"]
    done = engine.finish({"sig": "sig.md"}, override_reason="the source edit is the sign-off")
    assert done.status is FinishStatus.WORKFLOW_COMPLETE


def test_a_stale_reviewed_step_is_reviewed_again_and_the_human_asked_anew(
    root: Path, make_store: Callable[..., Store]
) -> None:
    gate = ScriptedGate(otherwise=passes_every_step)
    store = make_store(root)
    engine = _engine(store, root, gate)
    engine.start("g", "signed_reviewed", "main")
    session_id = engine.stack()[0].session_id
    (root / "prep.md").write_text("prep\n")
    assert engine.finish({"prep": "prep.md"}).status is FinishStatus.NEXT_STEP
    (root / "sig.md").write_text("signed\n")
    first = engine.finish({"sig": "sig.md"})
    assert first.status is FinishStatus.AWAITING_APPROVAL
    (root / "prep.md").write_text("prep, changed after its review\n")
    _approve(store, root, session_id)

    told = engine.finish({"sig": "sig.md"})
    assert told.status is FinishStatus.NEEDS_WORK  # told once that prep will be reviewed again
    asked = engine.finish({"sig": "sig.md"})
    assert set(gate.seen[-1].step_ids) == {"prep", "sign"}
    assert asked.status is FinishStatus.AWAITING_APPROVAL
    assert asked.evidence is not None
    assert first.evidence is not None
    assert asked.evidence.approval is not None
    assert first.evidence.approval is not None
    assert asked.evidence.approval.request_id != first.evidence.approval.request_id
