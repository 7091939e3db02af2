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

from collections.abc import Collection, Iterable, Mapping
from enum import StrEnum
from functools import cached_property
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Self, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StringConstraints,
    model_validator,
)
from pydantic_core import PydanticCustomError

from deepwork_core.base.config import ReviewDepth
from deepwork_core.base.identifiers import NAME_PATTERN
from deepwork_core.jobs.approval_policy import Approval
from deepwork_core.jobs.fan_out_keys import (
    AllowPartial,
    ForEach,
    Isolation,
    IsolationKey,
    MaxParallel,
    check_fan_out_fields,
)

if TYPE_CHECKING:
    from deepwork_core.base.yamlio import KeyPath

Name = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]
NonEmptyText = Annotated[str, StringConstraints(min_length=1)]
Summary = Annotated[str, StringConstraints(min_length=1, max_length=200)]
SemVer = Annotated[str, StringConstraints(pattern=r"^\d+\.\d+\.\d+$")]


#: One shared `__pydantic_fields_set__` per distinct set of given fields (see `_Strict`).
_FIELDS_SETS: dict[frozenset[str], set[str]] = {}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @classmethod
    def from_checked(cls, values: dict[str, Any], given: Iterable[str]) -> Self:
        """An instance of values that models have already validated; nothing is checked again.

        `given` names the fields the file gave (`model_fields_set`). Readers use it to build the
        one job model out of a format's own models (docs/job-format.md).
        """
        key = frozenset(given)
        fields_set = _FIELDS_SETS.setdefault(key, set(key))
        return cast("Self", cls.model_construct(_fields_set=fields_set, **values))

    @model_validator(mode="after")
    def _share_fields_set(self) -> Self:
        """Share the set of given field names between instances that gave the same fields.

        Pydantic gives each instance a set of its own: with a thousand jobs that was 18,000 sets
        and a third of the models' memory, for about ten distinct values. Frozen models never
        change their set, and pydantic copies it before `model_copy(update=...)` changes it.
        """
        given = self.__pydantic_fields_set__
        object.__setattr__(
            self, "__pydantic_fields_set__", _FIELDS_SETS.setdefault(frozenset(given), given)
        )
        return self


class OutputType(StrEnum):
    FILE = "file"
    FILES = "files"
    #: 0.10 format: one path or a list of paths.
    FILE_PATH = "file_path"
    #: 0.10 format: inline text, not a file.
    STRING = "string"

    @property
    def is_file(self) -> bool:
        return self is not OutputType.STRING


class OutputSpec(_Strict):
    """One declared output of a step."""

    type: OutputType
    description: NonEmptyText
    required: StrictBool
    doc_spec: NonEmptyText | None = Field(
        default=None,
        description="Project-relative path of a doc spec whose criteria apply to this output.",
    )
    json_schema: dict[str, Any] | None = Field(
        default=None,
        description="A JSON Schema each submitted file must satisfy (parsed as JSON).",
    )


class InputType(StrEnum):
    """What a start parameter's value is (0.10 format; 0.9-format parameters are text)."""

    STRING = "string"
    FILE_PATH = "file_path"


class StepInput(_Strict):
    """A user parameter `{name, description}` or a file from an earlier step `{file, from_step}`."""

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {
                    "required": ["name", "description"],
                    "not": {"anyOf": [{"required": ["file"]}, {"required": ["from_step"]}]},
                },
                {
                    "required": ["file", "from_step"],
                    "not": {"anyOf": [{"required": ["name"]}, {"required": ["description"]}]},
                },
            ]
        }
    )

    name: NonEmptyText | None = None
    description: NonEmptyText | None = None
    file: NonEmptyText | None = None
    from_step: Name | None = None
    required: StrictBool = Field(
        default=True, description="False when the step can start without this input."
    )
    type: InputType | None = Field(
        default=None, description="Of a start parameter: inline text, or a project file path."
    )

    @model_validator(mode="after")
    def _one_shape(self) -> Self:
        user = self.name is not None or self.description is not None
        from_file = self.file is not None or self.from_step is not None
        if user == from_file:
            raise PydanticCustomError(
                "input_shape",
                "an input is either {name, description} or {file, from_step}, not both or neither",
            )
        if user and (self.name is None or self.description is None):
            raise PydanticCustomError(
                "input_shape", "a user-parameter input needs both 'name' and 'description'"
            )
        if from_file and (self.file is None or self.from_step is None):
            raise PydanticCustomError(
                "input_shape", "a file input needs both 'file' and 'from_step'"
            )
        return self

    @property
    def is_file(self) -> bool:
        return self.file is not None


