"""Everything an agent sends that points outside the project is rejected (docs/job-format.md)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from deepwork_core.state.store.port import Store
from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config
from tests.fixtures.state_rows import session_json, write_session_json
from tests.fixtures.tool_calls import call_error, call_ok
from tests.fixtures.workflow_project import make_project, write_files


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = make_project(tmp_path / "project")
    (tmp_path / "secret.md").write_text("TOP SECRET\n")
    (tmp_path / "x").mkdir()
    (project / "escape.md").symlink_to(tmp_path / "secret.md")
    (project / "escape_dir").symlink_to(tmp_path / "x")
    return project


@pytest.fixture
async def client(root: Path) -> AsyncIterator[Client[Any]]:
    async with Client(create_server(root, config())) as connected:
        yield connected


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every path under `folder` (not following symlinks) with its size and mtime."""
    found: dict[str, tuple[int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            info = path.lstat()
            found[str(path)] = (info.st_size, info.st_mtime_ns)
    return found


def outside(root: Path) -> dict[str, tuple[int, int]]:
    everything = snapshot(root.parent)
    return {path: info for path, info in everything.items() if not path.startswith(str(root))}


@pytest.mark.parametrize(
    "path",
    ["../x", "/etc/passwd", "sub/../../x", "escape.md", "escape_dir/new.md", "../secret.md"],
)
async def test_output_paths_outside_the_project_are_rejected(
    client: Client[Any], root: Path, path: str
) -> None:
    await call_ok(client, "start_workflow", goal="g", job_name="three_step", workflow_name="main")
    before = outside(root)
    text = await call_error(
        client, "finished_step", "path.outside_project", outputs={"notes": path}
    )
    assert "TOP SECRET" not in text
    assert outside(root) == before


@pytest.mark.parametrize("path", ["../x", "/etc/passwd", "escape.md"])
async def test_outside_paths_in_files_outputs_are_rejected(
    client: Client[Any], root: Path, path: str
) -> None:
    await call_ok(client, "start_workflow", goal="g", job_name="three_step", workflow_name="main")
    write_files(root, "notes.md", "d/1.md")
    await call_ok(client, "finished_step", outputs={"notes": "notes.md"})
    await call_error(
        client, "finished_step", "path.outside_project", outputs={"drafts": ["d/1.md", path]}
    )


@pytest.mark.parametrize("job_name", ["../x", "/etc", "../../project/.deepwork/jobs/multi", ".."])
async def test_job_names_that_are_paths_are_rejected(
    client: Client[Any], root: Path, job_name: str
) -> None:
    before = outside(root)
    await call_error(
        client,
        "start_workflow",
        "identifier.invalid",
        goal="g",
        job_name=job_name,
        workflow_name="main",
    )
    assert outside(root) == before
    assert not (root / ".deepwork/tmp/stack.json").exists()


@pytest.mark.parametrize("session_id", ["../../x", "../../../secret", "/etc/passwd", "a/../../b"])
async def test_session_ids_that_are_paths_are_rejected(
    client: Client[Any], root: Path, session_id: str
) -> None:
    await call_ok(client, "start_workflow", goal="g", job_name="multi", workflow_name="alpha")
    before = outside(root)
    await call_error(
        client, "finished_step", "identifier.invalid", outputs={}, session_id=session_id
    )
    await call_error(
        client, "abort_workflow", "identifier.invalid", explanation="x", session_id=session_id
    )
    await call_error(
        client, "go_to_step", "identifier.invalid", step_id="first", session_id=session_id
    )
    await call_error(client, "get_active_workflow", "identifier.invalid", session_id=session_id)
    assert outside(root) == before


async def test_a_stack_marker_that_is_a_fifo_blocks_nothing(
    client: Client[Any], root: Path
) -> None:
    await call_ok(client, "start_workflow", goal="g", job_name="three_step", workflow_name="main")
    stack = root / ".deepwork" / "tmp" / "stack.json"
    stack.unlink()
    os.mkfifo(stack)
    await call_ok(client, "get_workflows")  # answers at once, not blocked on the FIFO
    # The store holds the stacks; the marker is only written, never read by the server.
    (root / "notes.md").write_text("notes\n")
    await call_ok(client, "finished_step", outputs={"notes": "notes.md"})
    await call_ok(client, "abort_workflow", explanation="stop")
    assert not stack.exists()


async def test_git_internals_are_never_outputs(client: Client[Any], root: Path) -> None:
    await call_ok(client, "start_workflow", goal="g", job_name="three_step", workflow_name="main")
    (root / ".git").mkdir(exist_ok=True)
    (root / ".git" / "config").write_text("[core]\n\ttoken = SECRET\n")
    (root / "git_link.md").symlink_to(root / ".git" / "config")
    for path in (".git/config", "git_link.md"):
        text = await call_error(
            client, "finished_step", "path.git_internal", outputs={"notes": path}
        )
        assert "SECRET" not in text


async def test_a_session_without_current_steps_is_a_coded_error(
    client: Client[Any], root: Path, make_store: Callable[..., Store]
) -> None:
    started = await call_ok(
        client, "start_workflow", goal="g", job_name="three_step", workflow_name="main"
    )
    session_id = started["begin_step"]["session_id"]
    store = make_store(root)
    data = session_json(store, session_id)
    data["current_step_ids"] = []
    write_session_json(store, session_id, data)
    await call_ok(client, "get_workflows")
    await call_error(client, "finished_step", "session.state_corrupt", outputs={"notes": "n.md"})
    await call_error(client, "abort_workflow", "session.state_corrupt", explanation="stop")


async def test_the_user_is_told_about_the_workflow_branch_and_the_way_back(root: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "i")
    async with Client(create_server(root, config(create_branch=True))) as connected:
        started = await call_ok(
            connected, "start_workflow", goal="g", job_name="three_step", workflow_name="main"
        )
        branch = started["branch_name"]
        assert branch.startswith("deepwork/three_step-")
        assert "`git switch main`" in started["branch_note"]
        aborted = await call_ok(connected, "abort_workflow", explanation="stop")
    assert f"`{branch}` still exists" in aborted["branch_note"]
    assert "`git switch main`" in aborted["branch_note"]
