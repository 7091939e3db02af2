"""The server's store (docs/architecture.md, docs/config.md): opened once per project when its
state is first needed, kept for the server's life, closed when its lifespan ends; an edit of
`store.url` meanwhile takes effect at the next start."""

from __future__ import annotations

from pathlib import Path

import pytest
from deepwork_core.state.store.url import STORE_URL_ENV
from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config
from tests.fixtures.tool_calls import call_ok
from tests.fixtures.workflow_project import make_project

START = {"goal": "g", "job_name": "three_step", "workflow_name": "main"}


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose store `store.url` of its config chooses (no `DEEPWORK_STORE_URL`)."""
    monkeypatch.delenv(STORE_URL_ENV, raising=False)
    return make_project(tmp_path / "project")


def _use_store(root: Path, path: Path) -> None:
    (root / ".deepwork" / "config.yml").write_text(f"store:\n  url: sqlite:///{path}\n")


async def _stack(client: Client) -> list[str]:  # type: ignore[type-arg]
    active = await call_ok(client, "get_active_workflow")
    return [entry["session_id"] for entry in active["stack"]]


async def test_a_running_server_keeps_the_store_it_opened_when_store_url_is_edited(
    root: Path, tmp_path: Path
) -> None:
    first, second = tmp_path / "first.sqlite3", tmp_path / "second.sqlite3"
    _use_store(root, first)
    server = create_server(root, config())
    async with Client(server) as client:
        assert not first.exists()  # listing the jobs opens no store
        await call_ok(client, "get_workflows")
        assert not first.exists()
        started = await call_ok(client, "start_workflow", **START)
        session_id = started["begin_step"]["session_id"]
        _use_store(root, second)  # edited while the server runs
        assert await _stack(client) == [session_id]
        await call_ok(client, "abort_workflow", explanation="done")
        assert await _stack(client) == []
    assert first.is_file()
    assert not second.exists()  # the running server never looked at the new URL

    async with Client(create_server(root, config())) as client:  # the next start
        started = await call_ok(client, "start_workflow", **START)
    assert second.is_file()  # it opened the store the config names now


async def test_the_store_closes_with_the_servers_lifespan_and_opens_again(root: Path) -> None:
    wal = root / ".deepwork" / "tmp" / "deepwork.sqlite3-wal"
    server = create_server(root, config())
    async with Client(server) as client:
        started = await call_ok(client, "start_workflow", **START)
        assert wal.is_file()  # the server's connection is open
    # SQLite removes the write-ahead log when the last connection to the file closes.
    assert not wal.exists()
    async with Client(server) as client:  # a later client of the same server
        assert await _stack(client) == [started["begin_step"]["session_id"]]
        assert wal.is_file()
    assert not wal.exists()
