"""The receipt of a real run, end to end: `deepwork serve` over stdio runs a workflow, the
completion answer names the receipt to commit, `deepwork receipt` writes the same bytes again,
and `deepwork verify` (a process of its own)
accepts it on a fresh clone in another folder, and refuses it once an output is edited."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from deepwork_core.base.layout import GATE_KEYS_DIR
from deepwork_mcp.approvals.keys import gate_key

from tests.fixtures.git_repo import commit_all, git
from tests.fixtures.receipt_repo import OUTPUTS
from tests.fixtures.stdio_server import serve
from tests.fixtures.workflow_project import make_project, write_files


def deepwork(where: Path, command: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deepwork_mcp", command, "--path", str(where), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
async def test_a_real_runs_receipt_verifies_on_a_fresh_clone(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project")
    key = gate_key(Path(os.environ["DEEPWORK_STATE_DIR"]))
    (root / GATE_KEYS_DIR).mkdir(parents=True)
    (root / key.pub_path).write_text(key.public_line())
    commit_all(root, "the project and this machine's gate key")
    git(root, "checkout", "-q", "-b", "feature")

    async with serve(root) as server:
        await server.ok("start_workflow", goal="g", job_name="three_step", workflow_name="main")
        write_files(root, "notes.md", "drafts/1.md", "final.md")
        for outputs in OUTPUTS:
            done = await server.ok("finished_step", outputs=outputs)
    assert done["status"] == "workflow_complete"
    (note,) = done["evidence"]["receipts"]
    assert note["key"] == key.name
    assert "git add " + note["path"] in json.dumps(done)
    receipt = root / note["path"]
    written = receipt.read_bytes()
    receipt.unlink()
    again = deepwork(root, "receipt", note["session_id"])
    assert again.returncode == 0, again.stderr
    assert receipt.read_bytes() == written  # the same run, the same key: the same bytes
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the run, with its receipt")

    clone = tmp_path / "elsewhere" / "clone"
    clone.parent.mkdir()
    git(tmp_path, "clone", "-q", "--branch", "feature", str(root), str(clone))
    for args in ((), ("--all",)):
        result = deepwork(clone, "verify", "--base", "origin/main", *args)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "1 receipt checked, all hold" in result.stdout

    (clone / "final.md").write_text("edited on the clone\n")
    refused = deepwork(clone, "verify", "--base", "origin/main", "--format", "json")
    assert refused.returncode == 1
    (finding,) = [json.loads(line) for line in refused.stdout.splitlines()]
    assert finding["code"] == "verify.output_changed"
    assert (finding["file"], finding["step"]) == ("final.md", "publish")
