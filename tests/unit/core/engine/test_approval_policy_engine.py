"""Approval policies through the engine (docs/job-format.md#approval-policy): a 2-of-3
`not_by_author` step completes only with two distinct non-author signatures, and an expired
request never completes its step."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.identifiers import SessionId
from deepwork_core.engine.results import FinishResult, FinishStatus
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.receipts.audit_record import export_record
from deepwork_core.receipts.build import approvals as receipt_approvals
from deepwork_core.receipts.keys import GateKey
from deepwork_core.state.approvals.decide import record_decision
from deepwork_core.state.approvals.models import ApprovalChannel, ApprovalError
from deepwork_core.state.approvals.signatures import ApproverSigner, TrustedApprovers
from deepwork_core.state.approvals.store import ApprovalStore
from deepwork_core.state.sessions import SessionStatus, SessionStore
from deepwork_core.state.store.port import Store

from tests.fixtures.evidence_project import key_of
from tests.fixtures.git_repo import git, init_repo
from tests.fixtures.trust import trust_on_base
from tests.fixtures.workflow_project import write_job

POLICED = """name: policed
version: "1.0.0"
summary: Sign off under a policy
common_job_info_provided_to_all_steps_at_runtime: Policy fixture.
workflows:
  - name: main
    summary: sign
    steps: [sign]
steps:
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
      required: 2
      approvers: [alice, bob, carol]
      not_by_author: true
      expires_after: 1h
"""


class Clock:
    """The engine's clock. It starts at the wall clock's second by default: the views (status,
    the dashboard, `deepwork log`) read an open request as expired by the wall clock, so a
    request of this job (`expires_after: 1h`) must not have expired by it while a test waits."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime.now(UTC).replace(microsecond=0)
        self.start = self.now

    def __call__(self) -> datetime:
        return self.now


def project(tmp_path: Path) -> tuple[Path, dict[str, ApproverSigner]]:
    root = tmp_path / "project"
    write_job(root, "policed", POLICED)
    init_repo(root)
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "project")
    signers = {}
    for name in ("alice", "bob", "carol"):
        signers[name] = ApproverSigner(name, tmp_path / "state" / "approvers" / f"{name}.key")
        signers[name].create()
        trust_on_base(root, signers[name])
    return root.resolve(), signers


def engine(store: Store, root: Path, clock: Clock) -> WorkflowEngine:
    return WorkflowEngine(
        root,
        JobCatalog.for_project(root),
        SessionStore(store, root),
        approval_key=key_of(root),
        approvers=TrustedApprovers(root),
        clock=clock,
        author_approver="alice",  # alice starts the run
    )


def decide(store: Store, root: Path, who: ApproverSigner, session_id: str, at: datetime) -> None:
    record_decision(
        ApprovalStore(store, root, key_of(root), trusted=TrustedApprovers(root), signer=who),
        SessionId(session_id),
        approved=True,
        comment=None,
        channel=ApprovalChannel.CLI,
        actor=f"{who.name}@laptop",
        terminal=None,
        now=at,
    )


@dataclass
class Waiting:
    """A run of `policed` whose step waits for approval (started by alice)."""

    run: WorkflowEngine
    store: Store
    root: Path
    signers: dict[str, ApproverSigner]
    clock: Clock
    session_id: str
    answer: FinishResult


def waiting(
    tmp_path: Path, make_store: Callable[..., Store], start: datetime | None = None
) -> Waiting:
    """`start`: when the engine's clock starts (default: now, to the second)."""
    root, signers = project(tmp_path)
    store, clock = make_store(root), Clock(start)
    run = engine(store, root, clock)
    run.start("sign it", "policed", "main")
    session_id = run.stack()[0].session_id
    (root / "sig.md").write_text("signed\n")
    answer = run.finish({"sig": "sig.md"})
    assert answer.status is FinishStatus.AWAITING_APPROVAL
    return Waiting(run, store, root, signers, clock, session_id, answer)


