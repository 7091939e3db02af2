"""The approval key file and the seal on each decision (docs/security.md, "Approvals")."""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from deepwork_core.evidence.hashes import ShownOutput, sha256_file
from deepwork_core.state.approvals.decide import record_decision
from deepwork_core.state.approvals.models import ApprovalChannel, ApprovalError, ApprovalRequest
from deepwork_core.state.approvals.seal import KEY_BYTES, ApprovalKey, ApprovalKeyError
from deepwork_core.state.approvals.store import ApprovalStore
from deepwork_core.state.events import delete_event_log
from deepwork_core.state.store.port import Store

from tests.fixtures.state_rows import approval_json, write_approval_json

SID = "sess_seal1"


def test_the_key_is_made_once_with_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "state" / "keys" / "project.key"
    secret = ApprovalKey(path).secret()
    assert len(secret) == KEY_BYTES
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert ApprovalKey(path).secret() == secret  # another process reads the same key
    assert [p.name for p in path.parent.iterdir()] == ["project.key"]  # no drafts left behind


def test_processes_making_the_key_at_once_agree_on_it(tmp_path: Path) -> None:
    path = tmp_path / "keys" / "project.key"
    secrets: list[bytes] = []
    threads = [
        threading.Thread(target=lambda: secrets.append(ApprovalKey(path).secret()))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(secrets) == 8
    assert len(set(secrets)) == 1


def test_a_key_others_may_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "project.key"
    ApprovalKey(path).secret()
    path.chmod(0o640)
    with pytest.raises(ApprovalKeyError) as caught:
        ApprovalKey(path).secret()
    assert caught.value.code == "approval.key_unsafe"
    assert str(path) in caught.value.message
    assert "0640" in caught.value.message


@pytest.mark.parametrize("kind", ["symlink", "directory", "short"])
def test_a_key_that_is_no_plain_32_byte_file_is_refused(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "project.key"
    if kind == "symlink":
        real = tmp_path / "elsewhere.key"
        ApprovalKey(real).secret()
        path.symlink_to(real)
    elif kind == "directory":
        path.mkdir(mode=0o700)
    else:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, b"short")
        os.close(fd)
    with pytest.raises(ApprovalKeyError) as caught:
        ApprovalKey(path).secret()
    assert caught.value.code == "approval.key_unsafe"


# --- decisions ---------------------------------------------------------------------------------


def decided_store(tmp_path: Path, make_store: Callable[..., Store]) -> ApprovalStore:
    root = tmp_path / "project"
    root.mkdir()
    (root / "plan.md").write_text("the plan\n")
    store = ApprovalStore(make_store(root), root, ApprovalKey(tmp_path / "keys" / "project.key"))
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
    record_decision(
        store,
        SID,
        approved=True,
        comment="fine",
        channel=ApprovalChannel.CLI,
        actor="alice@host",
        terminal=None,
        now=datetime(2026, 11, 23, 22, 0, tzinfo=UTC),
    )
    return store


def edit_decision(store: ApprovalStore, **changes: object) -> None:
    record = approval_json(store.store, SID)
    record["decision"].update(changes)
    write_approval_json(store.store, SID, record)


def refusal(store: ApprovalStore) -> str:
    with pytest.raises(ApprovalError) as caught:
        store.load_verified(SID)
    assert caught.value.code == "approval.unverified"
    assert f"session {SID}" in caught.value.message
    return caught.value.message


def test_a_recorded_decision_is_sealed_and_verifies(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    store = decided_store(tmp_path, make_store)
    record = store.load_verified(SID)
    assert record is not None
    assert record.decision is not None
    assert record.decision.mac is not None
    assert len(record.decision.mac) == 64


@pytest.mark.parametrize(
    "changes",
    [
        {"channel": "elicitation"},
        {"approved": False},
        {"actor": "bob@host"},
        {"comment": "ship it"},
        {"decided_at": "2026-11-24T22:00:00Z"},
        {"shown": []},
    ],
)
def test_an_edited_field_breaks_the_seal(
    tmp_path: Path, changes: dict[str, object], make_store: Callable[..., Store]
) -> None:
    store = decided_store(tmp_path, make_store)
    edit_decision(store, **changes)
    assert "MAC does not verify" in refusal(store)


def test_a_sealed_decision_without_its_event_is_refused(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    store = decided_store(tmp_path, make_store)
    delete_event_log(store.store, SID)
    assert "no approval event" in refusal(store)


def test_a_decision_without_a_seal_is_refused_and_can_be_decided_again(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    store = decided_store(tmp_path, make_store)
    edit_decision(store, mac=None)  # as a hand-written file, or one from before seals
    assert "no MAC" in refusal(store)
    record_decision(
        store,
        SID,
        approved=False,
        comment="not yet",
        channel=ApprovalChannel.CLI,
        actor="alice@host",
        terminal=None,
        now=datetime(2026, 11, 23, 23, 0, tzinfo=UTC),
    )
    record = store.load_verified(SID)
    assert record is not None
    assert record.decision is not None
    assert (record.decision.approved, record.decision.comment) == (False, "not yet")


def test_another_projects_key_does_not_verify(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    store = decided_store(tmp_path, make_store)
    other = ApprovalStore(store.store, store.project_root, ApprovalKey(tmp_path / "other.key"))
    with pytest.raises(ApprovalError) as caught:
        other.load_verified(SID)
    # The request's seal is checked first: under another key it is not this server's request.
    assert caught.value.code == "approval.request_unverified"


def test_without_a_key_nothing_is_recorded(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    store = decided_store(tmp_path, make_store)
    with pytest.raises(ApprovalKeyError) as caught:
        ApprovalStore(store.store, store.project_root).load_verified(SID)
    assert caught.value.code == "approval.key_unavailable"


def test_a_replaced_key_file_is_read_again_without_a_new_key_object(tmp_path: Path) -> None:
    key = ApprovalKey(tmp_path / "keys" / "k.key")
    first = key.secret()
    key.path.unlink()  # as docs/security.md advises after an unsafe key
    second = key.secret()  # a new key is made, and this object uses it at once
    assert second != first
    assert ApprovalKey(key.path).secret() == second


def test_an_edited_request_does_not_verify(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    store = decided_store(tmp_path, make_store)
    text = json.dumps(approval_json(store.store, SID))
    write_approval_json(store.store, SID, json.loads(text.replace('"plan.md"', '"decoy.md"')))
    record = store.load(SID)
    assert record is not None
    assert store.why_request_unverified(record) is not None
    with pytest.raises(ApprovalError) as caught:
        store.load_verified(SID)
    assert caught.value.code == "approval.request_unverified"
