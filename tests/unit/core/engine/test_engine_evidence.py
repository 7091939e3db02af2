"""The engine's evidence paths (docs/evidence.md): stale outputs, overrides, approvals decided
from the terminal, and edits after an approval."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from deepwork_core.engine.results import FinishStatus
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.evidence.verdicts import VerdictKind
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.approvals.decide import record_decision
from deepwork_core.state.approvals.models import ApprovalChannel
from deepwork_core.state.approvals.store import ApprovalStore
from deepwork_core.state.events import read_events
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.stats import collect_stats
from deepwork_core.state.store.port import Store

from tests.fixtures.evidence_project import key_of, make_evidence_project
from tests.fixtures.reviewer import ScriptedGate, passes_every_step


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_evidence_project(tmp_path / "project")


@pytest.fixture
def store(root: Path, make_store: Callable[..., Store]) -> Store:
    """The store of the project `root`."""
    return make_store(root)


def engine_for(store: Store, root: Path, gate: ScriptedGate | None = None) -> WorkflowEngine:
    catalog, sessions = JobCatalog.for_project(root), SessionStore(store, root)
    return WorkflowEngine(root, catalog, sessions, gate=gate, approval_key=key_of(root))


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def decide(
    store: Store, root: Path, session_id: str, *, approved: bool, comment: str | None = None
) -> None:
    record_decision(
        ApprovalStore(store, root, key_of(root)),
        session_id,
        approved=approved,
        comment=comment,
        channel=ApprovalChannel.CLI,
        actor="alice@host",
        terminal=None,
        now=datetime.now(UTC),
    )


def test_a_stale_unreviewed_output_needs_an_override(root: Path, store: Store) -> None:
    engine = engine_for(store, root)  # no gate: nothing can be reviewed again
    engine.start("g", "approved", "main")
    session_id = engine.stack()[0].session_id
    (root / "plan.md").write_text("plan\n")
    assert engine.finish({"plan": "plan.md"}).status is FinishStatus.AWAITING_APPROVAL
    decide(store, root, session_id, approved=True)
    assert engine.finish({"plan": "plan.md"}).status is FinishStatus.NEXT_STEP

    (root / "plan.md").write_text("plan, changed\n")
    (root / "result.md").write_text("result\n")
    blocked = engine.finish({"result": "result.md"})
    assert blocked.status is FinishStatus.NEEDS_WORK
    assert blocked.evidence is not None
    assert [s.path for s in blocked.evidence.stale_evidence] == ["plan.md"]
    again = engine.finish({"result": "result.md"})
    assert again.status is FinishStatus.NEEDS_WORK  # no review can run: only an override helps

    done = engine.finish({"result": "result.md"}, override_reason="the plan fix is cosmetic")
    assert done.status is FinishStatus.WORKFLOW_COMPLETE
    assert done.evidence is not None
    assert done.evidence.outputs is not None
    assert done.evidence.approvals is not None
    plan = next(e for e in done.evidence.outputs if e.path == "plan.md")
    assert (plan.sha256, plan.verdict) == (sha(root / "plan.md"), VerdictKind.OVERRIDE)
    assert plan.override_reason == "the plan fix is cosmetic"
    [approval] = done.evidence.approvals
    assert approval.decision is not None
    assert approval.decision.actor == "alice@host"


def test_the_stale_step_is_reviewed_again_with_the_last_one(root: Path, store: Store) -> None:
    gate = ScriptedGate(otherwise=passes_every_step)
    engine = engine_for(store, root, gate)
    engine.start("g", "evidenced", "main")
    (root / "plan.md").write_text("plan\n")
    engine.finish({"plan": "plan.md"})
    (root / "plan.md").write_text("plan v2\n")
    (root / "result.md").write_text("result\n")
    assert engine.finish({"result": "result.md"}).status is FinishStatus.NEEDS_WORK
    done = engine.finish({"result": "result.md"})
    assert done.status is FinishStatus.WORKFLOW_COMPLETE
    assert [c.step_ids for c in gate.seen] == [("plan",), ("build", "plan")]
    assert done.evidence is not None
    assert done.evidence.outputs is not None
    assert {(e.path, e.verdict) for e in done.evidence.outputs} == {
        ("plan.md", VerdictKind.REVIEWER),
        ("result.md", VerdictKind.REVIEWER),
    }


def test_a_changed_output_the_last_step_submits_again_is_reviewed_at_once(
    root: Path, store: Store
) -> None:
    """The agent declares the earlier file as its own output: no round trip to tell it of the
    change (issue 33: `iterate` re-submits `job.yml`), but the earlier reviews still run."""
    gate = ScriptedGate(otherwise=passes_every_step)
    engine = engine_for(store, root, gate)
    engine.start("g", "evidenced", "main")
    (root / "plan.md").write_text("plan\n")
    engine.finish({"plan": "plan.md"})
    (root / "plan.md").write_text("plan v2\n")

    done = engine.finish({"result": "plan.md"})

    assert done.status is FinishStatus.WORKFLOW_COMPLETE
    assert [c.step_ids for c in gate.seen] == [("plan",), ("build", "plan")]


def test_a_rejection_from_the_terminal_sends_the_step_back(root: Path, store: Store) -> None:
    engine = engine_for(store, root)
    engine.start("g", "approved", "main")
    session_id = engine.stack()[0].session_id
    (root / "plan.md").write_text("plan\n")
    engine.finish({"plan": "plan.md"})
    decide(store, root, session_id, approved=False, comment="Add a rollback section")
    back = engine.finish({"plan": "plan.md"})
    assert back.status is FinishStatus.NEEDS_WORK
    assert "Add a rollback section" in (back.feedback or "")
    # The next call asks again.
    assert engine.finish({"plan": "plan.md"}).status is FinishStatus.AWAITING_APPROVAL
    kinds = [e.event for e in read_events(store, session_id)]
    assert kinds.count("approval_requested") == 2
    assert "approval" in kinds


def test_an_edit_after_the_approval_voids_it(root: Path, store: Store) -> None:
    engine = engine_for(store, root)
    engine.start("g", "approved", "main")
    session_id = engine.stack()[0].session_id
    (root / "plan.md").write_text("plan\n")
    first = engine.finish({"plan": "plan.md"})
    decide(store, root, session_id, approved=True)
    (root / "plan.md").write_text("plan, swapped after the approval\n")
    asked_again = engine.finish({"plan": "plan.md"})
    assert asked_again.status is FinishStatus.AWAITING_APPROVAL
    assert first.evidence is not None
    assert asked_again.evidence is not None
    before, after = first.evidence.approval, asked_again.evidence.approval
    assert before is not None
    assert after is not None
    assert after.request_id != before.request_id
    assert after.shown[0].sha256 == sha(root / "plan.md")


def test_an_override_does_not_skip_the_human(root: Path, store: Store) -> None:
    engine = engine_for(store, root)
    engine.start("g", "approved", "main")
    (root / "plan.md").write_text("plan\n")
    engine.finish({"plan": "plan.md"})
    again = engine.finish({"plan": "plan.md"}, override_reason="approved it myself")
    assert again.status is FinishStatus.AWAITING_APPROVAL


def test_stats_count_what_the_engine_logged(root: Path, store: Store) -> None:
    engine = engine_for(store, root, ScriptedGate(otherwise=passes_every_step))
    engine.start("g", "evidenced", "main")
    (root / "plan.md").write_text("plan\n")
    (root / "result.md").write_text("result\n")
    engine.finish({"plan": "plan.md"})
    engine.finish({"result": "result.md"}, override_reason="reviewed by hand")
    [job] = collect_stats(store).jobs
    assert (job.job, job.sessions, job.completed) == ("evidenced", 1, 1)
    build, plan = job.steps
    assert (plan.step, plan.runs, plan.finished, plan.reviewed_runs) == ("plan", 1, 1, 1)
    assert plan.first_try_pass_rate == 1.0
    assert [(c.criterion, c.evaluations, c.failures) for c in plan.criteria] == [("Clear", 1, 0)]
    assert (build.step, build.overrides, build.reviewed_runs) == ("build", 1, 0)


def test_a_dry_run_at_the_last_step_lists_the_stale_steps_reviews_and_the_extra_call(
    root: Path,
    store: Store,
) -> None:
    """`dry_run` promises every review task a real call would run: at the last step that
    includes the reviews of an earlier step whose output changed (docs/quality-gate.md)."""
    from deepwork_core.gate.gates import SelfReviewGate

    engine = engine_for(store, root, SelfReviewGate())
    engine.start("g", "evidenced", "main")
    (root / "plan.md").write_text("plan\n")
    engine.finish({"plan": "plan.md"}, override_reason="Self-review by a sub-agent: all pass.")
    (root / "plan.md").write_text("plan v2\n")
    (root / "result.md").write_text("result\n")

    dry = engine.dry_run({"result": "result.md"})
    assert {task.step_id for task in dry.review_tasks or []} == {"build", "plan"}
    assert "a real call names them once" in (dry.feedback or "")
    resubmitted = engine.dry_run({"result": "plan.md"})
    assert {task.step_id for task in resubmitted.review_tasks or []} == {"build", "plan"}
    assert "a real call names them once" not in (resubmitted.feedback or "")
    real = engine.finish({"result": "result.md"})
    assert real.status is FinishStatus.NEEDS_WORK  # the round the dry run announced
    assert "changed after their step was accepted" in (real.feedback or "")
