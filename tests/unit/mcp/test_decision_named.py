"""Every tool answer that follows a person's decision names who decided (docs/evidence.md):
the `next_step` after an approved step and the `needs_work` after a rejected one carry the
decision in `evidence.approvals`, with the signer and `decided_by` ("approver <name> (on
<machine> as <user>)"), and say it in `feedback`, as `workflow_complete` lists every decision."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from deepwork_core.base.identifiers import SessionId
from deepwork_core.state.approvals.decide import record_decision
from deepwork_core.state.approvals.models import ApprovalChannel
from deepwork_core.state.approvals.signatures import ApproverSigner, TrustedApprovers
from deepwork_core.state.approvals.store import ApprovalStore
from deepwork_core.state.store.port import Store
from deepwork_mcp.approvals.keys import approver_path, state_dir
from deepwork_mcp.cli import cli
from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config
from tests.fixtures.evidence_project import key_of, make_evidence_project
from tests.fixtures.trust import trust_on_base

BOB = "approver bob (on laptop as bob.smith)"


def signed_project(tmp_path: Path) -> tuple[Path, ApproverSigner]:
    """The evidence project with approver bob's key committed on its base branch."""
    root = make_evidence_project(tmp_path / "project")
    bob = ApproverSigner("bob", approver_path(state_dir(os.environ), "bob"))
    bob.create()
    trust_on_base(root, bob)
    (root / "plan.md").write_text("the plan\n")
    return root, bob


def decide(store: Store, root: Path, bob: ApproverSigner, session_id: str, approved: bool) -> None:
    approvals = ApprovalStore(store, root, key_of(root), trusted=TrustedApprovers(root), signer=bob)
    record_decision(
        approvals, SessionId(session_id), approved=approved,
        comment=None if approved else "name the risks", channel=ApprovalChannel.CLI,
        actor="bob.smith@laptop", terminal=None, now=datetime.now(UTC),
    )  # fmt: skip


async def finish(client: Client[Any], **outputs: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """`finished_step`'s structured answer and its text, parsed."""
    result = await client.call_tool("finished_step", {"outputs": outputs})
    assert result.structured_content is not None
    [text] = result.content
    return result.structured_content, json.loads(getattr(text, "text", ""))


async def started(client: Client[Any]) -> str:
    begun = await client.call_tool(
        "start_workflow", {"goal": "g", "job_name": "approved", "workflow_name": "main"}
    )
    assert begun.structured_content is not None
    return str(begun.structured_content["begin_step"]["session_id"])


async def test_the_next_step_after_a_signed_approval_names_the_signer(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    root, bob = signed_project(tmp_path)
    async with Client(create_server(root, config())) as client:
        session_id = await started(client)
        waiting, _ = await finish(client, plan="plan.md")
        assert waiting["status"] == "awaiting_approval"
        assert waiting["evidence"]["approvals"] is None  # nothing decided yet
        decide(make_store(root), root, bob, session_id, approved=True)

        moved, text = await finish(client, plan="plan.md")
        assert moved["status"] == "next_step"
        assert moved["begin_step"]["step_id"] == "build"
        assert text == moved
        [given] = moved["evidence"]["approvals"]
        assert (given["approved"], given["signer"], given["decided_by"]) == (True, "bob", BOB)
        assert given["step_ids"] == ["plan"]
        assert moved["feedback"] == f"The approval request ended approved: {BOB}."

        (root / "result.md").write_text("the result\n")
        done, _ = await finish(client, result="result.md")
    assert done["status"] == "workflow_complete"
    # the completion lists the run's decisions, the same entry the next_step carried
    assert done["evidence"]["approvals"] == [given]
    # and `deepwork log` names the signer the same way, never the bare user@host
    printed = CliRunner().invoke(cli, ["log", session_id, "--path", str(root)])
    assert printed.exit_code == 0, printed.output
    [line] = [ln for ln in printed.stdout.splitlines() if "  approval  " in ln]
    assert f"decided_by={BOB}" in line
    assert "bob.smith@laptop" not in line
    assert "actor=" not in line
    assert "signer=" not in line


async def test_the_needs_work_after_a_signed_rejection_names_the_signer(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    root, bob = signed_project(tmp_path)
    async with Client(create_server(root, config())) as client:
        session_id = await started(client)
        await finish(client, plan="plan.md")
        decide(make_store(root), root, bob, session_id, approved=False)

        sent_back, text = await finish(client, plan="plan.md")
    assert sent_back["status"] == "needs_work"
    assert text == sent_back
    [given] = sent_back["evidence"]["approvals"]
    assert (given["approved"], given["signer"], given["decided_by"]) == (False, "bob", BOB)
    assert given["comment"] == "name the risks"
    assert f"changes requested by {BOB}: name the risks" in sent_back["feedback"]
