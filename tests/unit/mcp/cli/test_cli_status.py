"""`deepwork status` over state written by the real engine, and `deepwork log` output."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store
from deepwork_mcp.cli import cli
from deepwork_mcp.cli.status import age, watch

from tests.fixtures.workflow_project import make_project, write_files


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


@pytest.fixture
def store(root: Path, make_store: Callable[..., Store]) -> Store:
    """The store of the project `root`."""
    return make_store(root)


def _engine(store: Store, root: Path) -> WorkflowEngine:
    return WorkflowEngine(root, JobCatalog.for_project(root), SessionStore(store, root))


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def test_status_json_lists_the_stack_and_the_finished(root: Path, store: Store) -> None:
    engine = _engine(store, root)
    done = engine.start("short one", "multi", "alpha")
    engine.abort("changed my mind")
    outer = engine.start("outer goal", "three_step", "main")
    write_files(root, "notes.md")
    engine.finish({"notes": "notes.md"})
    inner = engine.start("inner goal", "concurrent", "par")

    status, out = _run("status", "--path", str(root), "--json")
    assert status == 0, out
    data = json.loads(out)
    [stack] = data["stacks"]
    assert stack["agent_id"] is None
    assert [(e["job"], e["workflow"], e["steps"]) for e in stack["entries"]] == [
        ("three_step", "main", ["draft"]),
        ("concurrent", "par", ["first"]),
    ]
    assert [e["session_id"] for e in stack["entries"]] == [
        outer.brief.session_id,
        inner.brief.session_id,
    ]
    assert stack["entries"][0]["goal"] == "outer goal"
    [finished] = data["finished"]
    assert finished["session_id"] == done.brief.session_id
    assert finished["status"] == "aborted"
    assert finished["abort_reason"] == "changed my mind"


def test_status_text_nests_the_inner_workflow(root: Path, store: Store) -> None:
    engine = _engine(store, root)
    engine.start("outer", "three_step", "main")
    engine.start("inner", "concurrent", "par")
    status, out = _run("status", "--path", str(root))
    assert status == 0, out
    lines = out.splitlines()
    assert lines[0] == "main stack"
    assert lines[1].startswith("└─ three_step/main  step gather  session ")
    assert lines[2].startswith("   └─ concurrent/par  step first  session ")
    assert "attempts 0  last -" in lines[2]


def test_status_of_an_idle_project(root: Path) -> None:
    assert _run("status", "--path", str(root)) == (0, "No active workflow.\n")


def test_a_negative_finished_count_is_refused(root: Path) -> None:
    code, output = _run("status", "--path", str(root), "--finished", "-1")
    assert code == 2
    assert "--finished" in output


def test_ages_read_well() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    assert [
        age(start, start + timedelta(seconds=s)) for s in (5, 300, 3600 * 3 + 60 * 7, 86400 * 2)
    ] == ["5s", "5m", "3h07m", "2d0h"]


def test_watch_redraws_on_change_only() -> None:
    prints: list[int] = []
    states = iter([1, 1, 2, 2, 3])
    state = {"now": 1}

    def fingerprint() -> int:
        state["now"] = next(states)
        return state["now"]

    watch(
        lambda: prints.append(state["now"]),
        fingerprint,
        sleep=lambda _: None,
        clock=lambda: 0.0,
        rounds=4,
    )
    assert prints == [1, 2, 3]


def test_log_prints_events_readably_and_as_json(root: Path, store: Store) -> None:
    engine = _engine(store, root)
    session_id = engine.start("goal", "three_step", "main").brief.session_id
    # A line as an older writer left it (no review name, a criterion without feedback).
    line = {
        "v": 1,
        "ts": "2026-11-20T10:00:00+00:00",
        "session_id": session_id,
        "event": "review_verdict",
        "step_id": "gather",
        "passed": False,
        "criteria": [{"criterion": "Clear", "passed": False}],
    }
    with store.write() as tx:
        tx.execute(
            "INSERT INTO events (project_id, session_id, ts, kind, body) VALUES (?, ?, 0, ?, ?)",
            (store.project.project_id, session_id, "review_verdict", json.dumps(line)),
        )
    status, out = _run("log", session_id, "--path", str(root))
    assert status == 0, out
    lines = out.splitlines()
    assert " started " in lines[0]
    assert "job=three_step" in lines[0]
    assert "goal=goal" in lines[0]
    assert " step_begun " in lines[1]
    assert 'step_ids=["gather"]' in lines[1]
    assert " review_verdict " in lines[2]
    assert lines[3].strip() == "criteria: criterion=Clear  passed=false"
    status, out = _run("log", session_id, "--path", str(root), "--json")
    assert [e["event"] for e in json.loads(out)] == ["started", "step_begun", "review_verdict"]


def test_log_of_an_unknown_session_is_a_coded_error(root: Path) -> None:
    status, out = _run("log", "no_such_session", "--path", str(root))
    assert status == 1
    assert "session.not_found" in out
    status, out = _run("log", "../x", "--path", str(root))
    assert status == 1
    assert "identifier.invalid" in out


def test_status_shows_each_agent_stack_under_its_id(root: Path, store: Store) -> None:
    engine = _engine(store, root)
    engine.start("main goal", "three_step", "main")
    engine.start("agent goal", "multi", "alpha", agent_id="worker-1")
    status, out = _run("status", "--path", str(root))
    assert status == 0, out
    lines = out.splitlines()
    assert lines[0] == "main stack"
    assert lines[1].startswith("└─ three_step/main  step gather")
    assert lines[2] == "agent worker-1"
    assert lines[3].startswith("└─ multi/alpha  step one")
