"""The bytes of shown files travel with the approval request (docs/team.md): within the caps,
on SQLite and PostgreSQL, and a request whose bytes are not all kept cannot be decided away
from the checkout that serves it."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from deepwork_core.evidence.hashes import ShownOutput, sha256_file
from deepwork_core.state.approvals.decide import record_decision
from deepwork_core.state.approvals.models import ApprovalChannel, ApprovalError, ApprovalRequest
from deepwork_core.state.approvals.seal import ApprovalKey
from deepwork_core.state.approvals.signatures import ApproverSigner, TrustedApprovers
from deepwork_core.state.approvals.store import ApprovalStore
from deepwork_core.state.store.opening import open_store
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.tables.shown_bytes import (
    MAX_FILE_BYTES,
    MAX_REQUEST_BYTES,
    Kept,
    ShownBytes,
    capture,
    load,
)

from tests.fixtures.trust import trust_on_base

SID = "sess_bytes01"


def shown(root: Path, *names: str) -> list[ShownOutput]:
    return [ShownOutput(output=n, path=n, sha256=sha256_file(root, n)) for n in names]


def request(root: Path, *names: str, request_id: str = "req-1") -> ApprovalRequest:
    return ApprovalRequest(
        request_id=request_id,
        session_id=SID,
        job_name="ship",
        workflow_name="main",
        step_ids=["plan"],
        prompt="Good to go?",
        shown=shown(root, *names),
        requested_at=datetime(2026, 12, 1, tzinfo=UTC),
    )


def kept_of(store: Store, opened: ApprovalRequest) -> list[ShownBytes]:
    with store.read() as tx:
        return load(tx, store.project.project_id, opened.request_id, opened.shown)


def test_each_kind_of_file_is_kept_as_the_caps_say(any_store: Store, tmp_path: Path) -> None:
    root = tmp_path
    (root / "small.md").write_text("héllo <b>\n")
    (root / "big.md").write_bytes(b"a" * (MAX_FILE_BYTES - 1) + "é".encode() + b"tail")
    (root / "image.png").write_bytes(b"\x89PNG\0\0" + b"x" * 100)
    asked = request(root, "small.md", "big.md", "image.png", "gone.md")
    ApprovalStore(any_store, root, ApprovalKey(tmp_path / "k")).open_request(asked)
    small, big, image, gone = kept_of(any_store, asked)
    assert (small.kept, small.text, small.complete) == (Kept.WHOLE, "héllo <b>\n", True)
    assert small.size == len("héllo <b>\n".encode())
    # A first part never cuts a character: it ends before the one the cap would split.
    assert (big.kept, big.complete, big.size) == (Kept.FIRST_PART, False, MAX_FILE_BYTES + 5)
    assert big.text == "a" * (MAX_FILE_BYTES - 1)
    assert "first 256 KiB" in big.why_incomplete()
    assert (image.kept, image.text, image.size, image.complete) == (Kept.BINARY, "", 106, False)
    assert (gone.kept, gone.complete) == (Kept.ABSENT, True)


def test_a_request_keeps_at_most_two_mebibytes(tmp_path: Path) -> None:
    names = [f"part{n}.md" for n in range(10)]
    for name in names:
        (tmp_path / name).write_bytes(b"z" * (MAX_FILE_BYTES - 10))
    files = capture(tmp_path, shown(tmp_path, *names))
    kept = sum(len(f.text.encode()) for f in files)
    assert kept <= MAX_REQUEST_BYTES
    assert [f.kept for f in files] == [Kept.WHOLE] * 8 + [Kept.OVER_REQUEST_CAP] * 2
    assert "2 MiB" in files[-1].why_incomplete()


def test_a_file_whose_bytes_changed_since_hashing_is_not_kept(tmp_path: Path) -> None:
    (tmp_path / "plan.md").write_text("asked about\n")
    asked = shown(tmp_path, "plan.md")
    (tmp_path / "plan.md").write_text("changed before it was stored\n")
    [found] = capture(tmp_path, asked)
    assert (found.kept, found.text, found.complete) == (Kept.UNREADABLE, "", False)


def test_kept_bytes_edited_in_the_database_are_not_complete(
    any_store: Store, tmp_path: Path
) -> None:
    (tmp_path / "plan.md").write_text("the plan\n")
    asked = request(tmp_path, "plan.md")
    ApprovalStore(any_store, tmp_path, ApprovalKey(tmp_path / "k")).open_request(asked)
    with any_store.write() as tx:
        tx.execute("UPDATE approval_contents SET content = ?", ("an edited plan\n",))
    [found] = kept_of(any_store, asked)
    assert found.kept is Kept.WHOLE
    assert not found.complete
    assert "do not hash" in found.why_incomplete()


def test_a_request_from_before_the_store_kept_bytes_shows_nothing_kept(
    any_store: Store, tmp_path: Path
) -> None:
    (tmp_path / "plan.md").write_text("the plan\n")
    asked = request(tmp_path, "plan.md")
    ApprovalStore(any_store, tmp_path, ApprovalKey(tmp_path / "k")).open_request(asked)
    with any_store.write() as tx:
        tx.execute("DELETE FROM approval_contents")
    [found] = kept_of(any_store, asked)
    assert (found.kept, found.complete) == (Kept.NOT_STORED, False)


@pytest.fixture
def viewer_store(any_store: Store, tmp_path: Path) -> Iterator[Store]:
    """The same store opened by a second checkout (another project of it), which trusts the
    approver alice."""
    location = any_store.location
    url = location.url or f"sqlite:///{location.path}"
    (tmp_path / "viewer").mkdir()
    trust_on_base(tmp_path / "viewer", alice(tmp_path))
    viewer = open_store(url, tmp_path / "viewer")
    try:
        yield viewer
    finally:
        viewer.close()


def alice(tmp_path: Path) -> ApproverSigner:
    signer = ApproverSigner("alice", tmp_path / "state" / "alice.key")
    signer.create()
    return signer


def decide_away(viewer: Store, tmp_path: Path, served: Store) -> None:
    root = Path(viewer.project.root)
    approvals = ApprovalStore(
        viewer,
        root,
        None,
        trusted=TrustedApprovers(root, shared=True),
        signer=alice(tmp_path),
        project_id=served.project.project_id,
    )
    record_decision(
        approvals, SID, approved=True, comment=None, channel=ApprovalChannel.DASHBOARD,
        actor="alice@b", terminal=None, now=datetime(2026, 12, 1, 1, tzinfo=UTC),
    )  # fmt: skip


def decision_rows(store: Store) -> int:
    with store.read() as tx:
        [(count,)] = tx.execute("SELECT COUNT(*) FROM approval_decisions")
    return int(count)


def test_away_from_the_serving_checkout_only_a_request_kept_whole_is_decided(
    any_store: Store, viewer_store: Store, tmp_path: Path
) -> None:
    served = tmp_path
    (served / "plan.md").write_text("the plan\n")
    (served / "huge.md").write_bytes(b"h" * (MAX_FILE_BYTES + 1))
    approvals = ApprovalStore(any_store, served, ApprovalKey(tmp_path / "k"))
    approvals.open_request(request(served, "plan.md", "huge.md"))
    with pytest.raises(ApprovalError) as caught:
        decide_away(viewer_store, tmp_path, any_store)
    assert caught.value.code == "approval.bytes_not_stored"
    assert "huge.md" in caught.value.message
    assert "plan.md (" not in caught.value.message  # only the files not kept whole
    assert str(served) in caught.value.message  # where it can be decided
    assert decision_rows(any_store) == 0
    approvals.open_request(request(served, "plan.md", request_id="req-2"))
    decide_away(viewer_store, tmp_path, any_store)
    assert decision_rows(any_store) == 1
    digest = hashlib.sha256(b"the plan\n").hexdigest()
    assert [f.sha256 for f in kept_of(any_store, request(served, "plan.md"))] == [digest]
