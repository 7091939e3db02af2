"""Team mode end to end (docs/team.md): two checkouts of one project share one real PostgreSQL.

Checkout A serves a run (real `deepwork serve` over stdio, `DEEPWORK_STORE_URL`) that reaches an
approval. Checkout B, pointed at the same database by `store.url` in its `.deepwork/config.yml`,
lists the run with `deepwork status --all` and in its dashboard, and approves it there (real
HTTP, with the dashboard's token) with a trusted approver's key; A's run then goes on. Nothing
is mocked: the approval travels only through the database.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest
from deepwork_core.evidence.trusted_keys import public_line
from deepwork_core.state.approvals.signatures import ApproverSigner
from deepwork_core.state.store.opening import project_ref
from deepwork_core.state.store.url import STORE_URL_ENV
from deepwork_mcp.approvals.keys import approver_path

from tests.fixtures.dashboard_process import dashboard_process
from tests.fixtures.evidence_project import commit_all, git, make_evidence_project
from tests.fixtures.stdio_server import serve

pytestmark = pytest.mark.slow

PLAN = {"plan": "plan.md"}


def environment(state: Path, store_url: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != STORE_URL_ENV}
    env["DEEPWORK_STATE_DIR"] = str(state)
    if store_url is not None:
        env[STORE_URL_ENV] = store_url
    return env


def deepwork(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deepwork_mcp", *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env=env,
        check=False,
    )


async def browse(url: str, method: str, path: str, form: dict[str, str] | None = None) -> str:
    """One request to the dashboard at `url` (its token in the query); the page, status 200."""
    parts = urlsplit(url)
    token = parts.query.removeprefix("token=")
    body = None if form is None else urlencode({"token": token, **form})

    def send() -> str:
        assert parts.hostname is not None
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        try:
            headers = {"Content-Type": "application/x-www-form-urlencoded"} if body else {}
            joined = "&" if "?" in path else "?"
            connection.request(method, f"{path}{joined}token={token}", body=body, headers=headers)
            response = connection.getresponse()
            page = response.read().decode()
            assert response.status == 200, page
            return page
        finally:
            connection.close()

    return await asyncio.to_thread(send)


def checkouts(tmp_path: Path, pg_url: str) -> tuple[Path, Path, Path]:
    """Checkout A (the project, trusting alice), its clone B (its store named in its config),
    and alice's state folder on B's machine (her private key)."""
    alice_state = tmp_path / "state-b"
    alice = ApproverSigner("alice", approver_path(alice_state, "alice"))
    alice.create()
    a = make_evidence_project(tmp_path / "a")
    (a / ".deepwork" / "approvers").mkdir(parents=True, exist_ok=True)
    (a / ".deepwork" / "approvers" / "alice.pub").write_text(public_line(alice.public_key()))
    commit_all(a, "alice approves DeepWork steps")
    b = tmp_path / "b"
    git(tmp_path, "clone", "-q", str(a), str(b))
    config = b / ".deepwork" / "config.yml"
    config.write_text(f"store:\n  url: {json.dumps(pg_url)}\n")
    return a, b.resolve(), alice_state


async def test_a_run_served_in_one_checkout_is_listed_and_approved_from_another(
    tmp_path: Path, pg_url: str
) -> None:
    a, b, alice_state = checkouts(tmp_path, pg_url)
    env_a = environment(tmp_path / "state-a", pg_url)
    env_b = environment(alice_state, None)
    password = urlsplit(pg_url).password
    assert password

    async with serve(a, env=env_a, branch=True) as agent:
        started = await agent.ok(
            "start_workflow", goal="g", job_name="approved", workflow_name="main"
        )
        session_id: str = started["begin_step"]["session_id"]
        (a / "plan.md").write_text("the plan\n")
        waiting = await agent.ok("finished_step", outputs=PLAN)
        assert waiting["status"] == "awaiting_approval"
        branch = git(a, "branch", "--show-current").strip()
        assert branch.startswith("deepwork/")  # the run's own workflow branch
        helper = await agent.ok(  # a sub-agent's run, on its own stack
            "start_workflow", goal="h", job_name="approved", workflow_name="main", agent_id="ci-7"
        )
        helper_id: str = helper["begin_step"]["session_id"]

        listed = deepwork(env_b, "status", "--all", "--path", str(b))
        assert listed.returncode == 0, listed.stderr
        [line] = [row for row in listed.stdout.splitlines() if session_id in row]
        assert f"project {a}" in line
        assert f"machine {project_ref(a).machine}" in line
        assert f"branch {branch}" in line
        assert "agent main" in line
        [line] = [row for row in listed.stdout.splitlines() if helper_id in row]
        assert "agent ci-7" in line
        assert password not in listed.stdout + listed.stderr

        async with dashboard_process(b, env_b) as url:
            everything = await browse(url, "GET", "/all")
            assert session_id in everything
            assert str(a) in everything
            assert branch in everything
            assert "ci-7" in everything
            page = await browse(url, "GET", "/approvals")
            assert session_id in page
            assert f"project {a}" in page
            assert "the plan" in page  # the bytes asked about, kept in the store
            request_id = page.split('name="request_id" value="', 1)[1].split('"', 1)[0]
            project = page.split('name="project" value="', 1)[1].split('"', 1)[0]
            assert project == project_ref(a).project_id
            answer = await browse(
                url,
                "POST",
                f"/approvals/{session_id}",
                {"request_id": request_id, "project": project, "decision": "approve"},
            )
            assert "Approved for step" in answer

            moved = await agent.ok("finished_step", outputs=PLAN)
            assert moved["status"] == "next_step", moved
            run_page = await browse(url, "GET", f"/run/{session_id}?project={project}")
            assert "approver alice" in run_page
            assert '<tr data-end="approved">' in run_page  # how the request ended

        log = deepwork(env_a, "log", session_id, "--path", str(a))
        assert "decided_by=approver alice (on " in log.stdout, log.stderr
        assert "approval_ended" in log.stdout
        assert "state=approved" in log.stdout

        # the sub-agent's run waits too, and B's `deepwork approve` decides it from the store
        (a / "plan.md").write_text("the helper's plan\n")
        waits = await agent.ok("finished_step", outputs=PLAN, session_id=helper_id)
        assert waits["status"] == "awaiting_approval"
        approved = deepwork(env_b, "approve", helper_id, "--yes", "--path", str(b))
        assert approved.returncode == 0, approved.stderr
        assert "the helper's plan" in approved.stdout  # the stored bytes, shown
        assert str(a) in approved.stdout + approved.stderr  # where the run is served
        goes_on = await agent.ok("finished_step", outputs=PLAN, session_id=helper_id)
        assert goes_on["status"] == "next_step", goes_on
