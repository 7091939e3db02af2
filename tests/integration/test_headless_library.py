"""`deepwork run` on a job of the library (library/jobs/incident_postmortem, added with `deepwork
jobs add` as a user would), with each agent double of tests/fixtures/agent_double.py: its steps
pass the gate's default self-review, the run parks at the owner's approval (3, with the approve
command), a trusted approver approves it from another checkout sharing a real PostgreSQL store,
and `deepwork run --resume` there refuses while a completed output differs (`run.output_changed`,
naming it) and, once it is restored, finishes the run with no completed step run again
(docs/headless.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from deepwork_core.base.identifiers import SessionId, parse_session_id
from deepwork_core.state.approvals.signatures import ApproverSigner
from deepwork_core.state.event_kinds import ResumedEvent, StepBegunEvent
from deepwork_core.state.events import read_events
from deepwork_core.state.sessions import SessionStatus, SessionStore
from deepwork_core.state.store.opening import open_store
from deepwork_mcp.approvals.keys import approver_path
from deepwork_mcp.cli import cli
from deepwork_mcp.cli.headless.agents import server_argv

from tests.fixtures.agent_double import gemini_extension, install_agent_doubles
from tests.fixtures.git_repo import commit_all, git
from tests.fixtures.trust import trust_on_base

pytestmark = pytest.mark.slow  # each run starts an agent double and a server process

JOB = "incident_postmortem"
STEPS = [["gather_timeline"], ["analyze_causes"], ["write_postmortem"], ["approve"]]


def deepwork(root: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, [*args, "--path", str(root)])


def session_of(result: Result) -> SessionId:
    line = next(text for text in result.output.splitlines() if text.startswith("deepwork run:"))
    return parse_session_id(line.split("(session ", 1)[1].split(",", 1)[0])


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_a_library_job_parks_for_its_owner_and_finishes_in_another_checkout(
    tmp_path: Path, agent: str, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "README.md").write_text("a service\n")
    commit_all(root)
    root = root.resolve()
    assert deepwork(root, "jobs", "add", JOB).exit_code == 0
    alice_state = tmp_path / "alice-state"
    alice = ApproverSigner("alice", approver_path(alice_state, "alice"))
    alice.create()
    trust_on_base(root, alice)  # commits the job and alice's key on main
    bin_dir = install_agent_doubles(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DEEPWORK_STORE_URL", pg_url)
    other = tmp_path / "other"  # another machine's checkout of the project
    git(tmp_path, "clone", "-q", str(root), str(other))
    other = other.resolve()

    gemini_extension(tmp_path / "home", server_argv(root))
    start = ("run", JOB, "--agent", agent, "--input", "incident=INC-7 db outage")
    parked = deepwork(root, *start, "--timeout", "120")
    assert parked.exit_code == 3, parked.output
    session_id = session_of(parked)
    assert f"deepwork approve {session_id}" in parked.output
    branch = git(root, "branch", "--show-current").strip()
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the run so far")  # pushed, as CI would
    git(other, "fetch", "-q", "origin", f"{branch}:{branch}")
    git(other, "switch", "-q", branch)
    with monkeypatch.context() as alice_shell:
        alice_shell.setenv("DEEPWORK_STATE_DIR", str(alice_state))
        approved = deepwork(other, "approve", session_id, "--yes")
    assert approved.exit_code == 0, approved.output

    gemini_extension(tmp_path / "home", server_argv(other))
    resume = ("run", "--resume", session_id, "--agent", agent, "--timeout", "120")
    (other / "timeline.md").write_text("a timeline edited on the other machine\n")
    refused = deepwork(other, *resume)
    assert refused.exit_code == 1, refused.output
    assert "run.output_changed" in refused.output
    assert "timeline.md (step gather_timeline, changed)" in refused.output
    git(other, "checkout", "--", "timeline.md")

    resumed = deepwork(other, *resume)
    assert resumed.exit_code == 0, resumed.output
    assert "deepwork run: completed" in resumed.output
    with open_store(pg_url, other) as store:
        assert SessionStore(store, other).load(session_id).status is SessionStatus.COMPLETED
        events = read_events(store, session_id)
    assert [e.step_ids for e in events if isinstance(e, StepBegunEvent)] == STEPS  # 0 repeats
    [taken] = [e for e in events if isinstance(e, ResumedEvent)]
    assert taken.adopted
    assert [e.event for e in events].count("approval") == 1  # alice's, from the other checkout
