"""The gate's background reviews as the dashboard shows them, live (docs/dashboard.md).

Reads the jobs of the store's `review_jobs` queue (docs/quality-gate.md, "Background reviews")
of the gate's kind: running ones first, then queued ones, then the most recent finished ones.
`/reviews` lists them for the whole project, naming each review's run by its job, workflow,
instance and goal (read from the sessions' documents, once per table), and every run page for
its session; both pages ask for their table (`/fragment/reviews`) every second, as the list of
runs does, so a review that starts or finishes shows within about two seconds without a reload.
Reading creates nothing: a project without a store has no reviews.
"""

from __future__ import annotations

import contextlib
import time
from datetime import UTC, datetime
from typing import Final
from urllib.parse import quote

from deepwork_core.gate.costs.quotes import ReviewPrice, TaskPrice
from deepwork_core.gate.review_queue import KIND, GateJob, ReviewPayload, shown_state
from deepwork_core.state.session_model import Session
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.tables.review_jobs import Failed, ReviewJobs, ReviewJobState, Stale
from deepwork_core.state.store.tables.session_rows import load_body
from pydantic import BaseModel, ConfigDict, ValidationError

from deepwork_mcp.dashboard.rendering import render

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
    #: How many times a server took it up to run it (more than one: the server running it
    #: stopped and another took it over once its lease ran out). The tables' "Taken up".
    claims: int
    enqueued_at: datetime
    finished_at: datetime | None = None
    #: Seconds from being queued to being finished (or to now, while it is live).
    seconds: float
    #: What it was expected to cost when queued, with its basis (docs/quality-gate.md, "A
    #: price before the run"): `0.0123 USD, 4,100 tokens (estimated from size)`; "" if unknown.
    expected: str = ""
    #: The same price, as the total of the reviews still to run adds it up.
    price: TaskPrice | None = None
    #: The run it belongs to, as a person tells runs apart: `job/workflow`, and the instance and
    #: goal the run was started with ("" when its session cannot be read, or is not asked for).
    run: str = ""
    instance: str = ""
    goal: str = ""


class _RunName(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    run: str
    instance: str
    goal: str


def _run_names(store: Store, session_ids: set[str]) -> dict[str, _RunName]:
    """The job/workflow, instance and goal of each of `session_ids` that can be read, from one
    read transaction (a review's session may have been pruned since)."""
    names: dict[str, _RunName] = {}
    project = store.project.project_id
    with store.read() as tx:
        for session_id in sorted(session_ids):
            body = load_body(tx, project, session_id)
            if body is None:
                continue
            with contextlib.suppress(ValidationError):
                session = Session.model_validate_json(body)
                names[session_id] = _RunName(
                    run=session.workflow_label,
                    instance=session.instance_id or "",
                    goal=session.goal,
                )
    return names


def _named(rows: list[ReviewRow], store: Store) -> list[ReviewRow]:
    """`rows` with the run each belongs to named."""
    names = _run_names(store, {row.session_id for row in rows if row.session_id})
    return [
        row.model_copy(update=names[row.session_id].model_dump())
        if row.session_id in names
        else row
        for row in rows
    ]


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
        expected=_expected(job),
        price=job.payload.expected if job.payload is not None else None,
    )


def _expected(job: GateJob) -> str:
    price = job.payload.expected if job.payload is not None else None
    if price is None:
        return ""
    usd = "no price" if price.usd is None else f"{price.usd:.4f} USD"
    return f"{usd}, {price.tokens:,} tokens ({price.basis})"


def review_rows(store: Store | None, session_id: str | None = None) -> list[ReviewRow]:
    """The project's (or one session's) background reviews in its `store`: live ones first,
    oldest first, then the `FINISHED_SHOWN` most recent finished ones, newest first; none for
    a project without a store (None). The project's rows name their runs."""
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
    shown = live + done[:FINISHED_SHOWN]
    return shown if session_id is not None else _named(shown, store)


class ReviewTable(BaseModel):
    """A table of background reviews as a page shows it, and where the page fetches it again."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rows: list[ReviewRow]
    #: The run whose reviews these are; None: the whole project's, with a column for the run.
    session_id: str | None = None

    @property
    def with_runs(self) -> bool:
        """The table has a column linking each review's run (it lists the whole project's)."""
        return self.session_id is None

    @property
    def url(self) -> str:
        return fragment_url(self.session_id)

    @property
    def running(self) -> int:
        return sum(1 for row in self.rows if row.state == "running")

    @property
    def queued(self) -> int:
        return sum(1 for row in self.rows if row.state == "queued")

    @property
    def finished(self) -> int:
        return len(self.rows) - self.running - self.queued

    @property
    def still_to_run(self) -> str:
        """What the running and queued reviews are expected to cost in all, with its basis
        (`expected 0.0420 USD, 12,345 tokens for 3 review(s) (…)`); "" when none is priced."""
        prices = [row.price for row in self.rows if row.state in _ORDER and row.price]
        return ReviewPrice.of(prices).text if prices else ""


def reviews_fragment(table: ReviewTable) -> str:
    """The table of reviews (the part of the page the script refreshes)."""
    return render("reviews_table.html.j2", table=table)


def fragment_url(session_id: str | None = None) -> str:
    """Where a page fetches its table of reviews."""
    if session_id is None:
        return "/fragment/reviews"
    return f"/fragment/reviews?session={quote(session_id, safe='')}"


def reviews_page(rows: list[ReviewRow]) -> str:
    return render("reviews.html.j2", table=ReviewTable(rows=rows))
