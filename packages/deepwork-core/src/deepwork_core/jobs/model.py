"""The job model: one definition of a job, whichever `job.yml` format (docs/job-format.md).

Each format is a reader that translates a file into these models: the 0.9 format
(`deepwork_core.jobs.formats.v09`: its file shape is these models with the keys only the 0.10
format has taken out and the 0.9.x compatibility keys `stop_hooks`, `exposed`, `hidden` added)
and the 0.10 format (`deepwork_core.jobs.formats.v010_model`, read by
`deepwork_core.jobs.formats.v010`). The engine, the gate, hooks and listings see only these
models. Keys a step has in both formats are declared once here (`InstructionsFile`,
`ProcessRequirements`, `MayChange`) and checked once (`StepRules`). Every object level rejects
unknown keys; cross-reference checks live in `deepwork_core.jobs.checks`.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from functools import cached_property
from typing import TYPE_CHECKING, Annotated, ClassVar, Self

from pydantic import (
    BeforeValidator,
    Field,
    model_validator,
)
from pydantic_core import PydanticCustomError

from deepwork_core.base.config import off_as_written
from deepwork_core.jobs.steps.approval import Approval
from deepwork_core.jobs.steps.fan_out import (
    AllowPartial,
    ForEach,
    Isolation,
    IsolationKey,
    MaxParallel,
    check_fan_out_fields,
)
from deepwork_core.jobs.steps.parts import (
    HOOK_EVENTS,
    HookAction,
    Name,
    NonEmptyText,
    OutputSpec,
    Review,
    SemVer,
    StepHooks,
    StepInput,
    SubWorkflowRef,
    Summary,
    _Strict,
    check_evidence_fields,
)

if TYPE_CHECKING:
    from deepwork_core.base.yamlio import KeyPath

# The keys a step has in both formats, declared once: the domain `Step` and the 0.10 format's
# `WorkflowStep` (`deepwork_core.jobs.formats.v010_model`) both use these and `StepRules`.
InstructionsFile = Annotated[
    NonEmptyText | None,
    Field(description="A job-relative Markdown file with the step's instructions."),
]
ProcessRequirements = Annotated[
    Annotated[dict[NonEmptyText, NonEmptyText], Field(min_length=1)] | None,
    Field(description="Requirement name -> statement, checked against the agent's work summary."),
]
MayChange = Annotated[
    list[NonEmptyText],
    Field(
        default_factory=list,
        description="Project-relative globs of files the step may change besides its outputs.",
    ),
]
STEP_BODY_KEYS = ("instructions_file", "instructions", "sub_workflow")


class StepRules(_Strict):
    """The checks a step gets in both formats (docs/job-format.md, docs/evidence.md).

    Its subclasses declare the fields (with the types above); a step gives at most one body
    (exactly one where `BODY_REQUIRED`), and its `may_change` and `approval` are checked against
    its outputs.
    """

    BODY_REQUIRED: ClassVar[bool] = False

    if TYPE_CHECKING:
        instructions_file: str | None
        instructions: str | None
        sub_workflow: SubWorkflowRef | None
        outputs: Mapping[str, object]
        may_change: list[str]
        approval: Approval | None
        for_each: str | None
        max_parallel: int | None
        allow_partial: bool
        isolation: Isolation

    @model_validator(mode="after")
    def _fan_out_fields(self) -> Self:
        check_fan_out_fields(self.for_each, self.sub_workflow is not None, self)
        return self

    @model_validator(mode="after")
    def _evidence_fields(self) -> Self:
        check_evidence_fields(self.may_change, self.approval, self.outputs)
        return self

    @model_validator(mode="after")
    def _one_body(self) -> Self:
        given = [key for key in STEP_BODY_KEYS if getattr(self, key) is not None]
        if len(given) > 1 or (self.BODY_REQUIRED and not given):
            raise PydanticCustomError(
                "step_body_shape",
                "a step has exactly one of 'instructions_file', 'instructions' or "
                "'sub_workflow' (got {got})",
                {"got": ", ".join(given) or "none"},
            )
        return self


class ScopeGuard(StrEnum):
    """What the scope guard does with files a step changed without declaring them."""

    NOTE = "note"  # listed in the answer and the review payload
    STRICT = "strict"  # the checkpoint answers needs_work
    OFF = "off"  # not checked


#: A job's `scope_guard`, read as written: an unquoted `off` is the mode `off`, not YAML's false.
ScopeGuardSetting = Annotated[ScopeGuard, BeforeValidator(off_as_written)]


class Step(StepRules):
    """One step. Its work is given by exactly one of `instructions_file` (a job-relative file),
    `instructions` (inline) or `sub_workflow`; 0.9-format files always use `instructions_file`."""

    id: Name
    name: NonEmptyText
    description: NonEmptyText
    instructions_file: InstructionsFile = None
    instructions: NonEmptyText | None = None
    sub_workflow: SubWorkflowRef | None = None
    process_requirements: ProcessRequirements = None
    inputs: list[StepInput] = Field(default_factory=list)
    outputs: dict[NonEmptyText, OutputSpec]
    dependencies: list[Name] = Field(default_factory=list)
    reviews: list[Review]
    hooks: StepHooks | None = None
    agent: NonEmptyText | None = None
    may_change: MayChange
    approval: Approval | None = None
    for_each: ForEach = None
    max_parallel: MaxParallel
    allow_partial: AllowPartial
    isolation: IsolationKey

    def hook_actions(self, event: str) -> list[HookAction]:
        """The actions for `after_agent`, `before_tool` or `before_prompt`."""
        return list(getattr(self.hooks, event, None) or [])

    def hook_action_keys(self) -> list[tuple[HookAction, KeyPath]]:
        """Every hook action with its key path inside the step (for file checks and reports)."""
        return [
            (action, ("hooks", event, position))
            for event in HOOK_EVENTS
            for position, action in enumerate(self.hook_actions(event))
        ]

    @property
    def file_inputs(self) -> list[StepInput]:
        return [item for item in self.inputs if item.is_file]


WorkflowEntry = Name | Annotated[list[Name], Field(min_length=1)]


class Workflow(_Strict):
    name: Name
    summary: Summary
    steps: list[WorkflowEntry] = Field(min_length=1)
    agent: NonEmptyText | None = Field(
        default=None, description="The agent type the whole workflow is handed to."
    )
    common_job_info_provided_to_all_steps_at_runtime: NonEmptyText | None = Field(
        default=None, description="Replaces the job's common info for this workflow's steps."
    )
    post_workflow_instructions: NonEmptyText | None = Field(
        default=None, description="Told to the agent when the workflow completes."
    )

    @property
    def entries(self) -> list[tuple[str, ...]]:
        """Each entry as a tuple of step ids (a concurrent group has several)."""
        return [(entry,) if isinstance(entry, str) else tuple(entry) for entry in self.steps]

    @property
    def step_ids(self) -> list[str]:
        return [step_id for entry in self.entries for step_id in entry]


class JobDefinition(_Strict):
    """The content of one `job.yml`."""

    name: Name
    version: SemVer | None = None
    summary: Summary
    description: str | None = None
    common_job_info_provided_to_all_steps_at_runtime: NonEmptyText | None = None
    workflows: list[Workflow] = Field(default_factory=list)
    steps: list[Step] = Field(min_length=1)
    scope_guard: ScopeGuardSetting = Field(
        default=ScopeGuard.NOTE,
        description="Files a step changes that are neither outputs nor under its may_change: "
        "'note' lists them, 'strict' makes the checkpoint needs_work, 'off' skips the check.",
    )

    @cached_property
    def steps_by_id(self) -> dict[str, Step]:
        return {step.id: step for step in self.steps}

    @cached_property
    def workflows_by_name(self) -> dict[str, Workflow]:
        return {workflow.name: workflow for workflow in self.workflows}

    def step(self, step_id: str) -> Step:
        return self.steps_by_id[step_id]

    def common_info(self, workflow_name: str | None) -> str:
        """The common info the steps of `workflow_name` receive (the workflow's own, if set)."""
        workflow = self.workflows_by_name.get(workflow_name or "")
        if workflow is not None and workflow.common_job_info_provided_to_all_steps_at_runtime:
            return workflow.common_job_info_provided_to_all_steps_at_runtime
        return self.common_job_info_provided_to_all_steps_at_runtime or ""


def sub_workflow_instructions(job_name: str, step: Step) -> str:
    """What a step that delegates to another workflow tells the agent."""
    ref = step.sub_workflow
    if ref is None:
        return f"# {step.name}\n\n{step.description}\n"
    target_job = ref.workflow_job or job_name
    return (
        f"# {step.name}\n\n"
        f"This step runs the workflow `{ref.workflow_name}` of job `{target_job}`. Call "
        f"`start_workflow` with job_name `{target_job}` and workflow_name `{ref.workflow_name}`, "
        "work through it to the end, then call `finished_step` for this step.\n"
    )
