"""`deepwork run` end to end with the agent doubles of tests/fixtures/agent_double.py (each a
process driving the real headless server over stdio with the official MCP client): a run
completes (0), parks at a human gate (3) and is resumed after a person's approval with no step
run again (also in another checkout sharing PostgreSQL), an agent that tries to approve inside
the run leaves it parked, a missing reviewer parks it with 4, and an agent that crashes or hangs
ends with 5 and its output's tail (docs/headless.md)."""

from __future__ import annotations

import hashlib
import hmac
import http.server
import json
import os
import queue
import threading
from collections.abc import Callable
from email.message import Message
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from deepwork_core.state.approvals.signatures import ApproverSigner
from deepwork_core.state.event_kinds import ResumedEvent, StepBegunEvent
from deepwork_core.state.events import read_events
from deepwork_core.state.sessions import SessionStatus, SessionStore
from deepwork_core.state.store.opening import open_store
from deepwork_core.state.store.port import Store
from deepwork_mcp.approvals.keys import approver_path
from deepwork_mcp.cli import cli
from deepwork_mcp.cli.headless.agents import server_argv

from tests.fixtures.agent_double import gemini_extension, install_agent_doubles
from tests.fixtures.evidence_project import key_of
from tests.fixtures.git_repo import git
from tests.fixtures.reviewer import ScriptedReviewer
from tests.fixtures.signed_jobs import SIGNED, make_signed_project
from tests.fixtures.trust import trust_on_base
from tests.fixtures.workflow_project import write_job

pytestmark = pytest.mark.slow  # each run starts an agent double and a server process

