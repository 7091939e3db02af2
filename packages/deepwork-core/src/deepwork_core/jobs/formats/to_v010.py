"""Writing a job in the 0.10 format (the data of its `job.yml`; docs/job-format.md).

Exact where the formats say the same thing. What the 0.10 format cannot say is named in a
warning: concurrent groups (run in order instead), hooks, doc specs, step display names and
descriptions, per-step `agent`, the job's version and description, steps no workflow lists, a
second review of one output (merged into one), and a `run_each: step` review (attached to the
step's first output). `exposed`/`hidden` of a 0.9 file are named by `v09.legacy_notes`.
"""

from __future__ import annotations

from typing import Any

from deepwork_core.base.config import REVIEW_DEPTHS
from deepwork_core.jobs.model import JobDefinition, ScopeGuard, Step
from deepwork_core.jobs.steps.fan_out import FAN_OUT_KEYS, Isolation
from deepwork_core.jobs.steps.parts import OutputSpec, OutputType, Review, ReviewStrategy

CRITERIA_HEADER = "Check each criterion:"


class Notes:
    """Warnings of one conversion, each once, in the order found."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, text: str) -> None:
        if text not in self.items:
            self.items.append(text)


def to_v010(definition: JobDefinition) -> tuple[dict[str, Any], list[str]]:
    """The 0.10-format `job.yml` data of `definition`, and what could not be carried over."""
    notes = Notes()
    arguments: dict[str, dict[str, Any]] = {}
    workflows: dict[str, dict[str, Any]] = {}
    for workflow in definition.workflows:
        if any(len(entry) > 1 and not _isolated(definition, entry) for entry in workflow.entries):
            notes.add(f"workflow {workflow.name!r}: concurrent groups run one step after another")
        spec: dict[str, Any] = {"summary": workflow.summary}
        if workflow.agent:
            spec["agent"] = workflow.agent
        common = definition.common_info(workflow.name)
        if common:
            spec["common_job_info_provided_to_all_steps_at_runtime"] = common
        spec["steps"] = []
        for entry in workflow.entries:
            for step_id in entry:
                data = _step(definition, definition.step(step_id), arguments, notes)
                if len(entry) > 1 and _isolated(definition, entry):  # kept as a group
                    data["concurrent_group"] = entry[0]
                spec["steps"].append(data)
        if workflow.post_workflow_instructions:
            spec["post_workflow_instructions"] = workflow.post_workflow_instructions
        workflows[workflow.name] = spec
    listed = {step_id for workflow in definition.workflows for step_id in workflow.step_ids}
    for step in definition.steps:
        if step.id not in listed:
            notes.add(f"step {step.id!r} is in no workflow and is left out")
    if definition.version is not None:
        notes.add(f"the job's version ({definition.version}) has no place in the 0.10 format")
    if definition.description:
        notes.add("the job's description has no place in the 0.10 format")
    data = {
        "name": definition.name,
        "summary": definition.summary,
        "step_arguments": list(arguments.values()),
        "workflows": workflows,
    }
    if definition.scope_guard is not ScopeGuard.NOTE:
        data["scope_guard"] = definition.scope_guard.value
    return data, notes.items


def _step(
    definition: JobDefinition, step: Step, arguments: dict[str, dict[str, Any]], notes: Notes
) -> dict[str, Any]:
    _note_dropped(step, notes)
    data: dict[str, Any] = {"name": step.id}
    if step.instructions_file is not None:
        data["instructions_file"] = step.instructions_file
    elif step.instructions is not None:
        data["instructions"] = step.instructions
    elif step.sub_workflow is not None:
        data["sub_workflow"] = step.sub_workflow.model_dump(exclude_none=True)
    inputs: dict[str, Any] = {}
    for item in step.inputs:
        if item.file is not None and item.from_step is not None:
            source = definition.steps_by_id.get(item.from_step)
            spec = source.outputs.get(item.file) if source is not None else None
            if spec is not None:
                _declare(arguments, item.file, spec, notes)
            name = item.file
        else:
            name = item.name or ""
            kind = item.type.value if item.type is not None else "string"
            arguments.setdefault(
                name, {"name": name, "description": item.description, "type": kind}
            )
        inputs[name] = {} if item.required else {"required": False}
    if inputs:
        data["inputs"] = inputs
    outputs: dict[str, Any] = {}
    for name, spec in step.outputs.items():
        _declare(arguments, name, spec, notes)
        outputs[name] = {} if spec.required else {"required": False}
        review = _merged_review(step, name, spec, notes)
        if review is not None:
            outputs[name]["review"] = review
    if outputs:
        data["outputs"] = outputs
    if step.process_requirements:
        data["process_requirements"] = dict(step.process_requirements)
    data.update(evidence_fields(step))
    return data


def evidence_fields(step: Step) -> dict[str, Any]:
    """A step's `may_change`, `approval` and fan-out keys as both formats write them (when
    set)."""
    data: dict[str, Any] = {}
    if step.may_change:
        data["may_change"] = list(step.may_change)
    if step.approval is not None:
        data["approval"] = step.approval.model_dump(mode="json")
    if step.for_each is not None:
        data["for_each"] = step.for_each
    for key, default in FAN_OUT_KEYS.items():
        value = getattr(step, key)
        if value != default:  # only `isolation` is ever set without `for_each`
            data[key] = value.value if isinstance(value, Isolation) else value
    return data


def _isolated(definition: JobDefinition, entry: tuple[str, ...]) -> bool:
    """True for a concurrent group whose steps each work in a worktree (docs/fan-out.md): the
    0.10 format keeps it as a `concurrent_group`, an extension; other groups run in order."""
    return all(definition.step(s).isolation is Isolation.WORKTREE for s in entry)


def _note_dropped(step: Step, notes: Notes) -> None:
    where = f"step {step.id!r}"
    if step.hooks is not None:
        notes.add(f"{where}: hooks have no place in the 0.10 format and are left out")
    for name, spec in step.outputs.items():
        if spec.doc_spec is not None:
            notes.add(f"{where}: output {name!r} loses its doc spec ({spec.doc_spec})")
    if step.agent is not None:
        notes.add(f"{where}: the step's agent ({step.agent}) has no place in the 0.10 format")
    if step.name != step.id or not step.description.startswith("Step "):
        notes.add("step display names and descriptions have no place in the 0.10 format")
    if not step.outputs and any(review.run_each == "step" for review in step.reviews):
        notes.add(f"{where}: a 'run_each: step' review of a step with no outputs is left out")


def _declare(
    arguments: dict[str, dict[str, Any]], name: str, spec: OutputSpec, notes: Notes
) -> None:
    kind = "string" if spec.type is OutputType.STRING else "file_path"
    existing = arguments.get(name)
    if existing is None:
        argument: dict[str, Any] = {"name": name, "description": spec.description, "type": kind}
        if spec.json_schema is not None:
            argument["json_schema"] = spec.json_schema
        arguments[name] = argument
    elif existing["type"] != kind or existing["description"] != spec.description:
        notes.add(
            f"argument {name!r} is declared by several steps differently; the first "
            "declaration is kept"
        )


def _merged_review(step: Step, name: str, spec: OutputSpec, notes: Notes) -> dict[str, Any] | None:
    """The one review block of output `name` (the 0.10 format has one per output)."""
    reviews = [review for review in step.reviews if review.run_each == name]
    if name == next(iter(step.outputs)):
        step_wide = [review for review in step.reviews if review.run_each == "step"]
        if step_wide:
            notes.add(f"step {step.id!r}: its 'run_each: step' review now reviews output {name!r}")
        reviews += step_wide
    if not reviews:
        return None
    if len(reviews) > 1:
        notes.add(f"step {step.id!r}: the reviews of output {name!r} are merged into one")
    first = reviews[0]
    default = ReviewStrategy.INDIVIDUAL if spec.type is OutputType.FILES else None
    strategy = first.strategy or default or ReviewStrategy.MATCHES_TOGETHER
    block: dict[str, Any] = {
        "strategy": strategy.value,
        "instructions": "\n\n".join(review_text(review) for review in reviews),
    }
    if first.agent:
        block["agent"] = dict(first.agent)
    if first.additional_context is not None:
        block["additional_context"] = first.additional_context.model_dump()
    depths = [review.depth for review in reviews if review.depth is not None]
    if depths:  # merged reviews keep the deepest
        block["depth"] = max(depths, key=REVIEW_DEPTHS.index)
    return block


def review_text(review: Review) -> str:
    """A review's criteria and guidance as the free text a 0.10-format review carries.

    Criteria are written as `- **name**: description` lines under `CRITERIA_HEADER`, which
    `deepwork_core.jobs.formats.to_v09` reads back into criteria.
    """
    guidance = (review.additional_review_guidance or "").strip()
    if not review.quality_criteria:
        return guidance
    lines = [CRITERIA_HEADER]
    for name, text in review.quality_criteria.items():
        first, *rest = text.strip().splitlines() or [""]
        lines.append(f"- **{name}**: {first}")
        lines.extend(f"  {line}" if line.strip() else "" for line in rest)
    return "\n".join(lines) + (f"\n\n{guidance}" if guidance else "")
