"""Values given to `start_workflow` for a workflow's start parameters (docs/job-format.md).

A start parameter is a step input no earlier step produces (`{name, description}` in the job
model). Each given value must name one of the workflow's parameters (`inputs.unknown`); a
`file_path` parameter takes a project file or a list of them (`inputs.file_not_found`,
`path.outside_project`), any other a string (`inputs.wrong_type`). The values reach every step
that declares the parameter, in `begin_step`'s `step_inputs`.

With `enforce_required` (jobs in the 0.10 format, the one format that declares `required` on
inputs), a required parameter left out, or given as blank text or no paths, is `inputs.missing`:
the error names each with its description so the agent can ask the user and start again.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import InputsError
from deepwork_core.base.identifiers import check_text, resolve_inside
from deepwork_core.jobs.model import JobDefinition, Workflow
from deepwork_core.jobs.steps.parts import InputType, StepInput
from deepwork_core.state.sessions import OutputValue


def start_parameters(definition: JobDefinition, workflow: Workflow) -> dict[str, StepInput]:
    """The workflow's start parameters by name (the first declaration of each)."""
    parameters: dict[str, StepInput] = {}
    for step_id in workflow.step_ids:
        for item in definition.step(step_id).inputs:
            if item.name is not None:
                parameters.setdefault(item.name, item)
    return parameters


def required_parameters(definition: JobDefinition, workflow: Workflow) -> dict[str, StepInput]:
    """The start parameters some step of the workflow requires (each first such declaration)."""
    required: dict[str, StepInput] = {}
    for step_id in workflow.step_ids:
        for item in definition.step(step_id).inputs:
            if item.name is not None and item.required:
                required.setdefault(item.name, item)
    return required


def check_start_inputs(
    project_root: Path,
    definition: JobDefinition,
    workflow: Workflow,
    inputs: Mapping[str, object] | None,
    *,
    enforce_required: bool = False,
) -> dict[str, OutputValue]:
    """The checked values of `inputs`; raises `InputsError` naming every problem."""
    if inputs is None:
        inputs = {}
    if not isinstance(inputs, Mapping):
        raise InputsError(
            "inputs must be an object: argument name -> value", code=ErrorCode.INPUTS_WRONG_TYPE
        )
    parameters = start_parameters(definition, workflow)
    unknown = sorted(str(name) for name in inputs if name not in parameters)
    if unknown:
        accepted = ", ".join(sorted(parameters)) or "none"
        raise InputsError(
            f"unknown input(s) {', '.join(unknown)} for workflow {workflow.name!r}; it accepts: "
            f"{accepted}",
            code=ErrorCode.INPUTS_UNKNOWN,
        )
    if enforce_required:
        _refuse_missing(required_parameters(definition, workflow), workflow, inputs)
    checked: dict[str, OutputValue] = {}
    for name, value in inputs.items():
        if parameters[name].type is InputType.FILE_PATH:
            checked[name] = _paths(project_root, name, value)
        elif isinstance(value, str):
            checked[name] = check_text(value, what=f"input {name!r}") or ""
        elif isinstance(value, list) and all(isinstance(item, str) for item in value):
            # A list of texts: the items a `for_each` step runs over (docs/fan-out.md).
            checked[name] = [check_text(item, what=f"input {name!r}") or "" for item in value]
        else:
            raise InputsError(
                f"input {name!r} must be a string or a list of strings",
                code=ErrorCode.INPUTS_WRONG_TYPE,
            )
    return checked


def _refuse_missing(
    required: Mapping[str, StepInput], workflow: Workflow, inputs: Mapping[str, object]
) -> None:
    """Raise `inputs.missing` naming each required parameter `inputs` lacks or leaves blank."""
    missing = [item for name, item in required.items() if _blank(inputs.get(name))]
    if not missing:
        return
    listed = "; ".join(f"{item.name} ({item.description})" for item in missing)
    raise InputsError(
        f"workflow {workflow.name!r} needs these start parameters, which were not given: "
        f"{listed}. Ask the user for each, then call start_workflow again with them in "
        "inputs (parameter name -> value).",
        code=ErrorCode.INPUTS_MISSING,
    )


def _blank(value: object) -> bool:
    """Not given: absent, blank text, or an empty list of paths."""
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    return isinstance(value, list) and not value


def _paths(root: Path, name: str, value: object) -> OutputValue:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        raise InputsError(
            f"input {name!r} is a file path: give a path or a list of paths",
            code=ErrorCode.INPUTS_WRONG_TYPE,
        )
    for item in items:
        resolved = resolve_inside(root, item, what=f"input {name!r}")  # path.outside_project
        if not resolved.is_file():
            raise InputsError(
                f"input {name!r}: no file at {item!r} (paths are relative to {root})",
                code=ErrorCode.INPUTS_FILE_NOT_FOUND,
            )
    return value if isinstance(value, str) else list(items)
