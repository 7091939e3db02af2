"""`deepwork serve` as a real subprocess, driven over stdio by the official `mcp` client."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

import pytest
from deepwork_core.state.sessions import SessionStatus, SessionStore
from deepwork_core.state.store.port import Store

from tests.fixtures.reviewer import ScriptedReviewer
from tests.fixtures.stdio_server import Server, serve
from tests.fixtures.workflow_project import make_project, write_files

pytestmark = pytest.mark.slow


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


async def test_three_step_workflow_end_to_end(root: Path) -> None:
    async with serve(root) as server:
        listing = await server.ok("get_workflows")
        assert "three_step" in {job["name"] for job in listing["jobs"]}
        started = await server.ok(
            "start_workflow", goal="g", job_name="three_step", workflow_name="main"
        )
        assert started["begin_step"]["step_id"] == "gather"
        write_files(root, "notes.md", "d/1.md", "final.md")
        draft = await server.ok("finished_step", outputs={"notes": "notes.md"})
        assert draft["begin_step"]["step_inputs"][0]["paths"] == ["notes.md"]
        publish = await server.ok("finished_step", outputs={"drafts": ["d/1.md"]})
        assert publish["begin_step"]["step_id"] == "publish"
        done = await server.ok("finished_step", outputs={"final": "final.md"})
        assert done["status"] == "workflow_complete"
        assert done["all_outputs"] == {
            "notes": "notes.md",
            "drafts": ["d/1.md"],
            "final": "final.md",
        }
        assert done["stack"] == []
    log = (root.parent / "server.stderr").read_text()
    assert "tool=finished_step ok | stack: empty" in log
    assert "tool=start_workflow ok | stack: three_step/main:gather" in log


async def test_nesting_three_deep_push_and_pop(root: Path) -> None:
    write_files(root, "one.md", "two.md", "notes.md")
    async with serve(root) as server:
        await server.ok("start_workflow", goal="a", job_name="three_step", workflow_name="main")
        await server.ok("start_workflow", goal="b", job_name="multi", workflow_name="alpha")
        third = await server.ok("start_workflow", goal="c", job_name="multi", workflow_name="beta")
        assert [e["workflow"] for e in third["stack"]] == [
            "three_step/main",
            "multi/alpha",
            "multi/beta",
        ]
        popped = await server.ok("finished_step", outputs={"two_out": "two.md"})
        assert popped["status"] == "workflow_complete"
        assert [e["workflow"] for e in popped["stack"]] == ["three_step/main", "multi/alpha"]
        popped = await server.ok("finished_step", outputs={"one_out": "one.md"})
        assert [e["workflow"] for e in popped["stack"]] == ["three_step/main"]
        resumed = await server.ok("finished_step", outputs={"notes": "notes.md"})
        assert resumed["begin_step"]["step_id"] == "draft"


async def test_abort_resumes_the_parent(root: Path) -> None:
    async with serve(root) as server:
        await server.ok("start_workflow", goal="a", job_name="three_step", workflow_name="main")
        await server.ok("start_workflow", goal="b", job_name="multi", workflow_name="alpha")
        aborted = await server.ok("abort_workflow", explanation="not needed")
        assert aborted["aborted_workflow"] == "multi/alpha"
        assert (aborted["resumed_workflow"], aborted["resumed_step"]) == (
            "three_step/main",
            "gather",
        )
        write_files(root, "notes.md")
        after = await server.ok("finished_step", outputs={"notes": "notes.md"})
        assert after["begin_step"]["step_id"] == "draft"


async def test_session_id_below_the_top(root: Path) -> None:
    write_files(root, "notes.md", "one.md")
    async with serve(root) as server:
        bottom = await server.ok(
            "start_workflow", goal="a", job_name="three_step", workflow_name="main"
        )
        await server.ok("start_workflow", goal="b", job_name="multi", workflow_name="alpha")
        moved = await server.ok(
            "finished_step",
            outputs={"notes": "notes.md"},
            session_id=bottom["begin_step"]["session_id"],
        )
        assert [e["step"] for e in moved["stack"]] == ["draft", "one"]
        await server.error("finished_step", "outputs.unknown", outputs={"notes": "notes.md"})
        aborted = await server.ok(
            "abort_workflow",
            explanation="bottom first",
            session_id=bottom["begin_step"]["session_id"],
        )
        assert [e["workflow"] for e in aborted["stack"]] == ["multi/alpha"]
        await server.error("finished_step", "identifier.invalid", outputs={}, session_id="../../x")


async def test_concurrent_group_needs_every_steps_outputs(root: Path) -> None:
    write_files(root, "first.md", "left.md", "r1.md", "r2.md")
    async with serve(root) as server:
        await server.ok("start_workflow", goal="g", job_name="concurrent", workflow_name="par")
        group = await server.ok("finished_step", outputs={"first_out": "first.md"})
        assert group["begin_step"]["step_id"] == "left"
        await server.error("finished_step", "outputs.missing", outputs={"left_out": "left.md"})
        await server.error(
            "finished_step", "outputs.missing", outputs={"right_out": ["r1.md", "r2.md"]}
        )
        last = await server.ok(
            "finished_step", outputs={"left_out": "left.md", "right_out": ["r1.md", "r2.md"]}
        )
        assert last["begin_step"]["step_id"] == "last"


async def test_killed_server_is_continued_by_a_new_one(root: Path) -> None:
    write_files(root, "notes.md", "d/1.md")
    with suppress(Exception):  # the first client loses its server mid-session
        async with serve(root, "first") as first:
            started = await first.ok(
                "start_workflow", goal="g", job_name="three_step", workflow_name="main"
            )
            await first.ok("finished_step", outputs={"notes": "notes.md"})
            os.kill(first.pid, signal.SIGKILL)
            raise _Killed
    session_id = started["begin_step"]["session_id"]
    async with serve(root, "second") as second:
        result = await second.ok("finished_step", outputs={"drafts": ["d/1.md"]})
        assert result["status"] == "next_step"
        assert result["begin_step"]["step_id"] == "publish"
        assert result["begin_step"]["session_id"] == session_id


class _Killed(Exception):
    pass


async def test_two_servers_on_one_project_lose_no_update(
    root: Path, make_store: Callable[..., Store]
) -> None:
    write_files(root, "one.md")

    async def run(server: Server, rounds: int) -> list[str]:
        ids = []
        for _ in range(rounds):
            started = await server.ok(
                "start_workflow", goal="g", job_name="multi", workflow_name="alpha"
            )
            session_id = started["begin_step"]["session_id"]
            done = await server.ok(
                "finished_step", outputs={"one_out": "one.md"}, session_id=session_id
            )
            assert done["status"] == "workflow_complete"
            ids.append(session_id)
        return ids

    async with serve(root, "a") as first, serve(root, "b") as second:
        await first.ok("get_workflows")
        await second.ok("get_workflows")
        ids_a, ids_b = await asyncio.gather(run(first, 12), run(second, 12))  # 48 more calls
        assert (await first.ok("get_workflows"))["errors"] == []

    store = SessionStore(make_store(root), root)
    assert store.stack() == []
    stored = store.session_ids()
    assert len(stored) == 24
    for session_id in stored:
        assert store.load(session_id).status is SessionStatus.COMPLETED
    assert set(stored) == set(ids_a) | set(ids_b)


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in {"Z", "X"}


@pytest.mark.parametrize("mode", ["sleep", "escape"])
async def test_a_terminated_server_takes_its_reviewers_with_it(
    root: Path, reviewer_on_path: ScriptedReviewer, mode: str
) -> None:
    reviewer_on_path.answer(mode)
    write_files(root, "report.md")
    reviewer = grandchild = 0
    with suppress(Exception):  # the client loses its server half-way through a call
        async with serve(root, "server", "--external-runner", "claude") as server:
            await server.ok("start_workflow", goal="g", job_name="reviewed", workflow_name="main")
            call = asyncio.create_task(
                server.session.call_tool("finished_step", {"outputs": {"report": "report.md"}})
            )
            for _ in range(600):
                if reviewer_on_path.processes():
                    break
                await asyncio.sleep(0.05)
            [(reviewer, grandchild)] = reviewer_on_path.processes()
            os.kill(server.pid, signal.SIGTERM)
            with suppress(BaseException):
                await asyncio.wait_for(call, 30)
    assert reviewer, (root.parent / "server.stderr").read_text()
    assert grandchild
    for _ in range(200):
        if _gone(reviewer) and _gone(grandchild):
            break
        await asyncio.sleep(0.05)
    assert _gone(reviewer)
    assert _gone(grandchild)
