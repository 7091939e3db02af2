"""Approvals an agent's shell cannot casually forge (docs/security.md): the real server refuses a
decision written into the approvals file by hand, or edited, or missing from the event log, and
the step keeps waiting until the human runs the real `deepwork approve`."""

from __future__ import annotations

import base64
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from deepwork_core.state.approvals.signatures import ApproverSigner
from deepwork_core.state.event_kinds import ApprovalEvent
from deepwork_core.state.events import read_events
from deepwork_core.state.store.opening import open_store
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.url import STORE_URL_ENV
from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config
from tests.fixtures.evidence_project import make_evidence_project
from tests.fixtures.state_rows import (
    approval_json,
    delete_events,
    insert_decision_by_hand,
    write_approval_json,
)
from tests.fixtures.tool_calls import call_error, call_ok
from tests.fixtures.trust import trust_on_base

PLAN = {"plan": "plan.md"}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_evidence_project(tmp_path / "project")


@pytest.fixture
async def client(root: Path) -> AsyncIterator[Client[Any]]:
    async with Client(create_server(root, config())) as connected:
        yield connected


async def waiting_session(client: Client[Any], root: Path) -> str:
    started = await call_ok(
        client, "start_workflow", goal="g", job_name="approved", workflow_name="main"
    )
    (root / "plan.md").write_text("the plan\n")
    waiting = await call_ok(client, "finished_step", outputs=PLAN)
    assert waiting["status"] == "awaiting_approval"
    session_id: str = started["begin_step"]["session_id"]
    return session_id


def deepwork_approve(root: Path, session_id: str) -> subprocess.CompletedProcess[str]:
    """The human's `deepwork approve`, a process of its own (the environment holds the state
    folder the autouse fixture chose, as the server's does)."""
    return subprocess.run(
        [sys.executable, "-m", "deepwork_mcp", "approve", session_id, "--path", str(root), "--yes"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def forge_approval(store: Store, session_id: str) -> None:
    """What an agent that can reach the store can do: write a decision row by hand."""
    record = approval_json(store, session_id)
    record["decision"] = {
        "request_id": record["request"]["request_id"],
        "approved": True,
        "comment": "looks good",
        "decided_at": "2026-11-23T22:00:00Z",
        "channel": "cli",
        "actor": "alice@laptop",
        "terminal": "/dev/pts/3",
        "shown": record["request"]["shown"],
    }
    write_approval_json(store, session_id, record)


async def test_a_hand_written_approval_is_refused_until_the_human_approves(
    client: Client[Any], root: Path, make_store: Callable[..., Store]
) -> None:
    session_id = await waiting_session(client, root)
    forge_approval(make_store(root), session_id)

    text = await call_error(client, "finished_step", "approval.unverified", outputs=PLAN)
    assert f"session {session_id}" in text
    assert "no MAC" in text
    assert f"deepwork approve {session_id}" in text
    # Still waiting: the refusal changed nothing, and asking again is refused again.
    await call_error(client, "finished_step", "approval.unverified", outputs=PLAN)

    done = deepwork_approve(root, session_id)
    assert done.returncode == 0, done.stderr
    assert "does not count" in done.stderr  # the human is told the file held a forgery
    moved = await call_ok(client, "finished_step", outputs=PLAN)
    assert moved["status"] == "next_step"
    events = [e for e in read_events(make_store(root), session_id) if isinstance(e, ApprovalEvent)]
    assert [(e.channel, e.actor) for e in events] == [("cli", events[0].actor)]
    assert events[0].actor != "alice@laptop"  # only the real decision is in the log


async def test_a_real_approval_with_its_channel_edited_is_refused(
    client: Client[Any], root: Path, make_store: Callable[..., Store]
) -> None:
    session_id = await waiting_session(client, root)
    done = deepwork_approve(root, session_id)
    assert done.returncode == 0, done.stderr
    store = make_store(root)
    record = approval_json(store, session_id)
    record["decision"]["channel"] = "elicitation"
    write_approval_json(store, session_id, record)

    text = await call_error(client, "finished_step", "approval.unverified", outputs=PLAN)
    assert "MAC does not verify" in text


async def test_a_real_approval_missing_from_the_log_is_refused(
    client: Client[Any], root: Path, make_store: Callable[..., Store]
) -> None:
    session_id = await waiting_session(client, root)
    assert deepwork_approve(root, session_id).returncode == 0
    assert delete_events(make_store(root), session_id, "approval") == 1

    text = await call_error(client, "finished_step", "approval.unverified", outputs=PLAN)
    assert "no approval event" in text


async def test_a_real_approval_goes_through(client: Client[Any], root: Path) -> None:
    session_id = await waiting_session(client, root)
    done = deepwork_approve(root, session_id)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    moved = await call_ok(client, "finished_step", outputs=PLAN)
    assert moved["status"] == "next_step"


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
async def test_a_decision_inserted_into_the_database_never_completes_the_step(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent with the database's password INSERTs a decision naming a trusted approver: the
    server refuses it (`approval.unverified`) and the step keeps waiting."""
    url: str | None = None if kind == "sqlite" else request.getfixturevalue("pg_url")
    root = make_evidence_project(tmp_path / "team")
    alice = ApproverSigner("alice", tmp_path / "alice.key")
    alice.create()
    trust_on_base(root, alice)
    if url is None:
        monkeypatch.delenv(STORE_URL_ENV, raising=False)
    else:
        monkeypatch.setenv(STORE_URL_ENV, url)  # as the server reads it
    with open_store(url, root) as db:
        async with Client(create_server(root, config())) as client:
            session_id = await waiting_session(client, root)
            asked = approval_json(db, session_id)["request"]
            forged = {
                "request_id": asked["request_id"],
                "approved": True,
                "decided_at": "2026-11-23T22:00:00Z",
                "channel": "dashboard",
                "actor": "alice@laptop",
                "shown": asked["shown"],
                "signer": "alice",
                "signature": base64.b64encode(bytes(64)).decode(),
            }
            insert_decision_by_hand(db, session_id, forged)

            text = await call_error(client, "finished_step", "approval.unverified", outputs=PLAN)
            assert "does not verify with the trusted key of 'alice'" in text
            await call_error(client, "finished_step", "approval.unverified", outputs=PLAN)
            active = await call_ok(client, "get_active_workflow")
            [top] = active["stack"]
            assert (top["session_id"], top["step"]) == (session_id, "plan")  # still on its step
