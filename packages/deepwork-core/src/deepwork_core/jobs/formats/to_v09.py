"""Writing a job in the 0.9 format (its `job.yml` data and instruction files).

Exact where the formats say the same thing; inline instructions become `steps/<id>.md` files.
What the 0.9 format cannot say is named in a warning: workflow `agent` and
`post_workflow_instructions`, per-workflow common info (merged into the job's), optional inputs,
`string` outputs (become files), `file_path` outputs (become `file`, or `files` when reviewed one
file at a time), `json_schema`, review `agent`/`additional_context`, a `matches_together` review
of a multi-file output, `process_requirements` (become a review of the step's outputs) and
`sub_workflow` steps (become steps whose instructions say to start that workflow).
"""

from __future__ import annotations

import re
from typing import Any

from deepwork_core.jobs.formats.to_v010 import CRITERIA_HEADER, Notes, evidence_fields
from deepwork_core.jobs.model import JobDefinition, ScopeGuard, Step, sub_workflow_instructions
from deepwork_core.jobs.steps.parts import InputType, OutputSpec, OutputType, Review, ReviewStrategy

DEFAULT_VERSION = "1.0.0"
_CRITERION = re.compile(r"^- \*\*(?P<name>[^*]+)\*\*: (?P<text>.*)$")


def to_v09(
    definition: JobDefinition, existing_files: set[str]
) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """The 0.9-format `job.yml` data, new instruction files (job-relative path -> text), notes.

    `existing_files` are job-relative paths already taken in the job folder.
    """
    notes = Notes()
    files: dict[str, str] = {}
    data: dict[str, Any] = {
        "name": definition.name,
        "version": definition.version or DEFAULT_VERSION,
        "summary": definition.summary,
    }
    if definition.description:
        data["description"] = definition.description
    data["common_job_info_provided_to_all_steps_at_runtime"] = _common_info(definition, notes)
    data["workflows"] = [
        _workflow(definition, name, notes) for name in definition.workflows_by_name
    ]
    taken = set(existing_files)
    data["steps"] = [_step(definition, step, files, taken, notes) for step in definition.steps]
    if definition.scope_guard is not ScopeGuard.NOTE:
        data["scope_guard"] = definition.scope_guard.value
    return data, files, notes.items


def _common_info(definition: JobDefinition, notes: Notes) -> str:
    if definition.common_job_info_provided_to_all_steps_at_runtime:
        own = {w.common_job_info_provided_to_all_steps_at_runtime for w in definition.workflows}
        if own - {None}:
            notes.add("per-workflow common info is dropped; the job's own common info is kept")
        return definition.common_job_info_provided_to_all_steps_at_runtime
    texts = {w.name: definition.common_info(w.name) for w in definition.workflows}
    distinct = {text for text in texts.values() if text}
    if len(distinct) <= 1:
        return next(iter(distinct), definition.summary)
    notes.add("the workflows' different common info is merged into one, a section per workflow")
    return "\n\n".join(f"## Workflow {name}\n\n{text}" for name, text in texts.items() if text)


def _workflow(definition: JobDefinition, name: str, notes: Notes) -> dict[str, Any]:
    workflow = definition.workflows_by_name[name]
    if workflow.agent:
        notes.add(
            f"workflow {name!r}: its agent ({workflow.agent}) has no place in 0.9-format jobs"
        )
    if workflow.post_workflow_instructions:
        notes.add(f"workflow {name!r}: post_workflow_instructions have no place in 0.9-format jobs")
    steps = [entry[0] if len(entry) == 1 else list(entry) for entry in workflow.entries]
    return {"name": name, "summary": workflow.summary, "steps": steps}


