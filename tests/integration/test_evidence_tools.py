"""The scope guard and approvals through the tools, with the in-memory client (docs/evidence.md)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from deepwork_core.base.config import GitConfig
from deepwork_core.evidence.watch import ChangeWatch
from deepwork_core.state.event_kinds import ApprovalEvent, UndeclaredChangesEvent
from deepwork_core.state.events import read_events
from deepwork_core.state.store.port import Store
from deepwork_mcp.server import _change_watch, create_server
from fastmcp import Client

from tests.fixtures.configs import config
from tests.fixtures.evidence_project import git, make_evidence_project
from tests.fixtures.tool_calls import call_ok
from tests.fixtures.trust import commit_on_base


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_evidence_project(tmp_path / "project")


@pytest.fixture
async def client(root: Path) -> AsyncIterator[Client[Any]]:
    async with Client(create_server(root, config())) as connected:
        yield connected


async def start(client: Client[Any], job: str) -> str:
    started = await call_ok(client, "start_workflow", goal="g", job_name=job, workflow_name="main")
    session_id: str = started["begin_step"]["session_id"]
    return session_id


# --- scope guard -------------------------------------------------------------------------------


async def test_an_undeclared_edit_is_named(
    client: Client[Any], root: Path, make_store: Callable[..., Store]
) -> None:
    session_id = await start(client, "scoped")
    (root / "out.md").write_text("report\n")
    (root / "src" / "app.py").write_text("print('changed')\n")
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text("allowed by may_change\n")
    done = await call_ok(client, "finished_step", outputs={"out": "out.md"})
    assert done["status"] == "workflow_complete"
    assert done["evidence"]["undeclared_changes"] == ["src/app.py"]
    events = [
        e
        for e in read_events(make_store(root), session_id)
        if isinstance(e, UndeclaredChangesEvent)
    ]
    assert events[0].files == ["src/app.py"]


async def test_may_change_silences_the_guard(client: Client[Any], root: Path) -> None:
    await start(client, "scoped")
    (root / "out.md").write_text("report\n")
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text("allowed\n")
    done = await call_ok(client, "finished_step", outputs={"out": "out.md"})
    assert done["evidence"]["undeclared_changes"] == []


async def test_a_strict_job_sends_undeclared_changes_back(client: Client[Any], root: Path) -> None:
    await start(client, "scoped_strict")
    (root / "out.md").write_text("report\n")
    (root / "src" / "app.py").write_text("print('changed')\n")
    blocked = await call_ok(client, "finished_step", outputs={"out": "out.md"})
    assert blocked["status"] == "needs_work"
    assert blocked["evidence"]["undeclared_changes"] == ["src/app.py"]
    assert "src/app.py" in blocked["feedback"]
    acknowledged = await call_ok(
        client,
        "finished_step",
        outputs={"out": "out.md"},
        quality_review_override_reason="The app change was asked for by the user",
    )
    assert acknowledged["status"] == "workflow_complete"


async def test_a_dry_run_runs_the_scope_guard_and_records_nothing(
    client: Client[Any], root: Path, make_store: Callable[..., Store]
) -> None:
    session_id = await start(client, "scoped_strict")
    (root / "out.md").write_text("report\n")
    (root / "src" / "app.py").write_text("print('changed')\n")
    before = len(read_events(make_store(root), session_id))
    dry = await call_ok(client, "finished_step", outputs={"out": "out.md"}, dry_run=True)
    assert dry["status"] == "dry_run"
    assert dry["evidence"]["undeclared_changes"] == ["src/app.py"]
    assert "needs_work" in dry["feedback"]
    assert "src/app.py" in dry["feedback"]
    assert len(read_events(make_store(root), session_id)) == before  # the audit logged nothing
    blocked = await call_ok(client, "finished_step", outputs={"out": "out.md"})
    assert blocked["status"] == "needs_work"


async def test_outside_git_the_guard_says_it_is_off_once(tmp_path: Path) -> None:
    root = make_evidence_project(tmp_path / "plain", with_git=False)
    async with Client(create_server(root, config())) as client:
        started = await call_ok(
            client, "start_workflow", goal="g", job_name="evidenced", workflow_name="main"
        )
        assert "Scope guard off" in (started["branch_note"] or "")
        (root / "plan.md").write_text("plan\n")
        step2 = await call_ok(
            client,
            "finished_step",
            outputs={"plan": "plan.md"},
            quality_review_override_reason="no reviewer here",
        )
        assert step2["evidence"]["scope_guard_note"] is None
        assert step2["evidence"]["undeclared_changes"] == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the change watch is inotify's")
@pytest.mark.parametrize("change_watch", [True, False])
async def test_a_folder_git_stops_ignoring_is_judged_like_git_status_would(
    root: Path, monkeypatch: pytest.MonkeyPatch, change_watch: bool
) -> None:
    """The change watch started while `build/` was ignored; once the rule is gone, a file the
    step writes there is as undeclared as `git status` says (issue 43, item 1)."""
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    (root / "build" / "old.txt").write_text("built before\n")
    git(root, "add", ".gitignore")
    git(root, "commit", "-q", "-m", "ignore build")
    watches: list[ChangeWatch] = []

    def capture(folder: Path) -> ChangeWatch:
        watches.append(made := _change_watch(folder))
        return made

    monkeypatch.setattr("deepwork_mcp.server._change_watch", capture)
    settings = config().model_copy(update={"git": GitConfig(change_watch=change_watch)})
    async with Client(create_server(root, settings)) as client:
        first = await start(client, "scoped")  # the engine, and its watch, are made
        assert [watch.start() for watch in watches] == ([True] if change_watch else [])
        await call_ok(client, "abort_workflow", session_id=first, explanation="only the watch")
        (root / ".gitignore").write_text("")
        git(root, "commit", "-q", "-am", "stop ignoring build")
        await start(client, "scoped_strict")
        (root / "out.md").write_text("report\n")
        (root / "build" / "new.txt").write_text("written by the step\n")
        done = await call_ok(client, "finished_step", outputs={"out": "out.md"})
    assert done["status"] == "needs_work"
    assert "build/new.txt" in done["evidence"]["undeclared_changes"]


# --- approvals through elicitation -------------------------------------------------------------


def answering(decision: str, comment: str = "") -> Any:
    asked: list[str] = []

    async def handler(message: str, response_type: Any, params: Any, context: Any) -> Any:
        asked.append(message)
        return {"decision": decision, "comment": comment}

    handler.asked = asked  # type: ignore[attr-defined]
    return handler


async def test_a_client_with_elicitation_asks_the_human(
    root: Path, make_store: Callable[..., Store]
) -> None:
    handler = answering("approve", "Looks right")
    server = create_server(root, config())
    async with Client(server, mode="legacy", elicitation_handler=handler) as client:
        session_id = await start(client, "approved")
        (root / "plan.md").write_text("the plan\n")
        moved = await call_ok(client, "finished_step", outputs={"plan": "plan.md"})
        assert moved["status"] == "next_step"
        assert "Is this plan good to go?" in handler.asked[0]
        assert "plan.md" in handler.asked[0]
    [event] = [e for e in read_events(make_store(root), session_id) if isinstance(e, ApprovalEvent)]
    assert (event.approved, event.channel, event.comment) == (
        True,
        "elicitation",
        "Looks right",
    )
    assert event.actor  # the client's name and version


async def test_a_human_who_requests_changes_sends_the_step_back(root: Path) -> None:
    handler = answering("request_changes", "Add a rollback section")
    server = create_server(root, config())
    async with Client(server, mode="legacy", elicitation_handler=handler) as client:
        await start(client, "approved")
        (root / "plan.md").write_text("the plan\n")
        back = await call_ok(client, "finished_step", outputs={"plan": "plan.md"})
        assert back["status"] == "needs_work"
        assert "Add a rollback section" in back["feedback"]


@pytest.mark.parametrize("shared", [False, True])
async def test_where_signatures_count_the_form_is_not_offered(
    root: Path, shared: bool, make_store: Callable[..., Store]
) -> None:
    """The server holds no approver's key, so it cannot sign what the form answers: with trusted
    approvers (or a shared store) the step waits for a signed `deepwork approve` (docs/team.md)."""
    if not shared:
        line = "deepwork-approver ed25519 " + "A" * 43 + "=\n"
        commit_on_base(root, ".deepwork/approvers/alice.pub", line)
    handler = answering("approve", "Looks right")
    server = create_server(root, config(), shared_store=shared)
    async with Client(server, mode="legacy", elicitation_handler=handler) as client:
        session_id = await start(client, "approved")
        (root / "plan.md").write_text("the plan\n")
        waiting = await call_ok(client, "finished_step", outputs={"plan": "plan.md"})
    assert waiting["status"] == "awaiting_approval"
    assert handler.asked == []
    assert not [
        e for e in read_events(make_store(root), session_id) if isinstance(e, ApprovalEvent)
    ]


async def test_a_client_without_elicitation_waits_for_the_terminal(
    client: Client[Any], root: Path
) -> None:
    session_id = await start(client, "approved")
    (root / "plan.md").write_text("the plan\n")
    waiting = await call_ok(client, "finished_step", outputs={"plan": "plan.md"})
    assert waiting["status"] == "awaiting_approval"
    assert waiting["evidence"]["approval"]["command"] == f"deepwork approve {session_id}"
    assert waiting["evidence"]["approval"]["prompt"] == "Is this plan good to go?"
    assert f"deepwork approve {session_id}" in waiting["feedback"]


async def test_no_tool_argument_can_approve(client: Client[Any]) -> None:
    for tool in await client.list_tools():
        arguments = set(tool.input_schema.get("properties", {}))
        assert not any("approv" in name for name in arguments), (tool.name, arguments)


async def test_start_workflows_workflow_name_says_it_is_required(client: Client[Any]) -> None:
    """Issue 43, item 22: the argument is required, so its description does not say otherwise."""
    [tool] = [tool for tool in await client.list_tools() if tool.name == "start_workflow"]
    assert "workflow_name" in tool.input_schema["required"]
    described = tool.input_schema["properties"]["workflow_name"]["description"]
    assert described.startswith("Required")
