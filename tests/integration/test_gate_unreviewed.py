"""A checkpoint no reviewer judged is `unreviewed`, never a reviewer's pass (docs/evidence.md).

The gate is consulted for any step with file outputs (a `.deepreview` rule might match them);
when no review applies, it passes without running a reviewer. That pass is recorded as
`unreviewed` in the quality log, the evidence and the `step_finished` event; `deepwork status`
shows it as such and `deepwork stats` counts it in no pass figure. Through the real server with
a fake `claude` and the real CLI.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from deepwork_core.base.config import DeepWorkConfig
from deepwork_core.state.store.port import Store
from deepwork_mcp.cli import cli
from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config
from tests.fixtures.reviewer import ScriptedReviewer
from tests.fixtures.state_rows import event_lines
from tests.fixtures.tool_calls import call_ok
from tests.fixtures.workflow_project import make_project, write_files
from tests.integration.test_quality_gate import state


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


def cli_json(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def step_finished_verdicts(store: Store, session_id: str) -> list[str]:
    events = [json.loads(line) for line in event_lines(store, session_id)]
    return [event["verdict"] for event in events if event["event"] == "step_finished"]


async def finish_first_step(root: Path, settings: DeepWorkConfig, job: str) -> str:
    """Start `job`'s `main` workflow and finish its first step; return the session id."""
    async with Client(create_server(root, settings)) as client:
        started = await call_ok(
            client, "start_workflow", goal="g", job_name=job, workflow_name="main"
        )
        write_files(root, "notes.md", "report.md")
        output = {"three_step": {"notes": "notes.md"}, "reviewed": {"report": "report.md"}}[job]
        answer = await call_ok(client, "finished_step", outputs=output)
        assert answer["status"] == "next_step"
    session_id: str = started["begin_step"]["session_id"]
    return session_id


@pytest.mark.parametrize(
    "settings",
    [config(external_runner="claude"), config()],
    ids=["external", "self_review"],
)
async def test_a_pass_with_no_review_is_recorded_unreviewed(
    root: Path,
    reviewer_on_path: ScriptedReviewer,
    settings: DeepWorkConfig,
    make_store: Callable[..., Store],
) -> None:
    session_id = await finish_first_step(root, settings, "three_step")
    assert reviewer_on_path.calls() == []  # the gate was consulted; nothing applied
    data = state(make_store(root), session_id)
    assert [(e["kind"], e["passed"]) for e in data["quality_log"]] == [("unreviewed", True)]
    assert [item["verdict"] for item in data["evidence"]] == ["unreviewed"]
    assert step_finished_verdicts(make_store(root), session_id) == ["unreviewed"]

    [stack] = cli_json("status", "--path", str(root))["stacks"]
    assert stack["entries"][0]["last_verdict"] == "unreviewed"
    [job] = cli_json("stats", "--path", str(root))["jobs"]
    gather = next(step for step in job["steps"] if step["step"] == "gather")
    assert (gather["finished"], gather["reviewed_runs"]) == (1, 0)
    assert gather["first_try_pass_rate"] is None


async def test_a_reviewers_pass_is_still_recorded_as_the_reviewers(
    root: Path, reviewer_on_path: ScriptedReviewer, make_store: Callable[..., Store]
) -> None:
    session_id = await finish_first_step(root, config(external_runner="claude"), "reviewed")
    assert len(reviewer_on_path.calls()) == 1
    data = state(make_store(root), session_id)
    assert [(e["kind"], e["passed"]) for e in data["quality_log"]] == [("review", True)]
    assert [item["verdict"] for item in data["evidence"]] == ["reviewer"]
    assert step_finished_verdicts(make_store(root), session_id) == ["reviewer"]
    [job] = cli_json("stats", "--path", str(root))["jobs"]
    write = next(step for step in job["steps"] if step["step"] == "write")
    assert (write["reviewed_runs"], write["first_try_pass_rate"]) == (1, 1.0)
