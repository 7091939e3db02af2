"""A reviewer's verdict on one review task: produced by the quality gate, recorded in sessions."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CriterionVerdict(_Verdict):
    """The reviewer's answer on one criterion."""

    criterion: str
    passed: bool
    feedback: str | None = None


class ReviewVerdict(_Verdict):
    """The outcome of one review task (with the step it belongs to; docs/quality-gate.md)."""

    step_id: str
    review_run_each: str
    target_file: str | None = None
    passed: bool
    feedback: str
    criteria_results: list[CriterionVerdict] = Field(default_factory=list)
