"""Verdicts reused by content and the price before the run, through the real server with the
scripted reviewer on PATH (docs/quality-gate.md, "Verdicts reused", "A price before the run")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from deepwork_core.state.store.url import STORE_URL_ENV
from deepwork_mcp.cli import cli
from deepwork_mcp.dashboard.app import dashboard_app
from deepwork_mcp.server import create_server
from deepwork_mcp.telemetry import names
from fastmcp import Client
from starlette.testclient import TestClient

from tests.fixtures.configs import config
from tests.fixtures.reviewer import ScriptedReviewer
from tests.fixtures.tool_calls import call_ok
from tests.fixtures.workflow_project import make_project
from tests.integration.test_quality_gate import root, start_reviewed
from tests.integration.test_telemetry import Recorded, recorded

__all__ = ["recorded", "root"]  # fixtures, imported for pytest

DASHBOARD = "http://127.0.0.1:8765"


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


async def test_a_failed_verdict_is_judged_again_unless_reuse_all_which_says_so(
    root: Path, reviewer_on_path: ScriptedReviewer
) -> None:
    reviewer_on_path.answer("fail")
    answers = []
    for reuse in ("passes", "passes", "all"):
        server = create_server(root, config(external_runner="claude", reuse=reuse))
        async with Client(server) as client:
            session = await start_reviewed(client, root)  # another run, the same report
            answer = await call_ok(client, "finished_step", outputs={"report": "report.md"})
            answers.append((session, answer))
    assert [a["status"] for _, a in answers] == ["needs_work"] * 3
    assert len(reviewer_on_path.calls()) == 2  # `passes` judges a failure again; `all` does not
    judged, second = answers[1]  # the newer verdict of the same key is the one kept
    [fresh_fail] = second["failed_reviews"]
    assert "reused_from" not in fresh_fail
    [reused] = answers[2][1]["failed_reviews"]
    assert reused["reused_from"].startswith(f"reused from {judged}/write, ")
    assert f"reused from {judged}/write, " in answers[2][1]["feedback"]


async def test_another_checkout_of_a_shared_store_reuses_the_verdict_and_a_separate_store_not(
    tmp_path: Path,
    reviewer_on_path: ScriptedReviewer,
    pg_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two checkouts of the project on one PostgreSQL store (each its own project in it), and a
    third on its own SQLite file: the same report judged in the first is reused in the second,
    never in the third."""
    checkouts = [make_project(tmp_path / name / "project") for name in ("a", "b", "alone")]
    answers = []
    for checkout, url in zip(checkouts, [pg_url, pg_url, None], strict=True):
        if url is None:
            monkeypatch.delenv(STORE_URL_ENV, raising=False)
        else:
            monkeypatch.setenv(STORE_URL_ENV, url)
        async with Client(create_server(checkout, config(external_runner="claude"))) as client:
            session = await start_reviewed(client, checkout)
            answer = await call_ok(client, "finished_step", outputs={"report": "report.md"})
            answers.append((session, answer))
    (first, _), (_, shared), (_, alone) = answers
    assert len(reviewer_on_path.calls()) == 2  # checkout a, and the one on its own store
    assert f"reused from {first}/write, " in shared["feedback"]
    assert alone.get("feedback") is None


async def test_a_needs_work_round_re_runs_only_the_edited_file_and_every_view_says_reused(
    root: Path, reviewer_on_path: ScriptedReviewer, recorded: Recorded
) -> None:
    """The polish step's three tasks (final, appendix a1, appendix a2): a2 fails, is edited, and
    the second round of the same run calls the reviewer for a2 alone. The receipt, `deepwork
    log`, `deepwork stats --json`, the run and stats pages and telemetry say which two were
    reused, and their cost figures add up to the fresh calls' exactly."""
    reviewer_on_path.spend(0.125)
    reviewer_on_path.answer("fail", when="needs a source")
    server = create_server(
        root,
        config(external_runner="claude", deepreview_rules=False),
        trace_env=recorded.telemetry.reviewer_env,
    )
    polish = {"final": "final.md", "appendix": ["a1.md", "a2.md"]}
    async with Client(server) as client:
        session = await start_reviewed(client, root)
        (root / "a2.md").write_text("An appendix that needs a source.\n")
        await call_ok(client, "finished_step", outputs={"report": "report.md"})
        first = await call_ok(client, "finished_step", outputs=polish)
        assert first["status"] == "needs_work"
        assert len(reviewer_on_path.calls()) == 4  # write, then final, a1 and a2
        (root / "a2.md").write_text("An appendix that names its source.\n")
        second = await call_ok(client, "finished_step", outputs=polish)
    calls = reviewer_on_path.calls()
    assert second["status"] == "workflow_complete"
    assert len(calls) == 5
    assert "names its source" in calls[-1]["stdin"]  # the one task whose file changed
    origin = f"reused from {session}/polish, "
    assert "2 of 3 verdict(s) were reused" in second["feedback"]
    assert second["feedback"].count(origin) == 2

    [receipt] = (root / ".deepwork" / "receipts" / "reviewed").glob("*.json")
    steps = {s["step"]: s for s in json.loads(receipt.read_text())["body"]["steps"]}
    entries = {(e["review"], e.get("target_file")): e for e in steps["polish"]["passed"]["reviews"]}
    assert set(entries) == {("final", None), ("appendix", "a1.md"), ("appendix", "a2.md")}
    for key in [("final", None), ("appendix", "a1.md")]:
        assert entries[key]["reused_from"].startswith(f"{session}/polish, 20"), entries[key]
        assert (entries[key]["runner"], entries[key]["verdict"]) == ("claude", "passed")
    assert entries[("appendix", "a2.md")].get("reused_from") is None
    assert steps["write"]["passed"]["reviews"][0]["reused_from"] is None

    log = _cli("log", session, "--path", str(root))
    reused_lines = [line for line in log.splitlines() if f"reused_from={origin}" in line]
    # Each reused verdict: its `review_usage` at no cost, and its `review_verdict`.
    assert [line.split()[2] for line in reused_lines].count("review_usage") == 2
    assert [line.split()[2] for line in reused_lines].count("review_verdict") == 2
    [job] = json.loads(_cli("stats", "--json", "--path", str(root)))["review_costs"]["jobs"]
    usage = job["usage"]
    assert (usage["calls"], usage["reused_verdicts"]) == (5, 2)
    assert (usage["cost_usd"], usage["saved_usd"]) == (0.625, 0.25)
    assert "2 reused (saved 0.2500 USD)" in _cli("stats", "--path", str(root))

    with TestClient(dashboard_app(root, port=8765, token="t"), base_url=DASHBOARD) as page:
        assert page.get("/?token=t").status_code == 200
        run = page.get(f"/run/{session}").text
        stats = page.get("/stats").text
    assert run.count(f'<span class="muted reused">({origin}') == 2
    assert "5 reviewer call(s), 0 self-review(s), 2 verdict(s) reused at 0 USD" in run
    assert "0.6250 USD" in run
    row = stats.split("<td>reviewed</td><td>all steps</td>")[1].split("</tr>")[0]
    assert '<td class="num">5</td>' in row  # the calls, fresh only
    assert '<td class="num" data-sort="0.625">0.6250 USD</td>' in row
    assert 'they cost 0.2500 USD when judged">2</td>' in row  # the Reused column

    sums = recorded.metrics()
    cost = sum(v for (name, _), v in sums.items() if name == names.M_REVIEW_COST)
    reused = sum(v for (name, _), v in sums.items() if name == names.M_REVIEW_REUSED)
    assert (round(cost, 6), reused) == (usage["cost_usd"], 2)


def _cli(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout
