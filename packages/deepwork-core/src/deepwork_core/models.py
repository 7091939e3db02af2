"""The job model: the one definition of `job.yml` (docs/job-format.md).

These pydantic models are the source of truth. The JSON Schema shipped in
`deepwork_core/schemas/job.schema.json` is generated from them (`job_json_schema()`), and a test
fails when the shipped file drifts. Every object level rejects unknown keys. Cross-reference
checks (dependencies, workflow order, inputs …) live in `deepwork_core.parser`.
"""

from __future__ import annotations

from enum import StrEnum
from functools import cached_property
from typing import Annotated, Any, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StringConstraints,
    model_validator,
)
from pydantic_core import PydanticCustomError

from deepwork_core.identifiers import NAME_PATTERN

Name = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]
NonEmptyText = Annotated[str, StringConstraints(min_length=1)]
Summary = Annotated[str, StringConstraints(min_length=1, max_length=200)]
SemVer = Annotated[str, StringConstraints(pattern=r"^\d+\.\d+\.\d+$")]


#: One shared `__pydantic_fields_set__` per distinct set of given fields (see `_Strict`).
_FIELDS_SETS: dict[frozenset[str], set[str]] = {}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

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


class OutputSpec(_Strict):
    """One declared output of a step."""

    type: OutputType
    description: NonEmptyText
    required: StrictBool
    doc_spec: NonEmptyText | None = Field(
        default=None,
        description="Project-relative path of a doc spec whose criteria apply to this output.",
    )


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


class StepHooks(_Strict):
    after_agent: list[HookAction] = Field(default_factory=list)
    before_tool: list[HookAction] = Field(default_factory=list)
    before_prompt: list[HookAction] = Field(default_factory=list)


class Review(_Strict):
    """A quality review of a step's outputs."""

    run_each: NonEmptyText = Field(
        description="'step' to review all outputs together, or the name of one of the outputs."
    )
    quality_criteria: dict[NonEmptyText, NonEmptyText] = Field(min_length=1)
    additional_review_guidance: str | None = None


class Step(_Strict):
    id: Name
    name: NonEmptyText
    description: NonEmptyText
    instructions_file: NonEmptyText
    inputs: list[StepInput] = Field(default_factory=list)
    outputs: dict[NonEmptyText, OutputSpec]
    dependencies: list[Name] = Field(default_factory=list)
    reviews: list[Review]
    hooks: StepHooks | None = None
    stop_hooks: list[HookAction] = Field(
        default_factory=list, description="Deprecated: read as hooks.after_agent."
    )
    exposed: StrictBool = False
    hidden: StrictBool = False
    agent: NonEmptyText | None = None

    def hook_actions(self, event: str) -> list[HookAction]:
        """The actions for `after_agent`, `before_tool` or `before_prompt` (stop_hooks included)."""
        actions = list(getattr(self.hooks, event, None) or [])
        if event == "after_agent":
            actions.extend(self.stop_hooks)
        return actions

    @property
    def file_inputs(self) -> list[StepInput]:
        return [item for item in self.inputs if item.is_file]


WorkflowEntry = Name | Annotated[list[Name], Field(min_length=1)]


class Workflow(_Strict):
    name: Name
    summary: Summary
    steps: list[WorkflowEntry] = Field(min_length=1)

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
    version: SemVer
    summary: Summary
    description: str | None = None
    common_job_info_provided_to_all_steps_at_runtime: NonEmptyText
    workflows: list[Workflow] = Field(default_factory=list)
    steps: list[Step] = Field(min_length=1)

    @cached_property
    def steps_by_id(self) -> dict[str, Step]:
        return {step.id: step for step in self.steps}

    @cached_property
    def workflows_by_name(self) -> dict[str, Workflow]:
        return {workflow.name: workflow for workflow in self.workflows}

    def step(self, step_id: str) -> Step:
        return self.steps_by_id[step_id]


def job_json_schema() -> dict[str, Any]:
    """The JSON Schema of `job.yml`, generated from the models above."""
    schema = JobDefinition.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://deepwork.dev/schemas/job.schema.json"
    schema["title"] = "DeepWork job definition (job.yml)"
    return schema
