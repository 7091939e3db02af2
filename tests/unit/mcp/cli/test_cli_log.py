"""`deepwork log` pages a long log: the newest events, a count of the older ones and the
`--before` that reaches them."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.event_pages import COUNT_CAP
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store
from deepwork_mcp.cli import cli

from tests.fixtures.workflow_project import make_project

NOTE = re.compile(r"^… (\d+) older events: deepwork log (\S+) --before (\d+)$")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def _long_run(root: Path, store: Store, extra: int) -> str:
    """A real run (started, its first step begun) and `extra` more `step_begun` events."""
    engine = WorkflowEngine(root, JobCatalog.for_project(root), SessionStore(store, root))
    session_id = engine.start("long", "three_step", "main").brief.session_id
    with store.write() as tx:
        for n in range(extra):
            line = {"v": 1, "ts": f"2026-11-20T10:00:{n % 60:02d}+00:00",
                    "session_id": session_id, "event": "step_begun",
                    "step_ids": [f"s{n:03d}"]}  # fmt: skip
            tx.execute(
                "INSERT INTO events (project_id, session_id, ts, kind, body) "
                "VALUES (?, ?, ?, 'step_begun', ?)",
                (store.project.project_id, session_id, float(n), json.dumps(line)),
            )
    return str(session_id)


def test_log_prints_the_newest_page_and_pages_back_to_the_first_event(
    root: Path, make_store: Callable[..., Store]
) -> None:
    session_id = _long_run(root, make_store(root), 25)  # started, step_begun, then 25 more
    status, every, _ = _run("log", session_id, "--path", str(root))
    assert status == 0
    assert len(every.splitlines()) == 27
    assert " started " in every.splitlines()[0]
    pages: list[list[str]] = []
    args = ["log", session_id, "--path", str(root), "--limit", "10"]
    counts = []
    while True:
        status, out, _ = _run(*args)
        assert status == 0, out
        first, *rest = out.splitlines()
        note = NOTE.match(first)
        if note is None:
            pages.append([first, *rest])
            break
        counts.append(int(note.group(1)))
        assert note.group(2) == session_id
        pages.append(rest)
        assert len(rest) == 10
        args = ["log", session_id, "--path", str(root), "--limit", "10",
                "--before", note.group(3)]  # fmt: skip
    assert counts == [17, 7]
    assert [line for page in reversed(pages) for line in page] == every.splitlines()
    status, out, _ = _run(*args[:-2], "--before", "1")
    assert (status, out.strip()) == (0, f"Session {session_id} has no recorded events before that.")


def test_log_json_is_one_page_and_says_what_is_older_on_stderr(
    root: Path, make_store: Callable[..., Store]
) -> None:
    session_id = _long_run(root, make_store(root), 5)
    status, out, err = _run("log", session_id, "--path", str(root), "--json", "--limit", "3")
    assert status == 0
    assert [e["step_ids"] for e in json.loads(out)] == [["s002"], ["s003"], ["s004"]]
    note = NOTE.match(err.strip())
    assert note is not None
    assert note.group(1) == "4"
    status, out, err = _run("log", session_id, "--path", str(root), "--json")
    assert len(json.loads(out)) == 7
    assert err == ""


def test_log_limit_is_bounded(root: Path) -> None:
    status, _, err = _run("log", "sess_x", "--path", str(root), "--limit", "0")
    assert status == 2
    assert "--limit" in err


def test_log_counts_older_events_up_to_the_cap_and_says_more_past_it(
    root: Path, make_store: Callable[..., Store]
) -> None:
    session_id = _long_run(root, make_store(root), COUNT_CAP + 600)  # 10,602 events
    status, page, _ = _run("log", session_id, "--path", str(root))
    assert status == 0
    first = page.splitlines()[0]
    assert first.startswith("… more than 10,000 older events: deepwork log ")
    before = first.rsplit(" ", 1)[-1]
    status, older, _ = _run("log", session_id, "--path", str(root), "--before", before)
    assert status == 0
    assert older.splitlines()[0].startswith("… 9,602 older events: ")  # exact below the cap
