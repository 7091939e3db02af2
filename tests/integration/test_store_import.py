"""A project's old state files are imported on the store's first open and read as before.

tests/fixtures/old_state/ holds what the file-based DeepWork wrote and printed for one project
(its README says how it was made); here the same files go into a new project's
`.deepwork/tmp/`, and `status`, `log`, `stats` and `get_active_workflow` must print the same.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from deepwork_core.state.store.port import Store
from deepwork_mcp.cli import cli
from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.conftest import on_postgres
from tests.fixtures.workflow_project import make_project

OLD = Path(__file__).parents[1] / "fixtures" / "old_state"
IDS: dict[str, str] = json.loads((OLD / "ids.json").read_text())


def run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = make_project(tmp_path / "project")
    shutil.copytree(OLD / "tmp", project / ".deepwork" / "tmp")
    return project


def test_the_old_files_are_imported_once_and_kept_renamed(root: Path) -> None:
    run("status", "--path", str(root))
    tmp = root / ".deepwork" / "tmp"
    assert sorted(p.name for p in tmp.glob("session_*")) == sorted(
        f"session_{i}.json.imported" for i in IDS.values()
    )
    assert sorted(p.name for p in (tmp / "events").iterdir()) == sorted(
        f"{i}.jsonl.imported" for i in IDS.values()
    )
    assert (tmp / "deepwork.sqlite3").is_file() or on_postgres()
    assert json.loads((tmp / "stack.json").read_text())["session_ids"] == [
        IDS["outer"],
        IDS["inner"],
    ]


def _known(new: Any, old: Any) -> Any:
    """`new` without the keys later versions added (fields are only ever added)."""
    if isinstance(new, dict) and isinstance(old, dict):
        return {k: _known(v, old[k]) for k, v in new.items() if k in old}
    if isinstance(new, list) and isinstance(old, list) and len(new) == len(old):
        return [_known(n, o) for n, o in zip(new, old, strict=True)]
    return new


def test_status_and_stats_print_as_before(root: Path) -> None:
    for command in ("status", "stats"):
        old = json.loads((OLD / f"renders/{command}.json").read_text())
        new = json.loads(run(command, "--json", "--path", str(root)))
        assert _known(new, old) == old


@pytest.mark.parametrize("name", sorted(IDS))
def test_log_prints_every_event_as_before(root: Path, name: str) -> None:
    session_id = IDS[name]
    expected_text = (OLD / f"renders/log_{name}.txt").read_text()
    assert run("log", session_id, "--path", str(root)) == expected_text
    expected_json = (OLD / f"renders/log_{name}.json").read_text()
    assert run("log", session_id, "--path", str(root), "--json") == expected_json


def test_export_writes_the_old_log_lines(root: Path) -> None:
    session_id = IDS["outer"]
    old_lines = (OLD / "tmp" / "events" / f"{session_id}.jsonl").read_text()
    assert run("store", "export", session_id, "--path", str(root)) == old_lines


async def test_get_active_workflow_answers_as_before(root: Path) -> None:
    async with Client(create_server(root)) as client:
        result = await client.call_tool("get_active_workflow", {})
    answer: Any = json.loads(json.dumps(result.structured_content).replace(str(root), "<ROOT>"))
    old = json.loads((OLD / "renders/get_active_workflow.json").read_text())
    assert _known(answer, old) == old


def test_the_run_continues_where_the_old_files_left_it(
    root: Path, make_store: Callable[..., Store]
) -> None:
    from deepwork_core.engine.workflow import WorkflowEngine
    from deepwork_core.jobs.discovery import JobCatalog
    from deepwork_core.state.sessions import SessionStore

    from tests.fixtures.workflow_project import write_files

    engine = WorkflowEngine(
        root, JobCatalog.for_project(root), SessionStore(make_store(root), root)
    )
    write_files(root, "one.md")
    engine.finish({"one_out": "one.md"})  # the nested run completes ...
    [top] = SessionStore(make_store(root), root).stack()
    assert top.session_id == IDS["outer"]  # ... and the outer one is on top again
    assert top.current_step_ids == ["draft"]
