"""`deepwork approver init`: the approver's key pair, the private half outside the project
(docs/team.md)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from click.testing import CliRunner
from deepwork_core.evidence.trusted_keys import parse_public_line
from deepwork_core.state.approvals.signatures import TrustedApprovers
from deepwork_mcp.cli import cli

from tests.fixtures.trust import commit_on_base


def test_init_makes_a_0600_key_and_writes_the_projects_pub(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["approver", "init", "--name", "alice", "--path", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    key = Path(os.environ["DEEPWORK_STATE_DIR"]) / "approvers" / "alice.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    pub = tmp_path / ".deepwork" / "approvers" / "alice.pub"
    assert parse_public_line(pub.read_text()) is not None
    assert "commit it" in result.output
    assert "merge it into the base branch" in result.output
    # Written, not yet trusted: a key counts once it is committed on the base branch.
    assert TrustedApprovers(tmp_path).names() == []
    commit_on_base(tmp_path, ".deepwork/approvers/alice.pub", pub.read_text())
    assert TrustedApprovers(tmp_path).names() == ["alice"]

    first = pub.read_text()
    again = CliRunner().invoke(
        cli, ["approver", "init", "--name", "alice", "--path", str(tmp_path)]
    )
    assert again.exit_code == 0
    assert "Kept" in again.output
    assert pub.read_text() == first  # the same key


def test_no_trust_leaves_the_project_alone_and_prints_the_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["approver", "init", "--name", "bob", "--no-trust", "--path", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert "deepwork-approver ed25519 " in result.output
    assert not (tmp_path / ".deepwork").exists()


def test_a_name_that_is_not_a_plain_file_name_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["approver", "init", "--name", "../x", "--path", str(tmp_path)]
    )
    assert result.exit_code == 1
    assert result.output.startswith("Error: approval.key_unavailable: ")
