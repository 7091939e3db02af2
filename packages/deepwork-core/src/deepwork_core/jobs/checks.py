"""Cross-reference checks of a job, on the one job model (both file formats).

Codes: `job.duplicate_step_id`, `job.unknown_dependency`, `job.dependency_cycle` (a
self-dependency included), `job.unknown_from_step`, `job.input_not_dependency`,
`job.unknown_input_file`, `job.invalid_run_each`, `job.path_outside_job`,
`job.unknown_workflow_step`, `job.duplicate_workflow_step`, `job.duplicate_workflow`,
`job.workflow_order`, `job.duplicate_group_output`; warning `job.unreachable_step`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from deepwork_core.base.errors import PathOutsideProjectError, Severity
from deepwork_core.base.identifiers import resolve_inside
from deepwork_core.base.yamlio import KeyPath
from deepwork_core.jobs.errors import JobCode
from deepwork_core.jobs.model import JobDefinition, Step, Workflow
from deepwork_core.jobs.report import JobReport, dotted, error_at
from deepwork_core.jobs.steps.fan_out import Isolation

_M = TypeVar("_M", bound=BaseModel)


#: How many times `salvage` drops the invalid keys of one item and tries again.
_SALVAGE_ROUNDS = 8


def salvage(data: dict[str, Any], key: str, model: type[_M]) -> list[tuple[int, _M]]:
    """The items of `data[key]` that are valid on their own, or once the keys that make them
    invalid (already reported) are left out, so the semantic checks still run on the rest of
    each item and one run reports every problem."""
    items = data.get(key)
    valid: list[tuple[int, _M]] = []
    for index, raw in enumerate(items if isinstance(items, list) else []):
        item = _salvaged(raw, model)
        if item is not None:
            valid.append((index, item))
    return valid


def _salvaged(raw: Any, model: type[_M]) -> _M | None:
    current = copy.deepcopy(raw)
    dropped: set[tuple[int | str, ...]] = set()
    for _ in range(_SALVAGE_ROUNDS):
        try:
            return model.model_validate(current)
        except ValidationError as exc:
            removed = False
            for error in exc.errors():
                loc = (*error["loc"], *error_at(error))
                if error["type"] == "missing":
                    # A required key was invalid and left out: leave out what holds it instead.
                    loc = loc[:-1] if loc in dropped else ()
                if loc and _drop(current, loc):
                    dropped.add(loc)
                    removed = True
            if not removed:
                return None
    return None


def _drop(node: Any, loc: tuple[int | str, ...]) -> bool:
    """Remove the mapping key at `loc`, or the one holding the list item at `loc` (as deep as
    the data goes); True when one was removed."""
    parent: Any = None
    last: int | str | None = None
    for part in loc:
        if not _holds(node, part):
            break
        if isinstance(node, dict):
            parent, last = node, part
        node = node[part]
    if parent is not None and last is not None:
        del parent[last]
        return True
    return False


def _holds(node: Any, part: int | str) -> bool:
    if isinstance(node, dict):
        return part in node
    return isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)


def _written_outputs(data: dict[str, Any]) -> dict[str, set[str]]:
    """The output names each step writes in the file, also those whose shape is invalid (a
    salvaged step may have lost them; they are not "unknown")."""
    steps = data.get("steps")
    written: dict[str, set[str]] = {}
    for raw in steps if isinstance(steps, list) else []:
        if isinstance(raw, dict) and isinstance(raw.get("id"), str):
            outputs = raw.get("outputs")
            written[raw["id"]] = {str(k) for k in outputs} if isinstance(outputs, dict) else set()
    return written


def _raw_step_ids(data: dict[str, Any]) -> set[str]:
    """Every step id written in the file, also of steps whose shape is invalid."""
    steps = data.get("steps")
    if not isinstance(steps, list):
        return set()
    return {s["id"] for s in steps if isinstance(s, dict) and isinstance(s.get("id"), str)}


def step_file_refs(step: Step, base: KeyPath) -> list[tuple[str, KeyPath]]:
    """Every job-relative file a step names, with its key path."""
    refs: list[tuple[str, KeyPath]] = []
    if step.instructions_file is not None:
        refs.append((step.instructions_file, (*base, "instructions_file")))
    for action, key in step.hook_action_keys():
        path = (*base, *key)
        if action.prompt_file is not None:
            refs.append((action.prompt_file, (*path, "prompt_file")))
        if action.script is not None:
            refs.append((action.script, (*path, "script")))
    return refs


def check_semantics(
    report: JobReport,
    steps: list[tuple[int, Step]],
    workflows: list[tuple[int, Workflow]],
    data: dict[str, Any],
    job_dir: Path,
) -> None:
    known_ids = _raw_step_ids(data)
    written = _written_outputs(data)
    raw_steps = data.get("steps")
    seen_ids: set[str] = set()
    for position, raw in enumerate(raw_steps if isinstance(raw_steps, list) else []):
        if isinstance(raw, dict) and isinstance(raw.get("id"), str):
            if raw["id"] in seen_ids:
                report.add(
                    JobCode.JOB_DUPLICATE_STEP_ID,
                    f"step id {raw['id']!r} is used by more than one step",
                    ("steps", position, "id"),
                )
            seen_ids.add(raw["id"])

    by_id: dict[str, Step] = {}
    step_index: dict[str, int] = {}
    for index, step in steps:
        if step.id not in by_id:
            by_id[step.id] = step
            step_index[step.id] = index

    for step_id, step in by_id.items():
        _check_step(report, step, step_index[step_id], by_id, known_ids, job_dir, written)
    _check_cycles(report, by_id, step_index)
    _check_workflows(report, workflows, by_id, known_ids)

    listed = {step_id for _, workflow in workflows for step_id in workflow.step_ids}
    for step_id, index in step_index.items():
        if step_id not in listed:
            report.add(
                JobCode.JOB_UNREACHABLE_STEP,
                "the step is in no workflow, so agents cannot run it through MCP",
                ("steps", index, "id"),
                severity=Severity.WARNING,
            )


def _check_step(
    report: JobReport,
    step: Step,
    index: int,
    by_id: dict[str, Step],
    known_ids: set[str],
    job_dir: Path,
    written: dict[str, set[str]],
) -> None:
    base: KeyPath = ("steps", index)
    resolved_job_dir = job_dir.resolve()
    for value, path in step_file_refs(step, base):
        try:
            resolve_inside(resolved_job_dir, value, what=dotted(path))
        except PathOutsideProjectError:
            report.add(
                JobCode.JOB_PATH_OUTSIDE_JOB,
                f"{value!r} points outside the job folder; paths are relative to the job folder",
                path,
            )

    for position, dependency in enumerate(step.dependencies):
        path = (*base, "dependencies", position)
        if dependency == step.id:
            report.add(JobCode.JOB_DEPENDENCY_CYCLE, "a step cannot depend on itself", path)
        elif dependency not in known_ids:
            report.add(
                JobCode.JOB_UNKNOWN_DEPENDENCY,
                f"depends on {dependency!r}, which is not a step of this job",
                path,
            )

    _check_inputs(report, step, base, by_id, known_ids, written)
    names = set(step.outputs) | written.get(step.id, set())
    for position, review in enumerate(step.reviews):
        if review.run_each != "step" and review.run_each not in names:
            report.add(
                JobCode.JOB_INVALID_RUN_EACH,
                f"run_each is {review.run_each!r}; use 'step' or one of this step's outputs "
                f"({', '.join(step.outputs) or 'none declared'})",
                (*base, "reviews", position, "run_each"),
            )


def _check_inputs(
    report: JobReport,
    step: Step,
    base: KeyPath,
    by_id: dict[str, Step],
    known_ids: set[str],
    written: dict[str, set[str]],
) -> None:
    """Each file input names a step of the job, listed as a dependency, that declares it."""
    for position, item in enumerate(step.inputs):
        if item.from_step is None:
            continue
        path = (*base, "inputs", position, "from_step")
        source_id = item.from_step
        if source_id not in known_ids:
            report.add(
                JobCode.JOB_UNKNOWN_FROM_STEP, f"{source_id!r} is not a step of this job", path
            )
            continue
        if source_id not in step.dependencies:
            report.add(
                JobCode.JOB_INPUT_NOT_DEPENDENCY,
                f"input comes from {source_id!r}, which must also be listed in 'dependencies'",
                path,
            )
        source = by_id.get(source_id)
        declared = set(source.outputs) | written.get(source_id, set()) if source else set()
        if source is not None and item.file not in declared:
            report.add(
                JobCode.JOB_UNKNOWN_INPUT_FILE,
                f"step {source_id!r} declares no output named {item.file!r} "
                f"(it declares: {', '.join(source.outputs) or 'none'})",
                (*base, "inputs", position, "file"),
            )


def _check_cycles(report: JobReport, by_id: dict[str, Step], step_index: dict[str, int]) -> None:
    """Report each dependency cycle once (self-dependencies are reported by `_check_step`)."""
    done: set[str] = set()
    reported: set[frozenset[str]] = set()
    for start in by_id:
        if start in done:
            continue
        # Iterative depth-first search: a job may have many steps, recursion depth stays flat.
        trail: list[str] = [start]
        on_trail: set[str] = {start}
        pending: list[list[str]] = [list(by_id[start].dependencies)]
        while trail:
            if not pending[-1]:
                finished = trail.pop()
                on_trail.discard(finished)
                done.add(finished)
                pending.pop()
                continue
            dependency = pending[-1].pop(0)
            current = trail[-1]
            if dependency == current or dependency not in by_id or dependency in done:
                continue
            if dependency in on_trail:
                cycle = [*trail[trail.index(dependency) :], dependency]
                if frozenset(cycle) not in reported:
                    reported.add(frozenset(cycle))
                    report.add(
                        JobCode.JOB_DEPENDENCY_CYCLE,
                        f"circular dependency: {' -> '.join(cycle)}",
                        ("steps", step_index[current], "dependencies"),
                    )
                continue
            trail.append(dependency)
            on_trail.add(dependency)
            pending.append(list(by_id[dependency].dependencies))


def _check_workflows(
    report: JobReport,
    workflows: list[tuple[int, Workflow]],
    by_id: dict[str, Step],
    known_ids: set[str],
) -> None:
    seen_names: set[str] = set()
    for index, workflow in workflows:
        base: KeyPath = ("workflows", index)
        if workflow.name in seen_names:
            report.add(
                JobCode.JOB_DUPLICATE_WORKFLOW,
                f"workflow name {workflow.name!r} is used by more than one workflow",
                (*base, "name"),
            )
            continue
        seen_names.add(workflow.name)
        position_of = _check_entries(report, workflow, base, by_id, known_ids)
        for step_id, entry_position in position_of.items():
            step = by_id.get(step_id)
            if step is None:
                continue
            for dependency in step.dependencies:
                dep_position = position_of.get(dependency)
                if dep_position is not None and dep_position >= entry_position:
                    order = "together with" if dep_position == entry_position else "before"
                    report.add(
                        JobCode.JOB_WORKFLOW_ORDER,
                        f"workflow {workflow.name!r} runs {step_id!r} {order} "
                        f"{dependency!r}, which it depends on",
                        (*base, "steps", entry_position),
                    )


def _check_entries(
    report: JobReport,
    workflow: Workflow,
    base: KeyPath,
    by_id: dict[str, Step],
    known_ids: set[str],
) -> dict[str, int]:
    """Check each entry's steps exist, appear once, and (in a group) declare distinct outputs.

    Returns the entry position of each step the workflow lists.
    """
    position_of: dict[str, int] = {}
    for entry_position, entry in enumerate(workflow.entries):
        path: KeyPath = (*base, "steps", entry_position)
        outputs_in_group: dict[str, str] = {}
        for member, step_id in enumerate(entry):
            member_path = (
                (*path, member) if isinstance(workflow.steps[entry_position], list) else path
            )
            if step_id not in known_ids:
                report.add(
                    JobCode.JOB_UNKNOWN_WORKFLOW_STEP,
                    f"workflow {workflow.name!r} names step {step_id!r}, which does not exist",
                    member_path,
                )
                continue
            if step_id in position_of:
                report.add(
                    JobCode.JOB_DUPLICATE_WORKFLOW_STEP,
                    f"step {step_id!r} appears more than once in workflow {workflow.name!r}",
                    member_path,
                )
                continue
            position_of[step_id] = entry_position
            step = by_id.get(step_id)
            if step is None or len(entry) < 2:
                continue
            for output_name in step.outputs:
                other = outputs_in_group.setdefault(output_name, step_id)
                if other != step_id:
                    report.add(
                        JobCode.JOB_DUPLICATE_GROUP_OUTPUT,
                        f"steps {other!r} and {step_id!r} run concurrently in workflow "
                        f"{workflow.name!r} and both declare output {output_name!r}; "
                        "output names must be unique in a concurrent group",
                        member_path,
                    )
    return position_of


def check_fan_out(
    report: JobReport, definition: JobDefinition, origins: Mapping[str, KeyPath]
) -> None:
    """`for_each` names an input of its step and runs outside a concurrent group; `isolation`
    without `for_each` is on every step of a concurrent group or on none (docs/fan-out.md)."""
    grouped = {s for w in definition.workflows for e in w.entries if len(e) > 1 for s in e}
    for index, step in enumerate(definition.steps):
        if step.for_each is None:
            _check_group_isolation(report, definition, step, origins.get(step.id, ("steps", index)))
            continue
        where = (*origins.get(step.id, ("steps", index)), "for_each")
        names = {item.name or item.file for item in step.inputs}
        if step.for_each not in names:
            report.add(
                JobCode.JOB_INVALID_FOR_EACH,
                f"for_each names {step.for_each!r}, which is not an input of the step "
                f"(inputs: {', '.join(sorted(n for n in names if n)) or 'none'})",
                where,
            )
        if step.id in grouped:
            report.add(
                JobCode.JOB_INVALID_FOR_EACH,
                "a for_each step runs on its own, not in a concurrent group",
                where,
            )


def _check_group_isolation(
    report: JobReport, definition: JobDefinition, step: Step, origin: KeyPath
) -> None:
    """`isolation` on a step without `for_each`: each concurrent group holding the step has the
    same isolation on all its steps, and `worktree` needs such a group."""
    groups = [e for w in definition.workflows for e in w.entries if len(e) > 1 and step.id in e]
    isolated = step.isolation is Isolation.WORKTREE
    where = (*origin, "isolation")
    for group in groups:
        known = [definition.steps_by_id[o] for o in group if o in definition.steps_by_id]
        if any(other.isolation != step.isolation for other in known):
            report.add(
                JobCode.JOB_INVALID_FOR_EACH,
                f"the steps of the concurrent group {', '.join(group)} must all give the same "
                "isolation",
                where,
            )
            return
    if not isolated:
        return
    alone = any(step.id in e and len(e) < 2 for w in definition.workflows for e in w.entries)
    if not groups or alone:
        report.add(
            JobCode.JOB_INVALID_FOR_EACH,
            "isolation: worktree needs for_each, or a concurrent group of two or more steps "
            "(in every workflow that runs the step)",
            where,
        )
        return
    if step.sub_workflow is not None:
        report.add(
            JobCode.JOB_INVALID_FOR_EACH,
            "a step of a concurrent group in worktrees cannot be a sub_workflow step",
            where,
        )
