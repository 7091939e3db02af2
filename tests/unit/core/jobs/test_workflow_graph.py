"""The workflow graph behind `deepwork jobs graph`: entries, edges and the two text forms."""

from __future__ import annotations

import pytest
from deepwork_core.base.errors import WorkflowNotFoundError
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.jobs.graph import GraphEdge, build_graph, to_dot, to_mermaid
from deepwork_core.jobs.model import JobDefinition

from tests.fixtures.workflow_project import make_project


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> JobCatalog:
    return JobCatalog.for_project(make_project(tmp_path_factory.mktemp("graph") / "p"))


def _job(catalog: JobCatalog, name: str) -> JobDefinition:
    return catalog.get(name).definition


def test_a_concurrent_group_is_one_entry_joined_to_its_neighbours(catalog: JobCatalog) -> None:
    graph = build_graph(_job(catalog, "concurrent"))
    assert [[s.step_id for s in entry] for entry in graph.entries] == [
        ["first"],
        ["left", "right"],
        ["last"],
    ]
    order = {(e.source, e.target) for e in graph.edges if e.kind == "order"}
    assert order == {("first", "left"), ("first", "right"), ("left", "last"), ("right", "last")}


def test_inputs_from_earlier_steps_are_labelled_edges(catalog: JobCatalog) -> None:
    graph = build_graph(_job(catalog, "three_step"))
    assert [e for e in graph.edges if e.kind == "input"] == [
        GraphEdge("gather", "draft", "input", "notes")
    ]


def test_reviewed_steps_are_marked(catalog: JobCatalog) -> None:
    graph = build_graph(_job(catalog, "reviewed"))
    assert all(step.reviewed for entry in graph.entries for step in entry)
    assert not any(s.reviewed for e in build_graph(_job(catalog, "three_step")).entries for s in e)


def test_a_job_with_several_workflows_needs_a_name(catalog: JobCatalog) -> None:
    with pytest.raises(WorkflowNotFoundError) as raised:
        build_graph(_job(catalog, "multi"))
    assert raised.value.code == "workflow.not_found"
    assert "alpha, beta" in raised.value.message
    with pytest.raises(WorkflowNotFoundError):
        build_graph(_job(catalog, "multi"), "gamma")
    assert build_graph(_job(catalog, "multi"), "beta").entries[0][0].step_id == "two"


def test_mermaid_puts_the_group_in_a_subgraph_and_prefixes_ids(catalog: JobCatalog) -> None:
    text = to_mermaid(build_graph(_job(catalog, "concurrent")))
    lines = text.splitlines()
    assert lines[0] == "flowchart TD"
    start = lines.index('  subgraph group_1["concurrent"]')
    group = lines[start : lines.index("  end", start)]
    assert any(line.strip().startswith("s_left[") for line in group)
    assert any(line.strip().startswith("s_right[") for line in group)
    assert "  s_first --> s_left" in lines
    assert "  s_right --> s_last" in lines


def test_mermaid_marks_reviews_and_input_edges(catalog: JobCatalog) -> None:
    text = to_mermaid(build_graph(_job(catalog, "reviewed")))
    assert '  s_write -.->|"report"| s_polish' in text.splitlines()
    assert "  class s_write,s_polish reviewed" in text.splitlines()


def test_text_from_the_job_is_escaped(catalog: JobCatalog) -> None:
    definition = _job(catalog, "three_step")
    step = definition.step("gather").model_copy(update={"name": 'Say "hi" \\ <b>'})
    odd = definition.model_copy(update={"steps": [step, *definition.steps[1:]]})
    odd.__dict__.pop("steps_by_id", None)
    graph = build_graph(odd)
    assert '"Say #quot;hi#quot; \\ #lt;b>' in to_mermaid(graph)
    assert 'label="Say \\"hi\\" \\\\ <b>\\ngather"' in to_dot(graph)


def test_dot_clusters_the_group_and_dashes_inputs(catalog: JobCatalog) -> None:
    dot = to_dot(build_graph(_job(catalog, "three_step")))
    assert dot.startswith('digraph "three_step/main" {')
    assert '"gather" -> "draft" [style=dashed, label="notes"];' in dot
    clustered = to_dot(build_graph(_job(catalog, "concurrent")))
    assert "subgraph cluster_1 {" in clustered
