"""A reused verdict, truthfully in every view (docs/quality-gate.md, "Verdicts reused"): the
`review_usage` and `review_verdict` events say where it was judged, `deepwork log` prints
"reused from <session>/<step>, <when>", `deepwork stats --json` counts it at 0 USD so fresh and
reused costs add up exactly, and telemetry counts it without a cost."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner
from deepwork_core.gate.calls import ReviewCalls
from deepwork_core.gate.quality import plan_review_tasks
from deepwork_core.state.event_kinds import ReviewUsageEvent
from deepwork_core.state.events import read_events
from deepwork_core.state.store.port import Store
from deepwork_mcp.cli import cli
from deepwork_mcp.cli.log import render_event
from deepwork_mcp.telemetry import names
from deepwork_mcp.telemetry.emissions import Measurement
from deepwork_mcp.telemetry.runbook import SessionBook

from tests.unit.core.gate.test_calls import ScriptedPort, passes
from tests.unit.core.gate.test_quality import make_request
from tests.unit.core.gate.test_quality import project as project


def judged_twice(store: Store, project: Path) -> list[ReviewUsageEvent]:
    """Three fresh reviews, then the first task again: reused."""
    calls = ReviewCalls(ScriptedPort(*[passes] * 3))
    checkpoint = make_request(store, project)
    tasks = plan_review_tasks(checkpoint)
    for task in tasks:
        calls.judge(checkpoint, task, threading.Event())
    assert calls.judge(checkpoint, tasks[0], threading.Event()).reused_from is not None
    events = read_events(store, checkpoint.resolved_run_id)
    return [e for e in events if isinstance(e, ReviewUsageEvent)]


def test_log_stats_and_telemetry_say_reused_and_add_up(
    project: Path, make_store: Callable[..., Store]
) -> None:
    store = make_store(project)
    events = judged_twice(store, project)
    assert [e.mode for e in events] == ["external", "external", "external", "reused"]
    reused = events[-1]
    line = " ".join(render_event(reused))
    assert "reused_from=reused from sess_123456/write, 20" in line
    assert "cost_usd=0.0" in line

    result = CliRunner().invoke(cli, ["stats", "--json", "--path", str(project)])
    assert result.exit_code == 0, result.output
    [job] = json.loads(result.stdout)["review_costs"]["jobs"]
    usage = job["usage"]
    fresh = sum(e.cost_usd or 0.0 for e in events if e.mode == "external")
    assert (usage["calls"], usage["reused_verdicts"]) == (3, 1)
    assert usage["cost_usd"] == round(fresh, 6) == 0.06
    assert usage["saved_usd"] == 0.02

    book = SessionBook()
    emitted = [m for event in events for m in book.fold(event) if isinstance(m, Measurement)]
    counted = [m for m in emitted if m.instrument == names.M_REVIEW_REUSED]
    assert [m.value for m in counted] == [1]
    cost = sum(m.value for m in emitted if m.instrument == names.M_REVIEW_COST)
    assert round(cost, 6) == usage["cost_usd"]
