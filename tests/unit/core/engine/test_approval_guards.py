"""An approval never waves evidence through (docs/evidence.md): at the checkpoint a human approved,
stale outputs of earlier steps and undeclared changes under a strict scope guard still send the
agent back, exactly as without the approval."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest
from deepwork_core.engine.results import FinishStatus
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.gate.checkpoint import (
    Checkpoint,
    GatePassed,
    GateVerdict,
    ProgressReporter,
    has_own_reviews,
)
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.jobs.model import Step
from deepwork_core.state.approvals import ApprovalChannel, ApprovalStore, record_decision
from deepwork_core.state.sessions import SessionStore

from tests.fixtures.evidence_project import git, key_of
from tests.fixtures.workflow_project import write_job

_HEAD = """
version: "1.0.0"
summary: Sign off
common_job_info_provided_to_all_steps_at_runtime: Approval fixture.
"""
_SIGN = """
  - id: sign
    name: Sign
    description: Sign it off
    instructions_file: steps/sign.md
    outputs:
      sig: {type: file, description: The signature, required: true}
    reviews: []
    approval:
      prompt: Sign this off?
      show: [sig]
"""
SIGNED = (
    "name: signed\n"
    + _HEAD
    + """
workflows:
  - name: main
    summary: prep, sign
    steps: [prep, sign]
steps:
  - id: prep
    name: Prep
    description: Prepare
    instructions_file: steps/prep.md
    outputs:
      prep: {type: file, description: The preparation, required: true}
    reviews: []
"""
    + _SIGN
)
SIGNED_REVIEWED = SIGNED.replace("name: signed\n", "name: signed_reviewed\n", 1).replace(
    "    reviews: []\n",
    "    reviews:\n      - run_each: prep\n"
    "        quality_criteria:\n          Clear: Is it clear?\n",
    1,
)
SIGNED_STRICT = (
    "name: signed_strict\n"
    + _HEAD
    + """scope_guard: strict
workflows:
  - name: main
    summary: sign
    steps: [sign]
steps:
"""
    + _SIGN
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    write_job(root, "signed", SIGNED)
    write_job(root, "signed_strict", SIGNED_STRICT)
    write_job(root, "signed_reviewed", SIGNED_REVIEWED)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "Tester")
    git(root, "config", "commit.gpgsign", "false")
    (root / "src.txt").write_text("source\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "project")
    return root.resolve()


class PassingGate:
    external = True

    def __init__(self) -> None:
        self.seen: list[tuple[str, ...]] = []

    def consulted_for(self, steps: Sequence[Step]) -> bool:
        return has_own_reviews(steps)

    def evaluate(self, checkpoint: Checkpoint, progress: ProgressReporter | None) -> GateVerdict:
        self.seen.append(checkpoint.step_ids)
        return GatePassed(feedback="ok", reviews=())


def _engine(root: Path, gate: PassingGate | None = None) -> WorkflowEngine:
    catalog, store = JobCatalog.for_project(root), SessionStore(root)
    return WorkflowEngine(root, catalog, store, gate=gate, approval_key=key_of(root))


def _approve(root: Path, session_id: str) -> None:
    record_decision(
        ApprovalStore(root, key_of(root)),
        session_id,
        approved=True,
        comment=None,
        channel=ApprovalChannel.CLI,
        actor="alice@host",
        terminal=None,
        now=datetime.now(UTC),
    )


def test_an_approval_does_not_complete_over_stale_earlier_evidence(root: Path) -> None:
    engine = _engine(root)
    engine.start("g", "signed", "main")
    session_id = engine.stack()[0].session_id
    (root / "prep.md").write_text("prep\n")
    assert engine.finish({"prep": "prep.md"}).status is FinishStatus.NEXT_STEP
    (root / "sig.md").write_text("signed\n")
    assert engine.finish({"sig": "sig.md"}).status is FinishStatus.AWAITING_APPROVAL
    (root / "prep.md").write_text("prep, changed after it was accepted\n")
    _approve(root, session_id)

    blocked = engine.finish({"sig": "sig.md"})
    assert blocked.status is FinishStatus.NEEDS_WORK
    assert blocked.evidence is not None
    assert [item.path for item in blocked.evidence.stale_evidence] == ["prep.md"]
    # Undoing the edit lets the approval given for the unchanged signature stand.
    (root / "prep.md").write_text("prep\n")
    assert engine.finish({"sig": "sig.md"}).status is FinishStatus.WORKFLOW_COMPLETE


def test_an_approval_does_not_let_undeclared_changes_through_a_strict_guard(root: Path) -> None:
    engine = _engine(root)
    engine.start("g", "signed_strict", "main")
    session_id = engine.stack()[0].session_id
    (root / "sig.md").write_text("signed\n")
    assert engine.finish({"sig": "sig.md"}).status is FinishStatus.AWAITING_APPROVAL
    (root / "src.txt").write_text("source, edited without declaring it\n")
    _approve(root, session_id)

    blocked = engine.finish({"sig": "sig.md"})
    assert blocked.status is FinishStatus.NEEDS_WORK
    assert blocked.evidence is not None
    assert blocked.evidence.undeclared_changes == ["src.txt"]
    done = engine.finish({"sig": "sig.md"}, override_reason="the source edit is the sign-off")
    assert done.status is FinishStatus.WORKFLOW_COMPLETE


def test_a_stale_reviewed_step_is_reviewed_again_and_the_human_asked_anew(root: Path) -> None:
    gate = PassingGate()
    engine = _engine(root, gate)
    engine.start("g", "signed_reviewed", "main")
    session_id = engine.stack()[0].session_id
    (root / "prep.md").write_text("prep\n")
    assert engine.finish({"prep": "prep.md"}).status is FinishStatus.NEXT_STEP
    (root / "sig.md").write_text("signed\n")
    first = engine.finish({"sig": "sig.md"})
    assert first.status is FinishStatus.AWAITING_APPROVAL
    (root / "prep.md").write_text("prep, changed after its review\n")
    _approve(root, session_id)

    told = engine.finish({"sig": "sig.md"})
    assert told.status is FinishStatus.NEEDS_WORK  # told once that prep will be reviewed again
    asked = engine.finish({"sig": "sig.md"})
    assert set(gate.seen[-1]) == {"prep", "sign"}
    assert asked.status is FinishStatus.AWAITING_APPROVAL
    assert asked.evidence is not None
    assert first.evidence is not None
    assert asked.evidence.approval is not None
    assert first.evidence.approval is not None
    assert asked.evidence.approval.request_id != first.evidence.approval.request_id
