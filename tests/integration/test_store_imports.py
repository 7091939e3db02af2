"""`deepwork serve` on SQLite never imports the PostgreSQL driver, not even after tool calls
that open the store; with a `postgresql://` URL it does. It never imports the template engine
(only the dashboard and `report --html` render templates). The server runs with
`PYTHONPROFILEIMPORTTIME=1`, so its stderr lists every module it imported."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fixtures.postgres import LocalPostgres
from tests.fixtures.stdio_server import serve
from tests.fixtures.workflow_project import make_project, write_files

pytestmark = pytest.mark.slow


def _imported(stderr: Path) -> set[str]:
    """The modules `-X importtime` reported (`import time: self | cumulative | name`)."""
    names = set()
    for line in stderr.read_text().splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


async def _run_workflow(root: Path, env: dict[str, str]) -> set[str]:
    async with serve(root, "imports", env={**env, "PYTHONPROFILEIMPORTTIME": "1"}) as server:
        await server.ok("start_workflow", goal="g", job_name="three_step", workflow_name="main")
        answer = await server.ok("finished_step", outputs={"notes": "notes.md"})
        assert answer["status"] == "next_step"
        await server.ok("get_active_workflow")
    return _imported(root.parent / "imports.stderr")


def _project(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "p")
    write_files(root, "notes.md")
    return root


async def test_serving_on_sqlite_never_imports_psycopg(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DEEPWORK_STORE_URL"}
    imported = await _run_workflow(_project(tmp_path), env)
    assert "deepwork_core.state.store.sqlite" in imported  # the store was opened
    assert not {name for name in imported if name.split(".")[0] == "psycopg"}
    assert "deepwork_core.state.store.postgres" not in imported


async def test_serving_never_imports_the_template_engine(tmp_path: Path) -> None:
    imported = await _run_workflow(_project(tmp_path), dict(os.environ))
    assert "deepwork_mcp.server" in imported  # the list is the server's
    assert not {name for name in imported if name.split(".")[0] in ("jinja2", "markupsafe")}


async def test_serving_on_postgresql_imports_it(tmp_path: Path, postgres: LocalPostgres) -> None:
    env = {**os.environ, "DEEPWORK_STORE_URL": postgres.create_database()}
    imported = await _run_workflow(_project(tmp_path), env)
    assert {"psycopg", "deepwork_core.state.store.postgres"} <= imported
