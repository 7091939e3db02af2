"""`deepwork verify --rereview` (docs/verify.md, "Re-review"): a real run of the `reviewed` job,
judged by the scripted reviewer double on PATH, leaves a receipt in a real git repository; the
real command judges its reviews again with the double and countersigns it with the CI key of
`DEEPWORK_CI_KEY`, which `verify.require_countersign` then accepts; a double that fails is
refused with a finding naming receipt, step and criterion, and nothing is countersigned."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from deepwork_core.base.layout import CONFIG_FILE, GATE_KEYS_DIR
from deepwork_core.receipts.keys import CiKey
from deepwork_core.receipts.model import Receipt
from deepwork_mcp.approvals.keys import gate_key
from deepwork_mcp.cli.group import cli
from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config
from tests.fixtures.git_repo import commit_all, git
from tests.fixtures.reviewer import ScriptedReviewer
from tests.fixtures.tool_calls import call_ok
from tests.fixtures.workflow_project import make_project, write_files


async def _run_reviewed(root: Path, state: Path, final_text: str = "content\n") -> dict[str, Any]:
    settings = config(external_runner="claude", wait_seconds=45)
    async with Client(create_server(root, settings, state_dir=state)) as client:
        await call_ok(client, "start_workflow", goal="g", job_name="reviewed", workflow_name="main")
        write_files(root, "report.md")
        write_files(root, "final.md", text=final_text)
        await call_ok(client, "finished_step", outputs={"report": "report.md"})
        answer: dict[str, Any] = await call_ok(
            client, "finished_step", outputs={"final": "final.md"}
        )
        return answer


@pytest.fixture
def project(tmp_path: Path, reviewer_on_path: ScriptedReviewer) -> Path:
    """A repository whose `main` trusts the machine's gate key and the CI key `ci` and requires
    countersignatures, and whose branch `feature` holds a reviewed run and its receipt."""
    root = make_project(tmp_path / "project")
    state = tmp_path / "state"
    key = gate_key(state)
    (root / GATE_KEYS_DIR).mkdir(parents=True)
    (root / key.pub_path).write_text(key.public_line())
    (root / CONFIG_FILE).write_text("verify:\n  require_countersign: true\n")
    commit_all(root, "project, gate key, policy")
    git(root, "checkout", "-q", "-b", "feature")
    answer = asyncio.run(_run_reviewed(root, state))
    assert answer["status"] == "workflow_complete", answer
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the run's outputs and receipt")
    return root


def _trust_ci_key(root: Path, key: CiKey) -> None:
    git(root, "checkout", "-q", "main")
    (root / key.pub_path).parent.mkdir(parents=True, exist_ok=True)
    (root / key.pub_path).write_text(key.public_line())
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "trust the CI key")
    git(root, "checkout", "-q", "feature")
    git(root, "rebase", "-q", "main")


def _verify(root: Path, *args: str, key: CiKey | None = None) -> Result:
    env = {"DEEPWORK_CI_KEY": key.secret_line() if key else ""}
    return CliRunner().invoke(
        cli, ["verify", "--path", str(root), "--base", "main", *args], env=env
    )


def _receipt(root: Path) -> Receipt:
    (path,) = (root / ".deepwork/receipts/reviewed").glob("*.json")
    return Receipt.model_validate_json(path.read_text())


def _findings(result: Result) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]


def test_a_passing_rereview_countersigns_and_require_countersign_accepts(
    project: Path, reviewer_on_path: ScriptedReviewer
) -> None:
    key = CiKey.new("ci")
    _trust_ci_key(project, key)
    refused = _verify(project, "--format", "json")
    assert refused.exit_code == 1
    assert {f["code"] for f in _findings(refused)} == {"verify.countersign_missing"}
    before = len(reviewer_on_path.calls())

    result = _verify(project, "--rereview", "--runner", "claude", key=key)

    assert result.exit_code == 0, result.output
    assert "1 receipt checked, all hold" in result.output
    assert "1 receipt(s) countersigned by ci" in result.output
    calls = reviewer_on_path.calls()[before:]
    assert len(calls) == 2  # write's step review and polish's review of final.md
    assert any("Does the report cover the topic?" in c["stdin"] for c in calls)
    assert any("content\nfinal.md" in c["stdin"] for c in calls)  # the committed bytes
    (sign,) = _receipt(project).countersignatures
    assert (sign.key, sign.runner) == ("ci", "claude")
    assert sorted((r.step, r.review, r.verdict) for r in sign.reviews) == [
        ("polish", "final", "passed"),
        ("write", "step", "passed"),
    ]
    # The countersigned receipt is a file of the change: plain verify now accepts it.
    plain = _verify(project)
    assert plain.exit_code == 0, plain.output
    # ...until the countersignature is edited.
    path = next((project / ".deepwork/receipts/reviewed").glob("*.json"))
    document = json.loads(path.read_text())
    document["countersignatures"][0]["reviews"][0]["verdict"] = "failed"
    path.write_bytes(Receipt.model_validate(document).text())
    edited = _verify(project, "--format", "json")
    assert {f["code"] for f in _findings(edited)} == {
        "verify.countersign_invalid",
        "verify.countersign_missing",
    }


def test_a_failing_rereview_is_refused_naming_receipt_step_and_criterion(
    project: Path, reviewer_on_path: ScriptedReviewer
) -> None:
    key = CiKey.new("ci")
    _trust_ci_key(project, key)
    reviewer_on_path.answer("fail", when="Is the text polished?")
    receipt_before = next((project / ".deepwork/receipts/reviewed").glob("*.json")).read_bytes()

    result = _verify(project, "--rereview", "--format", "json", key=key)

    assert result.exit_code == 1
    findings = _findings(result)
    failed = [f for f in findings if f["code"] == "verify.rereview_failed"]
    assert len(failed) == 1, findings
    assert failed[0]["step"] == "polish"
    assert failed[0]["receipt"].startswith(".deepwork/receipts/reviewed/")
    assert "'Polished'" in failed[0]["message"]
    assert {f["code"] for f in findings} == {"verify.rereview_failed", "verify.countersign_missing"}
    after = next((project / ".deepwork/receipts/reviewed").glob("*.json")).read_bytes()
    assert after == receipt_before  # nothing countersigned


def test_rereview_without_a_key_an_untrusted_key_or_the_runner(
    project: Path, reviewer_on_path: ScriptedReviewer
) -> None:
    no_key = _verify(project, "--rereview")
    assert no_key.exit_code == 2
    assert "verify.ci_key_invalid" in no_key.output
    assert _verify(project, "--runner", "codex").exit_code == 2  # --runner needs --rereview

    untrusted = _verify(project, "--rereview", "--format", "json", key=CiKey.new("ci"))
    assert untrusted.exit_code == 1
    codes = {f["code"] for f in _findings(untrusted)}
    assert codes == {"verify.ci_key_untrusted", "verify.countersign_missing"}

    key = CiKey.new("ci2")
    _trust_ci_key(project, key)
    (reviewer_on_path.bin_dir / "gemini").unlink()  # and no other gemini on PATH, in tests
    missing = _verify(project, "--rereview", "--runner", "gemini", "--format", "json", key=key)
    assert missing.exit_code == 1
    codes = {f["code"] for f in _findings(missing)}
    assert codes == {"verify.runner_missing", "verify.countersign_missing"}
