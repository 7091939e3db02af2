"""Approval policies (docs/job-format.md#approval-policy): `required` distinct trusted signers,
`approvers`, `not_by_author` and `expires_after`, counted on the store the tests run on (SQLite,
or PostgreSQL under DEEPWORK_TEST_STORE=postgresql)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.identifiers import SessionId
from deepwork_core.evidence.hashes import ShownOutput, sha256_file
from deepwork_core.state.approvals.decide import record_decision
from deepwork_core.state.approvals.ending import EndState
from deepwork_core.state.approvals.models import (
    ApprovalChannel,
    ApprovalError,
    ApprovalRecord,
    ApprovalRequest,
)
from deepwork_core.state.approvals.policy import RequestPolicy, RunAuthor, standing
from deepwork_core.state.approvals.seal import ApprovalKey
from deepwork_core.state.approvals.signatures import ApproverSigner, TrustedApprovers
from deepwork_core.state.approvals.store import ApprovalStore
from deepwork_core.state.store.port import Store

from tests.fixtures.trust import trust_on_base

SID = SessionId("sess_policy1")
NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


def signer(tmp_path: Path, name: str) -> ApproverSigner:
    made = ApproverSigner(name, tmp_path / "state" / "approvers" / f"{name}.key")
    made.create()
    return made


@dataclass
class Team:
    root: Path
    store: Store
    key: ApprovalKey
    signers: dict[str, ApproverSigner]

    def as_(self, name: str | None) -> ApprovalStore:
        """The project's approvals on the shared store, signing as `name`."""
        trusted = TrustedApprovers(self.root, shared=True)
        chosen = None if name is None else self.signers[name]
        return ApprovalStore(self.store, self.root, self.key, trusted=trusted, signer=chosen)

    def decide(self, name: str, *, approved: bool = True, at: datetime = NOW) -> ApprovalRecord:
        return record_decision(
            self.as_(name),
            SID,
            approved=approved,
            comment=None if approved else "not yet",
            channel=ApprovalChannel.CLI,
            actor=f"{name}@laptop",
            terminal=None,
            now=at,
            email=f"{name}@example.com",
        )

    def verified(self) -> ApprovalRecord:
        record = self.as_(None).load_verified(SID)
        assert record is not None
        return record


def team(tmp_path: Path, make_store: Callable[..., Store], policy: RequestPolicy) -> Team:
    root = tmp_path / "project"
    root.mkdir()
    (root / "plan.md").write_text("the plan\n")
    signers = {name: signer(tmp_path, name) for name in ("alice", "bob", "carol")}
    for made in signers.values():
        trust_on_base(root, made)
    made_team = Team(root, make_store(root), ApprovalKey(tmp_path / "keys" / "p.key"), signers)
    made_team.as_(None).open_request(
        ApprovalRequest(
            request_id="req-1",
            session_id=SID,
            job_name="ship",
            workflow_name="main",
            step_ids=["plan"],
            prompt="Good to go?",
            shown=[ShownOutput(output="plan", path="plan.md", sha256=sha256_file(root, "plan.md"))],
            requested_at=NOW - timedelta(hours=1),
            policy=policy,
        )
    )
    return made_team


def refused(call: Callable[[], object]) -> str:
    with pytest.raises(ApprovalError) as caught:
        call()
    return str(caught.value.code)


def test_two_of_three_counts_one_approver_once_and_completes_with_a_second(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    three = ["alice", "bob", "carol"]
    crew = team(tmp_path, make_store, RequestPolicy(required=2, approvers=three))
    crew.decide("alice")
    partial = crew.verified()
    assert partial.decision is None  # 1 of 2: the step keeps waiting
    assert partial.standing().text() == "1 of 2 approvals (alice)"
    assert partial.standing().partial

    assert refused(lambda: crew.decide("alice")) == ErrorCode.APPROVAL_ALREADY_DECIDED
    assert len(crew.verified().decisions) == 1  # the second signature was not recorded

    crew.decide("bob")
    done = crew.verified()
    assert done.decision is not None
    assert done.decision.signer == "bob"
    assert done.standing().text() == "2 of 2 approvals (alice, bob)"
    assert refused(lambda: crew.decide("carol")) == ErrorCode.APPROVAL_ALREADY_DECIDED


def test_the_same_signer_twice_counts_once_even_when_both_rows_verify() -> None:
    @dataclass
    class Signed:
        signer: str | None
        email: str | None = None
        approved: bool = True

    policy = RequestPolicy(required=2)
    assert standing(policy, [Signed("alice"), Signed("alice")]).concluding is None
    assert standing(policy, [Signed("alice"), Signed("bob")]).concluding == 1
    author = RunAuthor(approver="alice", email="a@example.com")
    strict = RequestPolicy(required=2, not_by_author=True, author=author)
    by_author = [Signed("alice"), Signed("bob"), Signed("carol", email="a@example.com")]
    assert standing(strict, by_author).approved_by == ["bob"]  # neither identity of the author
    assert standing(strict, [*by_author, Signed("dave")]).approved_by == ["bob", "dave"]


def test_under_not_by_author_the_authors_signature_is_refused_and_not_recorded(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    author = RunAuthor(approver="alice", email="someone@example.com")
    crew = team(tmp_path, make_store, RequestPolicy(not_by_author=True, author=author))
    assert refused(lambda: crew.decide("alice")) == ErrorCode.APPROVAL_NOT_ELIGIBLE
    assert crew.verified().decisions == []
    crew.decide("bob")
    assert crew.verified().decision is not None


def test_an_approver_outside_the_list_is_refused(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    crew = team(tmp_path, make_store, RequestPolicy(approvers=["bob"]))
    assert refused(lambda: crew.decide("carol")) == ErrorCode.APPROVAL_NOT_ELIGIBLE
    assert crew.verified().decisions == []


def test_one_rejection_settles_the_request(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    crew = team(tmp_path, make_store, RequestPolicy(required=2))
    crew.decide("alice")
    crew.decide("bob", approved=False)
    settled = crew.verified()
    assert settled.decision is not None
    assert not settled.decision.approved


def test_a_decision_on_an_expired_request_is_refused_and_nothing_recorded(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    crew = team(tmp_path, make_store, RequestPolicy(expires_at=NOW - timedelta(minutes=1)))
    assert refused(lambda: crew.decide("alice")) == ErrorCode.APPROVAL_EXPIRED
    assert crew.verified().decisions == []


def test_a_decision_on_a_cancelled_request_is_refused(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    crew = team(tmp_path, make_store, RequestPolicy(required=2))
    crew.as_(None).clear(SID, EndState.CANCELLED, "the run was aborted", NOW)
    assert refused(lambda: crew.decide("alice")) == ErrorCode.APPROVAL_CANCELLED


def test_a_policy_changed_in_the_store_voids_the_request_seal(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    crew = team(tmp_path, make_store, RequestPolicy(required=2))
    record = crew.as_(None).load(SID)
    assert record is not None
    lowered = record.request.model_copy(update={"policy": RequestPolicy(required=1)})
    why = crew.as_(None).why_request_unverified(record.model_copy(update={"request": lowered}))
    assert why is not None
    assert "seal does not verify" in why
