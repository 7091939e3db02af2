"""Reading a 0.10-format `job.yml` into the one job model (docs/job-format.md).

The translation, in short: each workflow step becomes a `Step` whose id is its name, or
`<workflow>__<name>` when workflows define different steps under one name. An input that an
earlier step of the same workflow produces becomes a file input `{file, from_step}` (and a
dependency); any other input is a start parameter `{name, description}`. Outputs take the
argument's type (`file_path` or `string`), description and `json_schema`; the argument's review
and the step's own review of that output both become reviews of the output.

Codes (besides the shape codes of `deepwork_core.jobs.report` and the checks of
`deepwork_core.jobs.checks`): `job.unknown_argument`, `job.duplicate_workflow_step`,
`job.unknown_workflow`, `job.sub_workflow_cycle`, the `json_schema` codes of
`deepwork_core.jobs.json_schemas`; warnings
`job.duplicate_argument`, `job.json_schema_ignored`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ValidationError

from deepwork_core.base.errors import Severity
from deepwork_core.base.yamlio import KeyPath, YamlDocument
from deepwork_core.jobs.checks import check_semantics
from deepwork_core.jobs.errors import JobCode
from deepwork_core.jobs.formats.v010_model import (
    ArgumentType,
    InputRef,
    JobFileV010,
    OutputRef,
    ReviewBlock,
    StepArgument,
    WorkflowSpec,
    WorkflowStep,
)
from deepwork_core.jobs.json_schemas import json_schema_findings
from deepwork_core.jobs.model import JobDefinition, Step, Workflow
from deepwork_core.jobs.report import JobReport
from deepwork_core.jobs.steps.approval import Approval
from deepwork_core.jobs.steps.parts import (
    InputType,
    OutputSpec,
    OutputType,
    Review,
    ReviewContext,
    StepInput,
    SubWorkflowRef,
)

QUALIFIER = "__"


def read_v010(
    document: YamlDocument, job_file: Path
) -> tuple[JobReport, JobDefinition | None, dict[str, KeyPath]]:
    """Check a 0.10 document; the translated definition when it has no error, step origins."""
    report = JobReport(job_file, document, allowed_keys=allowed_keys_v010)
    try:
        job = JobFileV010.model_validate(document.data)
    except ValidationError as exc:
        report.add_validation_errors(exc.errors(include_url=False))
        return report, None, {}
    check_references(report, job)
    if report.has_errors:
        return report, None, {}
    definition, origins = translate(job)
    _check_translated(report, definition, origins, job_file.parent)
    return report, definition, origins


def allowed_keys_v010(path: KeyPath) -> Sequence[str] | None:
    """The keys a 0.10-format file may write at `path` (for "did you mean")."""
    model: type[BaseModel] | None = None
    match path:
        case ():
            model = JobFileV010
        case ("step_arguments", int()):
            model = StepArgument
        case ("workflows", str()):
            model = WorkflowSpec
        case ("workflows", str(), "steps", int()):
            model = WorkflowStep
        case ("workflows", str(), "steps", int(), "inputs", str()):
            model = InputRef
        case ("workflows", str(), "steps", int(), "outputs", str()):
            model = OutputRef
        case ("workflows", str(), "steps", int(), "sub_workflow"):
            model = SubWorkflowRef
        case ("workflows", str(), "steps", int(), "approval"):
            model = Approval
        case (*_, "review"):
            model = ReviewBlock
        case (*_, "review", "additional_context"):
            model = ReviewContext
    return list(model.model_fields) if model is not None else None


# --- reference checks --------------------------------------------------------------------------


def check_references(report: JobReport, job: JobFileV010) -> None:
    """Every argument, workflow and sub-workflow a step names must exist."""
    _check_arguments(report, job)
    for workflow_name, workflow in job.workflows.items():
        seen: set[str] = set()
        for position, step in enumerate(workflow.steps):
            base: KeyPath = ("workflows", workflow_name, "steps", position)
            if step.name in seen:
                report.add(
                    JobCode.JOB_DUPLICATE_WORKFLOW_STEP,
                    f"workflow {workflow_name!r} has more than one step named {step.name!r}",
                    (*base, "name"),
                )
            seen.add(step.name)
            for key, refs in (("inputs", step.inputs), ("outputs", step.outputs)):
                for argument in refs:
                    if argument not in job.arguments:
                        report.add(
                            JobCode.JOB_UNKNOWN_ARGUMENT,
                            f"{argument!r} is not one of the job's step_arguments",
                            (*base, key, argument),
                        )
            target = _same_job_target(job, step)
            if target is not None and target not in job.workflows:
                report.add(
                    JobCode.JOB_UNKNOWN_WORKFLOW,
                    f"sub_workflow names workflow {target!r}, which this job does not define",
                    (*base, "sub_workflow", "workflow_name"),
                )
        _check_groups(report, workflow_name, workflow.steps)
    _check_sub_workflow_cycles(report, job)


def _check_groups(report: JobReport, workflow_name: str, steps: Sequence[WorkflowStep]) -> None:
    """The steps of one `concurrent_group` stand next to each other (docs/fan-out.md)."""
    closed: set[str] = set()
    for position, step in enumerate(steps):
        group = step.concurrent_group
        previous = steps[position - 1].concurrent_group if position else None
        if previous is not None and previous != group:
            closed.add(previous)
        if group is None:
            continue
        where: KeyPath = ("workflows", workflow_name, "steps", position, "concurrent_group")
        if group in closed:
            report.add(
                JobCode.JOB_INVALID_FOR_EACH,
                f"the steps of concurrent_group {group!r} must stand next to each other",
                where,
            )


def _check_arguments(report: JobReport, job: JobFileV010) -> None:
    seen: set[str] = set()
    for index, argument in enumerate(job.step_arguments):
        path: KeyPath = ("step_arguments", index)
        if argument.name in seen:
            report.add(
                JobCode.JOB_DUPLICATE_ARGUMENT,
                f"argument {argument.name!r} is declared again; the first declaration is used",
                (*path, "name"),
                severity=Severity.WARNING,
            )
        seen.add(argument.name)
        if argument.json_schema is None:
            continue
        if argument.type is not ArgumentType.FILE_PATH:
            report.add(
                JobCode.JOB_JSON_SCHEMA_IGNORED,
                "json_schema applies to file_path arguments only; it is ignored here",
                (*path, "json_schema"),
                severity=Severity.WARNING,
            )
            continue
        for finding in json_schema_findings(argument.json_schema):
            report.add(finding.code, finding.message, (*path, "json_schema", *finding.where))


def _same_job_target(job: JobFileV010, step: WorkflowStep) -> str | None:
    ref = step.sub_workflow
    if ref is None or ref.workflow_job not in (None, job.name):
        return None
    return ref.workflow_name


def _check_sub_workflow_cycles(report: JobReport, job: JobFileV010) -> None:
    """A workflow may not start itself, directly or through other workflows of this job."""
    calls = {
        name: [t for step in spec.steps if (t := _same_job_target(job, step)) in job.workflows]
        for name, spec in job.workflows.items()
    }
    for start in job.workflows:
        trail, pending = [start], [list(calls[start])]
        while trail:
            if not pending[-1]:
                trail.pop()
                pending.pop()
                continue
            target = pending[-1].pop()
            if target == start:
                report.add(
                    JobCode.JOB_SUB_WORKFLOW_CYCLE,
                    f"workflow {start!r} starts itself: {' -> '.join([*trail, start])}",
                    ("workflows", start),
                )
                break
            if target not in trail:
                trail.append(target)
                pending.append(list(calls[target]))


# --- translation -------------------------------------------------------------------------------


def translate(job: JobFileV010) -> tuple[JobDefinition, dict[str, KeyPath]]:
    """The job model of a checked 0.10-format job, and the key path of each step in the file."""
    qualified: set[str] = set()
    while True:  # qualify names until every id stands for one definition (at most once each)
        built = _build_all(job, qualified)
        differing = {
            step.name
            for _, _, step in built
            if step.name not in qualified
            and any(o.name == step.name and o != step for _, _, o in built)
        }
        if not differing:
            break
        qualified |= differing
    steps: dict[str, Step] = {}
    origins: dict[str, KeyPath] = {}
    for workflow_name, position, step in built:
        if step.id not in steps:
            steps[step.id] = step
            origins[step.id] = ("workflows", workflow_name, "steps", position)
    workflows = [
        Workflow(
            name=name,
            summary=spec.summary,
            steps=_entries(name, spec.steps, qualified),
            agent=spec.agent,
            common_job_info_provided_to_all_steps_at_runtime=(
                spec.common_job_info_provided_to_all_steps_at_runtime
            ),
            post_workflow_instructions=spec.post_workflow_instructions or None,
        )
        for name, spec in job.workflows.items()
    ]
    definition = JobDefinition(
        name=job.name,
        summary=job.summary,
        steps=list(steps.values()),
        workflows=workflows,
        scope_guard=job.scope_guard,
    )
    return definition, origins


def _entries(
    workflow_name: str, steps: Sequence[WorkflowStep], qualified: set[str]
) -> list[str | list[str]]:
    """The workflow's entries: consecutive steps of one `concurrent_group` form one group."""
    entries: list[str | list[str]] = []
    previous: str | None = None
    for step in steps:
        step_id = _step_id(workflow_name, step.name, qualified)
        group = step.concurrent_group
        if group is not None and group == previous and isinstance(entries[-1], list):
            entries[-1].append(step_id)
        else:
            entries.append([step_id] if group is not None else step_id)
        previous = group
    return entries


