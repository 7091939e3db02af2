"""What the reviews of a run cost: sums of `review_usage` events (docs/quality-gate.md).

Every review task the gate runs appends one `review_usage` event to the log of the run's
top-level session (a nested workflow's reviews count toward the run that started it). Its totals
are what `get_active_workflow` and `deepwork status` show, what `deepwork stats` breaks down per
job, step and review, and what the review budget is checked against. Self-reviews use the
agent's own tokens, which DeepWork cannot see: they are counted in `self_reviews`, not metered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Final

from pydantic import BaseModel, ConfigDict

from deepwork_core.base.errors import DeepWorkError
from deepwork_core.base.identifiers import SessionId
from deepwork_core.state.event_kinds import EventRecord, ReviewUsageEvent
from deepwork_core.state.events import read_events
from deepwork_core.state.sessions import Session
from deepwork_core.state.store.port import Store

#: Said next to the totals when self-reviews were counted.
SELF_REVIEW_NOTE: Final = (
    "self-reviews run on the agent's own tokens, which DeepWork cannot see: they are counted "
    "(self_reviews), not metered"
)


class ReviewUsage(BaseModel):
    """Totals of review calls: tokens and cost as the reviewers reported them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    #: The cost the reviewers reported; calls whose runner reports none are `unpriced_calls`.
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    self_reviews: int = 0
    note: str | None = None

    @property
    def tokens(self) -> int:
        """Every token counted against `quality_gate.budget.max_tokens`."""
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_creation_tokens
        )


def sum_usage(events: Iterable[EventRecord]) -> ReviewUsage:
    """The totals of the `review_usage` events among `events`."""
    calls = inputs = outputs = cache_read = cache_creation = self_reviews = unpriced = 0
    cost = 0.0
    for event in events:
        if not isinstance(event, ReviewUsageEvent):
            continue
        if event.mode == "self":
            self_reviews += 1
            continue
        calls += 1
        inputs += event.input_tokens
        outputs += event.output_tokens
        cache_read += event.cache_read_tokens
        cache_creation += event.cache_creation_tokens
        if event.cost_usd is None:
            unpriced += 1
        else:
            cost += event.cost_usd
    return ReviewUsage(
        calls=calls,
        input_tokens=inputs,
        output_tokens=outputs,
        cache_read_tokens=cache_read,
        cache_creation_tokens=cache_creation,
        cost_usd=round(cost, 6),
        unpriced_calls=unpriced,
        self_reviews=self_reviews,
        note=_note(self_reviews, unpriced),
    )


def cost_text(usage: ReviewUsage) -> str:
    """`0.1200 USD`, and how many calls reported no cost when some did not."""
    text = f"{usage.cost_usd:.4f} USD"
    if usage.unpriced_calls:
        text += f" (cost not reported for {usage.unpriced_calls} call(s))"
    return text


def _note(self_reviews: int, unpriced: int) -> str | None:
    """What the totals leave out: self-reviews, and calls whose reviewer reports no cost."""
    notes = [SELF_REVIEW_NOTE] if self_reviews else []
    if unpriced:
        notes.append(
            f"{unpriced} reviewer call(s) reported no cost (codex and gemini do not): cost_usd "
            "counts the others only"
        )
    return "; ".join(notes) or None


def run_usage(store: Store, run_id: SessionId) -> ReviewUsage:
    """The totals of run `run_id` (its top-level session id); empty when its log is unreadable."""
    try:
        return sum_usage(read_events(store, run_id))
    except DeepWorkError:
        return ReviewUsage()


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
    usage: ReviewUsage
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
