"""The day cap across servers (docs/quality-gate.md, "Budgets"): four `deepwork serve` processes,
each serving its own checkout of the project on one PostgreSQL store, review at once with
parallel background reviewers under `quality_gate.max_budget_usd_per_day: 1`. The reviewer
double (as the `claude` CLI) would spend 0.30 USD a call and, like the real CLI, stops at the
`--max-budget-usd` it is given. Together they never spend more than the day's 1 USD, and every
stop names the day cap, what was spent and when the day resets."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.gate.costs.day_cap import day_window
from deepwork_core.state.store.opening import open_store
from deepwork_core.state.store.tables.spend_rows import spent_today

from tests.fixtures.reviewer import ScriptedReviewer
from tests.fixtures.stdio_server import Server, serve
from tests.fixtures.workflow_project import make_project, write_files

SERVERS = 4
APPENDICES = [f"a{n}.md" for n in range(1, 8)]
#: What one review would cost if nothing stopped it.
FULL_COST = 0.3
CONFIG = """\
quality_gate:
  external_runner: claude
  max_budget_usd_per_day: 1
  max_parallel: 4
  wait_seconds: 5
  reuse: off
  deepreview_rules: false
"""


async def _review_until_stopped(server: Server, root: Path, name: str) -> list[str]:
    """Start a run and submit its two steps; the text of every error answer."""
    started = await server.ok("start_workflow", goal="g", job_name="reviewed", workflow_name="main")
    assert started["begin_step"]["session_id"]
    write_files(root, "report.md", "final.md", *APPENDICES, text=f"{name}: ")
    for outputs in (
        {"report": "report.md"},
        {"final": "final.md", "appendix": APPENDICES},
    ):
        status = "reviewing"
        while status == "reviewing":  # reviews waiting for the day: call again, as agents do
            result = await server.session.call_tool("finished_step", {"outputs": outputs})
            if result.is_error:
                return ["".join(getattr(part, "text", "") for part in result.content)]
            assert result.structured_content is not None
            status = result.structured_content["status"]
        assert status in ("next_step", "workflow_complete")
    return []


async def _one_server(
    tmp_path: Path, n: int, env: dict[str, str], ready: asyncio.Barrier
) -> list[str]:
    root = make_project(tmp_path / f"checkout-{n}" / "project")
    (root / ".deepwork" / "config.yml").write_text(CONFIG)
    async with serve(root, f"server-{n}", env=env) as server:
        await ready.wait()  # every server up before any reviews
        return await _review_until_stopped(server, root, f"checkout {n}")


@pytest.mark.slow  # four servers and their reviewer processes
async def test_four_servers_with_parallel_reviewers_never_overshoot_a_1_usd_day(
    tmp_path: Path, pg_url: str, scripted_reviewer: ScriptedReviewer
) -> None:
    scripted_reviewer.spend(FULL_COST)
    env = {**os.environ, **scripted_reviewer.env, "DEEPWORK_STORE_URL": pg_url}
    ready = asyncio.Barrier(SERVERS)
    answers = await asyncio.gather(*(_one_server(tmp_path, n, env, ready) for n in range(SERVERS)))

    store = open_store(pg_url, tmp_path / "checkout-0" / "project")
    try:
        spent = spent_today(store, *day_window(store.now()))
    finally:
        store.close()
    stops = [text for texts in answers for text in texts]
    assert len(answers) == SERVERS
    assert scripted_reviewer.calls()  # reviewers ran
    assert 0 < spent <= 1.0  # what every call spent or still holds: never past the day's cap
    assert stops  # 4 runs of 8 reviews at 0.30 USD would be 9.60 USD
    for text in stops:  # refused before a reviewer started, or stopped at its slice
        assert text.startswith(f"{ErrorCode.QUALITY_GATE_DAY_BUDGET_EXHAUSTED}: "), text
        assert "quality_gate.max_budget_usd_per_day: 1 USD" in text
        assert "spent or held today" in text
        assert "It resets at " in text
