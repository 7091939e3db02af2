"""Signed approvals (docs/team.md): approvers' Ed25519 keys, the keys a project trusts, and
which decisions count once signatures are required."""

from __future__ import annotations

import stat
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from deepwork_core.evidence.hashes import ShownOutput, sha256_file
from deepwork_core.evidence.trusted_keys import TrustError
from deepwork_core.state.approvals.decide import record_decision, rehash
from deepwork_core.state.approvals.models import ApprovalChannel, ApprovalError, ApprovalRequest
from deepwork_core.state.approvals.seal import ApprovalKey, ApprovalKeyError
from deepwork_core.state.approvals.signatures import ApproverSigner, TrustedApprovers
from deepwork_core.state.approvals.store import ApprovalStore
from deepwork_core.state.event_kinds import ApprovalEvent, decided_by, parse_line
from deepwork_core.state.read_model.timeline import sentence
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.tables.approval_rows import approval_event_lines

from tests.fixtures.state_rows import approval_json, write_approval_json
from tests.fixtures.trust import commit_on_base, trust_on_base

SID = "sess_signed1"


def signer(tmp_path: Path, name: str) -> ApproverSigner:
    made = ApproverSigner(name, tmp_path / "state" / "approvers" / f"{name}.key")
    assert made.create()
    return made


def trust(root: Path, approver: ApproverSigner) -> None:
    """Trust `approver` as the project does: its `.pub` committed on the base branch."""
    trust_on_base(root, approver)


def opened(tmp_path: Path, make_store: Callable[..., Store], **kwargs: object) -> ApprovalStore:
    root = tmp_path / "project"
    root.mkdir(exist_ok=True)
    (root / "plan.md").write_text("the plan\n")
    key = ApprovalKey(tmp_path / "keys" / "p.key")
    store = ApprovalStore(make_store(root), root, key, **kwargs)  # type: ignore[arg-type]
    store.open_request(
        ApprovalRequest(
            request_id="req-1",
            session_id=SID,
            job_name="ship",
            workflow_name="main",
            step_ids=["plan"],
            prompt="Good to go?",
            shown=[ShownOutput(output="plan", path="plan.md", sha256=sha256_file(root, "plan.md"))],
            requested_at=datetime(2026, 11, 23, tzinfo=UTC),
        )
    )
    return store


def decide(store: ApprovalStore) -> None:
    record_decision(
        store, SID, approved=True, comment=None, channel=ApprovalChannel.CLI,
        actor="alice@host", terminal=None, now=datetime(2026, 11, 23, 22, tzinfo=UTC),
    )  # fmt: skip


def test_the_private_key_is_0600_and_made_once(tmp_path: Path) -> None:
    alice = signer(tmp_path, "alice")
    assert stat.S_IMODE(alice.path.stat().st_mode) == 0o600
    assert not alice.create()  # kept
    assert len(alice.public_key()) == 32


