"""Every view counts a run's review tokens one way and writes them one way (issue 43): every
token, the cached input included, as `3,259 tokens` (docs/quality-gate.md, "What reviews
cost")."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner
from deepwork_core.state.store.port import Store
from deepwork_mcp.cli import cli
from starlette.testclient import TestClient

from tests.unit.mcp.dashboard.conftest import log_review_call, waiting_project

TOTAL = "3,259 tokens"
PARTS = "1,060 in, 199 out, 2,000 cache read, 0 cache write"


def _cli(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_status_stats_the_run_list_the_run_page_and_the_report_count_tokens_alike(
    tmp_path: Path, make_store: Callable[..., Store], client_for: Callable[..., TestClient]
) -> None:
    waiting = waiting_project(make_store, tmp_path / "project")
    log_review_call(
        waiting, "plan", input_tokens=1060, output_tokens=199, cache_read_tokens=2000, cost_usd=0.02
    )
    root = str(waiting.root)
    client = client_for(waiting.root)
    run_page = client.get(f"/run/{waiting.session_id}").text
    report = tmp_path / "run.html"
    _cli("report", waiting.session_id, "--html", str(report), "--path", root)
    views = {
        "status": _cli("status", "--path", root),
        "stats": _cli("stats", "--path", root),
        "runs": client.get("/").text,
        "stats page": client.get("/stats").text,
        "run page": run_page,
        "report": report.read_text(encoding="utf-8"),
    }
    assert f"reviews: 1 call(s), {TOTAL} ({PARTS}), 0.0200 USD" in views["status"]
    assert f"0.0200 USD, {TOTAL}, 1 call(s)" in views["stats"]
    assert f"0.0200 USD · {TOTAL}" in views["runs"]
    assert '<td class="num">3,259</td>' in views["stats page"]
    for name in ("run page", "report"):
        page = views[name]
        assert f"0.0200 USD, {TOTAL} in 1 reviewer call(s)" in page, name  # the summary
        assert f"1 reviewer call(s), 0 self-review(s): {TOTAL} ({PARTS})" in page, name
        assert '<td class="num">3,259</td><td class="num">1,060</td>' in page, name  # the call
        assert f"passed, {TOTAL}, 0.0200 USD" in page, name  # the timeline
    for name, shown in views.items():
        assert "3259" not in shown, name  # one number format
        assert "3,060" not in shown, name  # never the input with its cache as "input"
