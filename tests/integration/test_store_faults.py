"""Fault tests of the SQLite store: a writer killed mid-run, and writers racing on one file.

- A process finishing checkpoints is killed with SIGKILL after 50 of 100: the file passes
  `PRAGMA integrity_check` and holds the `step_finished` event of every checkpoint the process
  had acknowledged (printed after `finish` returned).
- Two processes finishing checkpoints (each on its own agent stack) and a third running
  `deepwork status` and `deepwork log` against the same file all end cleanly: none ever sees
  "database is locked".
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.workflow_project import make_project, write_files

_CHECKPOINTS = """
import sys
from pathlib import Path
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.opening import open_store
root, agent, rounds = Path(sys.argv[1]), sys.argv[2] or None, int(sys.argv[3])
sessions = SessionStore(open_store(None, root), root)
engine = WorkflowEngine(root, JobCatalog.for_project(root), sessions)
done = 0
while done < rounds:
    engine.start("g", "three_step", "main", inputs={"topic": "t"}, agent_id=agent)
    for outputs in ({"notes": "notes.md"}, {"drafts": ["d.md"]}, {"final": "final.md"}):
        engine.finish(outputs, agent_id=agent)
        done += 1
        print("ack", done, flush=True)
        if done == rounds:
            break
"""


def _project(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "p")
    write_files(root, "notes.md", "d.md", "final.md")
    return root


def _writer(root: Path, agent: str, rounds: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _CHECKPOINTS, str(root), agent, str(rounds)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "DEEPWORK_STORE_URL"},
    )


def _finished_events(database: Path) -> int:
    conn = sqlite3.connect(database)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        [(count,)] = conn.execute("SELECT count(*) FROM events WHERE kind = 'step_finished'")
        return int(count)
    finally:
        conn.close()


@pytest.mark.slow
def test_a_writer_killed_mid_run_loses_no_acknowledged_checkpoint(tmp_path: Path) -> None:
    root = _project(tmp_path)
    acknowledged = 0
    with _writer(root, "", 100) as writer:
        assert writer.stdout is not None
        for line in writer.stdout:
            acknowledged = int(line.split()[1])
            if acknowledged >= 50:
                writer.send_signal(signal.SIGKILL)
                break
        writer.communicate(timeout=60)
    assert writer.returncode == -signal.SIGKILL
    assert _finished_events(root / ".deepwork/tmp/deepwork.sqlite3") >= acknowledged >= 50


@pytest.mark.slow
def test_two_writers_and_the_cli_never_see_a_locked_database(tmp_path: Path) -> None:
    root = _project(tmp_path)
    writers = [_writer(root, agent, 45) for agent in ("one", "two")]
    readers = 0
    while any(w.poll() is None for w in writers):
        for command in (["status", "--json"], ["stats", "--json"]):
            done = subprocess.run(
                [sys.executable, "-c", "import sys; from deepwork_mcp.cli import main; "
                 "sys.exit(main())", *command, "--path", str(root)],
                capture_output=True, text=True, timeout=120, check=False,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            assert "locked" not in done.stderr
            readers += 1
    for writer in writers:
        _, errors = writer.communicate(timeout=60)
        assert writer.returncode == 0, errors
        assert "locked" not in errors
    assert readers > 0
    assert _finished_events(root / ".deepwork/tmp/deepwork.sqlite3") == 90
