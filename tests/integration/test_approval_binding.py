"""An approval binds to what the server asked, end to end (docs/security.md, "Approvals"): the real
`deepwork serve` over stdio, the human's `deepwork approve` and `deepwork dashboard` as processes
of their own. An agent's edit of the request file never gets a decoy approved; an aborted run's
approval is withdrawn; a replaced approval key is used without a restart; and where the project
trusts approvers' keys, only a decision a trusted approver signed counts."""

from __future__ import annotations

import asyncio
import http.client
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest
from deepwork_core.base.layout import APPROVERS_DIR
from deepwork_core.evidence.hashes import sha256_file
from deepwork_core.state.approvals.decide import record_decision
from deepwork_core.state.approvals.models import ApprovalChannel
from deepwork_core.state.approvals.signatures import ApproverSigner, TrustedApprovers
from deepwork_core.state.approvals.store import ApprovalStore
from deepwork_core.state.event_kinds import ApprovalEvent
from deepwork_core.state.events import read_events
from deepwork_core.state.store.port import Store

from tests.fixtures.dashboard_process import dashboard_process
from tests.fixtures.evidence_project import key_of, make_evidence_project
from tests.fixtures.state_rows import approval_json, write_approval_json
from tests.fixtures.stdio_server import Server, serve
from tests.fixtures.trust import commit_on_base

pytestmark = pytest.mark.slow  # each test runs real server, CLI and dashboard processes

PLAN = {"plan": "plan.md"}
REAL = "the real plan: delete the production database\n"
DECOY = "a harmless plan: fix a typo\n"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_evidence_project(tmp_path / "project")


@pytest.fixture
def store(root: Path, make_store: Callable[..., Store]) -> Store:
    """The store of the project `root`, as the server and `deepwork approve` open it."""
    return make_store(root)