def test_without_trusted_keys_the_seal_decides_as_before(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    store = opened(tmp_path, make_store)
    assert not store.trusted.required()
    decide(store)
    record = store.load_verified(SID)
    assert record is not None
    assert record.decision is not None
    assert record.decision.signature is None
    assert record.decision.mac is not None


def test_once_a_key_is_trusted_only_a_trusted_signature_counts(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    alice = signer(tmp_path, "alice")
    store = opened(tmp_path, make_store)
    trust(store.project_root, alice)
    with pytest.raises(ApprovalError) as caught:
        decide(store)  # no signer here: refused before anything is written
    assert caught.value.code == "approval.unverified"
    assert store.load(SID).decision is None  # type: ignore[union-attr]

    signed = ApprovalStore(store.store, store.project_root, store.key, signer=alice)
    decide(signed)
    record = store.load_verified(SID)
    assert record is not None
    assert record.decision is not None
    assert record.decision.signer == "alice"


def test_the_signer_is_who_decided_in_every_view_the_os_user_only_where_and_as_whom(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    """The approver's name is shown wherever a decision appears (docs/team.md): the logged
    event, the timeline sentence `deepwork log` and the run page print."""
    alice = signer(tmp_path, "alice")
    store = opened(tmp_path, make_store)
    trust(store.project_root, alice)
    decide(ApprovalStore(store.store, store.project_root, store.key, signer=alice))
    with store.store.read() as tx:
        lines = approval_event_lines(tx, store.project_id, SID)
    events = [parse_line(line, SID) for line in lines]
    assert [type(e) for e in events] == [ApprovalEvent]
    event = events[0]
    assert isinstance(event, ApprovalEvent)
    assert event.signer == "alice"
    assert event.decided_by == "approver alice (on host as alice)"
    assert sentence(event).startswith("Approver alice (on host as alice) approved `plan`")
    assert decided_by(None, "root@vm") == "an unsigned decision (on vm as root)"
    assert decided_by(None, "claude-code 2.1") == "an unsigned decision (through claude-code 2.1)"


def test_an_edited_signed_decision_does_not_verify(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    alice = signer(tmp_path, "alice")
    store = opened(tmp_path, make_store)
    trust(store.project_root, alice)
    decide(ApprovalStore(store.store, store.project_root, store.key, signer=alice))
    record = approval_json(store.store, SID)
    record["decision"]["approved"] = False
    write_approval_json(store.store, SID, record)
    record = store.load(SID)
    assert record is not None
    assert "does not verify" in (store.why_unverified(SID, record) or "")


def test_a_key_the_project_does_not_trust_cannot_sign(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    alice, mallory = signer(tmp_path, "alice"), signer(tmp_path, "mallory")
    store = opened(tmp_path, make_store)
    trust(store.project_root, alice)
    with pytest.raises(ApprovalKeyError) as caught:
        decide(ApprovalStore(store.store, store.project_root, store.key, signer=mallory))
    assert caught.value.code == "approval.untrusted_key"
    # A `.pub` named alice that holds mallory's key does not make mallory alice.
    trust(store.project_root, ApproverSigner("alice", mallory.path))
    trusted = TrustedApprovers(store.project_root)
    assert trusted.public_key("alice") == mallory.public_key()
    assert trusted.why_unsigned({"a": 1}, "alice", alice.sign({"a": 1})) is not None
    assert trusted.why_unsigned({"a": 1}, "alice", mallory.sign({"a": 1})) is None


def test_a_shared_store_requires_signatures_and_skips_the_local_seal(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    alice = signer(tmp_path, "alice")
    store = opened(tmp_path, make_store)
    shared = TrustedApprovers(store.project_root, shared=True)
    assert shared.required()
    with pytest.raises(ApprovalError):
        decide(ApprovalStore(store.store, store.project_root, store.key, trusted=shared))
    trust(store.project_root, alice)
    elsewhere = ApprovalStore(
        store.store,
        store.project_root,
        ApprovalKey(tmp_path / "other.key"),
        trusted=shared,
        signer=alice,
    )
    decide(elsewhere)  # another machine: its own HMAC key cannot check the server's request
    record = ApprovalStore(
        store.store, store.project_root, store.key, trusted=shared
    ).load_verified(SID)
    assert record is not None
    assert record.decision is not None
    assert record.decision.mac is None
    assert record.decision.signer == "alice"


@pytest.mark.parametrize(
    "text",
    ["", "ssh-ed25519 AAAA", "deepwork-approver ed25519 !!!", "deepwork-approver ed25519 AAAA"],
)
def test_a_malformed_pub_file_on_the_base_branch_trusts_nobody_and_is_an_error(
    tmp_path: Path, text: str
) -> None:
    commit_on_base(tmp_path, ".deepwork/approvers/eve.pub", text)
    trusted = TrustedApprovers(tmp_path)
    for ask in (trusted.required, lambda: trusted.public_key("eve")):
        with pytest.raises(TrustError) as caught:
            ask()
        assert caught.value.code == "trust.key_malformed"
        assert ".deepwork/approvers/eve.pub" in caught.value.message


def test_an_approver_name_must_be_a_plain_file_name(tmp_path: Path) -> None:
    with pytest.raises(ApprovalKeyError):
        ApproverSigner("../evil", tmp_path / "x.key")
    assert TrustedApprovers(tmp_path).public_key("../evil") is None


def test_on_a_shared_store_the_decision_binds_to_the_requests_hashes_not_local_bytes(
    tmp_path: Path,
    make_store: Callable[..., Store],
) -> None:
    alice = signer(tmp_path, "alice")
    server = opened(tmp_path, make_store)
    trust(server.project_root, alice)
    shared = TrustedApprovers(server.project_root, shared=True)
    (server.project_root / "plan.md").write_text("this checkout holds other bytes\n")
    decide(ApprovalStore(server.store, server.project_root, None, trusted=shared, signer=alice))
    record = ApprovalStore(
        server.store, server.project_root, server.key, trusted=shared
    ).load_verified(SID)
    assert record is not None
    assert record.decision is not None
    assert record.decision.shown == record.request.shown  # what the human was shown
    # The serving machine uses it only while its files still have those bytes.
    assert not record.decision_holds(rehash(server.project_root, record.request.shown))
