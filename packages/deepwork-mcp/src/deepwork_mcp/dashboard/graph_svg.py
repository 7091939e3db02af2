"""A workflow graph drawn as SVG with no renderer installed (docs/dashboard.md).

`deepwork jobs graph --format svg` asks Graphviz; the dashboard and `deepwork report --html` draw
the same `WorkflowGraph` here instead, so a page never depends on a program being on PATH and the
report stays one self-contained file. The layout is simple and fixed: one row per workflow entry,
top to bottom, the steps of a concurrent group side by side; order edges are arrows between rows,
input edges dashed curves on the right labelled with the file, each label starting right of its
curve's bend, clear of every box (labels that would overlap are moved apart). `drawing` places
every box, line and label (a `GraphDrawing`); the template `templates/graph.svg.j2` writes it
as SVG, escaping every text as on every page. The picture is styled by CSS classes (`step`,
`reviewed`: the step has reviews, `done`, `current`, `passed`: an external review passed it in
this run, marked ✓; `fanned`: a step run once per item, drawn as a stack with its instances'
counts), never inline script. The page draws the legend next to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Final, Literal

from deepwork_core.jobs.graph import GraphEdge, WorkflowGraph
from markupsafe import Markup
from pydantic import BaseModel, ConfigDict

from deepwork_mcp.dashboard.rendering import render_macro

NODE_W: Final = 190
NODE_H: Final = 50
GAP_X: Final = 30
GAP_Y: Final = 46
MARGIN: Final = 20
#: Room on the right for the input edges' curves and labels.
SIDE: Final = 150
#: How far right of the boxes an input edge bends; its label starts just past the bend.
BEND: Final = 40
LABEL_GAP: Final = 4
#: Characters of an input edge's label shown (the whole file name is its tooltip).
LABEL_CHARS: Final = 18
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


class _Drawn(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Arrow(_Drawn):
    """An order edge: an arrow from the bottom of one box to the top of the next row's."""

    kind: Literal["order"] = "order"
    x1: int
    y1: int
    x2: int
    y2: int


class Curve(_Drawn):
    """An input edge: a dashed curve on the right, labelled with the file it carries; the label
    starts at `label_x` and runs right (`text-anchor: start`), away from the boxes."""

    kind: Literal["input"] = "input"
    label: str
    short_label: str
    #: The curve as SVG path data (`M… C…`).
    path: str
    label_x: int
    label_y: int


class Box(_Drawn):
    """One step: its box's top-left corner, its classes and its two lines of text."""

    step_id: str
    name: str
    short_name: str
    #: The step's id (✓ when an external review passed it), or a fanned-out step's counts.
    second_line: str
    classes: str
    x: int
    y: int
    center: int
    #: A fanned-out step, drawn as a stack of boxes.
    stacked: bool


class GraphDrawing(_Drawn):
    """Everything the SVG shows, placed."""

    title: str
    width: int
    height: int
    node_width: int = NODE_W
    node_height: int = NODE_H
    edges: list[Arrow | Curve]
    boxes: list[Box]


def _edge(
    edge: GraphEdge, places: Mapping[str, tuple[int, int]], right: int, taken: list[int]
) -> Arrow | Curve | None:
    if edge.source not in places or edge.target not in places:
        return None
    (sx, sy), (tx, ty) = places[edge.source], places[edge.target]
    if edge.kind == "order":
        return Arrow(x1=sx + NODE_W // 2, y1=sy + NODE_H, x2=tx + NODE_W // 2, y2=ty - 2)
    x1, y1, x2, y2 = sx + NODE_W, sy + NODE_H // 2, tx + NODE_W, ty + NODE_H // 2
    bend = right + BEND
    label_y = (y1 + y2) // 2
    while any(abs(label_y - other) < LABEL_H for other in taken):
        label_y += LABEL_H
    taken.append(label_y)
    return Curve(
        label=edge.label,
        short_label=_short(edge.label, LABEL_CHARS),
        path=f"M{x1},{y1} C{bend},{y1} {bend},{y2} {x2 + 2},{y2}",
        label_x=bend + LABEL_GAP,
        label_y=label_y,
    )


def fan_line(for_each: str, counts: Mapping[str, int] | None) -> str:
    """The second line of a fanned-out step's box: its instances' counts, or what it runs over."""
    if not counts:
        return f"× each {for_each}"
    total = sum(counts.values())
    shown = [f"{counts.get(k, 0)} {label}" for k, label in _COUNT_LABELS]
    return f"×{total}: " + " · ".join(shown)


_COUNT_LABELS = (("done", "done"), ("running", "run"), ("needs_work", "fix"), ("aborted", "ab"))


def drawing(
    graph: WorkflowGraph,
    states: Mapping[str, StepState] | None = None,
    passed: frozenset[str] = frozenset(),
    fan_counts: Mapping[str, Mapping[str, int]] | None = None,
) -> GraphDrawing:
    """The graph placed; `states` marks steps done, started or current, `passed` the steps an
    external review passed in this run (✓), and `fan_counts` gives each fanned-out step's
    instances by state (docs/fan-out.md)."""
    states, fan_counts = states or {}, fan_counts or {}
    taken: list[int] = []
    places, width, height = _positions(graph)
    right = max((x + NODE_W for x, _ in places.values()), default=MARGIN)
    edges = [_edge(edge, places, right, taken) for edge in graph.edges]
    boxes = []
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
            second = _short(step.step_id, _NAME_CHARS) + (" ✓" if step.step_id in passed else "")
            if step.for_each is not None:
                classes.append("fanned")
                second = fan_line(step.for_each, fan_counts.get(step.step_id))
            boxes.append(
                Box(
                    step_id=step.step_id,
                    name=step.name,
                    short_name=_short(step.name, _NAME_CHARS),
                    second_line=second,
                    classes=" ".join(classes),
                    x=x,
                    y=y,
                    center=x + NODE_W // 2,
                    stacked=step.for_each is not None,
                )
            )
    return GraphDrawing(
        title=f"{graph.job_name}/{graph.workflow_name}",
        width=width,
        height=height,
        edges=[edge for edge in edges if edge is not None],
        boxes=boxes,
    )


def svg(drawn: GraphDrawing) -> Markup:
    """`drawn` as an `<svg>` element."""
    return render_macro("graph.svg.j2", "svg", drawn)
