"""The dashboard's pages and the fragments they refresh (docs/dashboard.md).

Each function hands what a page shows to its template (`templates/*.html.j2`, rendered by
`rendering`, which escapes every text a template prints); the few figures a page needs that its
view does not hold (the pager, the order of the criteria) are worked out here, never markup.
"""

from __future__ import annotations

from collections.abc import Iterable

from deepwork_core.state.read_model.runs import SessionView
from deepwork_core.state.stats import Stats
from deepwork_core.state.store.tables.session_lists import StoredSession

from deepwork_mcp.dashboard.approval_views import ApprovalView
from deepwork_mcp.dashboard.rendering import render


def _counted(rows: Iterable[SessionView]) -> int:
    return sum(1 + _counted(row.children) for row in rows)


def _runs_context(rows: list[SessionView], page: int, per_page: int) -> dict[str, object]:
    """The list's rows and whether there are newer and older pages of it."""
    return {
        "rows": rows,
        "page": page,
        "newer": page > 1,
        "older": bool(per_page) and _counted(rows) >= per_page,
    }


def runs_fragment(rows: list[SessionView], page: int = 1, per_page: int = 0) -> str:
    """The table of runs (the part of the page the script refreshes), with links to the newer
    and older pages when there are any."""
    return render("runs_table.html.j2", **_runs_context(rows, page, per_page))


def runs_page(rows: list[SessionView], page: int = 1, per_page: int = 0) -> str:
    return render("runs.html.j2", **_runs_context(rows, page, per_page))


def all_runs_fragment(runs: list[StoredSession]) -> str:
    """The table of every project's runs (the part of the All projects page that refreshes)."""
    return render("all_runs_table.html.j2", runs=runs)


def all_runs_page(runs: list[StoredSession]) -> str:
    """Every run of every project in the store, with where each runs (docs/team.md); the table
    follows changes by itself, as the Runs page's does."""
    return render("all_runs.html.j2", runs=runs)


def approvals_page(views: list[ApprovalView], token: str, notice: str = "", ok: bool = True) -> str:
    return render("approvals.html.j2", views=views, token=token, notice=notice, ok=ok)


def stats_page(figures: Stats) -> str:
    """What reviews cost, how each step fared, and the criteria that fail most, first."""
    criteria = [
        (job.job, step.step, c) for job in figures.jobs for step in job.steps for c in step.criteria
    ]
    criteria.sort(key=lambda r: (-r[2].failures, -(r[2].failure_rate or 0), r[0], r[1]))
    return render(
        "stats.html.j2",
        figures=figures,
        costs=[*figures.review_costs.jobs, *figures.review_costs.steps],
        has_steps=any(job.steps for job in figures.jobs),
        criteria=criteria,
    )


def message_page(title: str, message: str) -> str:
    """A plain page for refusals (401, 403, 404): no stylesheet, no navigation, no script."""
    return render("message.html.j2", title=title, message=message)


def error_page(title: str, message: str) -> str:
    """A styled page, with the navigation, for what a signed-in person asked and cannot see
    (a run that is not in the store, a link that is not a run's): in a person's words."""
    return render("error.html.j2", title=title, message=message)
