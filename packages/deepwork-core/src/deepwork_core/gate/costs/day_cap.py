"""The day cap: `quality_gate.max_budget_usd_per_day` (docs/quality-gate.md, "Budgets").

Beside the budget of one run, a project may cap what its reviews spend in a day (UTC, midnight
to midnight). The day's spending is counted in the store (`state.store.tables.spend_rows`),
so every server and machine on the store counts it, and it survives restarts. Before each
reviewer call the gate holds its slice of what is left, in one transaction under a lock every
server takes: what is left is shared among the calls that may start alongside it, and the slice
is passed on as the call's budget (`--max-budget-usd` for claude, whose CLI stops there). The
slice counts in full until the call's real cost replaces it, and in full for ever when its
server died meanwhile: the day is never overshot by calls whose CLI keeps to its budget. A call
whose CLI reports no cost (codex, gemini) counts its tokens at `quality_gate.prices`.

While part of what is gone is only held by calls that may be running (on any server), a call
waits for them to settle and takes what they leave; a call stopped mid-review keeps its whole
slice counted (`kept`) and is not waited for. Once nothing is left and nothing is held by a
running call, no reviewer starts: `quality_gate.day_budget_exhausted`, naming the cap, what was
spent and when the day resets; it is not an attempt (the run goes on with self-review).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import QualityGateError
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.tables.spend_rows import (
    SpendRow,
    held_between,
    hold_within,
    keep_whole,
    release,
    settle,
    spent_today,
)

DAY_SECONDS: Final = 86_400.0
#: How often a call waiting for running reviews to settle tries its hold again, in seconds.
WAIT_POLL_S: Final = 1.0


def day_window(now: float) -> tuple[float, float]:
    """The UTC day holding `now` (seconds since the epoch): its start and its end."""
    start = math.floor(now / DAY_SECONDS) * DAY_SECONDS
    return start, start + DAY_SECONDS


@dataclass(frozen=True, slots=True)
class DayHold:
    """A call's slice of the day, held in the store until its cost is known."""

    spend_id: str
    usd: float


class DayCap:
    """The day cap of the project's reviews; `max_usd` None: no cap (nothing is held)."""

    def __init__(self, max_usd: float | None) -> None:
        self.max_usd = max_usd

    def hold(
        self,
        store: Store,
        row: SpendRow,
        slots: int,
        *,
        wait: Callable[[float], bool] | None = None,
        live_for: float = 0.0,
    ) -> DayHold | None:
        """Hold this call's slice (None without a cap); raises
        `quality_gate.day_budget_exhausted` when the day has nothing left. While part of what
        is spent is only held by calls of the last `live_for` seconds (reviewers that may be
        running, on any server), `wait(WAIT_POLL_S)` is called and, while it answers True, the
        hold is tried again once it returns: a running review's slice is not money spent."""
        if self.max_usd is None:
            return None
        while True:
            start, end = day_window(store.now())
            spend_id, usd, spent = hold_within(
                store, row, cap=self.max_usd, start=start, end=end, slots=slots
            )
            if spend_id is not None:
                return DayHold(spend_id, usd)
            live = wait is not None and held_between(store, store.now() - live_for, end) > 0
            if not live or wait is None or not wait(WAIT_POLL_S):
                raise day_budget_exhausted(self.max_usd, spent, end, store.now())

    def stopped_at(self, store: Store, slice_usd: float) -> QualityGateError:
        """`quality_gate.day_budget_exhausted` for a reviewer that stopped at its slice of the
        day (`--max-budget-usd`) before it gave a verdict."""
        assert self.max_usd is not None  # a slice of the day was held
        start, end = day_window(store.now())
        return day_budget_exhausted(
            self.max_usd, spent_today(store, start, end), end, store.now(), stopped_at=slice_usd
        )

    def settle(self, store: Store, hold: DayHold, usd: float, tokens: int) -> None:
        settle(store, hold.spend_id, usd, tokens)

    def release(self, store: Store, hold: DayHold) -> None:
        release(store, hold.spend_id)

    def keep_whole(self, store: Store, hold: DayHold) -> None:
        keep_whole(store, hold.spend_id)


def resets_text(end: float, now: float) -> str:
    """`2026-11-28T00:00:00Z (in 3 h 12 min)`."""
    when = datetime.fromtimestamp(end, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    minutes = max(0, math.ceil((end - now) / 60))
    return f"{when} (in {minutes // 60} h {minutes % 60} min)"


def day_budget_exhausted(
    cap: float, spent: float, end: float, now: float, *, stopped_at: float | None = None
) -> QualityGateError:
    """The stop of a spent day: which cap, what was spent, when it resets; `stopped_at`: the
    slice a reviewer that was started stopped at (None: no reviewer was started)."""
    how = (
        "No reviewer was started"
        if stopped_at is None
        else f"The reviewer stopped at its slice of what the day had left ({stopped_at:.4f} USD) "
        "before it gave a verdict"
    )
    return QualityGateError(
        f"the project's review budget for the day (quality_gate.max_budget_usd_per_day: "
        f"{cap:g} USD) is spent: {spent:.4f} USD spent or held today (UTC) by the reviews of "
        f"every server on this store. It resets at {resets_text(end, now)}. {how} and this "
        "was not counted as an attempt; your outputs and notes are recorded. The run continues "
        "with self-review, unless a human raises the cap in .deepwork/config.yml.",
        code=ErrorCode.QUALITY_GATE_DAY_BUDGET_EXHAUSTED,
    )
