"""The 0.9 `job.yml` format: the job model minus what only the 0.10 format can say.

The job model (`deepwork_core.jobs.model`) carries both formats. A 0.9-format file may not use the
keys listed in `V010_ONLY`, must give the keys listed in `REQUIRED_IN_V09`, and declares outputs
of type `file` or `files` only. `check_v09_subset()` reports each violation with its key path;
`schema_v09()` is the model's JSON Schema narrowed the same way (for the shipped schema).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import BaseModel

from deepwork_core.base.yamlio import KeyPath
from deepwork_core.jobs.model import (
    HookAction,
    InputType,
    JobDefinition,
    OutputSpec,
    OutputType,
    Review,
    Step,
    StepHooks,
    StepInput,
    Workflow,
)

#: Model -> keys a 0.9-format file may not use (only the 0.10 format can express them).
V010_ONLY: dict[type[BaseModel], frozenset[str]] = {
    JobDefinition: frozenset(),
    Step: frozenset({"instructions", "sub_workflow", "process_requirements"}),
    Workflow: frozenset(
        {"agent", "common_job_info_provided_to_all_steps_at_runtime", "post_workflow_instructions"}
    ),
    OutputSpec: frozenset({"json_schema"}),
    StepInput: frozenset({"required", "type"}),
    Review: frozenset({"strategy", "agent", "additional_context"}),
}
#: Model -> keys the model leaves optional (for the 0.10 format) that a 0.9-format file needs.
REQUIRED_IN_V09: dict[type[BaseModel], tuple[str, ...]] = {
    JobDefinition: ("version", "common_job_info_provided_to_all_steps_at_runtime"),
    Step: ("instructions_file",),
    Review: ("quality_criteria",),
}
OUTPUT_TYPES_V09 = (OutputType.FILE.value, OutputType.FILES.value)
V010_OUTPUT_TYPES = (OutputType.FILE_PATH.value, OutputType.STRING.value)


def model_at(path: KeyPath) -> type[BaseModel] | None:
    """The model that validates the object at `path` of a 0.9-format file."""
    match path:
        case ():
            return JobDefinition
        case ("steps", int()):
            return Step
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


def allowed_keys(path: KeyPath) -> Sequence[str] | None:
    """The keys a 0.9-format file may write at `path`."""
    model = model_at(path)
    if model is None:
        return None
    excluded = V010_ONLY.get(model, frozenset())
    return [key for key in model.model_fields if key not in excluded]


def check_v09_subset(data: dict[str, Any]) -> Iterator[tuple[str, str, KeyPath]]:
    """(code, message, key path) for each use of a 0.10-format key or a missing 0.9 key."""
    for path, node in _objects(data):
        model = model_at(path)
        if model is None:
            continue
        for key in sorted(V010_ONLY.get(model, frozenset()) & node.keys()):
            hint = ", ".join(allowed_keys(path) or [])
            yield (
                "job.unknown_key",
                f"unknown key {key!r} (allowed here: {hint}); {key!r} belongs to the 0.10 format "
                "(see docs/job-format.md)",
                (*path, key),
            )
        for key in REQUIRED_IN_V09.get(model, ()):
            if key not in node:
                yield "job.missing_key", "required key is missing", (*path, key)
        if model is OutputSpec and node.get("type") in V010_OUTPUT_TYPES:
            yield (
                "job.invalid_value",
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
