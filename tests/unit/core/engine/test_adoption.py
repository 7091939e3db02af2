"""Resuming in another checkout (docs/headless.md): checkout A parks a run in a real PostgreSQL
store, a trusted approver decides it from checkout B, and `resume_anywhere` in B takes the run
over into B's project (a `resumed` event says from where), runs no completed step again and
uses the signed decision; a changed completed output in B, or B off the run's branch, is
refused and the run stays in A, parked."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError, SessionError
from deepwork_core.base.identifiers import SessionId
from deepwork_core.engine.branching import BranchOutcome
from deepwork_core.engine.headless.adoption import resume_anywhere
from deepwork_core.engine.results import FinishStatus
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.approvals.signatures import ApproverSigner, TrustedApprovers
from deepwork_core.state.approvals.store import ApprovalStore
from deepwork_core.state.event_kinds import ResumedEvent, StepBegunEvent
from deepwork_core.state.events import read_events
from deepwork_core.state.read_model.timeline import sentence
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.opening import open_store
from deepwork_core.state.store.port import Store
from deepwork_mcp.approvals.keys import approver_path
from deepwork_mcp.cli import cli

from tests.fixtures.evidence_project import key_of
from tests.fixtures.git_repo import git
from tests.fixtures.signed_jobs import make_signed_project
from tests.fixtures.trust import trust_on_base

BRANCH = "deepwork/signed-run"


class Checkouts:
    """Checkout A (where the run starts and parks) and its clone B, one store between them."""

    def __init__(self, tmp_path: Path, pg_url: str) -> None:
        self.url = pg_url
        self.alice_state = tmp_path / "alice-state"
        self.alice = ApproverSigner("alice", approver_path(self.alice_state, "alice"))
        self.alice.create()
        self.a = make_signed_project(tmp_path / "a")
        trust_on_base(self.a, self.alice)
        self.b = tmp_path / "b"
        git(tmp_path, "clone", "-q", str(self.a), str(self.b))
        self.b = self.b.resolve()
        self.opened: list[Store] = []

    def store(self, root: Path) -> Store:
        store = open_store(self.url, root)
        self.opened.append(store)
        return store

    def engine(self, root: Path, **options: object) -> WorkflowEngine:
        sessions = SessionStore(self.store(root), root)
        approvers = TrustedApprovers(root, shared=True)
        return WorkflowEngine(
            root, JobCatalog.for_project(root), sessions, approval_key=key_of(root),
            approvers=approvers, headless=True, **options,  # type: ignore[arg-type]
        )  # fmt: skip

    def resume_in(self, root: Path, session_id: SessionId) -> None:
        store = self.store(root)
        approvals = ApprovalStore(
            store, root, key_of(root), trusted=TrustedApprovers(root, shared=True)
        )
        resume_anywhere(SessionStore(store, root), approvals, session_id, lambda: datetime.now(UTC))


@pytest.fixture
def checkouts(tmp_path: Path, pg_url: str) -> Iterator[Checkouts]:
    made = Checkouts(tmp_path, pg_url)
    yield made
    for store in made.opened:
        store.close()


def _switch(root: Path) -> BranchOutcome:
    git(root, "switch", "-q", "-c", BRANCH)
    return BranchOutcome(branch_name=BRANCH)


def park_in_a(checkouts: Checkouts) -> SessionId:
    """Run `signed` in A to its approval step (parked), and push the run's branch to B."""
    a = checkouts.a
    engine = checkouts.engine(a, branch_maker=lambda job, label: _switch(a))
    engine.start("g", "signed", "main")
    session_id = engine.stack()[0].session_id
    (a / "prep.md").write_text("prep\n")
    assert engine.finish({"prep": "prep.md"}).status is FinishStatus.NEXT_STEP
    (a / "sig.md").write_text("signed\n")
    assert engine.finish({"sig": "sig.md"}).status is FinishStatus.AWAITING_APPROVAL
    assert engine.store.load(session_id).parked is not None
    git(a, "add", "prep.md", "sig.md")
    git(a, "commit", "-q", "-m", "the run's outputs")
    git(checkouts.b, "fetch", "-q", "origin", f"{BRANCH}:{BRANCH}")
    return session_id


