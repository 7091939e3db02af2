"""`deepwork approve`, run as the human would: in this process for what it records and refuses,
and as a separate process on a pseudo-terminal and without one for how it asks."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

import pytest
from click.testing import CliRunner
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.evidence.hashes import ShownOutput, sha256_file
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.approvals.models import ApprovalRequest
from deepwork_core.state.approvals.store import ApprovalStore
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store
from deepwork_mcp.approvals.keys import state_dir
from deepwork_mcp.cli import cli

from tests.fixtures.evidence_project import key_of, make_evidence_project

SID = "sess_approve1"


def open_request(make_store: Callable[..., Store], root: Path) -> ApprovalStore:
    (root / "plan.md").write_text("the plan\n")
    # The server seals the request it opens.
    store = ApprovalStore(make_store(root), root, key_of(root))
    store.open_request(
        ApprovalRequest(
            request_id="req-1",
            session_id=SID,
            job_name="ship",
            workflow_name="main",
            step_ids=["plan"],
            prompt="Is this plan good to go?",
            shown=[ShownOutput(output="plan", path="plan.md", sha256=sha256_file(root, "plan.md"))],
            requested_at=datetime(2026, 11, 23, tzinfo=UTC),
        ),
    )
    return store


class Done(NamedTuple):
    """What one `deepwork approve` printed and returned."""

    returncode: int
    stdout: str
    stderr: str


def approve(root: Path, *args: str, session_id: str = SID) -> Done:
    """`deepwork approve SESSION --path ROOT --yes ARGS` in this process, its input no terminal
    (the two tests at the end run it as a separate process, on a terminal and without one)."""
    result = CliRunner().invoke(cli, ["approve", session_id, "--path", str(root), "--yes", *args])
    return Done(result.exit_code, result.stdout, result.stderr)


def test_approving_shows_the_request_and_records_the_decision(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    store = open_request(make_store, tmp_path)
    done = approve(tmp_path, "--comment", "fine")
    assert done.returncode == 0, done.stderr
    assert "Is this plan good to go?" in done.stdout
    assert "plan.md" in done.stdout
    record = store.load(SID)
    assert record is not None
    assert record.decision is not None
    assert record.decision.approved
    assert record.decision.comment == "fine"
    assert record.decision.channel == "cli"
    assert record.decision.terminal is None  # input was not a terminal, and it says so
    assert "@" in record.decision.actor


def test_a_rejection_needs_a_comment(tmp_path: Path, make_store: Callable[..., Store]) -> None:
    store = open_request(make_store, tmp_path)
    done = approve(tmp_path, "--reject")
    assert done.returncode == 2
    assert "--comment" in done.stderr
    record = store.load(SID)
    assert record is not None
    assert record.decision is None


def test_without_a_waiting_step_it_fails_with_the_code(tmp_path: Path) -> None:
    done = approve(tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith("approval.none_pending: ")
    # Issue 43, item 21: a person on the command line is pointed at a command, not a tool.
    assert "start_workflow" not in done.stderr
    assert "`deepwork status` lists the runs waiting for a person" in done.stderr


def test_status_shows_a_step_waiting_for_a_human(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    root = make_evidence_project(tmp_path / "project", with_git=False)
    catalog, store = JobCatalog.for_project(root), SessionStore(make_store(root), root)
    engine = WorkflowEngine(root, catalog, store, approval_key=key_of(root))
    session_id = engine.start("g", "approved", "main").brief.session_id
    (root / "plan.md").write_text("the plan\n")
    engine.finish({"plan": "plan.md"})

    result = CliRunner().invoke(cli, ["status", "--path", str(root)])
    assert f"AWAITING APPROVAL: deepwork approve {session_id}" in result.output
    listed = CliRunner().invoke(cli, ["status", "--all", "--path", str(root)])
    assert listed.output.startswith("awaiting approval  approved/main"), listed.output
    assert approve(root, session_id=session_id).returncode == 0
    # Decided, not yet picked up: no view says it still waits for a person.
    result = CliRunner().invoke(cli, ["status", "--path", str(root)])
    assert "APPROVED, waiting for the agent's next finished_step" in result.output
    assert "AWAITING APPROVAL" not in result.output
    listed = CliRunner().invoke(cli, ["status", "--all", "--path", str(root)])
    assert listed.output.startswith("approved, waiting for the agent  approved/main")
    engine.finish({"plan": "plan.md"})
    result = CliRunner().invoke(cli, ["status", "--path", str(root)])
    assert "approvals 1" in result.output
    assert "AWAITING APPROVAL" not in result.output


def test_the_key_is_made_0600_in_the_state_folder_outside_the_project(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    open_request(make_store, tmp_path)
    assert approve(tmp_path).returncode == 0
    key = key_of(tmp_path).path
    assert key.parent == Path(os.environ["DEEPWORK_STATE_DIR"]) / "keys"
    assert key.name == hashlib.sha256(os.fsencode(tmp_path.resolve())).hexdigest() + ".key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert not (tmp_path / ".deepwork").joinpath("keys").exists()


def test_a_key_others_may_read_is_refused_with_its_code(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    store = open_request(make_store, tmp_path)
    key = key_of(tmp_path)
    key.secret()
    key.path.chmod(0o644)
    done = approve(tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith("approval.key_unsafe: ")
    assert str(key.path) in done.stderr
    record = store.load(SID)
    assert record is not None
    assert record.decision is None  # nothing was recorded with a key others could read


def test_the_state_folder_follows_xdg_then_home() -> None:
    assert state_dir({"DEEPWORK_STATE_DIR": "/srv/dw", "XDG_STATE_HOME": "/x"}) == Path("/srv/dw")
    assert state_dir({"XDG_STATE_HOME": "/x", "HOME": "/h"}) == Path("/x/deepwork")
    assert state_dir({"XDG_STATE_HOME": "rel", "HOME": "/h"}) == Path("/h/.local/state/deepwork")
    assert state_dir({"HOME": "/h"}) == Path("/h/.local/state/deepwork")


def test_the_files_are_shown_with_their_content_before_deciding(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    open_request(make_store, tmp_path)
    done = approve(tmp_path)
    assert done.returncode == 0, done.stderr
    assert "plan: plan.md  sha256 " in done.stdout
    assert "  | the plan" in done.stdout  # the bytes the human approves
    assert done.stdout.index("the plan") < done.stdout.index("Approved for step plan")


def _approve_on_a_terminal(root: Path, answer: str) -> tuple[int, str]:
    """`deepwork approve` without --yes, on a pseudo-terminal that types `answer`."""
    import pty

    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "deepwork_mcp", "approve", SID, "--path", str(root)],
            stdin=follower,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        os.write(leader, answer.encode())
        out, _ = process.communicate(timeout=60)
    finally:
        os.close(leader)
        os.close(follower)
    return process.returncode, out


def test_it_asks_on_a_terminal_and_records_nothing_on_no(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    store = open_request(make_store, tmp_path)
    status, out = _approve_on_a_terminal(tmp_path, "n\n")
    assert status == 1
    assert "Approve step plan as shown above?" in out
    assert "Nothing was recorded." in out
    record = store.load(SID)
    assert record is not None
    assert record.decision is None
    status, out = _approve_on_a_terminal(tmp_path, "y\n")
    assert status == 0, out
    record = store.load(SID)
    assert record is not None
    assert record.decision is not None


def test_without_a_terminal_it_needs_yes(tmp_path: Path, make_store: Callable[..., Store]) -> None:
    store = open_request(make_store, tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "deepwork_mcp", "approve", SID, "--path", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 2
    assert "--yes" in done.stderr
    record = store.load(SID)
    assert record is not None
    assert record.decision is None


def test_several_approver_keys_do_not_block_a_decision_that_needs_no_signature(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    """On a local store whose base branch trusts no key the seal decides: no key is chosen, so
    several keys in the state folder are no reason to refuse (docs/team.md)."""
    project = tmp_path / "project"
    project.mkdir()
    store = open_request(make_store, project)
    for name in ("alice", "bob"):
        made = CliRunner().invoke(cli, ["approver", "init", "--name", name, "--no-trust"])
        assert made.exit_code == 0, made.output
    done = CliRunner().invoke(cli, ["approve", SID, "--path", str(project), "--yes"])
    assert done.exit_code == 0, done.output
    assert "signed by" not in done.output
    record = store.load(SID)
    assert record is not None
    assert record.decision is not None
    assert record.decision.approved
    assert record.decision.signer is None


def test_approving_from_inside_a_headless_run_is_refused_and_records_nothing(
    tmp_path: Path, make_store: Callable[..., Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_request(make_store, tmp_path)
    monkeypatch.setenv("DEEPWORK_RUN", SID)  # as `deepwork run` marks its agent's environment
    for command in (["approve", SID, "--yes"], ["dashboard", "--no-open"]):
        result = CliRunner().invoke(cli, [*command, "--path", str(tmp_path)])
        assert result.exit_code == 1
        assert "approval.inside_run" in result.output
    record = store.load(SID)
    assert record is not None
    assert record.decision is None
