"""The approval store: requests opened by the server, decisions bound to the shown hashes."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from deepwork_core.evidence.hashes import ShownOutput
from deepwork_core.state.approvals.decide import record_decision, rehash
from deepwork_core.state.approvals.models import ApprovalChannel, ApprovalError, ApprovalRequest
from deepwork_core.state.approvals.store import ApprovalStore
from deepwork_core.state.event_kinds import ApprovalEvent
from deepwork_core.state.events import read_events
from deepwork_core.state.store.port import Store

from tests.fixtures.evidence_project import key_of
from tests.fixtures.state_rows import approval_json, write_approval_json

SID = "sess_approve1"
WHEN = datetime(2026, 11, 23, 22, 0, tzinfo=UTC)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def store(tmp_path: Path, make_store: Callable[..., Store]) -> ApprovalStore:
    (tmp_path / "plan.md").write_text("the plan\n")
    return ApprovalStore(make_store(tmp_path), tmp_path, key_of(tmp_path))


def open_request(store: ApprovalStore, request_id: str = "req-1") -> ApprovalRequest:
    request = ApprovalRequest(
        request_id=request_id,
        session_id=SID,
        job_name="ship",
        workflow_name="main",
        step_ids=["plan"],
        prompt="Is this plan good to go?",
        shown=[ShownOutput(output="plan", path="plan.md", sha256=digest("the plan\n"))],
        requested_at=WHEN,
    )
    store.open_request(request)
    return request


def decide(store: ApprovalStore, *, approved: bool = True, comment: str | None = None) -> None:
    record_decision(
        store,
        SID,
        approved=approved,
        comment=comment,
        channel=ApprovalChannel.CLI,
        actor="alice@host",
        terminal="/dev/pts/3",
        now=WHEN,
    )


def test_a_decision_is_recorded_with_who_when_how_and_the_hashes(store: ApprovalStore) -> None:
    open_request(store)
    decide(store, approved=False, comment="Split step 3")
    record = store.load(SID)
    assert record is not None
    assert record.decision is not None
    decision = record.decision
    assert (decision.approved, decision.comment) == (False, "Split step 3")
    assert (decision.actor, decision.terminal, decision.channel) == (
        "alice@host",
        "/dev/pts/3",
        ApprovalChannel.CLI,
    )
    assert decision.shown == record.request.shown
    assert record.decision_holds(rehash(store.project_root, record.request.shown))
    [event] = read_events(store.store, SID)
    assert isinstance(event, ApprovalEvent)
    assert (event.approved, event.comment, event.channel) == (False, "Split step 3", "cli")
    assert event.ts == WHEN  # the event is stamped when the decision was taken
    assert event.as_written()["ts"] == WHEN.isoformat()


def test_an_edit_after_the_approval_voids_it(store: ApprovalStore) -> None:
    open_request(store)
    decide(store)
    (store.project_root / "plan.md").write_text("another plan\n")
    record = store.load(SID)
    assert record is not None
    assert not record.decision_holds(rehash(store.project_root, record.request.shown))


def test_outputs_changed_before_the_decision_cannot_be_approved(store: ApprovalStore) -> None:
    open_request(store)
    (store.project_root / "plan.md").write_text("swapped after review\n")
    with pytest.raises(ApprovalError) as caught:
        decide(store)
    assert caught.value.code == "approval.outputs_changed"


def test_nothing_pending_and_deciding_twice_are_refused(store: ApprovalStore) -> None:
    with pytest.raises(ApprovalError) as caught:
        decide(store)
    assert caught.value.code == "approval.none_pending"
    open_request(store)
    decide(store)
    with pytest.raises(ApprovalError) as caught:
        decide(store, approved=False, comment="changed my mind")
    assert caught.value.code == "approval.already_decided"


def test_a_new_request_replaces_the_old_decision(store: ApprovalStore) -> None:
    open_request(store)
    decide(store)
    open_request(store, "req-2")
    record = store.load(SID)
    assert record is not None
    assert record.decision is None
    assert record.request.request_id == "req-2"


def test_a_corrupt_record_is_reported(store: ApprovalStore) -> None:
    open_request(store)
    record = approval_json(store.store, SID)
    record["request"]["step_ids"] = "not a list"
    write_approval_json(store.store, SID, record)
    with pytest.raises(ApprovalError) as caught:
        store.load(SID)
    assert caught.value.code == "approval.corrupt"
