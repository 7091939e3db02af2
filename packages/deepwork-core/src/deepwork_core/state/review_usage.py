"""What the reviews of a run cost: sums of `review_usage` events (docs/quality-gate.md).

Every review task the gate runs appends one `review_usage` event to the log of the run's
top-level session (a nested workflow's reviews count toward the run that started it). Its totals
are what `get_active_workflow` and `deepwork status` show, what `deepwork stats` breaks down per
job, step and review, and what the review budget is checked against. Self-reviews use the
agent's own tokens, which DeepWork cannot see: they are counted in `self_reviews`, not metered.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict

from deepwork_core.base.errors import DeepWorkError
from deepwork_core.state.event_kinds import EventRecord, ReviewUsageEvent
from deepwork_core.state.events import read_events

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
    cost_usd: float = 0.0
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
    calls = inputs = outputs = cache_read = cache_creation = self_reviews = 0
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
        cost += event.cost_usd
    return ReviewUsage(
        calls=calls,
        input_tokens=inputs,
        output_tokens=outputs,
        cache_read_tokens=cache_read,
        cache_creation_tokens=cache_creation,
        cost_usd=round(cost, 6),
        self_reviews=self_reviews,
        note=SELF_REVIEW_NOTE if self_reviews else None,
    )


def run_usage(project_root: Path, run_id: str) -> ReviewUsage:
    """The totals of run `run_id` (its top-level session id); empty when its log is unreadable."""
    try:
        return sum_usage(read_events(project_root, run_id))
    except DeepWorkError:
        return ReviewUsage()
