"""A workflow graph drawn as SVG with no renderer installed (docs/dashboard.md).

`deepwork jobs graph --format svg` asks Graphviz; the dashboard and `deepwork report --html` draw
the same `WorkflowGraph` here instead, so a page never depends on a program being on PATH and the
report stays one self-contained file. The layout is simple and fixed: one row per workflow entry,
top to bottom, the steps of a concurrent group side by side; order edges are arrows between rows,
input edges dashed curves on the right labelled with the file (labels that would overlap are
moved apart). Every text is XML-escaped; the picture is styled by CSS classes (`step`,
`reviewed`: the step has reviews, `done`, `current`, `passed`: an external review passed it in
this run, marked ✓; `fanned`: a step run once per item, drawn as a stack with its instances'
counts), never inline script. The page draws the legend next to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from html import escape
from typing import Final

from deepwork_core.jobs.graph import GraphEdge, WorkflowGraph

NODE_W: Final = 190
NODE_H: Final = 50
GAP_X: Final = 30
GAP_Y: Final = 46
MARGIN: Final = 20
#: Room on the right for the input edges' curves and labels.
SIDE: Final = 150
_NAME_CHARS: Final = 26


class StepState(StrEnum):
    """How far a run got with a step (a CSS class of its box)."""

    DONE = "done"
    STARTED = "started"
    CURRENT = "current"


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _positions(graph: WorkflowGraph) -> tuple[dict[str, tuple[int, int]], int, int]:
    """Top-left corner of each step's box, and the drawing's width and height."""
    widest = max((len(entry) for entry in graph.entries), default=1)
    inner = widest * NODE_W + (widest - 1) * GAP_X
    places: dict[str, tuple[int, int]] = {}
    for row, entry in enumerate(graph.entries):
        used = len(entry) * NODE_W + (len(entry) - 1) * GAP_X
        left = MARGIN + (inner - used) // 2
        for column, step in enumerate(entry):
            places[step.step_id] = (
                left + column * (NODE_W + GAP_X),
                MARGIN + row * (NODE_H + GAP_Y),
            )
    height = 2 * MARGIN + len(graph.entries) * (NODE_H + GAP_Y) - GAP_Y
    return places, 2 * MARGIN + inner + SIDE, max(height, 2 * MARGIN)


#: Vertical room one input-edge label takes.
LABEL_H: Final = 14


def _edge(
    edge: GraphEdge, places: Mapping[str, tuple[int, int]], right: int, taken: list[int]
) -> str:
    if edge.source not in places or edge.target not in places:
        return ""
    (sx, sy), (tx, ty) = places[edge.source], places[edge.target]
    if edge.kind == "order":
        x1, y1, x2, y2 = sx + NODE_W // 2, sy + NODE_H, tx + NODE_W // 2, ty
        return (
            f'<line class="edge" x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2 - 2}" '
            'marker-end="url(#dw-arrow)"/>'
        )
    x1, y1, x2, y2 = sx + NODE_W, sy + NODE_H // 2, tx + NODE_W, ty + NODE_H // 2
    bend = right + 40
    label = escape(_short(edge.label, 18))
    label_y = (y1 + y2) // 2
    while any(abs(label_y - other) < LABEL_H for other in taken):
        label_y += LABEL_H
    taken.append(label_y)
    return (
        f'<g class="input-edge"><title>{escape(edge.label)}</title>'
        f'<path d="M{x1},{y1} C{bend},{y1} {bend},{y2} {x2 + 2},{y2}" '
        'marker-end="url(#dw-arrow)"/>'
        f'<text x="{bend - 6}" y="{label_y}">{label}</text></g>'
    )


def fan_line(for_each: str, counts: Mapping[str, int] | None) -> str:
    """The second line of a fanned-out step's box: its instances' counts, or what it runs over."""
    if not counts:
        return f"× each {for_each}"
    total = sum(counts.values())
    shown = [f"{counts.get(k, 0)} {label}" for k, label in _COUNT_LABELS]
    return f"×{total}: " + " · ".join(shown)


_COUNT_LABELS = (("done", "done"), ("running", "run"), ("needs_work", "fix"), ("aborted", "ab"))


def _stack(x: int, y: int) -> str:
    """The box drawn behind a fanned-out step's, so it reads as a stack of instances."""
    return (
        f'<rect class="stack" x="{x + 4}" y="{y - 4}" width="{NODE_W}" height="{NODE_H}" rx="8"/>'
    )


def graph_svg(
    graph: WorkflowGraph,
    states: Mapping[str, StepState] | None = None,
    passed: frozenset[str] = frozenset(),
    fan_counts: Mapping[str, Mapping[str, int]] | None = None,
) -> str:
    """The graph as an `<svg>` element; `states` marks steps done, started or current,
    `passed` the steps an external review passed in this run (✓), and `fan_counts` gives each
    fanned-out step's instances by state (docs/fan-out.md)."""
    states, fan_counts = states or {}, fan_counts or {}
    taken: list[int] = []
    places, width, height = _positions(graph)
    right = max((x + NODE_W for x, _ in places.values()), default=MARGIN)
    title = escape(f"{graph.job_name}/{graph.workflow_name}")
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="workflow-graph" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{title}">',
        f"<title>{title}</title>",
        '<defs><marker id="dw-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"/></marker>'
        "</defs>",
    ]
    parts += [_edge(edge, places, right, taken) for edge in graph.edges]
    for entry in graph.entries:
        for step in entry:
            x, y = places[step.step_id]
            classes = ["step"]
            if step.reviewed:
                classes.append("reviewed")
            if step.step_id in states:
                classes.append(states[step.step_id].value)
            if step.step_id in passed:
                classes.append("passed")
            mark = " ✓" if step.step_id in passed else ""
            second, stack = _short(step.step_id, _NAME_CHARS) + mark, ""
            if step.for_each is not None:
                classes.append("fanned")
                second, stack = fan_line(step.for_each, fan_counts.get(step.step_id)), _stack(x, y)
            parts.append(
                f'<g class="{" ".join(classes)}" data-step="{escape(step.step_id)}">'
                f"<title>{escape(step.name)} ({escape(step.step_id)})</title>{stack}"
                f'<rect x="{x}" y="{y}" width="{NODE_W}" height="{NODE_H}" rx="8"/>'
                f'<text class="name" x="{x + NODE_W // 2}" y="{y + 21}">'
                f"{escape(_short(step.name, _NAME_CHARS))}</text>"
                f'<text class="id" x="{x + NODE_W // 2}" y="{y + 39}">'
                f"{escape(second)}</text></g>"
            )
    parts.append("</svg>")
    return "".join(parts)
