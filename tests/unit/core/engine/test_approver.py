"""An approver handed to `finish` (the client's form, docs/evidence.md): the engine asks it once
the step needs a human, records the answer on its own channel and goes on in the same call."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from deepwork_core.engine.approver import HumanAnswer
from deepwork_core.engine.results import ApprovalPrompt, FinishStatus
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.approvals.models import ApprovalChannel
from deepwork_core.state.approvals.seal import ApprovalKeyError
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store

from tests.fixtures.evidence_project import key_of, make_evidence_project


class ScriptedApprover:
    """Answers each prompt with the next scripted answer (None: nobody could be asked)."""

    def __init__(self, *answers: HumanAnswer | None) -> None:
        self.answers = list(answers)
        self.prompts: list[ApprovalPrompt] = []

    def __call__(self, prompt: ApprovalPrompt) -> HumanAnswer | None:
        self.prompts.append(prompt)
        return self.answers.pop(0)


@pytest.fixture
def engine(tmp_path: Path, make_store: Callable[..., Store]) -> WorkflowEngine:
    root = make_evidence_project(tmp_path / "project")
    (root / "plan.md").write_text("plan\n")
    catalog, store = JobCatalog.for_project(root), SessionStore(make_store(root), root)
    engine = WorkflowEngine(root, catalog, store, approval_key=key_of(root))
    engine.start("g", "approved", "main")
    return engine


def test_an_approval_from_the_approver_advances_in_the_same_call(engine: WorkflowEngine) -> None:
    approver = ScriptedApprover(HumanAnswer(approved=True, comment="fine", client="ide 1.0"))
    result = engine.finish({"plan": "plan.md"}, approver=approver)
    assert result.status is FinishStatus.NEXT_STEP
    [prompt] = approver.prompts
    assert prompt.step_ids == ["plan"]
    [shown] = prompt.shown
    assert shown.path == "plan.md"
    done = engine.finish({"result": _write(engine, "result.md")})
    assert done.status is FinishStatus.WORKFLOW_COMPLETE
    assert done.evidence is not None
    assert done.evidence.approvals is not None
    [record] = done.evidence.approvals
    assert record.decision is not None
    assert (record.decision.channel, record.decision.actor) == (
        ApprovalChannel.ELICITATION,
        "ide 1.0",
    )


def test_a_rejection_from_the_approver_sends_the_step_back(engine: WorkflowEngine) -> None:
    approver = ScriptedApprover(HumanAnswer(approved=False, comment="Add a risk", client="ide"))
    result = engine.finish({"plan": "plan.md"}, approver=approver)
    assert result.status is FinishStatus.NEEDS_WORK
    assert "Add a risk" in (result.feedback or "")


def test_nobody_to_ask_leaves_the_step_awaiting_approval(engine: WorkflowEngine) -> None:
    approver = ScriptedApprover(None)
    result = engine.finish({"plan": "plan.md"}, approver=approver)
    assert result.status is FinishStatus.AWAITING_APPROVAL
    assert len(approver.prompts) == 1


def test_an_edit_while_the_human_looks_is_not_approved(engine: WorkflowEngine) -> None:
    plan = engine.project_root / "plan.md"

    def edit_then_approve(prompt: ApprovalPrompt) -> HumanAnswer:
        plan.write_text("plan, changed while the form was open\n")
        return HumanAnswer(approved=True, comment=None, client="ide")

    result = engine.finish({"plan": "plan.md"}, approver=edit_then_approve)
    assert result.status is FinishStatus.AWAITING_APPROVAL


def _write(engine: WorkflowEngine, name: str) -> str:
    (engine.project_root / name).write_text(f"{name}\n")
    return name


def test_an_answer_that_cannot_be_sealed_is_reported_not_dropped(engine: WorkflowEngine) -> None:
    key = key_of(engine.project_root)
    key.secret()
    key.path.chmod(0o644)
    unsafe = WorkflowEngine(
        engine.project_root,
        engine.catalog,
        engine.store,
        approval_key=key_of(engine.project_root),  # a fresh handle reads the file again
    )
    approver = ScriptedApprover(HumanAnswer(approved=True, comment=None, client="ide"))
    with pytest.raises(ApprovalKeyError) as caught:
        unsafe.finish({"plan": "plan.md"}, approver=approver)
    assert caught.value.code == "approval.key_unsafe"
    assert unsafe.stack()[0].step == "plan"  # nothing was recorded; the step still waits
    key.path.chmod(0o600)
    again = ScriptedApprover(HumanAnswer(approved=True, comment=None, client="ide"))
    assert engine.finish({"plan": "plan.md"}, approver=again).status is FinishStatus.NEXT_STEP