AGENTS = ("claude", "codex", "gemini")


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = make_signed_project(tmp_path / "project")
    plain = SIGNED.replace("name: signed\n", "name: prepped\n", 1)
    write_job(root, "prepped", plain.replace("steps: [prep, sign]", "steps: [prep]", 1))
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "prepped")
    bin_dir = install_agent_doubles(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    gemini_extension(tmp_path / "home", server_argv(root))
    key_of(root)  # the approval key the server and `deepwork approve` share
    return root


def deepwork_run(root: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["run", *args, "--path", str(root)])


def session_of(result: Result) -> str:
    line = next(text for text in result.output.splitlines() if text.startswith("deepwork run:"))
    return line.split("(session ", 1)[1].split(",", 1)[0]


@pytest.mark.parametrize("agent", AGENTS)
def test_a_run_completes_with_each_agent(
    root: Path, agent: str, make_store: Callable[..., Store]
) -> None:
    result = deepwork_run(root, "prepped", "--agent", agent, "--goal", "ship it")
    assert result.exit_code == 0, result.output
    session = SessionStore(make_store(root), root).load(session_of(result))
    assert session.status is SessionStatus.COMPLETED
    assert "completed" in result.output


@pytest.mark.parametrize("agent", AGENTS)
def test_a_human_gate_parks_then_an_outside_approval_and_resume_finish_it(
    root: Path, agent: str, make_store: Callable[..., Store], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    github_output = tmp_path / "github_output"
    monkeypatch.setenv("GITHUB_OUTPUT", str(github_output))
    parked = deepwork_run(root, "signed", "--agent", agent)
    assert parked.exit_code == 3, parked.output
    session_id = session_of(parked)
    assert f"deepwork approve {session_id}" in parked.output
    assert f"session={session_id}\n" in github_output.read_text()
    assert "status=parked\n" in github_output.read_text()

    approved = CliRunner().invoke(cli, ["approve", session_id, "--yes", "--path", str(root)])
    assert approved.exit_code == 0, approved.output
    waited = CliRunner().invoke(cli, ["wait", session_id, "--timeout", "0", "--path", str(root)])
    assert waited.exit_code == 0

    resumed = deepwork_run(root, "--resume", session_id, "--agent", agent)
    assert resumed.exit_code == 0, resumed.output
    store = make_store(root)
    assert SessionStore(store, root).load(session_id).status is SessionStatus.COMPLETED
    begun = [e for e in read_events(store, session_id) if isinstance(e, StepBegunEvent)]
    assert [e.step_ids for e in begun] == [["prep"], ["sign"]]  # prep is not run again
    assert [e.event for e in read_events(store, session_id)].count("resumed") == 1


def test_a_run_parked_in_one_checkout_is_approved_and_resumed_in_another_on_postgresql(
    root: Path, tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice_state = tmp_path / "alice-state"
    alice = ApproverSigner("alice", approver_path(alice_state, "alice"))
    alice.create()
    trust_on_base(root, alice)
    monkeypatch.setenv("DEEPWORK_STORE_URL", pg_url)
    other = tmp_path / "other"  # another machine's checkout of the project
    git(tmp_path, "clone", "-q", str(root), str(other))

    parked = deepwork_run(root, "signed", "--agent", "claude")
    assert parked.exit_code == 3, parked.output
    session_id = session_of(parked)
    branch = git(root, "branch", "--show-current").strip()
    git(root, "add", "prep.md", "sig.md")
    git(root, "commit", "-q", "-m", "the run so far")  # pushed, as CI would
    git(other, "fetch", "-q", "origin", f"{branch}:{branch}")
    git(other, "switch", "-q", branch)
    with monkeypatch.context() as alice_shell:
        alice_shell.setenv("DEEPWORK_STATE_DIR", str(alice_state))
        approved = CliRunner().invoke(cli, ["approve", session_id, "--yes", "--path", str(other)])
    assert approved.exit_code == 0, approved.output

    resumed = deepwork_run(other, "--resume", session_id, "--agent", "claude")
    assert resumed.exit_code == 0, resumed.output
    with open_store(pg_url, other.resolve()) as store:
        sessions = SessionStore(store, other.resolve())
        assert sessions.load(session_id).status is SessionStatus.COMPLETED
        events = read_events(store, session_id)
    begun = [e.step_ids for e in events if isinstance(e, StepBegunEvent)]
    assert begun == [["prep"], ["sign"]]  # prep is not run again
    [taken] = [e for e in events if isinstance(e, ResumedEvent)]
    assert taken.adopted
    assert taken.from_root == str(root)


@pytest.mark.parametrize("agent", AGENTS)
def test_an_approval_from_inside_the_run_leaves_it_parked(
    root: Path, agent: str, make_store: Callable[..., Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPWORK_DOUBLE", "approve")
    result = deepwork_run(root, "signed", "--agent", agent)
    assert result.exit_code == 3, result.output
    session = SessionStore(make_store(root), root).load(session_of(result))
    assert session.parked is not None
    assert session.pending_approval is not None


@pytest.mark.parametrize(("mode", "agent"), [(m, a) for m in ("crash", "hang") for a in AGENTS])
def test_an_agent_that_crashes_or_hangs_ends_with_5(
    root: Path, mode: str, agent: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPWORK_DOUBLE", mode)
    result = deepwork_run(root, "prepped", "--agent", agent, "--timeout", "2")
    assert result.exit_code == 5, result.output
    expected = "out of memory" if mode == "crash" else "thinking forever"
    assert expected in result.output


def test_a_new_run_is_refused_while_a_run_is_on_the_stack(
    root: Path, make_store: Callable[..., Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as stalling:
        stalling.setenv("DEEPWORK_DOUBLE", "approve")  # parks, then stops
        first = deepwork_run(root, "signed", "--agent", "codex")
    assert first.exit_code == 3, first.output
    session_id = session_of(first)

    second = deepwork_run(root, "prepped", "--agent", "claude")
    assert second.exit_code == 1, second.output
    assert "run.busy" in second.output
    assert f"deepwork run --resume {session_id} --agent claude" in second.output
    store = make_store(root)
    assert [s.session_id for s in SessionStore(store, root).stack()] == [session_id]
    assert all(s.parent_session_id is None for s in SessionStore(store, root).stack())


#: For each agent, a reviewer runner whose CLI the test takes off `PATH`.
MISSING_REVIEWER = {"claude": "codex", "codex": "gemini", "gemini": "claude"}


@pytest.mark.parametrize("agent", AGENTS)
def test_a_missing_reviewer_parks_the_run_with_4(
    root: Path, agent: str, tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    runner = MISSING_REVIEWER[agent]
    (tmp_path / "bin" / runner).unlink()
    config = root / ".deepwork" / "config.yml"
    config.write_text(f"quality_gate:\n  external_runner: {runner}\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "an external reviewer")

    result = deepwork_run(root, "signed_reviewed", "--agent", agent, "--timeout", "120")
    assert result.exit_code == 4, result.output  # not 5: the run did not hang to the timeout
    assert "reviewer missing" in result.output
    session = SessionStore(make_store(root), root).load(session_of(result))
    assert session.parked is not None
    assert session.current_step_ids == ["prep"]


@pytest.mark.parametrize("agent", AGENTS)
def test_reviews_failing_until_the_attempts_run_out_park_the_run_with_4(
    root: Path, agent: str, scripted_reviewer: ScriptedReviewer,
    make_store: Callable[..., Store], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    runner = MISSING_REVIEWER[agent]
    for other in AGENTS:
        if other != runner:  # the agent's own name stays the agent double's
            (scripted_reviewer.bin_dir / other).unlink()
    scripted_reviewer.answer("fail")
    scripted_reviewer.install(monkeypatch)
    config = root / ".deepwork" / "config.yml"
    config.write_text(f"quality_gate:\n  external_runner: {runner}\n  max_attempts: 2\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "a reviewer that fails everything")

    result = deepwork_run(root, "signed_reviewed", "--agent", agent, "--timeout", "120")
    assert result.exit_code == 4, result.output  # not 5: the agent stopped, nothing hung
    assert "attempts exhausted" in result.output
    store = make_store(root)
    session = SessionStore(store, root).load(session_of(result))
    assert session.parked is not None
    assert session.current_step_ids == ["prep"]
    assert len(scripted_reviewer.calls()) == 2  # one review per attempt, then no more
    assert "approval" not in [e.event for e in read_events(store, session.session_id)]


def test_a_missing_agent_is_named(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    result = deepwork_run(root, "prepped", "--agent", "codex")
    assert result.exit_code == 1
    assert "run.agent_missing" in result.output


def test_usage_errors_exit_2(root: Path) -> None:
    assert deepwork_run(root, "--agent", "claude").exit_code == 2
    assert deepwork_run(root, "prepped", "--resume", "sess_x", "--agent", "claude").exit_code == 2
    assert deepwork_run(root, "prepped", "--input", "novalue", "--agent", "claude").exit_code == 2


class _Hook(http.server.BaseHTTPRequestHandler):
    """A webhook receiver: every POST's headers and body, in order."""

    posts: queue.Queue[tuple[Message, bytes]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.posts.put((self.headers, body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *_: object) -> None:
        return None


def test_the_webhook_and_the_github_files_carry_the_run(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    handler = type("Hook", (_Hook,), {"posts": queue.Queue()})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    (root / ".deepwork" / "config.yml").write_text(
        f"notify:\n  webhook:\n    url: {url}\n    secret_env: HOOK_SECRET\n"
        "  dashboard_url: https://deepwork.example.com/\n"
    )
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "notify")
    monkeypatch.setenv("HOOK_SECRET", "s3cret")
    outputs, summary = tmp_path / "github_output", tmp_path / "github_summary"
    monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    try:
        done = deepwork_run(root, "prepped", "--agent", "gemini")
        parked = deepwork_run(root, "signed", "--agent", "claude")
        posted = [handler.posts.get(timeout=30) for _ in range(2)]
    finally:
        server.shutdown()
        server.server_close()
    assert (done.exit_code, parked.exit_code) == (0, 3), done.output + parked.output
    session_id, project = session_of(parked), str(root)
    bodies = [json.loads(body) for _, body in posted]
    for headers, body in posted:
        expected = hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
        assert headers["X-DeepWork-Signature-256"] == f"sha256={expected}"
    assert bodies[0]["status"] == "completed"
    assert bodies[0]["run"] == session_of(done)
    assert bodies[0]["approve_command"] is None
    page = f"https://deepwork.example.com/run/{session_id}?project="
    assert bodies[1]["dashboard"].startswith(page)
    assert {k: v for k, v in bodies[1].items() if k not in ("summary", "dashboard")} == {
        "status": "parked",
        "project": project,
        "run": session_id,
        "job": "signed",
        "workflow": "main",
        "step": ["sign"],
        "asks": "approve step sign",
        "approve_command": f"deepwork approve {session_id}",
        "who_may_decide": "any trusted approver",
    }
    assert "Who may decide: any trusted approver" in parked.output
    assert f"or in the dashboard: {bodies[1]['dashboard']}" in parked.output
    written = outputs.read_text().splitlines()
    assert written[-3:] == [
        "status=parked",
        f"session={session_id}",
        f"approve-command=deepwork approve {session_id}",
    ]
    report = summary.read_text()
    assert "status: **completed**" in report
    assert "- status: **parked** (parked)" in report
    assert "- who may decide: any trusted approver" in report
    assert f"`deepwork approve {session_id}`" in report
    assert f"`deepwork run --resume {session_id} --agent …`" in report