class HookAction(_Strict):
    """Exactly one of `prompt` (inline text), `prompt_file` or `script` (job-relative paths)."""

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {"required": ["prompt"]},
                {"required": ["prompt_file"]},
                {"required": ["script"]},
            ]
        }
    )

    prompt: NonEmptyText | None = None
    prompt_file: NonEmptyText | None = None
    script: NonEmptyText | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        given = [k for k in ("prompt", "prompt_file", "script") if getattr(self, k) is not None]
        if len(given) != 1:
            raise PydanticCustomError(
                "hook_action_shape",
                "a hook action needs exactly one of 'prompt', 'prompt_file' or 'script' "
                "(got {got})",
                {"got": ", ".join(given) or "none"},
            )
        return self


HOOK_EVENTS = ("after_agent", "before_tool", "before_prompt")


class StepHooks(_Strict):
    after_agent: list[HookAction] = Field(default_factory=list)
    before_tool: list[HookAction] = Field(default_factory=list)
    before_prompt: list[HookAction] = Field(default_factory=list)


class ReviewStrategy(StrEnum):
    """How a review of one output groups its files (0.10 format)."""

    INDIVIDUAL = "individual"
    MATCHES_TOGETHER = "matches_together"


class ReviewContext(_Strict):
    """Extra context a 0.10-format review asks for."""

    all_changed_filenames: StrictBool = False
    unchanged_matching_files: StrictBool = False


class Review(_Strict):
    """A quality review of a step's outputs.

    A review from a 0.10-format job has no criteria: its free-text instructions are the
    `additional_review_guidance`, and `strategy` says whether the files of a multi-file output are
    reviewed one by one or together.
    """

    run_each: NonEmptyText = Field(
        description="'step' to review all outputs together, or the name of one of the outputs."
    )
    quality_criteria: dict[NonEmptyText, NonEmptyText] = Field(default_factory=dict, min_length=1)
    additional_review_guidance: str | None = None
    strategy: ReviewStrategy | None = None
    agent: dict[NonEmptyText, NonEmptyText] | None = Field(
        default=None, description="Platform name -> reviewer agent persona."
    )
    additional_context: ReviewContext | None = None
    depth: ReviewDepth | None = Field(
        default=None,
        description="light, standard or thorough; default: quality_gate.review_depth.",
    )


class SubWorkflowRef(_Strict):
    """A step that runs another workflow (of this job, or of `workflow_job`) nested."""

    workflow_name: Name
    workflow_job: Name | None = None


def check_evidence_fields(
    may_change: list[str], approval: Approval | None, outputs: Collection[str]
) -> None:
    """Raise the validation error of a bad `may_change` glob or `approval.show` name.

    `StepRules` calls it for the step of either format, so both report `job.invalid_may_change`
    and `job.invalid_approval` the same way (docs/evidence.md).
    """
    for pattern in may_change:
        if pattern.startswith("/") or ".." in pattern.split("/"):
            raise PydanticCustomError(
                "may_change_glob",
                "may_change glob {pattern!r} must be relative to the project, without '..'",
                {"pattern": pattern},
            )
    unknown = [name for name in (approval.show if approval else []) if name not in outputs]
    if unknown:
        raise PydanticCustomError(
            "approval_show",
            "approval.show names {names}, which are not outputs of the step",
            {"names": ", ".join(unknown)},
        )


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
    scope_guard: ScopeGuard = Field(
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