def _step_id(workflow_name: str, step_name: str, qualified: set[str]) -> str:
    return f"{workflow_name}{QUALIFIER}{step_name}" if step_name in qualified else step_name


def _build_all(job: JobFileV010, qualified: set[str]) -> list[tuple[str, int, Step]]:
    built: list[tuple[str, int, Step]] = []
    for workflow_name, spec in job.workflows.items():
        produced: dict[str, str] = {}
        for position, raw in enumerate(spec.steps):
            step_id = _step_id(workflow_name, raw.name, qualified)
            built.append((workflow_name, position, _build_step(job, raw, step_id, produced)))
            produced.update(dict.fromkeys(raw.outputs, step_id))
    return built


def _build_step(
    job: JobFileV010, raw: WorkflowStep, step_id: str, produced: dict[str, str]
) -> Step:
    arguments = job.arguments
    inputs: list[StepInput] = []
    dependencies: list[str] = []
    for name, ref in raw.inputs.items():
        source = produced.get(name)
        if source is None:
            argument = arguments[name]
            kind = InputType(argument.type.value)
            inputs.append(
                StepInput(
                    name=name, description=argument.description, required=ref.required, type=kind
                )
            )
            continue
        inputs.append(StepInput(file=name, from_step=source, required=ref.required))
        if source not in dependencies:
            dependencies.append(source)
    outputs: dict[str, OutputSpec] = {}
    reviews: list[Review] = []
    for name, output in raw.outputs.items():
        argument = arguments[name]
        is_file = argument.type is ArgumentType.FILE_PATH
        outputs[name] = OutputSpec(
            type=OutputType.FILE_PATH if is_file else OutputType.STRING,
            description=argument.description,
            required=output.required,
            json_schema=argument.json_schema if is_file else None,
        )
        reviews.extend(_review(name, block) for block in (argument.review, output.review) if block)
    return Step(
        id=step_id,
        name=raw.name,
        description=_description(raw),
        instructions=raw.instructions,
        instructions_file=raw.instructions_file,
        sub_workflow=raw.sub_workflow,
        process_requirements=raw.process_requirements,
        inputs=inputs,
        outputs=outputs,
        dependencies=dependencies,
        reviews=reviews,
        may_change=list(raw.may_change),
        approval=raw.approval,
        for_each=raw.for_each,
        max_parallel=raw.max_parallel,
        allow_partial=raw.allow_partial,
        isolation=raw.isolation,
    )