def test_two_of_three_not_by_author_completes_only_with_two_non_author_signatures(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    w = waiting(tmp_path, make_store)
    run, store, root, signers, clock, session_id = (
        w.run,
        w.store,
        w.root,
        w.signers,
        w.clock,
        w.session_id,
    )
    assert "0 of 2 approvals" in (w.answer.feedback or "")
    expiry = (clock.start + timedelta(hours=1)).isoformat()
    assert f"expires at {expiry}" in (w.answer.feedback or "")

    with pytest.raises(ApprovalError) as author:
        decide(store, root, signers["alice"], session_id, clock.now)
    assert author.value.code == ErrorCode.APPROVAL_NOT_ELIGIBLE
    decide(store, root, signers["bob"], session_id, clock.now)
    with pytest.raises(ApprovalError) as twice:
        decide(store, root, signers["bob"], session_id, clock.now)
    assert twice.value.code == ErrorCode.APPROVAL_ALREADY_DECIDED
    partial = run.finish({"sig": "sig.md"})
    assert partial.status is FinishStatus.AWAITING_APPROVAL
    assert "1 of 2 approvals (bob)" in (partial.feedback or "")

    clock.now += timedelta(minutes=5)
    decide(store, root, signers["carol"], session_id, clock.now)
    assert run.finish({"sig": "sig.md"}).status is FinishStatus.WORKFLOW_COMPLETE

    # the receipt lists every signature that counted, not only the deciding one
    entries = receipt_approvals(SessionStore(store, root).load(SessionId(session_id)))
    assert [(e.signer, e.decided_at) for e in entries] == [
        ("bob", clock.start.isoformat()),
        ("carol", (clock.start + timedelta(minutes=5)).isoformat()),
    ]
    assert all(e.signature for e in entries)
    assert entries[0].signature != entries[1].signature

    # the audit record lists the request once, with both decisions that counted
    gate = GateKey(tmp_path / "gate.key", "laptop")
    body = json.loads(export_record(store, session_id, gate, clock.now))["body"]
    [request] = body["sessions"][0]["requests"]
    assert [d["signer"] for d in request["decisions"]] == ["bob", "carol"]
    assert request["decision"]["signer"] == "carol"  # the one that completed the count


def test_an_expired_request_never_completes_its_step(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    w = waiting(tmp_path, make_store)
    run, store, root, signers, clock, session_id = (
        w.run,
        w.store,
        w.root,
        w.signers,
        w.clock,
        w.session_id,
    )
    decide(store, root, signers["bob"], session_id, clock.now)

    clock.now += timedelta(hours=1, seconds=1)
    with pytest.raises(ApprovalError) as late:
        decide(store, root, signers["carol"], session_id, clock.now)
    assert late.value.code == ErrorCode.APPROVAL_EXPIRED
    with pytest.raises(ApprovalError) as answered:
        run.finish({"sig": "sig.md"})
    assert answered.value.code == ErrorCode.APPROVAL_EXPIRED
    session = SessionStore(store, root).load(SessionId(session_id))
    assert session.status is SessionStatus.ACTIVE
    assert session.pending_approval is not None  # nothing completed


@pytest.mark.parametrize(
    ("policy", "trusted", "why"),
    [
        ("required: 3\n      approvers: [alice, bob, carol]", ["bob", "carol"], "only 2"),
        ("required: 1\n      approvers: [alice]\n      not_by_author: true", ["alice"], "only 0"),
    ],
)
def test_a_policy_the_trusted_keys_cannot_meet_is_refused_when_the_request_opens(
    tmp_path: Path, make_store: Callable[..., Store], policy: str, trusted: list[str], why: str
) -> None:
    root = tmp_path / "project"
    text = POLICED.replace(
        "required: 2\n      approvers: [alice, bob, carol]\n      not_by_author: true", policy
    )
    assert policy in text
    write_job(root, "policed", text)
    init_repo(root)
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "project")
    for name in trusted:
        signer = ApproverSigner(name, tmp_path / "state" / f"{name}.key")
        signer.create()
        trust_on_base(root, signer)
    root = root.resolve()
    store, clock = make_store(root), Clock()
    run = engine(store, root, clock)
    run.start("sign it", "policed", "main")
    session_id = SessionId(run.stack()[0].session_id)
    (root / "sig.md").write_text("signed\n")

    with pytest.raises(ApprovalError) as refused:
        run.finish({"sig": "sig.md"})
    assert refused.value.code == ErrorCode.APPROVAL_POLICY_UNMEETABLE
    assert ".deepwork/jobs/policed/job.yml" in refused.value.message
    assert why in refused.value.message
    # nothing was recorded that nobody could decide
    assert ApprovalStore(store, root, key_of(root)).load(session_id) is None
    assert SessionStore(store, root).load(session_id).pending_approval is None
