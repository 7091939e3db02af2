"""Verdicts: who vouched for a checkpoint, and a reviewer's verdict on one review task.

`VerdictKind` is the one name for the kind of a verdict, wherever it is recorded: on each output's
evidence (docs/evidence.md) and on each entry of a session's quality-gate log
(docs/quality-gate.md).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Final

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer

#: The reason bound to a checkpoint accepted while the quality gate was off (`--no-quality-gate`,
#: `quality_gate.enabled: false`) although its steps declare reviews: every view says so.
GATE_OFF_REASON: Final = "not reviewed: quality gate off"


class VerdictKind(StrEnum):
    """Who vouched for a checkpoint's outputs, or what became of its review.

    Evidence records use the first four; the quality-gate log uses `REVIEWER` (which it spells
    `review`, for either outcome), `SELF_REVIEW`, `OVERRIDE`, `UNREVIEWED` (the gate was consulted
    but no review applied) and `ERROR`.
    """

    REVIEWER = "reviewer"  # the external reviewer gave a verdict (evidence: it passed)
    SELF_REVIEW = "self_review"  # review instructions were written for the agent
    OVERRIDE = "override"  # the agent skipped the gate, or acknowledged a change, with a reason
    #: No review ran: the step declares none, none applied to its outputs at the gate, or no
    #: gate is configured. Never a reviewer's pass.
    UNREVIEWED = "unreviewed"
    ERROR = "error"  # the reviewer could not give a verdict


#: The quality log's spelling of `VerdictKind.REVIEWER`, as every state file has it.
_LOGGED_REVIEW: Final = "review"


def _kind_from_log(value: object) -> object:
    return VerdictKind.REVIEWER if value == _LOGGED_REVIEW else value


def _kind_to_log(kind: VerdictKind) -> str:
    return _LOGGED_REVIEW if kind is VerdictKind.REVIEWER else kind.value


#: A `VerdictKind` as the quality-gate log stores it: `reviewer` is written `review`.
LoggedVerdictKind = Annotated[
    VerdictKind, BeforeValidator(_kind_from_log), PlainSerializer(_kind_to_log)
]


def unset(value: object) -> bool:
    """Whether an optional field is left out of a dump (`exclude_if`): it is None."""
    return value is None


class _Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CriterionVerdict(_Verdict):
    """The reviewer's answer on one criterion."""

    criterion: str
    passed: bool
    feedback: str | None = None


class ReusedFrom(_Verdict):
    """Where a reused verdict was judged: the session and step whose reviewer gave it, and when
    (docs/quality-gate.md, "Verdicts reused")."""

    session_id: str
    step_id: str
    judged_at: datetime

    @property
    def text(self) -> str:
        """`reused from <session>/<step>, <when>`, as every view says it."""
        when = self.judged_at.isoformat(timespec="seconds").replace("+00:00", "Z")
        return f"reused from {self.session_id}/{self.step_id}, {when}"


class ReviewVerdict(_Verdict):
    """The outcome of one review task (with the step it belongs to; docs/quality-gate.md)."""

    step_id: str
    review_run_each: str
    target_file: str | None = None
    passed: bool
    feedback: str
    criteria_results: list[CriterionVerdict] = Field(default_factory=list)
    #: Set when no reviewer ran: the verdict of the same brief over the same bytes, judged
    #: earlier (it cost nothing now).
    reused_from: ReusedFrom | None = Field(default=None, exclude_if=unset)
