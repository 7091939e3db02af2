"""The run as a story a person reads in ten seconds (issue 34): the run page and `report --html`
open with a summary, tell each event as a sentence, stay bounded for any event log, explain
their graph, and show review costs on the list and the Stats page (docs/dashboard.md)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from click.testing import CliRunner
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.event_pages import COUNT_CAP
from deepwork_core.state.read_model.detail import MAX_VERDICTS, VERDICT_WINDOW, session_detail
from deepwork_core.state.read_model.runs import ListedStatus, list_sessions
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.tables.review_jobs import ReviewJobs
from deepwork_mcp.cli import cli
from starlette.testclient import TestClient

from tests.conftest import on_postgres
from tests.fixtures.evidence_project import key_of, make_evidence_project
from tests.fixtures.review_queue import Note
from tests.fixtures.state_rows import insert_event_lines
from tests.fixtures.trust import commit_on_base
from tests.unit.mcp.dashboard.conftest import Waiting, log_review_call, waiting_project
from tests.unit.mcp.dashboard.test_approvals import decide

T0 = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)


def finished_run(
    make_store: Callable[..., Store], client_for: Callable[..., TestClient], root: Path
) -> Waiting:
    """`approved/main` run to its end: the plan approved on the dashboard, then accepted
    unreviewed; the build (which has no review) accepted with an override reason."""
    waiting = waiting_project(make_store, root)
    if on_postgres():  # a shared store counts only decisions a trusted approver signed
        init = ["approver", "init", "--name", "alice", "--path", str(root)]
        assert CliRunner().invoke(cli, init).exit_code == 0
        key = ".deepwork/approvers/alice.pub"  # trusted once committed on the base branch
        commit_on_base(root, key, (root / key).read_text(encoding="utf-8"))
    client = client_for(root)
    status, _ = decide(client, waiting, decision="approve", comment="looks right")
    assert status == 200
    waiting.engine.finish({"plan": "plan.md"})
    (root / "result.md").write_text("built\n")
    waiting.engine.finish({"result": "result.md"}, override_reason="the user checked the build")
    log_review_call(waiting, "build", input_tokens=1000, output_tokens=234, cost_usd=0.125)
    return waiting


def _section(page: str, title: str) -> int:
    return page.index(f"<h2>{title}</h2>")


def test_the_run_page_opens_with_a_summary_of_outcome_verdicts_approvals_and_cost(
    tmp_path: Path,
    make_store: Callable[..., Store],
    client_for: Callable[..., TestClient],
) -> None:
    waiting = finished_run(make_store, client_for, tmp_path / "project")
    page = client_for(waiting.root).get(f"/run/{waiting.session_id}").text
    summary = page[_section(page, "Summary") : _section(page, "Run")]
    assert _section(page, "Summary") < _section(page, "Workflow") < _section(page, "Timeline")
    assert "completed" in summary
    assert "<th>Steps done</th><td>2</td>" in summary
    assert summary.count("unreviewed (no review applied)") == 2
    assert "no review applies to these outputs" in summary  # the plan's reason
    assert "the user checked the build" in summary  # the build's reason
    assert "passed external review" not in summary  # no reviewer judged this run
    assert "approved" in summary
    assert "dashboard" in summary
    assert "looks right" in summary
    assert "0.1250 USD, 1,234 tokens in 1 reviewer call(s)" in summary


def test_the_timeline_reads_as_sentences_with_every_field_on_demand(
    tmp_path: Path, make_store: Callable[..., Store], client_for: Callable[..., TestClient]
) -> None:
    waiting = finished_run(make_store, client_for, tmp_path / "project")
    page = client_for(waiting.root).get(f"/run/{waiting.session_id}").text
    timeline = page[_section(page, "Timeline") :]
    assert "<code>plan</code> submitted <code>plan.md</code>" in timeline
    assert "<code>build</code> finished, unreviewed (no review applied)" in timeline
    assert "Started <code>approved/main</code>: “ship the plan”" in timeline
    assert "<details>" in timeline
    assert "{&#x27;" not in timeline  # no Python dict reprs
    assert "None" not in re.sub(r"<details>.*?</details>", "", timeline, flags=re.S)


def test_a_huge_event_log_gives_a_bounded_page_and_report(
    tmp_path: Path, make_store: Callable[..., Store], client_for: Callable[..., TestClient]
) -> None:
    waiting = waiting_project(make_store, tmp_path / "project")
    line = {
        "v": 1,
        "ts": T0.isoformat(),
        "session_id": waiting.session_id,
        "event": "outputs_submitted",
        "step_ids": ["plan"],
        "outputs": {"plan": "plan.md"},
        "notes": "n" * 30_000,
    }
    insert_event_lines(waiting.store, waiting.session_id, [json.dumps(line)] * 2000)  # 60 MB
    response = client_for(waiting.root).get(f"/run/{waiting.session_id}")
    assert response.status_code == 200
    assert len(response.content) < 4 * 1024 * 1024
    assert re.search(r"Showing the newest 500 of 2,00\d events", response.text)
    out = tmp_path / "run.html"
    result = CliRunner().invoke(
        cli, ["report", waiting.session_id, "--html", str(out), "--path", str(waiting.root)]
    )
    assert result.exit_code == 0, result.output
    assert out.stat().st_size < 4 * 1024 * 1024


def accept_the_build_again(waiting: Waiting, times: int) -> None:
    """The run's build accepted `times` more times: its `step_finished` line as the log has it."""
    key = (waiting.store.project.project_id, waiting.session_id)
    with waiting.store.read() as tx:
        [(build,)] = tx.execute(
            "SELECT body FROM events WHERE project_id = ? AND session_id = ? "
            "AND kind = 'step_finished' ORDER BY seq DESC LIMIT 1",
            key,
        )
    insert_event_lines(waiting.store, waiting.session_id, [str(build)] * times, "step_finished")


