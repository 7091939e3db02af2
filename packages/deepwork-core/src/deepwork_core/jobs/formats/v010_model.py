"""The shape of a `job.yml` in the 0.10 format (DeepWork 0.10 to 0.14; docs/job-format.md).

A job declares `step_arguments` (named strings or file paths) and a mapping of workflows, each an
ordered list of steps whose `inputs` and `outputs` name those arguments. These models only check the
file's shape; `deepwork_core.jobs.formats.v010` checks cross-references and translates a valid file
into the one job model of `deepwork_core.jobs.model`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import Field, StrictBool, StringConstraints

from deepwork_core.base.config import ReviewDepth
from deepwork_core.jobs.model import (
    InstructionsFile,
    MayChange,
    ProcessRequirements,
    ScopeGuard,
    ScopeGuardSetting,
    StepRules,
)
from deepwork_core.jobs.steps.approval import Approval
from deepwork_core.jobs.steps.fan_out import (
    AllowPartial,
    ConcurrentGroup,
    ForEach,
    IsolationKey,
    MaxParallel,
)
from deepwork_core.jobs.steps.parts import (
    Name,
    NonEmptyText,
    ReviewContext,
    ReviewStrategy,
    SubWorkflowRef,
    Summary,
    _Strict,
)

ARGUMENT_PATTERN = r"^[a-zA-Z][a-zA-Z0-9_./-]*$"
ArgumentName = Annotated[str, StringConstraints(pattern=ARGUMENT_PATTERN)]


class ArgumentType(StrEnum):
    STRING = "string"
    FILE_PATH = "file_path"


class ReviewBlock(_Strict):
    """A review of an argument wherever a step produces it, or of one step's output."""

    strategy: ReviewStrategy
    instructions: NonEmptyText
    agent: dict[NonEmptyText, NonEmptyText] | None = None
    additional_context: ReviewContext | None = None
    depth: ReviewDepth | None = None


class StepArgument(_Strict):
    """A named piece of data steps read (`inputs`) and produce (`outputs`)."""

    name: ArgumentName
    description: NonEmptyText
    type: ArgumentType
    review: ReviewBlock | None = None
    json_schema: dict[str, Any] | None = None


class InputRef(_Strict):
    required: StrictBool = True


class OutputRef(_Strict):
    required: StrictBool = True
    review: ReviewBlock | None = None


class WorkflowStep(StepRules):
    """One step of a workflow: inline `instructions`, an `instructions_file` or a `sub_workflow`."""

    model_config = _Strict.model_config | {
        "json_schema_extra": {
            "oneOf": [
                {"required": ["instructions"]},
                {"required": ["instructions_file"]},
                {"required": ["sub_workflow"]},
            ]
        }
    }
    BODY_REQUIRED = True

    name: Name
    instructions: NonEmptyText | None = None
    instructions_file: InstructionsFile = None
    sub_workflow: SubWorkflowRef | None = None
    inputs: dict[ArgumentName, InputRef] = Field(default_factory=dict)
    outputs: dict[ArgumentName, OutputRef] = Field(default_factory=dict)
    process_requirements: ProcessRequirements = None
    may_change: MayChange
    approval: Approval | None = None
    for_each: ForEach = None
    max_parallel: MaxParallel
    allow_partial: AllowPartial
    isolation: IsolationKey
    concurrent_group: ConcurrentGroup


class WorkflowSpec(_Strict):
    summary: Summary
    agent: NonEmptyText | None = None
    common_job_info_provided_to_all_steps_at_runtime: NonEmptyText | None = None
    steps: list[WorkflowStep] = Field(min_length=1)
    post_workflow_instructions: str | None = None


class JobFileV010(_Strict):
    """The content of one `job.yml` in the 0.10 format."""

    name: Name
    summary: Summary
    step_arguments: list[StepArgument]
    workflows: dict[Name, WorkflowSpec] = Field(min_length=1)
    scope_guard: ScopeGuardSetting = Field(
        default=ScopeGuard.NOTE,
        description="Files a step changes that are neither outputs nor under its may_change: "
        "'note' lists them, 'strict' makes the checkpoint needs_work, 'off' skips the check.",
    )

    @property
    def arguments(self) -> dict[str, StepArgument]:
        """Arguments by name; the first declaration of a repeated name wins."""
        by_name: dict[str, StepArgument] = {}
        for argument in self.step_arguments:
            by_name.setdefault(argument.name, argument)
        return by_name


def is_v010_shape(data: object) -> bool:
    """True when `data` (a parsed job.yml) is written in the 0.10 format."""
    if not isinstance(data, dict):
        return False
    return "step_arguments" in data or isinstance(data.get("workflows"), dict)
