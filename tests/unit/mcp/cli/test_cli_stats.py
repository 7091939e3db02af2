"""`deepwork stats` over hand-written event logs: the figures a hand count gives."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.events import events_dir
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store
from deepwork_mcp.cli import cli
from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config
from tests.fixtures.paths import FIXTURES
from tests.fixtures.tool_calls import call_ok
from tests.fixtures.workflow_project import make_project

LOGS = FIXTURES / "event_logs"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = events_dir(tmp_path)
    folder.mkdir(parents=True)
    for log in LOGS.glob("*.jsonl"):
        shutil.copy(log, folder / log.name)
    return tmp_path


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["stats", *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def stats_json(project: Path, *args: str) -> dict[str, Any]:
    code, out, _ = run("--json", "--path", str(project), *args)
    assert code == 0
    data = json.loads(out)
    assert isinstance(data, dict)
    return data


def test_the_figures_match_a_hand_count(project: Path) -> None:
    data = stats_json(project)
    assert [job["job"] for job in data["jobs"]] == ["notes", "report"]
    report = data["jobs"][1]
    assert (report["sessions"], report["completed"], report["aborted"]) == (3, 2, 1)
    publish, write = report["steps"]
    # write: first attempts fail, pass (two reviews, both passed), fail; 2 + 1 + 2 attempts;
    # one override; 120 s, 60 s and 90 s from step_begun to step_finished.
    assert write == {
        "step": "write",
        "runs": 3,
        "finished": 3,
        "reviewed_runs": 3,
        "first_try_pass_rate": 0.3333,
        "mean_attempts": 1.6667,
        "overrides": 1,
        "median_seconds": 90.0,
        "criteria": [
            {"criterion": "Clear", "evaluations": 5, "failures": 1, "failure_rate": 0.2},
            {"criterion": "Complete", "evaluations": 1, "failures": 0, "failure_rate": 0.0},
            {"criterion": "Sourced", "evaluations": 5, "failures": 3, "failure_rate": 0.6},
        ],
    }
    # publish: no reviews; finished in 30 s and 10 s; the third run was aborted.
    assert publish == {
        "step": "publish",
        "runs": 3,
        "finished": 2,
        "reviewed_runs": 0,
        "first_try_pass_rate": None,
        "mean_attempts": None,
        "overrides": 0,
        "median_seconds": 20.0,
        "criteria": [],
    }


def test_a_self_review_is_no_reviewer_verdict(project: Path) -> None:
    [notes] = stats_json(project, "--job", "notes")["jobs"]
    [gather] = notes["steps"]
    assert (gather["runs"], gather["reviewed_runs"], gather["median_seconds"]) == (1, 0, 5.0)
    assert gather["first_try_pass_rate"] is None


def test_a_corrupt_log_is_skipped_and_named(project: Path) -> None:
    (events_dir(project) / "sess_broken.jsonl").write_text("not json\n")
    data = stats_json(project)
    assert [s["session_id"] for s in data["skipped"]] == ["sess_broken"]
    assert data["skipped"][0]["error"].startswith("events.corrupt: ")
    assert len(data["jobs"]) == 2


def test_the_table_names_each_step_and_criterion(project: Path) -> None:
    code, out, _ = run("--path", str(project), "--job", "report")
    assert code == 0
    assert "report: 3 session(s), 2 completed, 1 aborted" in out
    assert "write: 3 run(s), first-try pass 33%, mean attempts 1.67, 1 override(s)" in out
    assert "Sourced: failed 3 of 5 (60%)" in out


def test_the_table_says_how_each_pass_rate_is_counted(project: Path, tmp_path: Path) -> None:
    code, out, _ = run("--path", str(project))
    assert code == 0
    assert "first-try pass" in out  # both rates are shown
    assert "first-attempt pass" in out
    legend = out[out.index("How the pass rates are counted") :]
    assert "first-try pass: per step, the share of its reviewed runs whose first round" in legend
    assert "first-attempt pass: per job, step or review, the share of the reviewer calls" in legend
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, _ = run("--path", str(empty))
    assert code == 0
    assert "How the pass rates are counted" not in out  # no figures, nothing to explain


def test_a_project_without_logs(tmp_path: Path) -> None:
    code, out, _ = run("--path", str(tmp_path))
    assert code == 0
    assert "No workflow runs recorded yet" in out
    assert "events/" not in out  # issue 43, item 21: the folder of older versions is gone


def test_a_job_without_runs_beside_others_says_so(project: Path) -> None:
    code, out, _ = run("--path", str(project), "--job", "nothing_ran")
    assert code == 0
    assert "No runs of job 'nothing_ran' recorded yet" in out
    assert "events/" not in out


@pytest.mark.parametrize("content", ["garbage\n", "[" * 100_000])
def test_an_old_state_file_that_does_not_read_is_set_aside_and_the_figures_still_show(
    project: Path, content: str
) -> None:
    broken = project / ".deepwork" / "tmp" / "session_sess_broken01.json"
    broken.write_text(content)
    code, out, err = run("--json", "--path", str(project))
    assert code == 0, err
    assert json.loads(out)["jobs"]  # the logs still came in and are counted
    assert "warning: session.state_corrupt: cannot import state file" in err
    assert str(broken) in err
    assert (broken.parent / "session_sess_broken01.json.unreadable").read_text() == content
    code, _, err = run("--json", "--path", str(project))  # set aside once, not warned again
    assert code == 0
    assert "warning" not in err


def test_past_runs_limit_the_figures_are_over_the_newest_and_say_so(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    root = make_project(tmp_path / "project")
    engine = WorkflowEngine(
        root, JobCatalog.for_project(root), SessionStore(make_store(root), root)
    )
    for n in range(6):
        engine.start(f"run {n}", "three_step" if n < 2 else "multi", "main" if n < 2 else "alpha")
        engine.abort("not needed")
    newest = stats_json(root, "--runs", "4")
    assert newest["window"] == {"limit": 4, "read": 4, "total": 6}
    assert [(j["job"], j["sessions"]) for j in newest["jobs"]] == [("multi", 4)]
    code, out, _ = run("--path", str(root), "--runs", "4")
    assert code == 0
    assert (
        out.splitlines()[0]
        == "Over the newest 4 of 6 runs (--runs N counts more, --all every one)."
    )
    for every in (stats_json(root, "--all"), stats_json(root)):
        assert every["window"] is None
        assert [(j["job"], j["sessions"]) for j in every["jobs"]] == [
            ("multi", 4),
            ("three_step", 2),
        ]
    assert stats_json(root, "--runs", "1", "--job", "three_step")["jobs"][0]["sessions"] == 1


async def test_a_run_that_finished_no_step_yet_is_counted(tmp_path: Path) -> None:
    """Issue 43, item 21: with a run in the store, stats never says none was recorded."""
    root = make_project(tmp_path / "project")
    async with Client(create_server(root, config())) as client:
        await call_ok(
            client, "start_workflow", goal="g", job_name="three_step", workflow_name="main"
        )
    code, out, _ = run("--path", str(root))
    assert code == 0
    assert "No workflow runs" not in out
    assert "three_step: 1 session(s), 0 completed, 0 aborted" in out
