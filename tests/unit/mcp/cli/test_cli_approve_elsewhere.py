"""`deepwork approve` from another checkout of a shared store (docs/team.md): two folders, one
real PostgreSQL. The request is read from the store under the project that serves the run, the
decision is signed and lands there, and the answer names that project and its machine."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from click.testing import CliRunner
from deepwork_core.evidence.hashes import ShownOutput, sha256_file
from deepwork_core.state.approvals.models import ApprovalRequest
from deepwork_core.state.approvals.signatures import ApproverSigner, TrustedApprovers
from deepwork_core.state.approvals.store import ApprovalStore
from deepwork_core.state.store.opening import open_store
from deepwork_core.state.store.url import STORE_URL_ENV
from deepwork_mcp.approvals.keys import approver_path, state_dir
from deepwork_mcp.cli import cli

from tests.fixtures.evidence_project import key_of
from tests.fixtures.trust import trust_on_base

SID = "sess_elsewhere1"


def serving_checkout(root: Path, pg_url: str, signer: ApproverSigner) -> None:
    """Checkout `root` trusts `signer` on its base branch and its server opened a request."""
    root.mkdir()
    (root / ".deepwork").mkdir()
    trust_on_base(root, signer)
    (root / "plan.md").write_text("the serving checkout's plan\n")
    store = open_store(pg_url, root)
    try:
        trusted = TrustedApprovers(root, shared=True)
        ApprovalStore(store, root, key_of(root), trusted=trusted).open_request(
            ApprovalRequest(
                request_id="req-a",
                session_id=SID,
                job_name="ship",
                workflow_name="main",
                step_ids=["plan"],
                prompt="Is the plan good to go?",
                shown=[
                    ShownOutput(output="plan", path="plan.md", sha256=sha256_file(root, "plan.md"))
                ],
                requested_at=datetime(2026, 12, 1, tzinfo=UTC),
            )
        )
    finally:
        store.close()


def test_approve_from_a_second_checkout_decides_the_run_the_first_one_serves(
    tmp_path: Path, pg_url: str
) -> None:
    alice = ApproverSigner("alice", approver_path(state_dir(os.environ), "alice"))
    alice.create()
    a, b = tmp_path / "a", tmp_path / "b"
    serving_checkout(a, pg_url, alice)
    b.mkdir()
    (b / ".deepwork").mkdir()
    trust_on_base(b, alice)
    (b / "plan.md").write_text("the second checkout's own bytes\n")
    env = {STORE_URL_ENV: pg_url, "DEEPWORK_APPROVER": "alice"}

    done = CliRunner().invoke(cli, ["approve", SID, "--path", str(b), "--yes"], env=env)

    assert done.exit_code == 0, done.output
    assert f"Run served by project {a.resolve()} on " in done.output
    assert "Is the plan good to go?" in done.output
    assert sha256_file(a, "plan.md") in done.output
    assert "the second checkout's own bytes" not in done.output  # never B's file of that name
    assert "signed by approver alice" in done.output
    assert f"served by project {a.resolve()}" in done.output.splitlines()[-1]
    store = open_store(pg_url, a)
    try:
        served = ApprovalStore(store, a, key_of(a), trusted=TrustedApprovers(a, shared=True))
        record = served.load_verified(SID)  # the signature counts where the run is served
    finally:
        store.close()
    assert record is not None
    assert record.decision is not None
    assert record.decision.approved
    assert record.decision.signer == "alice"


def test_a_session_no_project_of_the_store_waits_on_is_none_pending(
    tmp_path: Path, pg_url: str
) -> None:
    alice = ApproverSigner("alice", approver_path(state_dir(os.environ), "alice"))
    alice.create()
    serving_checkout(tmp_path / "a", pg_url, alice)
    b = tmp_path / "b"
    (b / ".deepwork").mkdir(parents=True)
    trust_on_base(b, alice)
    env = {STORE_URL_ENV: pg_url, "DEEPWORK_APPROVER": "alice"}

    done = CliRunner().invoke(cli, ["approve", "sess_nobody", "--path", str(b), "--yes"], env=env)

    assert done.exit_code == 1
    assert "approval.none_pending" in done.output
