"""Issue 23 through the real server and the fake reviewer CLIs on PATH (docs/quality-gate.md).

Review depth, stalled reviewers, token and cost accounting, run budgets and dry runs. Stalls and
usage run once per runner (`claude`, `codex`, `gemini`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.state.events import read_events
from deepwork_core.state.store.port import Store
from deepwork_mcp.cli import cli
from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config
from tests.fixtures.reviewer import ScriptedReviewer
from tests.fixtures.tool_calls import call_error, call_ok
from tests.integration.test_quality_gate import review_brief, root, start_reviewed, state

__all__ = ["root"]  # a fixture, imported for pytest

LIGHT_FRAME_BYTES = 1000
EXHAUSTED = ErrorCode.QUALITY_GATE_BUDGET_EXHAUSTED


def kinds(store: Store, session_id: str) -> list[str]:
    return [event.event for event in read_events(store, session_id)]


def usage_events(store: Store, session_id: str) -> list[dict[str, Any]]:
    return [
        event.as_written()
        for event in read_events(store, session_id)
        if event.event == "review_usage"
    ]


async def test_a_light_review_brief_is_the_criteria_and_little_else(
    root: Path, reviewer_on_path: ScriptedReviewer
) -> None:
    server = create_server(root, config(external_runner="claude", review_depth="light"))
    async with Client(server) as client:
        await start_reviewed(client, root)
        await call_ok(client, "finished_step", outputs={"report": "report.md"}, notes="N" * 5000)
    [call] = reviewer_on_path.calls()
    brief = review_brief(call)
    criteria = "Does the report cover the topic?"
    assert criteria in brief
    assert "N" * 100 not in brief  # author notes are not part of a light brief
    assert len(brief.encode()) <= LIGHT_FRAME_BYTES + len(criteria.encode()) + len(b"Complete")
    assert "BEGIN INPUTS" not in call["stdin"]


async def test_thorough_review_asks_to_read_inputs_and_uses_the_depths_model(
    root: Path, reviewer_on_path: ScriptedReviewer
) -> None:
    models = {"thorough": "deep-model", "light": "small-model"}
    server = create_server(
        root, config(external_runner="claude", review_depth="thorough", models=models)
    )
    async with Client(server) as client:
        await start_reviewed(client, root)
        await call_ok(client, "finished_step", outputs={"report": "report.md"})
    [call] = reviewer_on_path.calls()
    assert "read every input from earlier steps in full" in review_brief(call)
    argv = call["argv"]
    assert argv[argv.index("--model") + 1] == "deep-model"


async def test_self_review_file_follows_the_depth(root: Path) -> None:
    server = create_server(root, config(review_depth="thorough"))
    async with Client(server) as client:
        session_id = await start_reviewed(client, root)
        await call_ok(client, "finished_step", outputs={"report": "report.md"})
        active = await call_ok(client, "get_active_workflow")
    text = (root / ".deepwork/tmp" / f"quality_review_{session_id}_write.md").read_text()
    assert "read every input from earlier steps in full" in text
    # Self-reviews are counted, not metered.
    assert active["review_usage"]["self_reviews"] == 1
    assert active["review_usage"]["calls"] == 0
    assert "not metered" in active["review_usage"]["note"]


async def test_a_stalled_reviewer_is_killed_retried_once_then_answers_stalled(
    root: Path, reviewer_on_path: ScriptedReviewer, runner: str, make_store: Callable[..., Store]
) -> None:
    reviewer_on_path.answer("stall")
    stall = 1.0
    server = create_server(root, config(external_runner=runner, stall_timeout=stall))
    async with Client(server) as client:
        session_id = await start_reviewed(client, root)
        message = await call_error(
            client,
            "finished_step",
            ErrorCode.QUALITY_GATE_REVIEWER_STALLED,
            outputs={"report": "report.md"},
        )
    assert "write: all outputs" in message  # names the task
    assert "2 time(s) in a row (2 s waited in all)" in message
    assert f"quality_review_{session_id}_write.md" in message  # self-review is the way on
    assert len(reviewer_on_path.calls()) == 2
    stalls = [e for e in read_events(make_store(root), session_id) if e.event == "review_stalled"]
    assert [(e.details()["try_number"], e.details()["retrying"]) for e in stalls] == [
        (1, True),
        (2, False),
    ]
    assert sum(float(str(e.details()["waited_seconds"])) for e in stalls) < 3 * stall
    progress = state(make_store(root), session_id)["step_progress"]["write"]
    assert progress["quality_attempts"] == 0  # not counted as an attempt


async def test_a_reviewer_that_stalls_once_is_retried_and_answers(
    root: Path, reviewer_on_path: ScriptedReviewer, runner: str, make_store: Callable[..., Store]
) -> None:
    reviewer_on_path.answer("stall_once")
    server = create_server(root, config(external_runner=runner, stall_timeout=1.0))
    async with Client(server) as client:
        session_id = await start_reviewed(client, root)
        result = await call_ok(client, "finished_step", outputs={"report": "report.md"})
    assert result["status"] == "next_step"
    assert len(reviewer_on_path.calls()) == 2
    assert kinds(make_store(root), session_id).count("review_stalled") == 1


#: Per runner, over three calls: cache-creation tokens, the cost reported, calls without one.
#: Only claude reports a cost; gemini reports no cache creation.
USAGE = {"claude": (30, 0.75, 0), "codex": (30, 0.0, 3), "gemini": (0, 0.0, 3)}


async def test_usage_is_summed_in_active_workflow_status_and_stats(
    root: Path, reviewer_on_path: ScriptedReviewer, runner: str, make_store: Callable[..., Store]
) -> None:
    reviewer_on_path.spend(0.25)
    reviewer_on_path.answer("fail")
    server = create_server(root, config(external_runner=runner, max_attempts=5))
    async with Client(server) as client:
        session_id = await start_reviewed(client, root)
        for _ in range(2):
            await call_ok(client, "finished_step", outputs={"report": "report.md"})
        reviewer_on_path.answer("pass")
        await call_ok(client, "finished_step", outputs={"report": "report.md"})
        active = await call_ok(client, "get_active_workflow")
    calls = reviewer_on_path.calls()
    expected_input = sum(len(call["stdin"].encode()) // 4 for call in calls)
    usage = active["review_usage"]
    assert usage["calls"] == 3
    assert usage["input_tokens"] == expected_input
    assert usage["output_tokens"] == 150
    assert usage["cache_read_tokens"] == 300
    cache_creation, cost, unpriced = USAGE[runner]
    assert usage["cache_creation_tokens"] == cache_creation
    assert usage["cost_usd"] == pytest.approx(cost)
    assert usage["unpriced_calls"] == unpriced
    assert ("reported no cost" in (usage["note"] or "")) is bool(unpriced)
    events = usage_events(make_store(root), session_id)
    assert [(e["attempt"], e["outcome"], e["depth"]) for e in events] == [
        (1, "failed", "standard"),
        (2, "failed", "standard"),
        (3, "passed", "standard"),
    ]
    assert {e["job"] for e in events} == {"reviewed"}
    assert {e["runner"] for e in events} == {runner}
    assert [e["cost_usd"] for e in events] == [0.25 if runner == "claude" else None] * 3
    assert events[0]["criteria"] == 1

    status = json.loads(run_cli("status", "--json", "--path", str(root)))
    assert status["stacks"][0]["review_usage"]["cost_usd"] == pytest.approx(cost)
    assert status["stacks"][0]["review_usage"]["input_tokens"] == expected_input
    text = run_cli("status", "--path", str(root))
    assert "reviews: 3 call(s)" in text
    assert ("cost not reported for 3 call(s)" in text) is bool(unpriced)

    stats = json.loads(run_cli("stats", "--json", "--path", str(root)))
    [job] = stats["review_costs"]["jobs"]
    assert job["usage"]["calls"] == 3
    assert job["usage"]["cost_usd"] == pytest.approx(cost)
    assert job["usage"]["unpriced_calls"] == unpriced
    [review] = stats["review_costs"]["reviews"]
    assert (review["step"], review["review"]) == ("write", "step")
    assert review["first_attempt_pass_rate"] == 0.0
    assert review["mean_seconds"] is not None
    table = run_cli("stats", "--path", str(root))
    spent = f"{cost:.4f} USD" + (f" (cost not reported for {unpriced} call(s))" if unpriced else "")
    assert f"Review costs per job:\n  reviewed: {spent}" in table
    assert f"Review costs per step:\n  reviewed/write: {spent}" in table
    assert "3 call(s), 0 self-review(s), mean " in table
    assert f"reviewed/write/step: {spent}" in table


async def test_a_spent_budget_starts_no_reviewer_and_every_call_got_what_was_left(
    root: Path, reviewer_on_path: ScriptedReviewer, make_store: Callable[..., Store]
) -> None:
    reviewer_on_path.spend(0.40)
    reviewer_on_path.answer("fail")
    budget = {"max_cost_usd": 1.0}
    server = create_server(root, config(external_runner="claude", max_attempts=10, budget=budget))
    async with Client(server) as client:
        session_id = await start_reviewed(client, root)
        for _ in range(2):
            result = await call_ok(client, "finished_step", outputs={"report": "report.md"})
            assert result["status"] == "needs_work"
        third, fourth = [
            await call_error(client, "finished_step", EXHAUSTED, outputs={"report": "report.md"})
            for _ in range(2)
        ]
        active = await call_ok(client, "get_active_workflow")
    assert active["stack"][0]["attempts"] == 2  # budget answers are not attempts here either
    calls = reviewer_on_path.calls()
    assert len(calls) == 3  # no reviewer after the third call
    left = [float(call["argv"][call["argv"].index("--max-budget-usd") + 1]) for call in calls]
    assert left == pytest.approx([1.0, 0.6, 0.2])
    for message in (third, fourth):
        assert f"quality_review_{session_id}_write.md" in message
    assert "1.0000 USD" in fourth  # the third call stopped at the 0.2 USD it was given
    assert "reviewed/write/step 1.0000 USD (3 call(s))" in fourth
    record = state(make_store(root), session_id)["step_progress"]["write"]
    assert record["quality_attempts"] == 2  # the budget answers were not attempts
    assert kinds(make_store(root), session_id).count("outputs_submitted") == 4  # nothing is lost
    assert kinds(make_store(root), session_id).count("budget_exhausted") == 2


def snapshot(store: Store, folder: Path) -> dict[str, bytes]:
    """The runtime folder's files and the store's sessions and events."""
    files = {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
        and not path.name.endswith(".lock")
        and not path.name.startswith("deepwork.sqlite3")
    }
    with store.read() as tx:
        rows = tx.execute("SELECT session_id, body FROM sessions ORDER BY session_id")
        rows += tx.execute("SELECT session_id, body FROM events ORDER BY seq")
    return {**files, "store": json.dumps(rows).encode()}


async def test_a_dry_run_lists_the_tasks_and_changes_nothing(
    root: Path, reviewer_on_path: ScriptedReviewer, make_store: Callable[..., Store]
) -> None:
    server = create_server(root, config(external_runner="claude"))
    async with Client(server) as client:
        await start_reviewed(client, root)
        store = make_store(root)
        before = snapshot(store, root / ".deepwork/tmp")
        result = await call_ok(
            client, "finished_step", outputs={"report": "report.md"}, dry_run=True
        )
        after = snapshot(store, root / ".deepwork/tmp")
        problems = await client.call_tool(
            "finished_step",
            {"outputs": {"report": "missing.md"}, "dry_run": True},
            raise_on_error=False,
        )
        real = await client.call_tool(
            "finished_step", {"outputs": {"report": "missing.md"}}, raise_on_error=False
        )
    assert result["status"] == "dry_run"
    [task] = result["review_tasks"]
    expected = task.pop("expected")
    assert expected["basis"] == "estimated from size"
    assert expected["tokens"] > 0
    assert expected["usd"] > 0  # the claude runner's default model has a price
    price = result["price"]
    assert (price["tokens"], price["usd"]) == (expected["tokens"], expected["usd"])
    assert price["text"] in result["feedback"]
    assert task == {
        "name": "write: all outputs",
        "run_each": "step",
        "criteria": ["Complete"],
        "depth": "standard",
        "files": ["report.md"],
    }
    assert before == after
    assert reviewer_on_path.calls() == []
    assert problems.is_error
    assert real.is_error
    assert problems.content == real.content  # the same coded problems as a real call


def run_cli(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout
