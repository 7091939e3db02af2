"""A request several must sign, approved by fewer so far, is shown as a partial approval by
`deepwork status` (and `--all`) and `deepwork log` (docs/job-format.md#approval-policy)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner
from deepwork_core.state.store.port import Store
from deepwork_mcp.cli import cli

from tests.unit.core.engine.test_approval_policy_engine import decide, waiting


def run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_status_status_all_and_log_show_one_of_two_approvals(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    w = waiting(tmp_path, make_store)
    root, session_id = str(w.root), w.session_id
    assert f"AWAITING APPROVAL: deepwork approve {session_id}" in run("status", "--path", root)

    decide(w.store, w.root, w.signers["bob"], session_id, w.clock.now)
    status = run("status", "--path", root)
    assert f"AWAITING APPROVAL, 1 of 2 approvals (bob): deepwork approve {session_id}" in status
    listed = run("status", "--all", "--path", root)
    assert listed.startswith("awaiting approval  1 of 2 approvals (bob)  policed/main"), listed
    assert listed.rstrip().endswith("who may decide: bob or carol"), listed  # alice started it
    log = run("log", session_id, "--path", root)
    assert "standing=1 of 2 approvals (bob)" in log

    decide(w.store, w.root, w.signers["carol"], session_id, w.clock.now)
    status = run("status", "--path", root)
    assert "APPROVED, waiting for the agent" in status
    both = "approver bob (on laptop as bob) and approver carol (on laptop as carol)"
    assert f"finished_step; decided by {both}" in status
    listed = run("status", "--all", "--path", root)
    assert listed.startswith("approved, waiting for the agent  policed/main"), listed
    assert "standing=2 of 2 approvals (bob, carol)" in run("log", session_id, "--path", root)


def test_status_names_who_requested_changes_while_the_agent_has_not_picked_it_up(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    from deepwork_core.base.identifiers import SessionId
    from deepwork_core.state.approvals.decide import record_decision
    from deepwork_core.state.approvals.models import ApprovalChannel
    from deepwork_core.state.approvals.signatures import TrustedApprovers
    from deepwork_core.state.approvals.store import ApprovalStore

    from tests.fixtures.evidence_project import key_of

    w = waiting(tmp_path, make_store)
    approvals = ApprovalStore(
        w.store, w.root, key_of(w.root), trusted=TrustedApprovers(w.root), signer=w.signers["bob"]
    )
    record_decision(
        approvals, SessionId(w.session_id), approved=False, comment="wrong figure",
        channel=ApprovalChannel.CLI, actor="bob@laptop", terminal=None, now=w.clock.now,
    )  # fmt: skip
    status = run("status", "--path", str(w.root))
    assert (
        "CHANGES REQUESTED, waiting for the agent's next finished_step; decided by approver bob "
        "(on laptop as bob)"
    ) in status
