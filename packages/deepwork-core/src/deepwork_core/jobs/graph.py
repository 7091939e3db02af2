"""A workflow as a graph: its steps in order, concurrent groups side by side, the files a step
takes from an earlier one as edges, and which steps are reviewed (`deepwork jobs graph`).

`build_graph` turns a job definition into a `WorkflowGraph`; `to_mermaid` and `to_dot` write it
as Mermaid flowchart text or Graphviz DOT text. Both are plain text built here, with no renderer
involved; drawing DOT as SVG is the command line's business. See `docs/navigation.md`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError, WorkflowNotFoundError
from deepwork_core.jobs.model import JobDefinition, Workflow


class GraphRenderError(DeepWorkError):
    """A picture could not be drawn: `graph.renderer_missing` (no renderer installed) or
    `graph.render_failed` (the renderer failed or ran out of time)."""

    code = ErrorCode.GRAPH_RENDER_FAILED


@dataclass(frozen=True, slots=True)
class GraphStep:
    step_id: str
    name: str
    #: Position of the step's entry in the workflow (a concurrent group is one entry).
    entry: int
    reviewed: bool
    #: The input a fanned-out step runs over, once per item (docs/fan-out.md).
    for_each: str | None = None


@dataclass(frozen=True, slots=True)
class GraphEdge:
    source: str
    target: str
    #: "order" (the workflow runs `target` after `source`) or "input" (`target` reads a file
    #: `source` produced; `label` names it).
    kind: str
    label: str = ""


@dataclass(frozen=True, slots=True)
class WorkflowGraph:
    job_name: str
    workflow_name: str
    #: The workflow's entries in order; an entry with several steps is a concurrent group.
    entries: tuple[tuple[GraphStep, ...], ...]
    edges: tuple[GraphEdge, ...]


def pick_workflow(definition: JobDefinition, workflow_name: str | None) -> Workflow:
    """The named workflow, or the job's only one when no name is given."""
    names = [w.name for w in definition.workflows]
    if workflow_name is None and len(names) == 1:
        return definition.workflows[0]
    if workflow_name is not None and workflow_name in definition.workflows_by_name:
        return definition.workflows_by_name[workflow_name]
    listed = ", ".join(names) or "none"
    if workflow_name is None:
        problem = f"has {len(names)} workflows; name one"
    else:
        problem = f"has no workflow {workflow_name!r}"
    raise WorkflowNotFoundError(f"job {definition.name!r} {problem} (its workflows: {listed})")


def build_graph(definition: JobDefinition, workflow_name: str | None = None) -> WorkflowGraph:
    """The graph of one workflow of `definition` (see `pick_workflow` for the choice)."""
    workflow = pick_workflow(definition, workflow_name)
    entries: list[tuple[GraphStep, ...]] = []
    for index, entry in enumerate(workflow.entries):
        steps = tuple(
            GraphStep(
                step_id,
                definition.step(step_id).name,
                index,
                bool(definition.step(step_id).reviews),
                definition.step(step_id).for_each,
            )
            for step_id in entry
        )
        entries.append(steps)
    edges: list[GraphEdge] = []
    for before, after in itertools.pairwise(entries):
        edges.extend(GraphEdge(a.step_id, b.step_id, "order") for a in before for b in after)
    in_workflow = set(workflow.step_ids)
    for step_id in workflow.step_ids:
        for item in definition.step(step_id).file_inputs:
            if item.from_step in in_workflow and item.file is not None:
                edges.append(GraphEdge(str(item.from_step), step_id, "input", item.file))
    return WorkflowGraph(definition.name, workflow.name, tuple(entries), tuple(edges))


def _entry_lines(
    graph: WorkflowGraph,
    node: Callable[[GraphStep], str],
    group_head: Callable[[int], list[str]],
    group_end: str,
) -> list[str]:
    """One node line per step; a concurrent group's nodes indented between its head and end."""
    lines: list[str] = []
    for entry in graph.entries:
        if len(entry) == 1:
            lines.append(node(entry[0]))
            continue
        lines.extend(group_head(entry[0].entry))
        lines.extend("  " + node(step) for step in entry)
        lines.append(group_end)
    return lines


def _mermaid_text(text: str) -> str:
    return text.replace("&", "#amp;").replace('"', "#quot;").replace("<", "#lt;")


def to_mermaid(graph: WorkflowGraph) -> str:
    """Mermaid flowchart text. Node ids are the step ids prefixed with `s_` (a bare `end` would
    close a subgraph); reviewed steps carry the class `reviewed` and a mark in their label."""
    lines = ["flowchart TD", f"  %% {graph.job_name}/{graph.workflow_name}"]

    def node(step: GraphStep) -> str:
        mark = "<br/>✓ reviewed" if step.reviewed else ""
        if step.for_each is not None:
            mark += f"<br/>× for each {_mermaid_text(step.for_each)}"
            return f'  s_{step.step_id}[["{_mermaid_text(step.name)}<br/>{step.step_id}{mark}"]]'
        return f'  s_{step.step_id}["{_mermaid_text(step.name)}<br/>{step.step_id}{mark}"]'

    def group(index: int) -> list[str]:
        return [f'  subgraph group_{index}["concurrent"]', "    direction LR"]

    lines += _entry_lines(graph, node, group, "  end")
    for edge in graph.edges:
        if edge.kind == "order":
            lines.append(f"  s_{edge.source} --> s_{edge.target}")
        else:
            lines.append(f'  s_{edge.source} -.->|"{_mermaid_text(edge.label)}"| s_{edge.target}')
    reviewed = [f"s_{s.step_id}" for entry in graph.entries for s in entry if s.reviewed]
    if reviewed:
        lines.append("  classDef reviewed stroke-width:3px")
        lines.append(f"  class {','.join(reviewed)} reviewed")
    return "\n".join(lines) + "\n"


def _dot_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


def _dot_text(text: str) -> str:
    return f'"{_dot_escape(text)}"'


def to_dot(graph: WorkflowGraph) -> str:
    """Graphviz DOT text: concurrent groups are clusters ranked side by side, input edges are
    dashed and labelled with the file, reviewed steps have a bold double border."""
    title = f"{graph.job_name}/{graph.workflow_name}"
    lines = [
        f"digraph {_dot_text(title)} {{",
        "  rankdir=TB;",
        f"  label={_dot_text(title)}; labelloc=t;",
        '  node [shape=box, style=rounded, fontname="Helvetica"];',
    ]

    def node(step: GraphStep) -> str:
        parts = [step.name, step.step_id, *(["(reviewed)"] if step.reviewed else [])]
        if step.for_each is not None:
            parts.append(f"x for each {step.for_each}")
        label = "\\n".join(_dot_escape(part) for part in parts)
        extra = ", peripheries=2, penwidth=2" if step.reviewed else ""
        if step.for_each is not None:
            extra += ', style="rounded,filled", fillcolor="#eef3ff"'
        return f'  {_dot_text(step.step_id)} [label="{label}"{extra}];'

    def group(index: int) -> list[str]:
        return [
            f"  subgraph cluster_{index} {{",
            '    label="concurrent"; style=dashed; rank=same;',
        ]

    lines += _entry_lines(graph, node, group, "  }")
    for edge in graph.edges:
        ends = f"{_dot_text(edge.source)} -> {_dot_text(edge.target)}"
        if edge.kind == "order":
            lines.append(f"  {ends};")
        else:
            lines.append(f"  {ends} [style=dashed, label={_dot_text(edge.label)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
