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
    assert "APPROVED, waiting for the agent" in run("status", "--path", root)
    listed = run("status", "--all", "--path", root)
    assert listed.startswith("approved, waiting for the agent  policed/main"), listed
    assert "standing=2 of 2 approvals (bob, carol)" in run("log", session_id, "--path", root)
