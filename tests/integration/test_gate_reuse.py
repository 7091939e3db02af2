"""Verdicts reused by content and the price before the run, through the real server with the
scripted reviewer on PATH (docs/quality-gate.md, "Verdicts reused", "A price before the run")."""

from __future__ import annotations

from pathlib import Path

from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config
from tests.fixtures.reviewer import ScriptedReviewer
from tests.fixtures.tool_calls import call_ok
from tests.integration.test_quality_gate import root, start_reviewed

__all__ = ["root"]  # a fixture, imported for pytest


async def test_a_second_run_over_the_same_bytes_reuses_the_verdict_and_says_so(
    root: Path, reviewer_on_path: ScriptedReviewer
) -> None:
    server = create_server(root, config(external_runner="claude"))
    async with Client(server) as client:
        first = await start_reviewed(client, root)
        passed = await call_ok(client, "finished_step", outputs={"report": "report.md"})
        assert len(reviewer_on_path.calls()) == 1
        assert passed.get("feedback") is None  # nothing reused: nothing to say
        await start_reviewed(client, root)  # another run, the same report
        dry = await call_ok(client, "finished_step", outputs={"report": "report.md"}, dry_run=True)
        again = await call_ok(client, "finished_step", outputs={"report": "report.md"})
        active = await call_ok(client, "get_active_workflow")
        await start_reviewed(client, root)
        (root / "report.md").write_text((root / "report.md").read_text() + "one more line\n")
        changed = await call_ok(client, "finished_step", outputs={"report": "report.md"})
    [task] = dry["review_tasks"]
    assert (task["expected"]["usd"], task["expected"]["tokens"]) == (0.0, 0)
    assert task["expected"]["basis"].startswith(f"reused from {first}/write, ")
    assert dry["price"]["basis"] == "1 reused (0 USD)"
    assert again["status"] == passed["status"]
    assert f"reused from {first}/write, " in again["feedback"]
    assert len(reviewer_on_path.calls()) == 2  # the first report and the changed one
    assert changed.get("feedback") is None
    assert active["review_usage"]["reused_verdicts"] == 1
