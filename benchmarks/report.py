"""Figures, the budget of issue 8, and the printed and JSON reports.

A figure is a list of samples (or one value) with its median, min and max. Its budget verdict is
PASS or MISS for the workload the budget was set for; at `--quick` sizes a size-dependent budget
is marked as not comparable instead.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Status = Literal["ok", "unavailable", "failed", "skipped"]


@dataclass(frozen=True)
class Budget:
    limit: float
    text: str
    size_dependent: bool = True  # only comparable at the full workload sizes


# Medians on the reference 2-core machine (issue 8; cold start and nested start: issue 21). Cold
# start is a ratio to the FastMCP floor.
BUDGETS: dict[str, Budget] = {
    "cold_start.ratio": Budget(1.0, "≤ 1.0 × floor", size_dependent=False),
    "get_workflows.large.repeat": Budget(20, "≤ 20 ms"),
    "get_workflows.large.after_edit": Budget(60, "≤ 60 ms"),
    "get_workflows.large.first": Budget(1500, "≤ 1,500 ms"),
    "workflow_50.start_workflow": Budget(5, "≤ 5 ms", size_dependent=False),
    "workflow_50.finished_step": Budget(5, "≤ 5 ms", size_dependent=False),
    "workflow_50.total": Budget(400, "≤ 400 ms"),
    "nested_10.start": Budget(5, "≤ 5 ms", size_dependent=False),
    "navigation.go_to_step": Budget(5, "≤ 5 ms", size_dependent=False),
    "navigation.get_active_workflow": Budget(5, "≤ 5 ms", size_dependent=False),
    "navigation.abort_workflow": Budget(5, "≤ 5 ms", size_dependent=False),
    "reviews.get_review_instructions": Budget(150, "≤ 150 ms"),
    "verify.all": Budget(2000, "≤ 2,000 ms (issue 40)"),
    "reviews.get_configured_reviews": Budget(20, "≤ 20 ms"),
    "hook.no_op": Budget(80, "≤ 80 ms", size_dependent=False),
    "memory.peak_rss": Budget(110, "≤ 110 MiB"),
    "context.tools_and_instructions": Budget(7000, "≤ 7,000 bytes", size_dependent=False),
    "evidence.checkpoint": Budget(5, "≤ 5 ms", size_dependent=False),
    "evidence_10k.watch": Budget(3, "≤ 3 ms"),
    "background.overhead": Budget(5, "≤ 5 ms", size_dependent=False),
    "background.overhead_no_fsync": Budget(5, "≤ 5 ms", size_dependent=False),
    "fan_out.merge": Budget(2000, "≤ 2,000 ms per merge", size_dependent=False),
    "telemetry.dead_endpoint.added": Budget(5, "≤ 5 ms", size_dependent=False),
    # Issue 29: the store.
    "store.sqlite.finished_step": Budget(5, "≤ 5 ms", size_dependent=False),
    "store.postgresql.finished_step": Budget(10, "≤ 10 ms", size_dependent=False),
    "store.sqlite.list_runs": Budget(100, "≤ 100 ms"),
    "store.postgresql.list_runs": Budget(100, "≤ 100 ms"),
    "store.sqlite.dashboard_page": Budget(100, "≤ 100 ms"),
    "store.postgresql.dashboard_page": Budget(100, "≤ 100 ms"),
    # Issue 39: a run of another project opens from any dashboard.
    "pages.other_run_page": Budget(150, "≤ 150 ms (issue 39)"),
    # Issue 45: the external gate on a step without review.
    "gate_cost.added": Budget(1, "≤ 1 ms more than the gate off", size_dependent=False),
    "starts.top_level_ratio": Budget(10, "≤ 10 × the FastMCP round trip", size_dependent=False),
    "starts.nested_ratio": Budget(4, "≤ 4 × the FastMCP round trip", size_dependent=False),
    **{
        f"agents.{kind}.{agents}.cpu_ms": Budget(3, "≤ 3 ms CPU", size_dependent=False)
        for kind in ("sqlite", "postgresql")
        for agents in (8, 32)
    },
    **{
        f"views.{kind}.{view}": Budget(150, "≤ 150 ms")
        for kind in ("sqlite", "postgresql")
        for view in (
            "status",
            "status_all",
            "run_list",
            "run_page",
            "approvals",
            "reviews",
            "stats",
        )
    },
    **{
        f"long_log.{kind}.{view}": Budget(150, "≤ 150 ms")
        for kind in ("sqlite", "postgresql")
        for view in ("run_page", "report_html", "log_page", "reviews")
    },
    **{
        f"listing_before.{call}_ratio": Budget(1.0, "≤ 1.0 × before the wave", size_dependent=False)
        for call in ("first", "repeat")
    },
    **{f"views.{kind}.peak_mib": Budget(250, "≤ 250 MiB") for kind in ("sqlite", "postgresql")},
    # Issue 42: what reviews cost.
    "review_costs.rereview_calls": Budget(10, "≤ 10 % of the first round", size_dependent=False),
    "review_costs.rereview_cost": Budget(10, "≤ 10 % of the first round", size_dependent=False),
    "review_costs.estimate_gap": Budget(25, "within ±25 % of spent", size_dependent=False),
    # Issue 41: headless runs.
    "headless.wait_wake": Budget(2000, "≤ 2,000 ms", size_dependent=False),
    **{
        f"headless.webhook.{kind}": Budget(1000, "≤ 1,000 ms", size_dependent=False)
        for kind in ("down", "slow", "error")
    },
}

_STORE_FIGURES = ("finished_step", "list_runs", "dashboard_page")

# Every figure the runner produces, in report order (the smoke test checks all are present).
FIGURE_KEYS: tuple[str, ...] = (
    "cold_start.deepwork.tools_list",
    "cold_start.deepwork.first_get_workflows",
    "cold_start.floor.tools_list",
    "cold_start.floor.first_call",
    "cold_start.floor.call",
    "cold_start.floor.peak_rss",
    "cold_start.deepwork.peak_rss",
    "cold_start.ratio",
    "context.tools_and_instructions",
    *(
        f"get_workflows.{size}.{call}"
        for size in ("small", "medium", "large")
        for call in ("first", "repeat", "after_edit")
    ),
    "memory.peak_rss",
    "mixed_catalog.first",
    "mixed_catalog.repeat",
    "workflow_50.start_workflow",
    "workflow_50.finished_step",
    "workflow_50.total",
    "nested_10.start",
    "nested_10.finish",
    "nested_10.abort",
    "navigation.go_to_step",
    "navigation.get_active_workflow",
    "navigation.abort_workflow",
    "reviews.get_review_instructions.first",
    "reviews.get_review_instructions",
    "reviews.get_configured_reviews",
    "hook.no_op",
    "hook.python_floor",
    "evidence.checkpoint",
    "evidence.hashing",
    "evidence.scope_guard",
    "evidence_10k.watch",
    "evidence_10k.git_status",
    "fan_out.merge",
    "review_brief.light",
    "review_brief.standard",
    "background.overhead",
    "background.overhead_no_fsync",
    "telemetry.off.finished_step",
    "telemetry.dead_endpoint.finished_step",
    "telemetry.dead_endpoint.added",
    *(f"store.{kind}.{what}" for kind in ("sqlite", "postgresql") for what in _STORE_FIGURES),
    "pages.runs_list",
    "pages.run_page",
    "pages.report",
    "pages.other_run_page",
    "review_costs.rereview_calls",
    "review_costs.rereview_cost",
    "review_costs.estimate_gap",
    "verify.all",
    "gate_cost.off",
    "gate_cost.on",
    "gate_cost.added",
    "starts.floor_call",
    "starts.top_level",
    "starts.nested",
    "starts.top_level_ratio",
    "starts.nested_ratio",
    *(
        f"agents.{kind}.{agents}.{what}"
        for kind in ("sqlite", "postgresql")
        for agents in (8, 32)
        for what in ("per_second", "p50", "p95", "p99", "cpu_ms")
    ),
    *(
        f"views.{kind}.{view}"
        for kind in ("sqlite", "postgresql")
        for view in (
            "status",
            "status_all",
            "run_list",
            "run_page",
            "approvals",
            "reviews",
            "stats",
            "peak_mib",
            "reference",
        )
    ),
    *(
        f"long_log.{kind}.{view}"
        for kind in ("sqlite", "postgresql")
        for view in ("run_page", "report_html", "log_page", "reviews", "reference")
    ),
    *(
        f"listing_before.{version}.{call}"
        for version in ("main", "before")
        for call in ("spawn_to_first", "first", "repeat")
    ),
    *(f"listing_before.{call}_ratio" for call in ("spawn_to_first", "first", "repeat")),
    "headless.wait_wake",
    "headless.webhook.down",
    "headless.webhook.slow",
    "headless.webhook.error",
)


@dataclass
class Figure:
    key: str
    label: str
    unit: str
    samples: list[float] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    status: Status = "ok"
    reason: str | None = None
    client_ms: list[float] = field(default_factory=list)

    def add(self, value: float, client_ms: float | None = None) -> None:
        """One sample; `client_ms` is what the client spent after the answer arrived."""
        self.samples.append(value)
        if client_ms is not None:
            self.client_ms.append(client_ms)

    @property
    def median(self) -> float | None:
        return statistics.median(self.samples) if self.samples else None

    def verdict(self, quick: bool) -> str | None:
        budget = BUDGETS.get(self.key)
        median = self.median
        if budget is None or median is None or self.status != "ok":
            return None
        if quick and budget.size_dependent:
            return "n/a (quick sizes)"
        return "PASS" if median <= budget.limit else "MISS"

    def as_json(self, quick: bool) -> dict[str, Any]:
        budget = BUDGETS.get(self.key)
        return {
            "label": self.label,
            "unit": self.unit,
            "status": self.status,
            "reason": self.reason,
            "median": self.median,
            "min": min(self.samples) if self.samples else None,
            "max": max(self.samples) if self.samples else None,
            "n": len(self.samples),
            "samples": [round(sample, 3) for sample in self.samples],
            "params": self.params,
            "client_ms_median": statistics.median(self.client_ms) if self.client_ms else None,
            "budget": budget.text if budget else None,
            "budget_limit": budget.limit if budget else None,
            "verdict": self.verdict(quick),
        }


def _number(value: float, unit: str) -> str:
    if unit == "bytes":
        return f"{value:,.0f}"
    if unit == "x":
        return f"{value:.2f}"
    return f"{value:,.1f}" if value < 1000 else f"{value:,.0f}"


def format_line(figure: Figure, quick: bool) -> str:
    """One report line: label, median (min–max, n), budget and verdict."""
    head = f"{figure.label:<52}"
    if figure.status != "ok" or figure.median is None:
        reason = " ".join((figure.reason or "no samples").split())
        return f"{head} {figure.status.upper()}: {reason[:150]}"
    unit = figure.unit
    spread = ""
    if len(figure.samples) > 1:
        low, high = min(figure.samples), max(figure.samples)
        spread = f"  (min {_number(low, unit)}, max {_number(high, unit)}, n={len(figure.samples)})"
    line = f"{head} {_number(figure.median, unit):>9} {unit:<5}{spread}"
    budget = BUDGETS.get(figure.key)
    if budget is not None:
        line = f"{line:<110} budget {budget.text}: {figure.verdict(quick)}"
    return line


def write_json(path: Path, figures: list[Figure], meta: dict[str, Any], quick: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "meta": meta,
        "figures": {figure.key: figure.as_json(quick) for figure in figures},
    }
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