def _review(output_name: str, block: ReviewBlock) -> Review:
    return Review(
        run_each=output_name,
        additional_review_guidance=block.instructions,
        strategy=block.strategy,
        agent=block.agent,
        additional_context=block.additional_context,
        depth=block.depth,
    )


def _description(raw: WorkflowStep) -> str:
    """A one-line description (the 0.10 format has none): the instructions' first heading."""
    if raw.sub_workflow is not None:
        job = f"{raw.sub_workflow.workflow_job}/" if raw.sub_workflow.workflow_job else ""
        return f"Runs the workflow {job}{raw.sub_workflow.workflow_name}"
    for line in (raw.instructions or "").splitlines():
        heading = line.strip()
        if heading.startswith("#") and heading.lstrip("#").strip():
            return heading.lstrip("#").strip()
    return f"Step {raw.name}"


def _check_translated(
    report: JobReport, definition: JobDefinition, origins: dict[str, KeyPath], job_dir: Path
) -> None:
    """The checks both formats share, each finding pointed at the step in the file."""
    inner = JobReport(
        report.job_file, YamlDocument(None, {}), step_ids=[step.id for step in definition.steps]
    )
    data = {"steps": [{"id": step.id} for step in definition.steps]}
    steps = list(enumerate(definition.steps))
    workflows = list(enumerate(definition.workflows))
    check_semantics(inner, steps, workflows, data, job_dir)
    for problem in inner.problems:
        origin = origins.get(problem.step or "", ())
        if origin and (problem.key or "").endswith(".instructions_file"):
            origin = (*origin, "instructions_file")  # the one key both formats share
        message = problem.message.split(": ", 1)[-1]
        report.add(problem.code, message, origin, severity=problem.severity)
