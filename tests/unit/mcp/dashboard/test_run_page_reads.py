"""The run page reads right to a newcomer (issue 43): the outcome said once, no current step
once a run finished, runs of one job told apart, the commit in the summary, inline code in the
timeline, graph labels clear of the boxes (docs/dashboard.md)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.jobs.graph import GraphEdge, GraphStep, WorkflowGraph
from deepwork_core.state.read_model.detail import session_detail
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store
from deepwork_mcp.cli import cli
from deepwork_mcp.dashboard.assets import STYLESHEET
from deepwork_mcp.dashboard.graph_svg import Curve, drawing
from starlette.testclient import TestClient

from tests.fixtures.evidence_project import git, key_of, make_evidence_project
from tests.unit.mcp.dashboard.conftest import waiting_project
from tests.unit.mcp.dashboard.test_run_story import finished_run


def _between(page: str, start: str, end: str) -> str:
    return page[page.index(start) : page.index(end)]


def _summary(page: str) -> str:
    return _between(page, "<h2>Summary</h2>", "<h2>Run</h2>")


def test_a_finished_run_says_its_outcome_once_and_is_at_no_step(
    tmp_path: Path, make_store: Callable[..., Store], client_for: Callable[..., TestClient]
) -> None:
    waiting = finished_run(make_store, client_for, tmp_path / "project")
    detail = session_detail(SessionStore(waiting.store, waiting.root), waiting.session_id)
    assert detail.run.steps == []  # its document keeps `build`, where it no longer is
    client = client_for(waiting.root)
    page = client.get(f"/run/{waiting.session_id}").text
    outcome = re.search(r"<th>Outcome</th><td>(.*?)</td>", _summary(page))
    assert outcome is not None
    shown = re.sub(r"<[^>]+>", "", outcome.group(1))
    assert shown == "completed every step of the workflow done"
    assert shown.count("completed") == 1
    facts = _between(page, "<h2>Run</h2>", "<h2>Workflow</h2>")
    assert '<th>Current step</th><td><span class="muted">none: the run is completed' in facts
    row = re.search(rf'data-session="{waiting.session_id}">(.*?)</tr>', client.get("/").text)
    assert row is not None
    assert "<td>build</td>" not in row.group(1)
    assert "<td>-</td>" in row.group(1)


def test_an_active_run_says_where_it_is_without_repeating_its_status(
    tmp_path: Path, make_store: Callable[..., Store], client_for: Callable[..., TestClient]
) -> None:
    waiting = waiting_project(make_store, tmp_path / "project")
    page = client_for(waiting.root).get(f"/run/{waiting.session_id}").text
    outcome = re.search(r"<th>Outcome</th><td>(.*?)</td>", _summary(page))
    assert outcome is not None
    shown = re.sub(r"<[^>]+>", "", outcome.group(1))
    assert shown == "awaiting approval step plan waits for a human&#x27;s decision"
    assert "<th>Current step</th><td>plan</td>" in page


def test_runs_of_one_job_are_told_apart_by_their_instance_and_goal(
    tmp_path: Path, make_store: Callable[..., Store], client_for: Callable[..., TestClient]
) -> None:
    waiting = waiting_project(make_store, tmp_path / "project", goal="the first plan")
    sessions = SessionStore(waiting.store, waiting.root)
    engine = WorkflowEngine(
        waiting.root,
        JobCatalog.for_project(waiting.root),
        sessions,
        approval_key=key_of(waiting.root),
    )
    others = [
        engine.start(f"plan for {name}", "approved", "main", instance_id=name, agent_id=name)
        for name in ("billing", "search")
    ]
    client = client_for(waiting.root)
    headings = set()
    for started, instance in zip(others, ("billing", "search"), strict=True):
        page = client.get(f"/run/{started.brief.session_id}").text
        heading = _between(page, "<h1>", "</h1>")
        assert heading.startswith(
            f'<h1>approved/main <span class="instance">{instance}</span> <span'
        )
        assert f"<title>approved/main {instance} {started.brief.session_id}" in page
        assert f'<p class="goal">plan for {instance} ' in page
        headings.add(heading)
    first = client.get(f"/run/{waiting.session_id}").text
    assert '<p class="goal">the first plan ' in first
    assert _between(first, "<h1>", "</h1>").startswith('<h1>approved/main <span class="status')
    above_timeline = first[: first.index("<h2>Timeline</h2>")]
    assert above_timeline.count("the first plan") == 1  # under the heading, not in the summary
    headings.add(_between(first, "<h1>", "</h1>"))
    assert len(headings) == 3  # three runs of one job, three headings


def test_the_summary_and_the_report_name_the_commit_the_run_started_from(
    tmp_path: Path, make_store: Callable[..., Store], client_for: Callable[..., TestClient]
) -> None:
    root = make_evidence_project(tmp_path / "project")
    head = git(root, "rev-parse", "HEAD")
    sessions = SessionStore(make_store(root), root)
    engine = WorkflowEngine(root, JobCatalog.for_project(root), sessions, approval_key=key_of(root))
    session_id = engine.start("ship", "approved", "main").brief.session_id
    commit = f'<th>Commit</th><td>started from <span class="hash" title="{head}">{head[:12]}</span>'
    assert commit in _summary(client_for(root).get(f"/run/{session_id}").text)
    out = tmp_path / "run.html"
    result = CliRunner().invoke(
        cli, ["report", session_id, "--html", str(out), "--path", str(root)]
    )
    assert result.exit_code == 0, result.output
    assert commit in _summary(out.read_text(encoding="utf-8"))


def test_a_run_outside_git_says_it_has_no_commit(
    tmp_path: Path, make_store: Callable[..., Store], client_for: Callable[..., TestClient]
) -> None:
    waiting = waiting_project(make_store, tmp_path / "project")
    page = client_for(waiting.root).get(f"/run/{waiting.session_id}").text
    assert '<th>Commit</th><td><span class="muted">none recorded' in _summary(page)


def test_the_timeline_shows_inline_code_as_code_and_escapes_the_rest(
    tmp_path: Path, make_store: Callable[..., Store], client_for: Callable[..., TestClient]
) -> None:
    goal = "fix `a<b>` & keep ` one"
    waiting = waiting_project(make_store, tmp_path / "project", goal=goal)
    page = client_for(waiting.root).get(f"/run/{waiting.session_id}").text
    timeline = page[page.index("<h2>Timeline</h2>") :]
    sentences = re.findall(r'<span class="sentence">(.*?)</span>', timeline)
    assert "<code>plan</code> submitted <code>plan.md</code>" in sentences
    started = next(s for s in sentences if s.startswith("Started"))
    assert started == (
        "Started <code>approved/main</code>: “fix <code>a&lt;b&gt;</code> &amp; keep ` one”"
    )
    assert not any("`plan`" in s for s in sentences)  # no raw Markdown left
    assert "<b>" not in page


def _label_extent(curve: Curve, width_per_char: int) -> tuple[int, int]:
    """Where a label's text lies, as the stylesheet anchors it."""
    anchor = re.search(r"\.input-edge text \{ text-anchor: (\w+)", STYLESHEET)
    assert anchor is not None
    length = len(curve.short_label) * width_per_char
    if anchor.group(1) == "end":
        return curve.label_x - length, curve.label_x
    if anchor.group(1) == "middle":
        return curve.label_x - length // 2, curve.label_x + length // 2
    return curve.label_x, curve.label_x + length


def test_an_input_edges_label_lies_clear_of_every_box_and_inside_the_picture() -> None:
    a, b, c = (GraphStep(s, s.upper(), n, reviewed=False) for n, s in enumerate("abc"))
    graph = WorkflowGraph(
        "job",
        "wf",
        ((a,), (b,), (c,)),
        (
            GraphEdge("a", "b", "order"),
            GraphEdge("b", "c", "order"),
            GraphEdge("a", "c", "input", "a_long_report_name.md"),  # its label is at b's row
            GraphEdge("a", "b", "input", "notes.md"),
        ),
    )
    drawn = drawing(graph)
    right = max(box.x + drawn.node_width for box in drawn.boxes)
    curves = [edge for edge in drawn.edges if isinstance(edge, Curve)]
    assert len(curves) == 2
    for curve in curves:
        start, end = _label_extent(curve, width_per_char=7)  # 11px text, generously wide
        assert start > right, curve.short_label
        assert end <= drawn.width, curve.short_label
