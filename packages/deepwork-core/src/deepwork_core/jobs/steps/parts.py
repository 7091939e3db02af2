"""The parts a job's steps are made of (docs/job-format.md): the strict base every model of a job
stands on, with the constrained text types, and a step's outputs, inputs, hooks, reviews,
nested workflow and approval. `deepwork_core.jobs.model` builds the step, the workflow and the
job out of them; both file formats read into them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from enum import StrEnum
from typing import Annotated, Any, Self, cast

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
from deepwork_core.jobs.steps.approval import Approval

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
    Each error's `at` (in its context) is the key inside the step it is about, so the report
    names that line and the salvage of the step leaves out only that key.
    """
    for position, pattern in enumerate(may_change):
        if pattern.startswith("/") or ".." in pattern.split("/"):
            raise PydanticCustomError(
                "may_change_glob",
                "may_change glob {pattern} must be relative to the project, without '..'",
                {"pattern": repr(pattern), "at": f"may_change.{position}"},
            )
    unknown = [name for name in (approval.show if approval else []) if name not in outputs]
    if unknown:
        raise PydanticCustomError(
            "approval_show",
            "approval.show names {names}, which are not outputs of the step",
            {"names": ", ".join(unknown), "at": "approval.show"},
        )