def approve_from_b(checkouts: Checkouts, session_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """alice's `deepwork approve` in checkout B, signed with her key, on the shared store."""
    with monkeypatch.context() as patch:
        patch.setenv("DEEPWORK_STATE_DIR", str(checkouts.alice_state))
        patch.setenv("DEEPWORK_STORE_URL", checkouts.url)
        answer = CliRunner().invoke(
            cli, ["approve", session_id, "--yes", "--path", str(checkouts.b)]
        )
    assert answer.exit_code == 0, answer.output
    assert "signed by approver alice" in answer.output


def test_a_run_parked_in_one_checkout_is_approved_and_finished_in_another(
    checkouts: Checkouts, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = park_in_a(checkouts)
    approve_from_b(checkouts, session_id, monkeypatch)
    b = checkouts.b
    git(b, "switch", "-q", BRANCH)

    checkouts.resume_in(b, session_id)

    with pytest.raises(DeepWorkError) as gone:  # the run is no longer A's
        SessionStore(checkouts.store(checkouts.a), checkouts.a).load(session_id)
    assert gone.value.code == ErrorCode.SESSION_NOT_FOUND
    engine = checkouts.engine(b)
    assert engine.store.load(session_id).parked is None
    assert (
        engine.finish({"sig": "sig.md"}, session_id=session_id).status
        is FinishStatus.WORKFLOW_COMPLETE
    )
    events = read_events(engine.store.store, session_id)
    begun = [e.step_ids for e in events if isinstance(e, StepBegunEvent)]
    assert begun == [["prep"], ["sign"]]  # prep is not executed again
    [resumed] = [e for e in events if isinstance(e, ResumedEvent)]
    assert resumed.adopted
    assert (resumed.root, resumed.from_root) == (str(b), str(checkouts.a))
    assert f"taken over from {checkouts.a}" in sentence(resumed)
    assert [e.event for e in events].count("approval") == 1  # alice's, from B, counted


def test_a_changed_completed_output_in_the_other_checkout_is_refused_and_nothing_moves(
    checkouts: Checkouts, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = park_in_a(checkouts)
    approve_from_b(checkouts, session_id, monkeypatch)
    b = checkouts.b
    git(b, "switch", "-q", BRANCH)
    (b / "prep.md").write_text("prep, edited on the other machine\n")

    with pytest.raises(SessionError) as refused:
        checkouts.resume_in(b, session_id)
    assert refused.value.code == ErrorCode.RUN_OUTPUT_CHANGED
    assert "prep.md (step prep, changed)" in refused.value.message
    still = SessionStore(checkouts.store(checkouts.a), checkouts.a).load(session_id)
    assert still.parked is not None  # still A's, still parked
    with pytest.raises(DeepWorkError):
        SessionStore(checkouts.store(b), b).load(session_id)


def test_another_checkout_off_the_run_s_branch_is_refused(checkouts: Checkouts) -> None:
    session_id = park_in_a(checkouts)
    with pytest.raises(SessionError) as refused:
        checkouts.resume_in(checkouts.b, session_id)  # B is on main
    assert refused.value.code == ErrorCode.RUN_WRONG_BRANCH
    assert BRANCH in refused.value.message
    still = SessionStore(checkouts.store(checkouts.a), checkouts.a).load(session_id)
    assert still.parked is not None


def test_an_unsigned_request_taken_over_is_not_counted_but_asked_anew(
    checkouts: Checkouts,
) -> None:
    session_id = park_in_a(checkouts)
    b = checkouts.b
    git(b, "switch", "-q", BRANCH)
    checkouts.resume_in(b, session_id)  # nobody decided: the request is not countersigned

    again = checkouts.engine(b).finish({"sig": "sig.md"}, session_id=session_id)
    assert again.status is FinishStatus.AWAITING_APPROVAL  # parked again, for a new decision


def test_a_session_no_project_holds_is_not_found(checkouts: Checkouts) -> None:
    with pytest.raises(DeepWorkError) as missing:
        checkouts.resume_in(checkouts.b, SessionId("sess_0123456789abcdef"))
    assert missing.value.code == ErrorCode.SESSION_NOT_FOUND
