"""`deepwork audit export` and `deepwork audit verify` (docs/team.md, "An audit record"): the
record of a run's approvals, checked offline with the keys of the base ref only."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.receipts.keys import GateKey
from deepwork_core.state.approvals.decide import record_decision
from deepwork_core.state.approvals.models import ApprovalChannel
from deepwork_core.state.approvals.signatures import ApproverSigner, TrustedApprovers
from deepwork_core.state.approvals.store import ApprovalStore
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store
from deepwork_mcp.approvals.keys import gate_key, state_dir
from deepwork_mcp.cli import cli

from tests.fixtures.evidence_project import key_of, make_evidence_project
from tests.fixtures.trust import commit_on_base, trust_on_base


@dataclass
class Exported:
    root: Path
    session_id: str
    record: Path
    gate: GateKey


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture
def exported(tmp_path: Path, make_store: Callable[..., Store]) -> Exported:
    """A run whose `plan` step alice approved, signed; its record exported; the gate key that
    signed it committed on the base branch with alice's."""
    root = make_evidence_project(tmp_path / "project")
    alice = ApproverSigner("alice", tmp_path / "alice.key")
    alice.create()
    trust_on_base(root, alice)
    store = make_store(root)
    catalog, sessions = JobCatalog.for_project(root), SessionStore(store, root)
    engine = WorkflowEngine(root, catalog, sessions, approval_key=key_of(root))
    session_id = engine.start("ship the plan", "approved", "main").brief.session_id
    (root / "plan.md").write_text("the plan\n")
    engine.finish({"plan": "plan.md"})
    approvals = ApprovalStore(
        store, root, key_of(root), trusted=TrustedApprovers(root), signer=alice
    )
    record_decision(
        approvals, session_id, approved=True, comment="fine", channel=ApprovalChannel.CLI,
        actor="alice@b", terminal=None, now=datetime(2026, 12, 1, 2, tzinfo=UTC),
    )  # fmt: skip
    engine.finish({"plan": "plan.md"})  # the decision is used: the step completes
    gate = gate_key(state_dir(os.environ))
    commit_on_base(root, gate.pub_path, gate.public_line() + "\n")
    out = tmp_path / "audit.json"
    code, output = run("audit", "export", session_id, "--out", str(out), "--path", str(root))
    assert code == 0, output
    return Exported(root, session_id, out, gate)


def test_the_record_holds_the_chain_and_verifies_offline(exported: Exported) -> None:
    body = json.loads(exported.record.read_text())["body"]
    [session] = body["sessions"]
    [entry] = session["requests"]
    shown = entry["request"]["shown"]
    assert [s["path"] for s in shown] == ["plan.md"]
    assert entry["kept"] == [{"path": "plan.md", "size": 9, "kept": "whole"}]
    decision = entry["decision"]
    assert (decision["signer"], decision["approved"]) == ("alice", True)
    assert decision["signature"]
    assert decision["decided_at"] == "2026-12-01T02:00:00Z"
    assert "step_finished" in [c["event"] for c in entry["caused"]]
    code, output = run("audit", "verify", str(exported.record), "--path", str(exported.root))
    assert code == 0, output
    assert "the audit record holds" in output


@pytest.mark.parametrize(
    ("old", "new", "finding"),
    [
        ('"approved":true', '"approved":false', "audit.signature_invalid"),
        ('"path":"plan.md"', '"path":"plan.mE"', "audit.signature_invalid"),
        ("{", "{ ", "audit.edited"),
        ('"signer":"alice"', '"signer":"mallory"', "audit.decision_unverified"),
    ],
)
def test_an_edited_byte_fails_with_a_coded_finding(
    exported: Exported, old: str, new: str, finding: str
) -> None:
    text = exported.record.read_text()
    assert old in text
    exported.record.write_text(text.replace(old, new, 1))
    code, output = run("audit", "verify", str(exported.record), "--path", str(exported.root))
    assert code == 1
    assert finding in output


def test_every_single_byte_edit_fails(exported: Exported) -> None:
    raw = exported.record.read_bytes()
    for position in range(0, len(raw), max(1, len(raw) // 40)):
        edited = bytearray(raw)
        edited[position] = ord("#") if raw[position] != ord("#") else ord("$")
        exported.record.write_bytes(bytes(edited))
        code, output = run("audit", "verify", str(exported.record), "--path", str(exported.root))
        assert code == 1, f"byte {position} edited and the record still holds"
        assert "audit." in output


def test_a_gate_key_not_on_the_base_ref_and_a_missing_base_are_findings(
    exported: Exported, tmp_path: Path
) -> None:
    other = make_evidence_project(tmp_path / "other")
    code, output = run("audit", "verify", str(exported.record), "--path", str(other))
    assert code == 1
    assert "audit.untrusted_key" in output
    code, output = run(
        "audit", "verify", str(exported.record), "--path", str(exported.root), "--base", "nope"
    )
    assert code == 1
    assert "audit.base_missing" in output
    assert "nope" in output


def test_exporting_an_unknown_run_is_a_coded_error(exported: Exported) -> None:
    code, output = run("audit", "export", "sess_unknown1", "--path", str(exported.root))
    assert code == 1
    assert "session.not_found" in output


def test_the_record_says_how_each_request_ended_and_verify_checks_it(exported: Exported) -> None:
    from deepwork_core.receipts.audit_record import AUDIT_LABEL, canonical_text

    document = json.loads(exported.record.read_text())
    [entry] = document["body"]["sessions"][0]["requests"]
    end = entry["end"]
    assert (end["state"], end["computed"]) == ("approved", False)
    assert "approver alice" in end["why"]
    assert [d["signer"] for d in entry["decisions"]] == ["alice"]

    # a record whose end its decisions do not support fails, even signed again by the gate
    for state, finding in [("rejected", "reads rejected"), ("expired", "reads expired")]:
        entry["end"] = {**end, "state": state}
        signature = {"key": exported.gate.name}
        signature["ed25519"] = exported.gate.sign(document["body"], AUDIT_LABEL)
        exported.record.write_text(
            canonical_text({"body": document["body"], "signature": signature})
        )
        code, output = run("audit", "verify", str(exported.record), "--path", str(exported.root))
        assert code == 1
        assert "audit.end_unsupported" in output
        assert finding in output