def _step(
    definition: JobDefinition, step: Step, files: dict[str, str], taken: set[str], notes: Notes
) -> dict[str, Any]:
    where = f"step {step.id!r}"
    data: dict[str, Any] = {"id": step.id, "name": step.name, "description": step.description}
    if step.instructions_file is not None:
        data["instructions_file"] = step.instructions_file
    else:
        if step.sub_workflow is not None:
            notes.add(f"{where}: its sub_workflow becomes instructions to start that workflow")
        text = step.instructions or sub_workflow_instructions(definition.name, step)
        path = _free_path(f"steps/{step.id}.md", taken)
        files[path] = text if text.endswith("\n") else text + "\n"
        data["instructions_file"] = path
    inputs = []
    for item in step.inputs:
        if not item.required:
            notes.add(f"{where}: optional inputs become required ones")
        if item.type is InputType.FILE_PATH:
            notes.add(f"{where}: input {item.name!r} (a file path) becomes a text parameter")
        if item.from_step is not None:
            inputs.append({"file": item.file, "from_step": item.from_step})
        else:
            inputs.append({"name": item.name, "description": item.description})
    if inputs:
        data["inputs"] = inputs
    data["outputs"] = {
        name: _output(step, name, spec, notes) for name, spec in step.outputs.items()
    }
    if step.dependencies:
        data["dependencies"] = list(step.dependencies)
    data["reviews"] = [_review(step, review, notes) for review in step.reviews]
    if step.process_requirements:
        notes.add(f"{where}: process_requirements become a review of the step's outputs")
        data["reviews"].append(
            {"run_each": "step", "quality_criteria": dict(step.process_requirements)}
        )
    for key in ("hooks", "agent"):
        if key in step.model_fields_set:
            data[key] = step.model_dump(mode="json", exclude_none=True)[key]
    data.update(evidence_fields(step))
    return data


def _free_path(path: str, taken: set[str]) -> str:
    stem, counter = path.removesuffix(".md"), 2
    while path in taken:
        path, counter = f"{stem}_{counter}.md", counter + 1
    taken.add(path)
    return path


def _output(step: Step, name: str, spec: OutputSpec, notes: Notes) -> dict[str, Any]:
    where = f"step {step.id!r}: output {name!r}"
    kind = spec.type
    if kind is OutputType.STRING:
        notes.add(f"{where} was a string; it becomes a file the agent writes")
        kind = OutputType.FILE
    elif kind is OutputType.FILE_PATH:
        per_file = any(
            r.run_each == name and r.strategy is ReviewStrategy.INDIVIDUAL for r in step.reviews
        )
        kind = OutputType.FILES if per_file else OutputType.FILE
        notes.add(f"{where} (file_path: one path or a list) becomes {kind.value!r}")
    if spec.json_schema is not None:
        notes.add(f"{where}: its json_schema has no place in 0.9-format jobs")
    data: dict[str, Any] = {
        "type": kind.value,
        "description": spec.description,
        "required": spec.required,
    }
    if spec.doc_spec is not None:
        data["doc_spec"] = spec.doc_spec
    return data


def _review(step: Step, review: Review, notes: Notes) -> dict[str, Any]:
    where = f"step {step.id!r}: the review of {review.run_each!r}"
    if review.agent or review.additional_context is not None:
        notes.add(f"{where} loses its agent and additional_context")
    spec = step.outputs.get(review.run_each)
    together = review.strategy is ReviewStrategy.MATCHES_TOGETHER
    if together and spec is not None and spec.type is OutputType.FILES:
        notes.add(f"{where} reviewed the files together; 0.9-format jobs review them one by one")
    criteria, guidance = dict(review.quality_criteria), review.additional_review_guidance
    if not criteria:
        criteria, guidance = criteria_from_text(guidance or "")
    data: dict[str, Any] = {"run_each": review.run_each, "quality_criteria": criteria}
    if guidance:
        data["additional_review_guidance"] = guidance
    if review.depth is not None:
        data["depth"] = review.depth
    return data


def criteria_from_text(text: str) -> tuple[dict[str, str], str | None]:
    """Criteria and guidance from a 0.10-format review's instructions (see `to_v010.review_text`).

    Instructions not written as a criteria list become one criterion, "Review instructions".
    """
    lines = text.strip().splitlines()
    if not lines or lines[0].strip() != CRITERIA_HEADER:
        return {"Review instructions": text.strip() or "The output meets the step's goal."}, None
    criteria: dict[str, str] = {}
    last: str | None = None
    position = 1
    for position, line in enumerate(lines[1:], 1):
        match = _CRITERION.match(line)
        if match is not None:
            last = match["name"]
            criteria[last] = match["text"]
        elif last is not None and line.startswith("  "):
            criteria[last] += "\n" + line[2:]
        elif last is not None and not line.strip() and _continues(lines, position):
            criteria[last] += "\n"
        else:
            break
    else:
        position = len(lines)
    guidance = "\n".join(lines[position:]).strip()
    return criteria, guidance or None


def _continues(lines: list[str], position: int) -> bool:
    """True when the blank line at `position` sits inside a criterion's indented text."""
    following = next((line for line in lines[position + 1 :] if line.strip()), "")
    return following.startswith("  ")
