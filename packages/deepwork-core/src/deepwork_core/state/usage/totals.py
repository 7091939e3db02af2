"""What the reviews of a run cost: totals of its `review_usage` events (docs/quality-gate.md).

Every review task the gate runs appends one `review_usage` event to the log of the run's
top-level session (a nested workflow's reviews count toward the run that started it). The
store sums each run's calls as they are logged (`state.store.tables.usage_rows`): those totals
are what `get_active_workflow`, `deepwork status` and the dashboard show; `deepwork stats`
breaks the calls down per job, step and review, and the review budget is checked against them.
Self-reviews use the agent's own tokens, which DeepWork cannot see: they are counted in
`self_reviews`, not metered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from pydantic import BaseModel, ConfigDict

from deepwork_core.base.errors import DeepWorkError
from deepwork_core.base.identifiers import SessionId
from deepwork_core.state.event_kinds import EventRecord, ReviewUsageEvent
from deepwork_core.state.sessions import Session
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.tables.usage_rows import usage_of
from deepwork_core.state.usage.pair import RequestUsage, RunUsage


def sum_usage(events: Iterable[EventRecord]) -> RunUsage:
    """The totals of the `review_usage` events among `events`."""
    metered: list[RequestUsage] = []
    reused: list[float | None] = []
    self_reviews = 0
    for event in events:
        if not isinstance(event, ReviewUsageEvent):
            continue
        if event.mode == "self":
            self_reviews += 1
        elif event.mode == "reused":
            reused.append(event.saved_usd)
        else:
            metered.append(event.usage)
    return RunUsage.of(metered, self_reviews=self_reviews, reused=reused)


def run_usage(store: Store, run_id: SessionId) -> RunUsage:
    """The totals of run `run_id` (its top-level session id): its row of the store's sums, one
    indexed read however long its log (`state.store.tables.usage_rows`); empty when it has
    logged no review call."""
    with store.read() as tx:
        found = usage_of(tx, store.project.project_id, [run_id])
    return found.get(run_id, RunUsage())


def run_id_of(session: Session, load: Callable[[SessionId], Session]) -> SessionId:
    """The run's top-level session id: `session`'s oldest ancestor that `load` still finds."""
    current, seen = session, {session.session_id}
    while current.parent_session_id is not None and current.parent_session_id not in seen:
        try:
            current = load(current.parent_session_id)
        except DeepWorkError:
            break  # a pruned parent: the oldest session still known stands for the run
        seen.add(current.session_id)
    return current.session_id


class ReviewCostRow(BaseModel):
    """What the reviews of one job, one step or one review cost (`deepwork stats`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    job: str
    step: str | None = None
    review: str | None = None
    usage: RunUsage
    mean_seconds: float | None = None
    #: Share of first-attempt reviewer calls that passed (None: none had a verdict).
    first_attempt_pass_rate: float | None = None


class ReviewCosts(BaseModel):
    """`deepwork stats`' cost figures, each list sorted most expensive first."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    jobs: list[ReviewCostRow] = []
    steps: list[ReviewCostRow] = []
    reviews: list[ReviewCostRow] = []


def review_costs(events: Iterable[EventRecord], *, job: str | None = None) -> ReviewCosts:
    """Per job, step and review: calls, tokens, cost, mean duration, first-attempt pass rate."""
    groups: dict[tuple[str, ...], list[ReviewUsageEvent]] = {}
    for event in events:
        if not isinstance(event, ReviewUsageEvent) or (job is not None and event.job != job):
            continue
        for key in (
            (event.job,),
            (event.job, event.step_id),
            (event.job, event.step_id, event.review),
        ):
            groups.setdefault(key, []).append(event)
    rows = {
        size: [_row(key, group) for key, group in groups.items() if len(key) == size]
        for size in (1, 2, 3)
    }
    return ReviewCosts(
        **{
            name: _costliest(rows[size])
            for name, size in (("jobs", 1), ("steps", 2), ("reviews", 3))
        }
    )


def _row(key: tuple[str, ...], events: list[ReviewUsageEvent]) -> ReviewCostRow:
    external = [event for event in events if event.mode == "external"]
    firsts = [
        e.outcome == "passed"
        for e in external
        if e.attempt == 1 and e.outcome in ("passed", "failed")
    ]
    return ReviewCostRow(
        job=key[0],
        step=key[1] if len(key) > 1 else None,
        review=key[2] if len(key) > 2 else None,
        usage=sum_usage(events),
        mean_seconds=round(sum(e.seconds for e in external) / len(external), 3)
        if external
        else None,
        first_attempt_pass_rate=round(sum(firsts) / len(firsts), 4) if firsts else None,
    )


def _costliest(rows: list[ReviewCostRow]) -> list[ReviewCostRow]:
    return sorted(
        rows,
        key=lambda row: (
            -row.usage.cost_usd,
            -row.usage.tokens,
            row.job,
            row.step or "",
            row.review or "",
        ),
    )
