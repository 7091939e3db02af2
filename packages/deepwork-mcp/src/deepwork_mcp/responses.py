"""Tool responses (seed 000, JOBS-REQ-001) as pydantic models, validated from core results.

Returning these models gives clients an `outputSchema` and `structuredContent`. Field names are the
wire contract: fields may be added, never renamed or removed. Each response is validated straight
from the engine's result object (`from_attributes`): `FinishedStepResponse.model_validate(result)`.
Where a wire name differs from the core attribute, the field's `validation_alias` names the
attribute; serialisation always uses the wire name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from deepwork_core import FinishStatus, OutputValue
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(from_attributes=True, populate_by_name=True)


def _text(value: object) -> object:
    """Paths and string enums as the plain strings the wire carries."""
    return str(value) if isinstance(value, (Path, str)) else value


#: A path or string enum member, sent as a plain string.
_Text = Annotated[str, BeforeValidator(_text)]


class WorkflowInfo(_Model):
    name: str
    summary: str


class JobInfo(_Model):
    name: str
    summary: str
    description: str | None
    workflows: list[WorkflowInfo]


class JobLoadErrorInfo(_Model):
    job_name: str
    job_dir: _Text
    error: str


class GetWorkflowsResponse(_Model):
    jobs: list[JobInfo]
    errors: list[JobLoadErrorInfo]


class ExpectedOutput(_Model):
    name: str
    type: Annotated[Literal["file", "files"], BeforeValidator(_text)]
    description: str
    required: bool
    syntax_for_finished_step_tool: str


class ReviewInfo(_Model):
    run_each: str
    quality_criteria: dict[str, str]
    additional_review_guidance: str | None = None


def _reviews(value: object) -> object:
    """A brief's step reviews as the reviews they wrap."""
    if isinstance(value, (list, tuple)):
        return [getattr(item, "review", item) for item in value]
    return value


class StepInputInfo(_Model):
    """A user parameter (no paths) or files an earlier step submitted."""

    step_id: str
    name: str
    description: str | None = None
    from_step: str | None = None
    paths: list[str]


class ActiveStepInfo(_Model):
    session_id: str
    step_id: str
    job_dir: _Text
    step_expected_outputs: list[ExpectedOutput] = Field(validation_alias="expected_outputs")
    step_reviews: Annotated[list[ReviewInfo], BeforeValidator(_reviews)] = Field(
        validation_alias="reviews"
    )
    step_instructions: str = Field(validation_alias="instructions")
    common_job_info: str
    step_inputs: list[StepInputInfo] = Field(validation_alias="inputs")


class StackEntry(_Model):
    workflow: str
    step: str
    session_id: str


class StartWorkflowResponse(_Model):
    begin_step: ActiveStepInfo = Field(validation_alias="brief")
    stack: list[StackEntry]
    branch_name: str | None
    branch_note: str | None = None


class QualityCriteriaResult(_Model):
    criterion: str
    passed: bool
    feedback: str | None


class ReviewResult(_Model):
    review_run_each: str
    target_file: str | None
    passed: bool
    feedback: str
    criteria_results: list[QualityCriteriaResult]


class FinishedStepResponse(_Model):
    status: FinishStatus
    feedback: str | None = None
    #: Set with `needs_work` only.
    failed_reviews: list[ReviewResult] | None = None
    begin_step: ActiveStepInfo | None = Field(default=None, validation_alias="brief")
    summary: str | None = None
    all_outputs: dict[str, OutputValue] | None = None
    stack: list[StackEntry]


class AbortWorkflowResponse(_Model):
    aborted_workflow: str
    aborted_step: str
    explanation: str
    stack: list[StackEntry]
    resumed_workflow: str | None
    resumed_step: str | None
