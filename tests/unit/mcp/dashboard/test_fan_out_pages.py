"""A fanned-out step on the run page, in the report and in the graph export (docs/fan-out.md)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.jobs.graph import build_graph, to_dot, to_mermaid
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store
from deepwork_mcp.cli import cli
from deepwork_mcp.dashboard.run_page import run_body
from deepwork_mcp.dashboard.views import runs, session_page_view

from tests.integration.test_fan_out_stdio import fan_job
from tests.integration.test_worktree_groups_stdio import GROUP, group_job_v09, repository


def test_the_run_page_draws_one_node_with_counts_and_lists_the_instances(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    root = fan_job(tmp_path / "p")
    store = SessionStore(make_store(root), root)
    engine = WorkflowEngine(root, JobCatalog.for_project(root, []), store)
    fan = engine.start("g", "fan", "write", inputs={"topics": ["x", "y", "z"]}).brief.fan_out
    assert fan is not None
    (root / "x.md").write_text("x")
    engine.finish({"section.md": "x.md"}, session_id=fan.instances[0].session_id)
    engine.abort("no material", session_id=fan.instances[2].session_id)

    detail = session_page_view(store, fan.parent_session_id)
    assert [(r.item, r.state) for r in detail.instances] == [
        ("x", "done"),
        ("y", "running"),
        ("z", "aborted"),
    ]
    assert detail.graph_svg is not None
    assert "×3: 1 done · 1 run · 0 fix · 1 ab" in detail.graph_svg
    assert detail.graph_svg.count('class="stack"') == 1  # one node for the whole fan-out
    page = run_body(detail, token=None)
    assert "<h2>Instances</h2>" in page
    assert "no material" in page
    # Instances are listed on their parent's page, not as runs of their own.
    assert [row.session_id for row in runs(store)] == [fan.parent_session_id]
    assert 'class="swatch fanned"' in page  # the legend says what the stack means


def test_the_graph_export_marks_a_fanned_step(tmp_path: Path) -> None:
    root = fan_job(tmp_path / "p")
    graph = build_graph(JobCatalog.for_project(root, []).get("fan").definition, "write")
    assert "× for each topics" in to_mermaid(graph)
    assert "x for each topics" in to_dot(graph)


def test_report_html_draws_the_fanned_step_with_counts_and_lists_the_instances(
    tmp_path: Path,
    make_store: Callable[..., Store],
) -> None:
    root = fan_job(tmp_path / "p")
    engine = WorkflowEngine(
        root, JobCatalog.for_project(root, []), SessionStore(make_store(root), root)
    )
    fan = engine.start("g", "fan", "write", inputs={"topics": ["x", "y"]}).brief.fan_out
    assert fan is not None
    (root / "x.md").write_text("x")
    engine.finish({"section.md": "x.md"}, session_id=fan.instances[0].session_id)
    out = tmp_path / "run.html"
    result = CliRunner().invoke(
        cli, ["report", fan.parent_session_id, "--html", str(out), "--path", str(root)]
    )
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert "×2: 1 done · 1 run · 0 fix · 0 ab" in page
    assert page.count('class="stack"') == 1
    assert "<h2>Instances</h2>" in page
    assert all(i.session_id in page for i in fan.instances)


def test_the_run_page_lists_the_steps_of_a_group_run_in_worktrees(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    root = group_job_v09(tmp_path / "p")
    repository(root)
    store = SessionStore(make_store(root), root)
    engine = WorkflowEngine(root, JobCatalog.for_project(root, []), store)
    fan = engine.start("g", "grp", "build").brief.fan_out
    assert fan is not None
    assert fan.group == GROUP
    detail = session_page_view(store, fan.parent_session_id)
    assert [(r.step_id, r.item, r.state) for r in detail.instances] == sorted(
        (step_id, step_id, "running") for step_id in GROUP
    )
    assert "<h2>Instances</h2>" in run_body(detail, token=None)
