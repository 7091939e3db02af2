"""What the dashboard pages show, and that untrusted text shows as text (docs/dashboard.md)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from click.testing import CliRunner
from deepwork_core.evidence.verdicts import CriterionVerdict
from deepwork_core.jobs.graph import GraphEdge, GraphStep, WorkflowGraph
from deepwork_core.state.calibration.report import (
    CalibrationReport,
    CaseResult,
    CriterionResult,
    build_report,
)
from deepwork_core.state.calibration.rows import save_report
from deepwork_core.state.event_kinds import ReviewVerdictEvent, StartedEvent
from deepwork_core.state.events import append_event
from deepwork_core.state.read_model.runs import ListedStatus, list_sessions, session_tree
from deepwork_core.state.sessions import Session, SessionStore
from deepwork_core.state.store.port import Store
from deepwork_mcp.cli import cli
from deepwork_mcp.dashboard import graph_svg
from deepwork_mcp.dashboard.graph_svg import StepState, drawing
from starlette.testclient import TestClient

from tests.unit.mcp.dashboard.conftest import log_review_call, waiting_project

SCRIPT_GOAL = "<script>window.pwned = 1</script> & more"
T0 = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)


def test_a_goal_holding_markup_shows_as_text_everywhere(
    tmp_path: Path, make_store: Callable[..., Store], client_for: Callable[..., TestClient]
) -> None:
    waiting = waiting_project(make_store, tmp_path / "project", goal=SCRIPT_GOAL)
    client = client_for(waiting.root)
    escaped = "&lt;script&gt;window.pwned = 1&lt;/script&gt; &amp; more"
    for path in ("/", "/fragment/runs", f"/run/{waiting.session_id}"):
        page = client.get(path).text
        assert escaped in page, path
        assert "<script>window" not in page, path


def test_the_run_page_draws_the_graph_marks_the_current_step_and_shows_evidence(
    tmp_path: Path,
    make_store: Callable[..., Store],
    client_for: Callable[..., TestClient],
) -> None:
    waiting = waiting_project(make_store, tmp_path / "project")
    page = client_for(waiting.root).get(f"/run/{waiting.session_id}").text
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="workflow-graph"' in page
    assert 'class="step current" data-step="plan"' in page
    assert 'data-step="build"' in page
    assert "awaiting approval" in page
    assert "Waiting for approval" in page
    assert "step_begun" in page  # the timeline


def test_runs_are_newest_first_with_nested_runs_under_their_parent(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    store = SessionStore(make_store(tmp_path), tmp_path)

    def session(sid: str, minutes: int, parent: str | None = None) -> Session:
        return Session(
            session_id=sid,
            job_name="j",
            workflow_name="w",
            goal=f"goal {sid}",
            current_step_ids=["s"],
            started_at=T0.replace(minute=minutes),
            parent_session_id=parent,
        )

    with store.transaction() as tx:
        tx.save(session("older1", 1))
        tx.save(session("child1", 3, parent="older1"))
        tx.save(session("newer1", 5))
    rows = session_tree(list_sessions(store))
    assert [r.session_id for r in rows] == ["newer1", "older1"]
    assert [c.session_id for c in rows[1].children] == ["child1"]
    assert rows[0].status is ListedStatus.ACTIVE


def test_the_graph_svg_escapes_names_and_marks_states() -> None:
    a = GraphStep("a", "<b>A & co</b>", 0, reviewed=True)
    b = GraphStep("b", "B", 1, reviewed=False)
    c = GraphStep("c", "C", 1, reviewed=False)
    graph = WorkflowGraph(
        "job",
        "wf",
        ((a,), (b, c)),
        (GraphEdge("a", "b", "order"), GraphEdge("a", "c", "input", "<plan>.md")),
    )
    svg = graph_svg.svg(drawing(graph, {"a": StepState.DONE, "b": StepState.CURRENT}))
    assert "&lt;b&gt;A &amp; co&lt;/b&gt;" in svg
    assert "&lt;plan&gt;.md" in svg
    assert "<b>" not in svg
    assert 'class="step reviewed done" data-step="a"' in svg
    assert 'class="step current" data-step="b"' in svg
    assert 'class="step" data-step="c"' in svg
    assert svg.count("<rect") == 3


def test_the_stats_table_lists_the_most_failed_criteria_first(
    tmp_path: Path, store: Store, client_for: Callable[..., TestClient]
) -> None:
    append_event(store, StartedEvent(ts=T0, session_id="session0001", job="j", workflow="w"))
    for attempt, (clear, works) in enumerate([(True, False), (True, False), (False, True)]):
        append_event(
            store,
            ReviewVerdictEvent(
                ts=T0,
                session_id="session0001",
                step_id="plan",
                passed=clear and works,
                attempt=attempt + 1,
                criteria=[
                    CriterionVerdict(criterion="Clear", passed=clear),
                    CriterionVerdict(criterion="Works", passed=works),
                ],
            ),
        )
    page = client_for(tmp_path).get("/stats").text
    assert 'class="sortable criteria"' in page
    assert page.index("<td>Works</td>") < page.index("<td>Clear</td>")


def test_report_writes_one_self_contained_page(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    waiting = waiting_project(make_store, tmp_path / "project", goal=SCRIPT_GOAL)
    out = tmp_path / "run.html"
    result = CliRunner().invoke(
        cli, ["report", waiting.session_id, "--html", str(out), "--path", str(waiting.root)]
    )
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert "<style>" in page
    assert "<svg" in page
    assert "<script" not in page.replace("&lt;script", "")
    assert 'src="' not in page
    assert 'rel="stylesheet"' not in page
    assert ">Approve</button>" not in page  # a report has no buttons


def test_report_of_an_unknown_session_fails_with_the_code(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        ["report", "nosuchsession", "--html", str(tmp_path / "x.html"), "--path", str(tmp_path)],
    )
    assert result.exit_code == 1
    assert "session.not_found" in result.output


def test_the_run_page_shows_what_the_reviews_cost(
    tmp_path: Path, make_store: Callable[..., Store], client_for: Callable[..., TestClient]
) -> None:
    waiting = waiting_project(make_store, tmp_path / "project")
    page = client_for(waiting.root).get(f"/run/{waiting.session_id}").text
    assert "No review call is recorded" in page
    for cost, model in ((0.25, "<b>model-a</b>"), (0.5, "model-b")):
        log_review_call(
            waiting,
            "plan",
            depth="light",
            model=model,
            input_tokens=1000,
            output_tokens=50,
            cache_read_tokens=200,
            cost_usd=cost,
        )
    page = client_for(waiting.root).get(f"/run/{waiting.session_id}").text
    assert (
        "2 reviewer call(s), 0 self-review(s): 2,500 tokens "
        "(2,000 in, 100 out, 400 cache read, 0 cache write)" in page
    )
    assert "0.7500 USD" in page
    assert "&lt;b&gt;model-a&lt;/b&gt;" in page
    assert "<b>model-a</b>" not in page


def _calibration(runner: str, false_passes: int) -> CalibrationReport:
    results = [
        CaseResult(
            case=f"case{n}",
            kind="wrong_figure",
            source="library",
            criteria=[
                CriterionResult(
                    criterion="Figures", expected="fail", got="pass" if n < false_passes else "fail"
                )
            ],
            cost_usd=0.01,
        )
        for n in range(10)
    ]
    return build_report(runner, None, "standard", T0.isoformat(), results)


def test_the_stats_page_shows_each_runners_latest_calibration_and_warns_above_ten_percent(
    tmp_path: Path, store: Store, client_for: Callable[..., TestClient]
) -> None:
    save_report(store, _calibration("claude", 0))
    save_report(store, _calibration("claude", 3))  # the latest of claude: 30 % false passes
    save_report(store, _calibration("codex", 1))  # 10 %: not above, no warning

    page = client_for(tmp_path).get("/stats").text

    assert 'class="sortable calibration"' in page
    rows = page.split('class="sortable calibration"')[1].split("</table>")[0]
    assert rows.count("<tr>") == 3  # the header, and one row per runner
    assert 'data-sort="0.3000">30%' in rows
    assert 'data-sort="0.1000">10%' in rows
    assert "claude passed 30% of the criteria it should have failed" in page
    assert "codex passed" not in page
