"""A server whose last client left stops its background work (docs/quality-gate.md): no review
worker or lease keeper of it keeps running, and a client that comes back is served again."""

from __future__ import annotations

import threading
from pathlib import Path

from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config
from tests.fixtures.reviewer import ScriptedReviewer
from tests.fixtures.tool_calls import call_ok
from tests.fixtures.workflow_project import make_project, write_files

#: The thread names of the gate's background work (deepwork_core.gate.background).
WORKER_THREADS = ("deepwork-review", "deepwork-lease")


def workers() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith(WORKER_THREADS)}


async def review_one_step(client: Client, root: Path) -> str:  # type: ignore[type-arg]
    await call_ok(client, "start_workflow", goal="g", job_name="reviewed", workflow_name="main")
    write_files(root, "report.md")
    done = await call_ok(client, "finished_step", outputs={"report": "report.md"})
    status: str = done["status"]
    return status


async def test_the_reviewers_threads_end_with_the_last_client_and_come_back_with_the_next(
    tmp_path: Path, reviewer_on_path: ScriptedReviewer, runner: str
) -> None:
    root = make_project(tmp_path / "project")
    before = workers()
    # Reuse off: the second client's review must start a reviewer, not take the first verdict.
    server = create_server(root, config(external_runner=runner, reuse="off"))
    async with Client(server) as client:
        assert await review_one_step(client, root) == "next_step"
        assert workers() - before  # the review ran in the background workers
    assert not workers() - before
    async with Client(server) as again:
        await call_ok(again, "abort_workflow", explanation="start over")
        assert await review_one_step(again, root) == "next_step"
    assert not workers() - before
    assert len(reviewer_on_path.calls()) == 2