def test_a_run_of_many_checkpoints_lists_the_newest_and_counts_the_rest(
    tmp_path: Path, make_store: Callable[..., Store], client_for: Callable[..., TestClient]
) -> None:
    waiting = finished_run(make_store, client_for, tmp_path / "project")
    accept_the_build_again(waiting, MAX_VERDICTS + 5)  # 2 + 205 checkpoints
    detail = session_detail(SessionStore(waiting.store, waiting.root), waiting.session_id)
    assert len(detail.summary.verdicts) == MAX_VERDICTS
    assert detail.summary.verdicts_omitted == 7
    assert {v.reason for v in detail.summary.verdicts} == {"the user checked the build"}
    page = client_for(waiting.root).get(f"/run/{waiting.session_id}").text
    summary = page[_section(page, "Summary") : _section(page, "Run")]
    assert summary.count("the user checked the build") == MAX_VERDICTS
    assert "no review applies to these outputs" not in summary  # the plan's, the oldest
    assert "and 7 more, older (not listed)" in summary
    assert "looks right" in summary  # approvals and cost are still read in full
    assert "0.1250 USD, 1,234 tokens in 1 reviewer call(s)" in summary


def test_a_run_past_the_count_cap_says_more_than_and_reads_no_further(
    tmp_path: Path, make_store: Callable[..., Store], client_for: Callable[..., TestClient]
) -> None:
    waiting = finished_run(make_store, client_for, tmp_path / "project")
    accept_the_build_again(waiting, COUNT_CAP + VERDICT_WINDOW + 10)
    page = client_for(waiting.root).get(f"/run/{waiting.session_id}").text
    summary = page[_section(page, "Summary") : _section(page, "Run")]
    assert "and more than 10,000 more, older (not listed)" in summary
    assert "Showing the newest 500 of more than 10,000 events" in page


def test_a_run_of_few_checkpoints_lists_them_all_with_no_count(
    tmp_path: Path, make_store: Callable[..., Store], client_for: Callable[..., TestClient]
) -> None:
    waiting = finished_run(make_store, client_for, tmp_path / "project")
    detail = session_detail(SessionStore(waiting.store, waiting.root), waiting.session_id)
    assert [v.step_ids for v in detail.summary.verdicts] == [["plan"], ["build"]]
    assert detail.summary.verdicts_omitted == 0
    page = client_for(waiting.root).get(f"/run/{waiting.session_id}").text
    assert "more, older (not listed)" not in page


def test_the_graph_has_a_legend_and_marks_only_passed_reviews(
    tmp_path: Path, make_store: Callable[..., Store], client_for: Callable[..., TestClient]
) -> None:
    waiting = finished_run(make_store, client_for, tmp_path / "project")
    page = client_for(waiting.root).get(f"/run/{waiting.session_id}").text
    assert 'class="legend"' in page
    assert "passed an external review in this run" in page
    assert "✓" not in page[: page.index('class="legend"')]  # nothing passed an external review


def test_costs_show_on_the_run_list_and_the_stats_page(
    tmp_path: Path, make_store: Callable[..., Store], client_for: Callable[..., TestClient]
) -> None:
    waiting = finished_run(make_store, client_for, tmp_path / "project")
    client: TestClient = client_for(waiting.root)
    runs = client.get("/").text
    assert "Review cost" in runs
    assert "0.1250 USD · 1,234 tokens" in runs
    stats = client.get("/stats").text
    assert "<h2>Review costs</h2>" in stats
    assert "0.1250" in stats
    assert "First-attempt pass: the share of the reviewer calls made on a first attempt" in stats
    assert "First-try pass: the share of the step's reviewed runs" in stats


def test_tables_scroll_inside_their_box(
    tmp_path: Path, make_store: Callable[..., Store], client_for: Callable[..., TestClient]
) -> None:
    waiting = finished_run(make_store, client_for, tmp_path / "project")
    client = client_for(waiting.root)
    for path in ("/", f"/run/{waiting.session_id}", "/stats"):
        page = client.get(path).text
        tables = page.count("<table")
        assert tables, path
        assert page.count('<div class="scroll"><table') == tables, path
    assert ".scroll { overflow-x: auto" in client.get("/static/dashboard.css").text


def test_a_run_whose_reviews_still_run_reads_as_reviewing_and_not_as_an_attempt(
    tmp_path: Path,
    make_store: Callable[..., Store],
    client_for: Callable[..., TestClient],
) -> None:
    root = tmp_path / "project"
    make_evidence_project(root, with_git=False)
    store = SessionStore(make_store(root), root)
    engine = WorkflowEngine(root, JobCatalog.for_project(root), store, approval_key=key_of(root))
    session_id = engine.start("ship it", "approved", "main").brief.session_id
    jobs = ReviewJobs(store.store, Note)
    job_id = jobs.enqueue("step_review", Note(step="plan"), session_id=session_id)

    [run] = list_sessions(store)
    assert run.status is ListedStatus.REVIEWING
    detail = session_detail(store, session_id)
    assert detail.run.status is ListedStatus.REVIEWING
    assert "its reviews still running" in detail.summary.outcome
    assert detail.summary.verdicts == []  # nothing was recorded, so no attempt either
    assert store.load(session_id).step_progress["plan"].quality_attempts == 0
    page = client_for(root).get("/").text
    assert '<span class="status reviewing">reviewing</span>' in page

    assert jobs.cancel(job_id)
    assert list_sessions(store)[0].status is ListedStatus.ACTIVE
