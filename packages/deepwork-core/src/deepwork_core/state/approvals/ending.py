"""How an approval request ended (docs/team.md, "How a request ends").

A request ends in exactly one `EndState`: approved, rejected, expired (its `expires_after`
passed with too few approvals), cancelled (the run was aborted or moved back) or failed (what
was approved is not what the step holds any more, the request is not the server's own, or a
newer request replaced it). The server stores the end, when and why, on the request's row as it
closes it, and logs an `approval_ended` event in the same transaction. An open request whose
time has passed reads as expired at read time, from its `expires_at`, before anyone tries a
decision or the server closes it (`read_end`); the server stores that end when it closes the
request (go_to_step, abort_workflow).
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from deepwork_core.state.approvals.policy import RequestPolicy, Standing


class EndState(StrEnum):
    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"
    CANCELLED = "cancelled"
    FAILED = "failed"


class RequestEnd(BaseModel):
    """How, when and why a request ended."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    state: EndState
    at: datetime
    why: str
    #: True when read from the open request's `expires_at`: the server has not closed it yet.
    computed: bool = False

    def text(self) -> str:
        """`expired at 2026-12-01T10:00:00+00:00: ...`, as every view shows an end."""
        return f"{self.state.value} at {self.at.astimezone(UTC).isoformat()}: {self.why}"


def expired_end(
    policy: RequestPolicy | None, standing: Standing, now: datetime
) -> RequestEnd | None:
    """The end of an open request whose `expires_at` passed at `now` before its decisions
    settled it (`standing`); None while it may still be decided."""
    if policy is None or policy.expires_at is None or not policy.expired(now):
        return None
    if standing.concluding is not None:
        return None
    return RequestEnd(
        state=EndState.EXPIRED,
        at=policy.expires_at,
        why=f"its time passed with {standing.text()}",
        computed=True,
    )


def read_end(
    stored: str | None,
    ended_at: float | None,
    why: str | None,
    policy: RequestPolicy | None,
    standing: Standing,
    now: datetime,
) -> RequestEnd | None:
    """A request's end as its row stores it (`stored`, None while open: then expired when its
    time passed); None while it waits."""
    if stored is not None:
        at = datetime.fromtimestamp(ended_at or 0.0, UTC)
        return RequestEnd(state=EndState(stored), at=at, why=why or "")
    return expired_end(policy, standing, now)
