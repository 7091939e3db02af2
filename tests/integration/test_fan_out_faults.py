"""Fan-out under `kill -9` (docs/fan-out.md): 100 runs of a small worktree fan-out, each killed at
a random moment and started again, leave no instance run twice and no worktree behind.

The agent is `tests/fixtures/fan_out_driver.py`, a process that starts the engine as the server
does (recovery first) and resumes the run from its state. `FANOUT_FAULT_RUNS` lowers the number of
runs for a quick local try; CI runs all 100 (a few minutes on an idle machine). A concurrent group
in worktrees goes through the same faults, fewer times (`GROUP_FAULT_RUNS`, default 20)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from deepwork_core.state.store.port import Store

from tests.fixtures.coverage_env import unmeasured
from tests.fixtures.state_rows import all_session_json, event_lines
from tests.integration.test_fan_out_stdio import fan_job
from tests.integration.test_worktree_groups_stdio import GROUP, group_job_v09

#: 100 runs of two driver processes each: more than the 600 s of a `slow` test under coverage
#: on a busy 2-core machine (tests/conftest.py).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

RUNS = int(os.environ.get("FANOUT_FAULT_RUNS", "100"))
GROUP_RUNS = int(os.environ.get("GROUP_FAULT_RUNS", "20"))
REPO = Path(__file__).resolve().parents[2]


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


def _driver(
    root: Path, run_name: str, job: str = "fan", *, victim: bool = False
) -> subprocess.Popen[str]:
    """A driver process; a `victim` (killed at a random moment) is not measured by coverage:
    killed, it would write no data (the run that finishes after it is measured)."""
    return subprocess.Popen(
        [sys.executable, "-m", "tests.fixtures.fan_out_driver", str(root), run_name, job],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=unmeasured() if victim else None,
    )


@pytest.mark.parametrize("job", ["fan", "grp"], ids=["for_each", "worktree_group"])
def test_random_kills_leave_no_double_runs_and_no_worktrees(
    tmp_path: Path, job: str, make_store: Callable[..., Store]
) -> None:
    if job == "fan":
        root, runs, items = (
            fan_job(tmp_path / "project", isolation="worktree"),
            RUNS,
            ["a", "b", "c"],
        )
    else:
        root, runs, items = group_job_v09(tmp_path / "project"), GROUP_RUNS, GROUP
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "user.email", "t@example.com")
    _git(root, "config", "user.name", "T")
    (root / ".gitignore").write_text(".deepwork/tmp/\n*.done\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "base")
    chance = random.Random(31)
    killed = 0
    for run in range(runs):
        name = f"run{run:03d}"
        victim = _driver(root, name, job, victim=True)
        assert victim.stdout is not None
        assert victim.stdout.readline().strip() == "ready"
        time.sleep(chance.uniform(0, 0.4))  # the fault: a kill at a random moment of the run
        if victim.poll() is None:
            os.kill(victim.pid, signal.SIGKILL)
            killed += 1
        victim.communicate()  # reaps it and closes its pipes
        again = _driver(root, name, job)
        _out, err = again.communicate(timeout=120)
        assert again.returncode == 0, err
        assert (root / f"{name}.done").exists()
        _check_run(make_store(root), root, name, len(items))
        _git(root, "add", "-A")  # the run's report is committed like a user would
        _git(root, "commit", "-q", "--allow-empty", "-m", name)
    assert killed > runs // 4  # most kills landed inside a run

    # The next start finds nothing to mend.
    last = _driver(root, "run000", job)
    assert last.communicate(timeout=120)[0] == "ready\n"
    worktrees = root / ".deepwork" / "tmp" / "worktrees"
    assert not worktrees.exists() or not any(worktrees.rglob("*.md"))
    assert _git(root, "worktree", "list").count("\n") == 1
    assert "deepwork/" not in _git(root, "branch", "--list")

    for run in range(runs):
        for item in items:
            assert (root / f"run{run:03d}-{item}.md").read_text() == f"run{run:03d} {item}\n"


def _check_run(store: Store, root: Path, name: str, count: int) -> None:
    """Every instance of run `name` completed, each exactly once, and no worktree remains."""
    tmp = root / ".deepwork" / "tmp"
    instances = set()
    for session in all_session_json(store):
        if session["instance_id"] == name and session.get("instance_of"):
            instances.add(session["session_id"])
            assert session["status"] == "completed", session["session_id"]
    completions: Counter[str] = Counter()
    for session_id in instances:
        for line in event_lines(store, session_id):
            completions[session_id] += json.loads(line)["event"] == "completed"
    assert len(instances) == count
    assert set(completions.values()) <= {0, 1}, completions  # never run twice
    assert not list((tmp / "worktrees").glob("*/*"))
