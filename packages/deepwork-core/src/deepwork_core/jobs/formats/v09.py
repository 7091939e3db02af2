"""The 0.9 `job.yml` format: its file shape, its rules, and its translation into the job model.

A 0.9 file is the job model (`deepwork_core.jobs.model`) as written, with two differences, both
kept here: a step may still give the 0.9.x keys `stop_hooks` (read as `hooks.after_agent`),
`exposed` and `hidden` (no effect) — `StepV09` and `JobFileV09` accept them and `to_definition()`
folds them away — and it may not use the keys listed in `V010_ONLY`, must give the keys listed in
`REQUIRED_IN_V09`, and declares outputs of type `file` or `files` only. `check_v09_subset()`
reports each violation with its key path; `schema_v09()` narrows the JSON Schema the same way
(for the shipped schema). See docs/job-format.md.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import BaseModel, Field, StrictBool, ValidationError

from deepwork_core.base.yamlio import KeyPath
from deepwork_core.jobs.errors import JobCode
from deepwork_core.jobs.model import JobDefinition, Step, Workflow
from deepwork_core.jobs.steps.parts import (
    HookAction,
    InputType,
    OutputSpec,
    OutputType,
    Review,
    StepHooks,
    StepInput,
)

#: The step keys 0.9.x files may still give; the job model has none of them.
LEGACY_STEP_KEYS = ("stop_hooks", "exposed", "hidden")


class StepV09(Step):
    """A step as a 0.9 file writes it: a `Step` plus the keys kept for 0.9.x files."""

    stop_hooks: list[HookAction] = Field(
        default_factory=list, description="Deprecated: read as hooks.after_agent."
    )
    exposed: StrictBool = False
    hidden: StrictBool = False

    def hook_action_keys(self) -> list[tuple[HookAction, KeyPath]]:
        """The actions of `hooks`, then those of `stop_hooks`, each with its key in the file."""
        keys = super().hook_action_keys()
        keys.extend((action, ("stop_hooks", i)) for i, action in enumerate(self.stop_hooks))
        return keys


class JobFileV09(JobDefinition):
    """The content of one `job.yml` in the 0.9 format."""

    steps: list[StepV09] = Field(min_length=1)  # type: ignore[assignment]


def to_definition(job: JobFileV09) -> JobDefinition:
    """The job model of a valid 0.9 file: `stop_hooks` joins `hooks.after_agent`, the rest stays."""
    values = {name: getattr(job, name) for name in JobDefinition.model_fields}
    values["steps"] = [to_step(step) for step in job.steps]
    return JobDefinition.from_checked(values, job.model_fields_set)


def to_step(step: StepV09) -> Step:
    values = {name: getattr(step, name) for name in Step.model_fields}
    given = step.model_fields_set - set(LEGACY_STEP_KEYS)
    if step.stop_hooks:
        hooks = step.hooks or StepHooks()
        after_agent = [*hooks.after_agent, *step.stop_hooks]
        values["hooks"] = hooks.model_copy(update={"after_agent": after_agent})
        given |= {"hooks"}
    return Step.from_checked(values, given)


def file_steps(data: object) -> list[StepV09] | None:
    """The steps of a 0.9 file as the file writes them (None when it is no longer valid)."""
    try:
        return JobFileV09.model_validate(data).steps
    except ValidationError:
        return None


def legacy_notes(data: object) -> list[str]:
    """The conversion warnings for `exposed`/`hidden` set in a 0.9 file (the model has neither)."""
    return [
        f"step {step.id!r}: {key!r} has no place in the 0.10 format"
        for step in file_steps(data) or []
        for key in ("exposed", "hidden")
        if getattr(step, key)
    ]


#: Model -> keys a 0.9-format file may not use (only the 0.10 format can express them).
V010_ONLY: dict[type[BaseModel], frozenset[str]] = {
    JobFileV09: frozenset(),
    StepV09: frozenset({"instructions", "sub_workflow", "process_requirements"}),
    Workflow: frozenset(
        {"agent", "common_job_info_provided_to_all_steps_at_runtime", "post_workflow_instructions"}
    ),
    OutputSpec: frozenset({"json_schema"}),
    StepInput: frozenset({"required", "type"}),
    Review: frozenset({"strategy", "agent", "additional_context"}),
}
#: Model -> keys the model leaves optional (for the 0.10 format) that a 0.9-format file needs.
REQUIRED_IN_V09: dict[type[BaseModel], tuple[str, ...]] = {
    JobFileV09: ("version", "common_job_info_provided_to_all_steps_at_runtime"),
    StepV09: ("instructions_file",),
    Review: ("quality_criteria",),
}
OUTPUT_TYPES_V09 = (OutputType.FILE.value, OutputType.FILES.value)
V010_OUTPUT_TYPES = (OutputType.FILE_PATH.value, OutputType.STRING.value)


def model_at(path: KeyPath) -> type[BaseModel] | None:
    """The model that validates the object at `path` of a 0.9-format file."""
    match path:
        case ():
            return JobFileV09
        case ("steps", int()):
            return StepV09
        case ("workflows", int()):
            return Workflow
        case ("steps", int(), "outputs", str()):
            return OutputSpec
        case ("steps", int(), "inputs", int()):
            return StepInput
        case ("steps", int(), "reviews", int()):
            return Review
        case ("steps", int(), "hooks"):
            return StepHooks
        case ("steps", int(), "hooks", str(), int()) | ("steps", int(), "stop_hooks", int()):
            return HookAction
    return None


def allowed_keys_v09(path: KeyPath) -> Sequence[str] | None:
    """The keys a 0.9-format file may write at `path`."""
    model = model_at(path)
    if model is None:
        return None
    excluded = V010_ONLY.get(model, frozenset())
    keys = [key for key in model.model_fields if key not in excluded]
    if model is StepV09:  # the 0.9.x keys, where 0.9.x listed them: after `hooks`
        keys = [key for key in keys if key not in LEGACY_STEP_KEYS]
        after = keys.index("hooks") + 1
        keys[after:after] = LEGACY_STEP_KEYS
    return keys


def check_v09_subset(data: dict[str, Any]) -> Iterator[tuple[JobCode, str, KeyPath]]:
    """(code, message, key path) for each use of a 0.10-format key or a missing 0.9 key."""
    for path, node in _objects(data):
        model = model_at(path)
        if model is None:
            continue
        for key in sorted(V010_ONLY.get(model, frozenset()) & node.keys()):
            hint = ", ".join(allowed_keys_v09(path) or [])
            yield (
                JobCode.JOB_UNKNOWN_KEY,
                f"unknown key {key!r} (allowed here: {hint}); {key!r} belongs to the 0.10 format "
                "(see docs/job-format.md)",
                (*path, key),
            )
        for key in REQUIRED_IN_V09.get(model, ()):
            if key not in node:
                yield JobCode.JOB_MISSING_KEY, "required key is missing", (*path, key)
        if model is OutputSpec and node.get("type") in V010_OUTPUT_TYPES:
            yield (
                JobCode.JOB_INVALID_VALUE,
                f"output type {node['type']!r} belongs to the 0.10 format; a job in the "
                "0.9 format declares 'file' or 'files'",
                (*path, "type"),
            )


def _objects(data: dict[str, Any]) -> Iterator[tuple[KeyPath, dict[str, Any]]]:
    """Every mapping of a 0.9-format file that V010_ONLY or REQUIRED_IN_V09 concerns."""
    yield (), data
    for index, step in _items(data.get("steps")):
        yield ("steps", index), step
        outputs = step.get("outputs")
        for name, output in outputs.items() if isinstance(outputs, dict) else []:
            if isinstance(output, dict):
                yield ("steps", index, "outputs", name), output
        for key in ("inputs", "reviews"):
            for position, item in _items(step.get(key)):
                yield ("steps", index, key, position), item
    for index, workflow in _items(data.get("workflows")):
        yield ("workflows", index), workflow


def _items(value: object) -> Iterator[tuple[int, dict[str, Any]]]:
    for index, item in enumerate(value if isinstance(value, list) else []):
        if isinstance(item, dict):
            yield index, item


_DEF_NAMES = {model.__name__: model for model in V010_ONLY}


def schema_v09(definitions: dict[str, Any]) -> None:
    """Narrow the model's schema definitions (in place) to what a 0.9-format file may say."""
    for name, model in _DEF_NAMES.items():
        node = definitions.get(name)
        if node is None:
            continue
        properties = node.get("properties", {})
        for key in V010_ONLY[model]:
            properties.pop(key, None)
        for key in REQUIRED_IN_V09.get(model, ()):
            options = properties.get(key, {}).pop("anyOf", None)
            if options is not None:  # optional in the model: `X or null` becomes `X`
                properties[key].update(next(o for o in options if o != {"type": "null"}))
                properties[key].pop("default", None)
        required = [*node.get("required", []), *REQUIRED_IN_V09.get(model, ())]
        if required:
            node["required"] = sorted(set(required), key=required.index)
    output = definitions.get(OutputSpec.__name__, {}).get("properties", {})
    if "type" in output:
        output["type"] = {"enum": list(OUTPUT_TYPES_V09), "type": "string"}
    definitions.pop(OutputType.__name__, None)
    definitions.pop(InputType.__name__, None)
