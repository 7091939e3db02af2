"""Issue 34, items 4 and 6: untrusted JSON nested without end, and reviewer figures that are no
numbers, give the documented coded error at every reader (CLI, dashboard, hooks, the server)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from deepwork_core.base.layout import STACK_PATH
from deepwork_core.state.events import read_events
from deepwork_core.state.store.port import Store
from deepwork_mcp.cli import cli
from deepwork_mcp.server import create_server
from fastmcp import Client
from starlette.testclient import TestClient

from tests.fixtures.configs import config
from tests.fixtures.reviewer import ScriptedReviewer
from tests.fixtures.state_rows import event_lines, insert_event_lines, write_session_json
from tests.fixtures.tool_calls import call_error
from tests.integration.test_quality_gate import root, start_reviewed
from tests.unit.mcp.dashboard.conftest import Waiting, client_for, waiting_project
from tests.unit.mcp.hooks.test_hook_cli import run_hook

__all__ = ["client_for", "root"]  # fixtures, imported for pytest

DEEP = "[" * 100_000 + "]" * 100_000


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


@pytest.fixture
def waiting(tmp_path: Path, make_store: Callable[..., Store]) -> Waiting:
    return waiting_project(make_store, tmp_path / "project")


def test_a_deep_state_file_is_corrupt_state_for_status_and_the_dashboard(
    waiting: Waiting,
    client_for: Callable[..., TestClient],
) -> None:
    write_session_json(
        waiting.store, waiting.session_id, '{"schema_version": 1, "x": ' + DEEP + "}"
    )
    status, out = _cli("status", "--path", str(waiting.root))
    assert status != 0
    assert "session.state_corrupt" in out
    assert "Traceback" not in out
    assert client_for(waiting.root).get("/").status_code == 200


def test_a_deep_stack_marker_trips_no_reader(waiting: Waiting) -> None:
    (waiting.root / STACK_PATH).write_text(DEEP)  # the hooks' mirror; the store never reads it
    status, out = _cli("status", "--path", str(waiting.root))
    assert status == 0, out
    assert "Traceback" not in out


def test_a_deep_event_line_is_a_corrupt_log_for_log_and_the_run_page(
    waiting: Waiting, client_for: Callable[..., TestClient]
) -> None:
    insert_event_lines(waiting.store, waiting.session_id, ['{"event": "note", "x": ' + DEEP + "}"])
    status, out = _cli("log", waiting.session_id, "--path", str(waiting.root))
    assert status != 0
    assert "events.corrupt" in out
    page = client_for(waiting.root).get(f"/run/{waiting.session_id}")
    assert page.status_code != 500
    assert "events.corrupt" in page.text


def test_a_deep_approval_request_is_a_corrupt_approval(
    waiting: Waiting, client_for: Callable[..., TestClient]
) -> None:
    store = waiting.store
    with store.write() as tx:
        tx.execute(
            "UPDATE approval_requests SET body = ? WHERE project_id = ? AND session_id = ?",
            ('{"request_id": ' + DEEP + "}", store.project.project_id, waiting.session_id),
        )
    assert client_for(waiting.root).get(f"/run/{waiting.session_id}").status_code == 200
    assert client_for(waiting.root).get("/approvals").status_code == 200
    status, out = _cli("approve", waiting.session_id, "--path", str(waiting.root))
    assert status != 0
    assert "approval.corrupt" in out


@pytest.mark.slow
def test_a_deep_hook_event_is_bad_input() -> None:
    done = run_hook("post_commit_reminder", '{"hook_event_name": ' + DEEP + "}")
    assert done.returncode == 1
    assert "hook.bad_input" in done.stderr
    assert "Traceback" not in done.stderr


async def test_a_deep_reviewer_line_is_bad_output_and_its_usage_is_still_logged(
    root: Path, reviewer_on_path: ScriptedReviewer, make_store: Callable[..., Store]
) -> None:
    reviewer_on_path.answer("deep_line")
    reviewer_on_path.spend(0.25)
    server = create_server(root, config(external_runner="claude"))
    async with Client(server) as client:
        session_id = await start_reviewed(client, root)
        await call_error(
            client, "finished_step", "quality_gate.bad_output", outputs={"report": "report.md"}
        )
    [usage] = [
        e.as_written()
        for e in read_events(make_store(root), session_id)
        if e.event == "review_usage"
    ]
    assert usage["cost_usd"] == pytest.approx(0.25)
    assert usage["output_tokens"] == 50


def _strict_lines(store: Store, session_id: str) -> list[dict[str, Any]]:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} written to the event log")

    return [json.loads(line, parse_constant=refuse) for line in event_lines(store, session_id)]


async def test_an_infinite_cost_is_refused_and_never_written(
    root: Path, reviewer_on_path: ScriptedReviewer, make_store: Callable[..., Store]
) -> None:
    reviewer_on_path.answer("infinite_cost")
    server = create_server(root, config(external_runner="claude"))
    async with Client(server) as client:
        session_id = await start_reviewed(client, root)
        text = await call_error(
            client, "finished_step", "quality_gate.bad_output", outputs={"report": "report.md"}
        )
    assert "total_cost_usd" in text
    records = _strict_lines(make_store(root), session_id)
    usage = [r for r in records if r["event"] == "review_usage"]
    assert usage  # the refused call is still logged, with its cost as not reported
    assert all(r["cost_usd"] is None or math.isfinite(r["cost_usd"]) for r in usage)
    status, out = _cli("stats", "--path", str(root), "--json")
    assert status == 0, out
    assert "Infinity" not in out


@pytest.mark.parametrize("budget", [".inf", ".nan", "true", '"1.5"', "-1"])
def test_a_budget_must_be_a_finite_positive_number(tmp_path: Path, budget: str) -> None:
    folder = tmp_path / ".deepwork"
    folder.mkdir()
    (folder / "config.yml").write_text(f"quality_gate:\n  budget:\n    max_cost_usd: {budget}\n")
    result = CliRunner().invoke(cli, ["serve", "--path", str(tmp_path)])
    assert result.exit_code != 0
    assert "config.invalid" in result.output
    assert "max_cost_usd" in result.output
