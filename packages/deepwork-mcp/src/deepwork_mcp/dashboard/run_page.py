"""The run page (`/run/<session>`) and `deepwork report --html`: one run, summary first
(docs/dashboard.md).

It lays out core's read model (`deepwork_core.state.read_model.detail.SessionDetail`) with the
templates `run.html.j2` and `run_body.html.j2`: the summary (outcome, steps done, every verdict
labelled as what it is, approvals, review cost, branch), the approval card while a step waits
for a human, the workflow graph with its legend (and the instances of its fanned-out steps,
docs/fan-out.md), the outputs and their evidence, the reviews and what they cost, and the
timeline as sentences, each expandable to all of its fields. Text is escaped as on every page.
"""

from __future__ import annotations

from typing import Final

from deepwork_core.evidence.verdicts import VerdictKind

from deepwork_mcp.dashboard.rendering import render
from deepwork_mcp.dashboard.reviews import ReviewTable
from deepwork_mcp.dashboard.views import SessionPage

#: The CSS class of each kind of verdict.
VERDICT_CLASS: Final = {
    VerdictKind.REVIEWER: "pass",
    VerdictKind.SELF_REVIEW: "self",
    VerdictKind.OVERRIDE: "override",
    VerdictKind.UNREVIEWED: "unreviewed",
    VerdictKind.ERROR: "fail",
}


def run_body(page: SessionPage, *, token: str | None, reviews: ReviewTable | None = None) -> str:
    """The run page's content, summary first; `token` None: a report (no buttons).
    `reviews`: the live table of the run's background reviews (the dashboard's page only)."""
    return render(
        "run_body.html.j2", page=page, token=token, reviews=reviews, verdict_class=VERDICT_CLASS
    )


def run_page(page: SessionPage, *, token: str | None, reviews: ReviewTable | None = None) -> str:
    """The whole page; without a `token`, the self-contained report (the stylesheet inline, no
    script, no buttons, nothing fetched)."""
    return render(
        "run.html.j2", page=page, token=token, reviews=reviews, verdict_class=VERDICT_CLASS
    )
