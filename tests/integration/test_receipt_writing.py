"""Which runs leave a receipt, and with which key (docs/verify.md, "The receipt" and "Keys"):
through the real server, the first completed run on a machine makes its gate key and lists the
public half under `.deepwork/gate_keys/` (the answer says to commit both); a later run signs
with the same key and lists nothing new. A run that is unfinished or aborted has no receipt,
and `deepwork receipt` refuses to write one (`receipt.not_completed`). A nested run has a
receipt of its own, naming its parent, and both verify."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from deepwork_core.base.layout import GATE_KEYS_DIR, RECEIPTS_DIR
from deepwork_mcp.approvals.keys import gate_key
from deepwork_mcp.cli.group import cli
from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config
from tests.fixtures.git_repo import commit_all, git
from tests.fixtures.receipt_repo import OUTPUTS
from tests.fixtures.tool_calls import call_ok
from tests.fixtures.workflow_project import make_project, write_files


def _state() -> Path:
    return Path(os.environ["DEEPWORK_STATE_DIR"])


def _project(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "project")
    commit_all(root, "the project")
    return root


async def _complete(client: Client[Any], root: Path) -> dict[str, Any]:
    await call_ok(client, "start_workflow", goal="g", job_name="three_step", workflow_name="main")
    write_files(root, "notes.md", "drafts/1.md", "final.md")
    answer: dict[str, Any] = {}
    for outputs in OUTPUTS:
        answer = await call_ok(client, "finished_step", outputs=outputs)
    assert answer["status"] == "workflow_complete", answer
    return answer


async def test_the_first_run_makes_the_gate_key_and_lists_it_once(tmp_path: Path) -> None:
    root = _project(tmp_path)
    key_file = _state() / "gate" / "gate.key"
    assert not key_file.exists()
    async with Client(create_server(root, config(), state_dir=_state())) as client:
        first = await _complete(client, root)
        second = await _complete(client, root)

    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = gate_key(_state())
    listing = f"{GATE_KEYS_DIR}/{key.name}.pub"
    assert key.pub_path == listing
    assert (root / listing).read_text() == key.public_line()
    (note,) = first["evidence"]["receipts"]
    assert (note["key"], note["listed_key"]) == (key.name, listing)
    assert f"git add {note['path']} {listing}" in first["summary"]
    assert "trusted once merged into the base branch" in first["summary"]

    (again,) = second["evidence"]["receipts"]
    assert again["key"] == key.name
    assert "listed_key" not in again  # the answer leaves out what is None
    assert again["path"] != note["path"]
    assert listing not in second["summary"]
    assert sorted(p.name for p in (root / GATE_KEYS_DIR).iterdir()) == [f"{key.name}.pub"]


async def test_an_unfinished_or_aborted_run_has_no_receipt(tmp_path: Path) -> None:
    root = _project(tmp_path)
    async with Client(create_server(root, config(), state_dir=_state())) as client:
        started = await call_ok(
            client, "start_workflow", goal="g", job_name="three_step", workflow_name="main"
        )
        session_id = started["begin_step"]["session_id"]
        write_files(root, "notes.md")
        step = await call_ok(client, "finished_step", outputs=OUTPUTS[0])
        assert step["status"] == "next_step"
        assert "receipts" not in str(step.get("evidence"))
        assert not (root / RECEIPTS_DIR).exists()

        unfinished = CliRunner().invoke(cli, ["receipt", session_id, "--path", str(root)])
        assert unfinished.exit_code == 1
        assert "receipt.not_completed" in unfinished.output

        await call_ok(client, "abort_workflow", explanation="not needed after all")
    assert not (root / RECEIPTS_DIR).exists()
    assert not (root / GATE_KEYS_DIR).exists()

    aborted = CliRunner().invoke(cli, ["receipt", session_id, "--path", str(root)])
    assert aborted.exit_code == 1
    assert "receipt.not_completed" in aborted.output
    assert "aborted" in aborted.output
    assert not (root / RECEIPTS_DIR).exists()


async def test_a_nested_run_has_a_receipt_of_its_own_and_both_verify(tmp_path: Path) -> None:
    root = _project(tmp_path)
    key = gate_key(_state())
    (root / GATE_KEYS_DIR).mkdir(parents=True)
    (root / key.pub_path).write_text(key.public_line())
    commit_all(root, "the gate key")
    git(root, "checkout", "-q", "-b", "feature")
    async with Client(create_server(root, config(), state_dir=_state())) as client:
        top = await call_ok(
            client, "start_workflow", goal="g", job_name="three_step", workflow_name="main"
        )
        write_files(root, "notes.md", "one.md", "drafts/1.md", "final.md")
        await call_ok(client, "finished_step", outputs=OUTPUTS[0])
        nested = await call_ok(
            client, "start_workflow", goal="n", job_name="multi", workflow_name="alpha"
        )
        inner = await call_ok(client, "finished_step", outputs={"one_out": "one.md"})
        (inner_note,) = inner["evidence"]["receipts"]
        for outputs in OUTPUTS[1:]:
            outer = await call_ok(client, "finished_step", outputs=outputs)
    assert outer["status"] == "workflow_complete"
    (outer_note,) = outer["evidence"]["receipts"]
    top_id, nested_id = top["begin_step"]["session_id"], nested["begin_step"]["session_id"]
    assert (inner_note["session_id"], outer_note["session_id"]) == (nested_id, top_id)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "both runs")

    result = CliRunner().invoke(cli, ["verify", "--path", str(root), "--base", "main"])
    assert result.exit_code == 0, result.output
    assert "2 receipts checked, all hold" in result.output
    receipt = json.loads((root / inner_note["path"]).read_text())
    assert (receipt["body"]["job"], receipt["body"]["parent_session_id"]) == ("multi", top_id)
