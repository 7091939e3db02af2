"""The usage pair: what one reviewer request used, and what the requests of a run used in all.

`RequestUsage` is one reviewer call as its CLI reported it (the runners build it, the
`review_usage` event carries its fields, telemetry exports them). `RunUsage` is a sum of
requests, made only by `RunUsage.of`, so the run's totals in `get_active_workflow`,
`deepwork status`, `deepwork stats`, the dashboard and the review budget are summed the same way
(docs/quality-gate.md, "What reviews cost"), and every view writes them with the formatters at
the end (`tokens_text`, `token_parts`, `cost_text`): a run's tokens are one figure, the cached
input included, wherever they are shown.

This module imports nothing but pydantic: the MCP responses use `RunUsage` as it is, and are
loaded before any state module.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

from pydantic import BaseModel, ConfigDict, Field

#: Said next to the totals when self-reviews were counted.
SELF_REVIEW_NOTE: Final = (
    "self-reviews run on the agent's own tokens, which DeepWork cannot see: they are counted "
    "(self_reviews), not metered"
)


class _Sums:
    """The token sums both halves of the pair answer (their fields are their own)."""

    if TYPE_CHECKING:
        input_tokens: int
        output_tokens: int
        cache_read_tokens: int
        cache_creation_tokens: int

    @property
    def tokens(self) -> int:
        """Every token, as counted against `quality_gate.budget.max_tokens`."""
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_creation_tokens
        )

    @property
    def all_input_tokens(self) -> int:
        """The input with its cached parts (read and written), as telemetry reports input."""
        return self.input_tokens + self.cache_read_tokens + self.cache_creation_tokens


class RequestUsage(_Sums, BaseModel):
    """Tokens and cost of one reviewer call, as its events reported them.

    `input_tokens` leaves out the cached input (`cache_read_tokens`), whatever the CLI's own
    accounting; `cost_usd` is None when the CLI reports no cost ("not reported", never 0);
    `model` is the model that answered, when known.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cache_read_tokens: int = Field(default=0, ge=0)
    cache_creation_tokens: int = Field(default=0, ge=0)
    cost_usd: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    model: str | None = None


def _none_yet(value: object) -> bool:
    return value == 0  # left out of a dump until a verdict is reused: older answers unchanged


class RunUsage(_Sums, BaseModel):
    """Totals of reviewer calls: tokens and cost as the reviewers reported them, plus the
    self-reviews counted beside them (which DeepWork cannot meter). Made by `of`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    #: The cost the reviewers reported; calls whose CLI reports none are `unpriced_calls`.
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    self_reviews: int = 0
    #: Verdicts taken from an earlier review of the same brief and bytes: no call, cost 0.
    reused_verdicts: int = Field(default=0, exclude_if=_none_yet)
    #: What those verdicts cost when they were judged (the reviews reuse saved).
    saved_usd: float = Field(default=0.0, exclude_if=_none_yet)
    note: str | None = None

    @classmethod
    def of(
        cls,
        requests: Iterable[RequestUsage],
        *,
        self_reviews: int = 0,
        reused: Iterable[float | None] = (),
    ) -> RunUsage:
        """The sum of `requests`, with `self_reviews` counted and the `reused` verdicts (what
        each cost when judged): the one way usage is summed."""
        calls = inputs = outputs = cache_read = cache_creation = unpriced = 0
        cost = 0.0
        for usage in requests:
            calls += 1
            inputs += usage.input_tokens
            outputs += usage.output_tokens
            cache_read += usage.cache_read_tokens
            cache_creation += usage.cache_creation_tokens
            if usage.cost_usd is None:
                unpriced += 1
            else:
                cost += usage.cost_usd
        saved = list(reused)
        return cls.summed(
            reused_verdicts=len(saved),
            saved_usd=sum(cost or 0.0 for cost in saved),
            calls=calls,
            input_tokens=inputs,
            output_tokens=outputs,
            cache_read_tokens=cache_read,
            cache_creation_tokens=cache_creation,
            cost_usd=cost,
            unpriced_calls=unpriced,
            self_reviews=self_reviews,
        )

    @classmethod
    def summed(
        cls,
        *,
        calls: int,
        input_tokens: int,
        output_tokens: int,
        cache_read_tokens: int,
        cache_creation_tokens: int,
        cost_usd: float,
        unpriced_calls: int,
        self_reviews: int,
        reused_verdicts: int,
        saved_usd: float,
    ) -> RunUsage:
        """The totals from sums already made (`of`, or the store's `run_usage` rows): the
        costs rounded to a millionth of a dollar, and the note on what they leave out."""
        return cls(
            reused_verdicts=reused_verdicts,
            saved_usd=round(saved_usd, 6),
            calls=calls,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cache_read_tokens=cache_read_tokens,
            cache_creation_tokens=cache_creation_tokens,
            cost_usd=round(cost_usd, 6),
            unpriced_calls=unpriced_calls,
            self_reviews=self_reviews,
            note=_note(self_reviews, unpriced_calls),
        )


def _note(self_reviews: int, unpriced: int) -> str | None:
    """What the totals leave out: self-reviews, and calls whose reviewer reports no cost."""
    notes = [SELF_REVIEW_NOTE] if self_reviews else []
    if unpriced:
        notes.append(
            f"{unpriced} reviewer call(s) reported no cost (codex and gemini do not): cost_usd "
            "counts the others only"
        )
    return "; ".join(notes) or None


def cost_text(usage: RunUsage) -> str:
    """`0.1200 USD`, and how many calls reported no cost when some did not."""
    text = f"{usage.cost_usd:.4f} USD"
    if usage.unpriced_calls:
        text += f" (cost not reported for {usage.unpriced_calls} call(s))"
    return text


def count_text(value: int) -> str:
    """`12,345`: how every view writes a count."""
    return f"{value:,}"


def tokens_text(usage: RequestUsage | RunUsage) -> str:
    """`3,259 tokens`: every token of `usage`, the cached input included (`tokens`, what the
    review budget counts); the one way a view states how many tokens reviews used."""
    return f"{count_text(usage.tokens)} tokens"


def token_parts(usage: RequestUsage | RunUsage) -> str:
    """`1,060 in, 199 out, 2,000 cache read, 0 cache write`: what `tokens_text` adds up."""
    return (
        f"{count_text(usage.input_tokens)} in, {count_text(usage.output_tokens)} out, "
        f"{count_text(usage.cache_read_tokens)} cache read, "
        f"{count_text(usage.cache_creation_tokens)} cache write"
    )
