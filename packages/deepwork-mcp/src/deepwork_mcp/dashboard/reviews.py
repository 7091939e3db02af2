"""The gate's background reviews as the dashboard shows them, live (docs/dashboard.md).

Reads the jobs of the store's `review_jobs` queue (docs/quality-gate.md, "Background reviews")
of the gate's kind: running ones first, then queued ones, then the most recent finished ones.
`/reviews` lists them for the whole project and every run page for its session; both pages ask
for their table (`/fragment/reviews`) every second, as the list of runs does, so a review that
starts or finishes shows within about two seconds without a reload. Reading creates nothing: a
project without a store has no reviews.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Final
from urllib.parse import quote

from deepwork_core.gate.background import KIND, GateJob, ReviewPayload, shown_state
from deepwork_core.state.store.opening import existing_store
from deepwork_core.state.store.review_jobs import Failed, ReviewJobs, ReviewJobState, Stale
from pydantic import BaseModel, ConfigDict

from deepwork_mcp.dashboard.pages import layout, status_badge, text

#: Finished reviews a table lists (the newest); running and queued ones are always listed.
FINISHED_SHOWN: Final = 50
#: Display order of the states: live ones first.
_ORDER: Final = {"running": 0, "queued": 1}


class ReviewRow(BaseModel):
    """One background review: what it judges and where it is."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    review_id: str
    session_id: str | None
    #: What it judges, e.g. `write: all outputs`.
    judges: str
    #: `queued`, `running`, `passed`, `failed`, `error`, `stale` or `cancelled`.
    state: str
    #: Why: the error code, or that a stopped server's lease ran out.
    note: str = ""
    #: How many times a worker claimed it (more than one: claimed again after a stop).
    claims: int
    enqueued_at: datetime
    finished_at: datetime | None = None
    #: Seconds from being queued to being finished (or to now, while it is live).
    seconds: float


def _stamp(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


def _state(job: GateJob, now: float) -> tuple[str, str]:
    """(state, note) of one job."""
    if job.state is ReviewJobState.CLAIMED:
        if job.lease_until is not None and job.lease_until < now:
            return "queued", "its server stopped; it is claimed again"
        return "running", ""
    if job.state is not ReviewJobState.DONE:
        return str(job.state), ""
    result = job.result
    if isinstance(result, Failed):
        return "error", str(result.code)
    if isinstance(result, Stale):
        return "stale", "the files changed while it ran"
    return shown_state(job), ""


def _row(job: GateJob, now: float) -> ReviewRow:
    state, note = _state(job, now)
    end = job.finished_at if job.finished_at is not None else now
    return ReviewRow(
        review_id=job.job_id,
        session_id=job.session_id,
        judges=job.payload.label if job.payload is not None else job.job_id,
        state=state,
        note=note,
        claims=job.attempts,
        enqueued_at=_stamp(job.enqueued_at),
        finished_at=_stamp(job.finished_at) if job.finished_at is not None else None,
        seconds=max(0.0, end - job.enqueued_at),
    )


def review_rows(project_root: Path, session_id: str | None = None) -> list[ReviewRow]:
    """The project's (or one session's) background reviews: live ones first, oldest first,
    then the `FINISHED_SHOWN` most recent finished ones, newest first."""
    store = existing_store(project_root)
    if store is None:
        return []
    now = time.time()
    queue = ReviewJobs(store, ReviewPayload)
    jobs = [j for j in queue.list(session_id=session_id) if j.kind == KIND]
    rows = [_row(job, now) for job in jobs]
    live = [row for row in rows if row.state in _ORDER]
    live.sort(key=lambda row: (_ORDER[row.state], row.enqueued_at))
    done = [row for row in rows if row.state not in _ORDER]
    done.sort(key=lambda row: row.finished_at or row.enqueued_at, reverse=True)
    return live + done[:FINISHED_SHOWN]


def _cell_time(value: datetime | None) -> str:
    if value is None:
        return '<span class="muted">-</span>'
    return f'<time datetime="{escape(value.isoformat())}">{value:%H:%M:%S}</time>'


def reviews_fragment(rows: list[ReviewRow], *, sessions: bool = True) -> str:
    """The table of reviews (the part of the page the script refreshes); `sessions`: with a
    column linking each review's run."""
    if not rows:
        return '<p class="muted">No review has run in the background yet.</p>'
    counts = {state: sum(1 for row in rows if row.state == state) for state in _ORDER}
    summary = (
        f'<p class="review-counts">{counts["running"]} running, {counts["queued"]} queued, '
        f"{len(rows) - counts['running'] - counts['queued']} finished</p>"
    )
    run_head = "<th>Run</th>" if sessions else ""
    head = (
        f"<thead><tr><th>Review</th>{run_head}<th>State</th><th>Claims</th><th>Queued</th>"
        '<th>Finished</th><th class="num">Seconds</th></tr></thead>'
    )
    lines = []
    for row in rows:
        run = ""
        if sessions:
            link = text(row.session_id or "-")
            if row.session_id:
                link = f'<a href="/run/{quote(row.session_id, safe="")}">{link}</a>'
            run = f"<td>{link}</td>"
        note = f' <span class="muted">{text(row.note)}</span>' if row.note else ""
        lines.append(
            f'<tr data-review="{text(row.review_id)}" data-state="{text(row.state)}">'
            f'<td class="judges">{text(row.judges)}</td>{run}'
            f'<td class="state">{status_badge(row.state)}{note}</td>'
            f'<td class="num">{row.claims}</td><td>{_cell_time(row.enqueued_at)}</td>'
            f'<td>{_cell_time(row.finished_at)}</td><td class="num">{row.seconds:.1f}</td></tr>'
        )
    return f'{summary}<table class="reviews">{head}<tbody>{"".join(lines)}</tbody></table>'


def fragment_url(session_id: str | None = None) -> str:
    """Where a page fetches its table of reviews."""
    if session_id is None:
        return "/fragment/reviews"
    return f"/fragment/reviews?session={quote(session_id, safe='')}"


def live_reviews(rows: list[ReviewRow], session_id: str | None = None) -> str:
    """The table inside the element the script refreshes from `fragment_url(session_id)`."""
    url = escape(fragment_url(session_id))
    table = reviews_fragment(rows, sessions=session_id is None)
    return f'<div class="live-reviews" data-refresh="{url}">{table}</div>'


def reviews_page(rows: list[ReviewRow]) -> str:
    body = (
        "<h1>Reviews</h1>"
        '<p class="muted">The quality gate\'s reviews in the background: running, queued, and '
        "the most recent finished ones. The list follows changes by itself.</p>"
        f"{live_reviews(rows)}"
    )
    return layout("Reviews", body)