def deepwork(*args: str) -> subprocess.CompletedProcess[str]:
    """A `deepwork` command as the human runs it, a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "deepwork_mcp", *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def approve(root: Path, session_id: str, *args: str) -> subprocess.CompletedProcess[str]:
    return deepwork("approve", session_id, "--path", str(root), "--yes", *args)


async def waiting(agent: Server, store: Store, root: Path) -> tuple[str, str]:
    """Start the `approved` job and reach its approval: (session id, request id)."""
    started = await agent.ok("start_workflow", goal="g", job_name="approved", workflow_name="main")
    (root / "plan.md").write_text(REAL)
    answer = await agent.ok("finished_step", outputs=PLAN)
    assert answer["status"] == "awaiting_approval"
    session_id: str = started["begin_step"]["session_id"]
    return session_id, request_id(store, session_id)


def request_id(store: Store, session_id: str) -> str:
    record = approval_json(store, session_id)
    found: str = record["request"]["request_id"]
    return found


def approval_events(store: Store, session_id: str) -> list[ApprovalEvent]:
    return [e for e in read_events(store, session_id) if isinstance(e, ApprovalEvent)]


def swap_in_decoy(store: Store, root: Path, session_id: str) -> None:
    """What an agent with a shell can do: point the pending request at a decoy file."""
    (root / "decoy.md").write_text(DECOY)
    record = approval_json(store, session_id)
    record["request"]["shown"] = [
        {"output": "plan", "path": "decoy.md", "sha256": sha256_file(root, "decoy.md")}
    ]
    record["request"]["prompt"] = "Is this typo fix fine?"
    write_approval_json(store, session_id, record)


async def test_an_edited_request_never_gets_a_decoy_approved(root: Path, store: Store) -> None:
    async with serve(root) as agent:
        session_id, first = await waiting(agent, store, root)
        swap_in_decoy(store, root, session_id)

        refused = approve(root, session_id)
        assert refused.returncode == 1
        assert refused.stderr.startswith("approval.request_unverified: "), refused.stderr
        assert DECOY.strip() not in refused.stdout  # the decoy is never shown as the request
        assert approval_events(store, session_id) == []  # nothing decided, nothing logged

        # The server does not take the edited request as its own: it asks anew, for the real file.
        again = await agent.ok("finished_step", outputs=PLAN)
        assert again["status"] == "awaiting_approval"
        asked = again["evidence"]["approval"]
        assert request_id(store, session_id) != first
        assert [s["path"] for s in asked["shown"]] == ["plan.md"]

        shown = approve(root, session_id)
        assert shown.returncode == 0, shown.stderr
        assert "plan.md" in shown.stdout
        assert "decoy.md" not in shown.stdout
        moved = await agent.ok("finished_step", outputs=PLAN)
        assert moved["status"] == "next_step"
        [event] = approval_events(store, session_id)
        assert [s.path for s in event.shown] == ["plan.md"]


async def test_the_dashboard_shows_only_the_servers_request(root: Path, store: Store) -> None:
    async with serve(root) as agent:
        session_id, request_id = await waiting(agent, store, root)
        swap_in_decoy(store, root, session_id)
        async with dashboard_process(root) as url:
            page = await get_page(url, "/approvals")
            assert "approval.request_unverified" in page
            assert "decoy.md" not in page
            assert DECOY.strip() not in page
            assert 'value="approve"' not in page  # no button for a request that is not the server's
            status, answer = await post_decision(url, session_id, request_id)
        assert status == 409
        assert "approval.request_unverified" in answer
        assert approval_events(store, session_id) == []
        again = await agent.ok("finished_step", outputs=PLAN)
        assert again["status"] == "awaiting_approval"


async def test_an_aborted_runs_approval_is_withdrawn(root: Path, store: Store) -> None:
    async with serve(root) as agent:
        session_id, _ = await waiting(agent, store, root)
        await agent.ok("abort_workflow", explanation="changed my mind")

        refused = approve(root, session_id)
        assert refused.returncode == 1
        assert refused.stderr.startswith("approval.none_pending: "), refused.stderr
        assert approval_events(store, session_id) == []


async def test_the_dashboard_refuses_an_aborted_runs_approval(root: Path, store: Store) -> None:
    async with serve(root) as agent:
        session_id, request_id = await waiting(agent, store, root)
        await agent.ok("abort_workflow", explanation="changed my mind")
        async with dashboard_process(root) as url:
            status, page = await post_decision(url, session_id, request_id)
        assert status == 409
        assert "approval.cancelled" in page
        assert approval_events(store, session_id) == []


async def test_a_replaced_approval_key_is_used_without_a_restart(root: Path, store: Store) -> None:
    async with serve(root) as agent:
        session_id, _ = await waiting(agent, store, root)
        # The key is deleted, as docs/security.md advises after an unsafe one.
        key_of(root).path.unlink()
        stale = approve(root, session_id)  # makes the new key; the old request no longer counts
        assert stale.returncode == 1
        assert stale.stderr.startswith("approval.request_unverified: "), stale.stderr

        again = await agent.ok("finished_step", outputs=PLAN)
        assert again["status"] == "awaiting_approval"  # asked anew, sealed with the new key
        done = approve(root, session_id)
        assert done.returncode == 0, done.stderr
        moved = await agent.ok("finished_step", outputs=PLAN)
        assert moved["status"] == "next_step"


async def test_a_project_that_trusts_approvers_counts_only_their_signatures(
    root: Path, store: Store
) -> None:
    made = deepwork("approver", "init", "--name", "alice", "--path", str(root))
    assert made.returncode == 0, made.stderr
    written = (root / APPROVERS_DIR / "alice.pub").read_text()
    assert written.startswith("deepwork-approver ed25519 ")
    merge_into_base(root, "alice")
    async with serve(root) as agent:
        session_id, _ = await waiting(agent, store, root)
        # An agent holding the project's HMAC key (or writing the store directly) records a
        # sealed, logged, unsigned decision: it does not count.
        unsigned = ApprovalStore(store, root, key_of(root), trusted=TrustedApprovers(root / "none"))
        record_decision(
            unsigned, session_id, approved=True, comment=None, channel=ApprovalChannel.CLI,
            actor="agent@box", terminal=None, now=_now(),
        )  # fmt: skip
        text = await agent.error("finished_step", "approval.unverified", outputs=PLAN)
        assert "signature" in text

        done = approve(root, session_id)  # signs with alice's key, the only one here
        assert done.returncode == 0, done.stderr
        assert "signed by approver alice" in done.stdout
        moved = await agent.ok("finished_step", outputs=PLAN)
        assert moved["status"] == "next_step"
        signed = [e for e in approval_events(store, session_id) if e.actor != "agent@box"]
        assert len(signed) == 1


async def test_a_signature_by_an_untrusted_approver_does_not_count(
    root: Path, store: Store
) -> None:
    assert deepwork("approver", "init", "--name", "alice", "--path", str(root)).returncode == 0
    merge_into_base(root, "alice")
    assert deepwork("approver", "init", "--name", "mallory", "--no-trust").returncode == 0
    async with serve(root) as agent:
        session_id, _ = await waiting(agent, store, root)
        refused = approve(root, session_id, "--approver", "mallory")
        assert refused.returncode == 1
        assert refused.stderr.startswith("approval.untrusted_key: "), refused.stderr
        assert approval_events(store, session_id) == []
        # The agent drops mallory's `.pub` into the checkout (untracked): still not trusted.
        planting = deepwork("approver", "init", "--name", "mallory", "--path", str(root))
        assert planting.returncode == 0, planting.stderr
        planted = approve(root, session_id, "--approver", "mallory")
        assert planted.returncode == 1
        assert planted.stderr.startswith("approval.untrusted_key: "), planted.stderr
        assert "mallory.pub is only in the working tree" in planted.stderr
        assert approval_events(store, session_id) == []

        # An agent with a key of its own writes a signed, sealed, logged decision: no use.
        state = Path(os.environ["DEEPWORK_STATE_DIR"])
        mallory = ApproverSigner("mallory", state / "approvers" / "mallory.key")
        own = ApprovalStore(
            store,
            root,
            key_of(root),
            trusted=TrustedApprovers(root / "none"),
            signer=mallory,
        )
        record_decision(
            own, session_id, approved=True, comment=None, channel=ApprovalChannel.CLI,
            actor="agent@box", terminal=None, now=_now(),
        )  # fmt: skip
        text = await agent.error("finished_step", "approval.untrusted_key", outputs=PLAN)
        assert "'mallory' is not trusted" in text


def merge_into_base(root: Path, name: str) -> None:
    """Commit the `.pub` `deepwork approver init` wrote for `name` onto the base branch, as the
    project's owners do once they accept the approver (docs/team.md)."""
    relative = f"{APPROVERS_DIR}/{name}.pub"
    commit_on_base(root, relative, (root / relative).read_text())


def _now() -> datetime:
    return datetime.now(UTC)


async def get_page(url: str, path: str) -> str:
    parts = urlsplit(url)

    def send() -> str:
        assert parts.hostname is not None
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        try:
            connection.request("GET", f"{path}?{parts.query}")
            response = connection.getresponse()
            assert response.status == 200
            return response.read().decode()
        finally:
            connection.close()

    return await asyncio.to_thread(send)


async def post_decision(url: str, session_id: str, request_id: str) -> tuple[int, str]:
    """The dashboard's Approve button, as HTTP: (status, page)."""
    parts = urlsplit(url)
    token = parts.query.removeprefix("token=")
    body = urlencode({"token": token, "request_id": request_id, "decision": "approve"})

    def send() -> tuple[int, str]:
        assert parts.hostname is not None
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        try:
            connection.request(
                "POST",
                f"/approvals/{session_id}?token={token}",
                body=body,
                headers={"Content-Type": "application/x-www-form-urlencoded"},
            )
            response = connection.getresponse()
            return response.status, response.read().decode()
        finally:
            connection.close()

    return await asyncio.to_thread(send)
