"""Approval requests and decisions in the store, on SQLite and on a real PostgreSQL: what the
server asked, decisions with their seals and signatures, withdrawal, a row written into the
database by hand, and the old `approvals/<id>.json` files imported with their seals."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from deepwork_core.base.layout import APPROVALS_DIR, EVENTS_DIR
from deepwork_core.evidence.hashes import ShownOutput, sha256_file
from deepwork_core.state.approvals.decide import record_decision
from deepwork_core.state.approvals.ending import EndState
from deepwork_core.state.approvals.event import approval_event
from deepwork_core.state.approvals.models import (
    ApprovalChannel,
    ApprovalDecision,
    ApprovalError,
    ApprovalRecord,
    ApprovalRequest,
)
from deepwork_core.state.approvals.seal import (
    REQUEST_LABEL,
    ApprovalKey,
    request_fields,
    seal_fields,
)
from deepwork_core.state.approvals.signatures import ApproverSigner, TrustedApprovers
from deepwork_core.state.approvals.store import ApprovalStore
from deepwork_core.state.events import event_line
from deepwork_core.state.store.opening import open_store
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.tables.approval_rows import (
    WITHDRAWN,
    DecisionRow,
    Ending,
    RequestRow,
    close_requests,
    open_request,
    save_decision,
    undecided_requests,
)

from tests.fixtures.state_rows import insert_decision_by_hand
from tests.fixtures.trust import trust_on_base

SID = "sess_rows1"
WHEN = datetime(2026, 11, 23, 22, 0, tzinfo=UTC)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "plan.md").write_text("the plan\n")
    return project


def request(root: Path, request_id: str = "req-1") -> ApprovalRequest:
    return ApprovalRequest(
        request_id=request_id,
        session_id=SID,
        job_name="approved",
        workflow_name="main",
        step_ids=["plan"],
        prompt="Is the plan right?",
        shown=[ShownOutput(output="plan", path="plan.md", sha256=sha256_file(root, "plan.md"))],
        requested_at=WHEN,
    )


def decide(store: ApprovalStore) -> ApprovalRecord:
    return record_decision(
        store,
        SID,
        approved=True,
        comment="fine",
        channel=ApprovalChannel.DASHBOARD,
        actor="alice@laptop",
        terminal=None,
        now=WHEN,
    )


def rows(store: Store, sql: str) -> list[tuple[object, ...]]:
    with store.read() as tx:
        return [tuple(r) for r in tx.execute(sql)]


def test_the_request_is_the_servers_record_and_its_decision_is_kept(
    root: Path, tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    db = make_store(root)
    store = ApprovalStore(db, root, ApprovalKey(tmp_path / "keys" / "p.key"))
    store.open_request(request(root))
    [asked] = rows(
        db,
        "SELECT request_id, session_id, step_ids, shown, channels, state FROM approval_requests",
    )
    assert asked[:2] == ("req-1", SID)
    assert json.loads(str(asked[2])) == ["plan"]
    assert json.loads(str(asked[3]))[0]["sha256"] == sha256_file(root, "plan.md")
    assert asked[4:] == ("cli dashboard elicitation", "open")

    decide(store)
    [decision] = rows(
        db, "SELECT request_id, approved, channel, actor, mac FROM approval_decisions"
    )
    assert decision[:4] == ("req-1", 1, "dashboard", "alice@laptop")
    assert decision[4]  # sealed
    verified = store.load_verified(SID)
    assert verified is not None
    assert verified.decision is not None
    assert verified.decision.approved


def test_a_new_request_replaces_the_open_one_and_abort_withdraws_it(
    root: Path, tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    db = make_store(root)
    store = ApprovalStore(db, root, ApprovalKey(tmp_path / "keys" / "p.key"))
    store.open_request(request(root))
    store.open_request(request(root, "req-2"))
    store.clear(SID, EndState.CANCELLED, "the run was aborted: not needed", WHEN)
    states = rows(db, "SELECT request_id, state FROM approval_requests ORDER BY request_id")
    assert states == [("req-1", "replaced"), ("req-2", "withdrawn")]
    ends = rows(db, "SELECT request_id, end_state, end_reason, closed_at FROM approval_requests")
    assert [end[:3] for end in sorted(ends)] == [
        ("req-1", "failed", "a newer request (req-2) replaced it"),
        ("req-2", "cancelled", "the run was aborted: not needed"),
    ]
    assert sorted(ends)[1][3] == WHEN.timestamp()
    assert store.load(SID) is None
    with pytest.raises(ApprovalError) as caught:
        decide(store)
    # the newest request was cancelled, and a decision on it says so (a replaced one never
    # stands for the session while a newer one exists)
    assert caught.value.code == "approval.cancelled"


def test_a_decision_inserted_with_plain_sql_is_refused(
    root: Path, tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    alice = ApproverSigner("alice", tmp_path / "state" / "alice.key")
    alice.create()
    trust_on_base(root, alice)
    key = ApprovalKey(tmp_path / "keys" / "p.key")
    db = make_store(root)
    server = ApprovalStore(db, root, key, trusted=TrustedApprovers(root))
    opened = server.open_request(request(root))
    forged = {
        "request_id": "req-1",
        "approved": True,
        "decided_at": WHEN.isoformat(),
        "channel": "dashboard",
        "actor": "mallory@ci",
        "shown": [s.model_dump(mode="json") for s in opened.request.shown],
        "signer": "alice",
        "signature": "AAAA",
    }
    insert_decision_by_hand(db, SID, forged)

    with pytest.raises(ApprovalError) as caught:
        server.load_verified(SID)
    assert caught.value.code == "approval.unverified"
    assert "does not verify" in caught.value.message
    # The human's real, signed decision replaces the forgery and counts.
    decide(ApprovalStore(db, root, key, trusted=server.trusted, signer=alice))
    record = server.load_verified(SID)
    assert record is not None
    assert record.decision is not None
    assert record.decision.actor == "alice@laptop"


def _old_files(root: Path, key: ApprovalKey) -> None:
    """What the file-based DeepWork left: a sealed request, its sealed decision, its event."""
    asked = request(root)
    asked = asked.model_copy(update={"mac": key.mac(request_fields(asked), REQUEST_LABEL)})
    decision = ApprovalDecision(
        request_id="req-1",
        approved=True,
        comment="ok",
        decided_at=WHEN,
        channel=ApprovalChannel.CLI,
        actor="alice@laptop",
        terminal="/dev/pts/1",
        shown=list(asked.shown),
    )
    decision = decision.model_copy(update={"mac": key.mac(seal_fields(SID, asked, decision))})
    folder = root / APPROVALS_DIR
    folder.mkdir(parents=True)
    record = ApprovalRecord(request=asked, decision=decision)
    (folder / f"{SID}.json").write_text(record.model_dump_json(indent=2))
    (root / EVENTS_DIR).mkdir(parents=True)
    line = event_line(approval_event(SID, asked, decision))
    (root / EVENTS_DIR / f"{SID}.jsonl").write_text(line + "\n")


def test_old_approval_files_are_imported_with_their_seals(
    root: Path, tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    key = ApprovalKey(tmp_path / "keys" / "p.key")
    _old_files(root, key)
    db = make_store(root)  # its first open imports them
    record = ApprovalStore(db, root, key).load_verified(SID)
    assert record is not None
    assert record.decision is not None
    assert record.decision.terminal == "/dev/pts/1"
    assert record.decision.mac is not None
    old = root / APPROVALS_DIR / f"{SID}.json"
    assert not old.exists()
    assert old.with_name(old.name + ".imported").is_file()
    [(state,)] = rows(db, "SELECT state FROM approval_requests")
    assert state == "open"


def _row(session_id: str, request_id: str, at: float) -> RequestRow:
    body = json.dumps({"request_id": request_id})
    return RequestRow(
        session_id, request_id, "job", "main", '["plan"]', "[]", "cli", None, at, body
    )


def test_the_undecided_requests_of_every_project_of_a_store_come_newest_first(
    store_url: str | None, tmp_path: Path
) -> None:
    url = store_url or f"sqlite:///{tmp_path / 'shared.sqlite3'}"
    folders = [tmp_path / "a", tmp_path / "b"]
    for folder in folders:
        folder.mkdir()
    a, b = (open_store(url, folder, machine="laptop") for folder in folders)
    try:
        with a.write() as tx:
            open_request(tx, a.project.project_id, _row("s1", "a-old", 100.0), 100.0)
            open_request(tx, a.project.project_id, _row("s2", "a-decided", 300.0), 300.0)
            decision = DecisionRow("s2", "a-decided", True, "cli", "me", None, None, None, 1, "{}")
            save_decision(tx, a.project.project_id, decision)
        with b.write() as tx:
            open_request(tx, b.project.project_id, _row("s1", "b-new", 200.0), 200.0)
            open_request(tx, b.project.project_id, _row("s3", "b-gone", 400.0), 400.0)
            close_requests(
                tx, b.project.project_id, "s3", Ending(WITHDRAWN, "cancelled", "aborted"), 401.0
            )
        with a.read() as tx:
            listed = undecided_requests(tx)
            first = undecided_requests(tx, limit=1)
    finally:
        a.close()
        b.close()
    assert [(r.project_root, json.loads(r.body)["request_id"]) for r in listed] == [
        (str(folders[1].resolve()), "b-new"),
        (str(folders[0].resolve()), "a-old"),
    ]
    assert {r.machine for r in listed} == {"laptop"}
    assert [json.loads(r.body)["request_id"] for r in first] == ["b-new"]
