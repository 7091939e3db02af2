"""`deepwork ci-key NAME` (docs/verify.md, "Keys"): the public half listed in the project, the
secret printed once and parsed back by `--rereview`, never written to a file."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from deepwork_core.evidence.trusted_keys import parse_public_line
from deepwork_core.receipts.keys import CiKey
from deepwork_mcp.cli.group import cli


def test_ci_key_lists_the_public_half_and_prints_the_secret_once(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["ci-key", "ci", "--path", str(tmp_path)])

    assert result.exit_code == 0, result.output
    secret = result.stdout.strip()
    key = CiKey.parse(secret)
    listing = tmp_path / ".deepwork" / "ci_keys" / "ci.pub"
    assert parse_public_line(listing.read_text(), "deepwork-ci") == key.public_key()
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files == [listing]  # the secret is in no file
    assert secret.split()[2] not in listing.read_text()

    again = CliRunner().invoke(cli, ["ci-key", "ci", "--path", str(tmp_path)])
    assert again.exit_code == 1
    assert "exists already" in again.output
    assert parse_public_line(listing.read_text(), "deepwork-ci") == key.public_key()


def test_ci_key_refuses_a_name_that_cannot_name_a_key(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["ci-key", "../x", "--path", str(tmp_path)])
    assert result.exit_code == 1
    assert "verify.ci_key_invalid" in result.output
    assert not (tmp_path / ".deepwork").exists()
