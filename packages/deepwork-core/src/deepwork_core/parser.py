"""Reading `job.yml`: shape validation and every cross-reference check of FORMATS.md §1.

`parse_job_dir()` never stops at the first problem: it reports every shape error (from the
pydantic model) and every semantic error it can still check, each with file, line, step and key.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from deepwork_core.errors import (
    JobInvalidError,
    PathOutsideProjectError,
    Problem,
    Severity,
    YamlError,
)
from deepwork_core.identifiers import resolve_inside
from deepwork_core.models import JobDefinition, Step, Workflow
from deepwork_core.yamlio import KeyPath, YamlDocument, read_yaml_file

JOB_FILE = "job.yml"

_PYDANTIC_CODES = {
    "missing": "job.missing_key",
    "extra_forbidden": "job.unknown_key",
}


@dataclass(frozen=True)
class ParsedJob:
    """The outcome of reading one job folder: a definition when it is valid, and the findings."""

    job_dir: Path
    definition: JobDefinition | None
    problems: tuple[Problem, ...] = field(default=())

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity is Severity.WARNING]

    @property
    def ok(self) -> bool:
        return self.definition is not None

    def require(self) -> JobDefinition:
        """The definition, or `JobInvalidError` carrying every error."""
        if self.definition is None:
            raise JobInvalidError(summarize(self.errors), self.errors)
        return self.definition


def summarize(problems: Sequence[Problem]) -> str:
    if not problems:
        return "no problems"
    head = "; ".join(f"{p.key or p.location()}: {p.message}" for p in problems[:5])
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    return f"{len(problems)} problem(s): {head}{more}"


def parse_job_dir(job_dir: Path, *, expected_name: str | None = None) -> ParsedJob:
    """Read `job_dir/job.yml` and check it.

    `expected_name` is the folder name discovery found the job under; a different `name` in the
    file is an error (one identity for listing and lookup).
    """
    job_file = job_dir / JOB_FILE
    try:
        document = read_yaml_file(job_file)
    except YamlError as exc:
        return ParsedJob(job_dir, None, (Problem(exc.code, exc.message, job_file),))
    return parse_job_document(document, job_dir=job_dir, expected_name=expected_name)


def parse_job_document(
    document: YamlDocument, *, job_dir: Path, expected_name: str | None = None
) -> ParsedJob:
    job_file = job_dir / JOB_FILE
    report = _Report(job_file, document)
    data = document.data
    if data is None:
        report.add("yaml.empty", "job.yml is empty", ())
        return ParsedJob(job_dir, None, tuple(report.problems))
    if not isinstance(data, dict):
        report.add(
            "yaml.not_mapping", f"the top level must be a mapping, not {type(data).__name__}", ()
        )
        return ParsedJob(job_dir, None, tuple(report.problems))

    definition: JobDefinition | None = None
    try:
        definition = JobDefinition.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors():
            report.add_pydantic(error)

    if definition is not None:
        steps, workflows = list(definition.steps), list(definition.workflows)
    else:
        steps, workflows = _salvage(data)
    known_ids = _raw_step_ids(data)
    _check_semantics(report, steps, workflows, known_ids, data, job_dir)

    name = data.get("name")
    if expected_name is not None and isinstance(name, str) and name != expected_name:
        report.add(
            "job.name_mismatch",
            f"{name!r} differs from the folder name {expected_name!r}; they must be equal",
            ("name",),
        )

    if report.has_errors:
        definition = None
    return ParsedJob(job_dir, definition, tuple(report.problems))


def check_job_files(parsed: ParsedJob) -> list[Problem]:
    """Problems with the files a valid job refers to (instruction and hook files must exist)."""
    definition = parsed.definition
    if definition is None:
        return []
    job_file = parsed.job_dir / JOB_FILE
    problems: list[Problem] = []
    lines = read_yaml_file(job_file)
    for index, step in enumerate(definition.steps):
        refs: list[tuple[str, KeyPath]] = [
            (step.instructions_file, ("steps", index, "instructions_file"))
        ]
        for event in ("after_agent", "before_tool", "before_prompt"):
            for position, action in enumerate(getattr(step.hooks, event, None) or []):
                for attr in ("prompt_file", "script"):
                    if (value := getattr(action, attr)) is not None:
                        refs.append((value, ("steps", index, "hooks", event, position, attr)))
        for position, action in enumerate(step.stop_hooks):
            for attr in ("prompt_file", "script"):
                if (value := getattr(action, attr)) is not None:
                    refs.append((value, ("steps", index, "stop_hooks", position, attr)))
        for value, path in refs:
            target = parsed.job_dir / value
            if not target.is_file():
                problems.append(
                    Problem(
                        "job.file_missing",
                        f"{_dotted(path)}: file {value!r} does not exist in {parsed.job_dir}",
                        job_file,
                        lines.line_of(path),
                        step.id,
                        _dotted(path),
                    )
                )
    return problems


# --- internals -------------------------------------------------------------------------------


class _Report:
    def __init__(self, job_file: Path, document: YamlDocument) -> None:
        self.job_file = job_file
        self.document = document
        self.problems: list[Problem] = []

    @property
    def has_errors(self) -> bool:
        return any(p.severity is Severity.ERROR for p in self.problems)

    def add(
        self,
        code: str,
        message: str,
        path: KeyPath,
        *,
        severity: Severity = Severity.ERROR,
        step: str | None = None,
    ) -> None:
        key = _dotted(path) or None
        self.problems.append(
            Problem(
                code,
                f"{key}: {message}" if key else message,
                self.job_file,
                self.document.line_of(path),
                step if step is not None else self._step_at(path),
                key,
                severity,
            )
        )

    def add_pydantic(self, error: Any) -> None:
        loc: KeyPath = tuple(part for part in error["loc"] if isinstance(part, str | int))
        kind = error["type"]
        code = _PYDANTIC_CODES.get(kind, "job.invalid_value")
        message = str(error["msg"])
        if kind == "value_error":
            message = message.removeprefix("Value error, ")
        elif kind == "missing":
            message = "required key is missing"
        elif kind == "extra_forbidden":
            message = "unknown key (not allowed here)"
        self.add(code, message, loc)

    def _step_at(self, path: KeyPath) -> str | None:
        if len(path) >= 2 and path[0] == "steps" and isinstance(path[1], int):
            steps = (
                self.document.data.get("steps") if isinstance(self.document.data, dict) else None
            )
            if (
                isinstance(steps, list)
                and path[1] < len(steps)
                and isinstance(steps[path[1]], dict)
            ):
                step_id = steps[path[1]].get("id")
                return step_id if isinstance(step_id, str) else f"#{path[1]}"
        return None


def _dotted(path: KeyPath) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _raw_step_ids(data: dict[str, Any]) -> set[str]:
    steps = data.get("steps")
    if not isinstance(steps, list):
        return set()
    return {s["id"] for s in steps if isinstance(s, dict) and isinstance(s.get("id"), str)}


def _salvage(data: dict[str, Any]) -> tuple[list[Step], list[Workflow]]:
    """The steps and workflows that are valid on their own, so semantic checks still run."""
    steps: list[Step] = []
    raw_steps = data.get("steps")
    for raw in raw_steps if isinstance(raw_steps, list) else []:
        try:
            steps.append(Step.model_validate(raw))
        except ValidationError:
            continue
    workflows: list[Workflow] = []
    raw_workflows = data.get("workflows")
    for raw in raw_workflows if isinstance(raw_workflows, list) else []:
        try:
            workflows.append(Workflow.model_validate(raw))
        except ValidationError:
            continue
    return steps, workflows


def _index_of(data: dict[str, Any], collection: str, key: str, value: str) -> int | None:
    items = data.get(collection)
    if isinstance(items, list):
        for index, item in enumerate(items):
            if isinstance(item, dict) and item.get(key) == value:
                return index
    return None


def _check_semantics(
    report: _Report,
    steps: list[Step],
    workflows: list[Workflow],
    known_ids: set[str],
    data: dict[str, Any],
    job_dir: Path,
) -> None:
    by_id: dict[str, Step] = {}
    step_index: dict[str, int] = {}
    raw_steps = data.get("steps") if isinstance(data.get("steps"), list) else []
    seen_ids: set[str] = set()
    for position, raw in enumerate(raw_steps or []):
        if isinstance(raw, dict) and isinstance(raw.get("id"), str):
            if raw["id"] in seen_ids:
                report.add(
                    "job.duplicate_step_id",
                    f"step id {raw['id']!r} is used by more than one step",
                    ("steps", position, "id"),
                )
            seen_ids.add(raw["id"])
    for step in steps:
        index = _index_of(data, "steps", "id", step.id)
        if index is not None and step.id not in by_id:
            by_id[step.id] = step
            step_index[step.id] = index

    for step in by_id.values():
        _check_step(report, step, step_index[step.id], by_id, known_ids, job_dir)
    _check_cycles(report, by_id, step_index)
    _check_workflows(report, workflows, by_id, known_ids, data)

    listed = {step_id for workflow in workflows for step_id in workflow.step_ids}
    for step_id, index in step_index.items():
        if step_id not in listed:
            report.add(
                "job.unreachable_step",
                f"step {step_id!r} is in no workflow, so agents cannot run it through MCP",
                ("steps", index, "id"),
                severity=Severity.WARNING,
            )


def _check_step(
    report: _Report,
    step: Step,
    index: int,
    by_id: dict[str, Step],
    known_ids: set[str],
    job_dir: Path,
) -> None:
    base: KeyPath = ("steps", index)
    _check_inside(report, job_dir, step.instructions_file, (*base, "instructions_file"))
    for event in ("after_agent", "before_tool", "before_prompt"):
        for position, action in enumerate(getattr(step.hooks, event, None) or []):
            for attr in ("prompt_file", "script"):
                if (value := getattr(action, attr)) is not None:
                    _check_inside(report, job_dir, value, (*base, "hooks", event, position, attr))
    for position, action in enumerate(step.stop_hooks):
        for attr in ("prompt_file", "script"):
            if (value := getattr(action, attr)) is not None:
                _check_inside(report, job_dir, value, (*base, "stop_hooks", position, attr))

    for position, dependency in enumerate(step.dependencies):
        if dependency not in known_ids:
            report.add(
                "job.unknown_dependency",
                f"depends on {dependency!r}, which is not a step of this job",
                (*base, "dependencies", position),
            )
        elif dependency == step.id:
            report.add(
                "job.dependency_cycle", "a step cannot depend on itself", (*base, "dependencies")
            )

    for position, item in enumerate(step.inputs):
        if not item.is_file:
            continue
        path: KeyPath = (*base, "inputs", position, "from_step")
        source_id = item.from_step or ""
        if source_id not in known_ids:
            report.add("job.unknown_from_step", f"{source_id!r} is not a step of this job", path)
            continue
        if source_id not in step.dependencies:
            report.add(
                "job.input_not_dependency",
                f"input comes from {source_id!r}, which must also be listed in 'dependencies'",
                path,
            )
        source = by_id.get(source_id)
        if source is not None and item.file not in source.outputs:
            report.add(
                "job.unknown_input_file",
                f"step {source_id!r} declares no output named {item.file!r} "
                f"(it declares: {', '.join(source.outputs) or 'none'})",
                (*base, "inputs", position, "file"),
            )

    for position, review in enumerate(step.reviews):
        if review.run_each != "step" and review.run_each not in step.outputs:
            report.add(
                "job.invalid_run_each",
                f"run_each is {review.run_each!r}; use 'step' or one of this step's outputs "
                f"({', '.join(step.outputs) or 'none declared'})",
                (*base, "reviews", position, "run_each"),
            )


def _check_inside(report: _Report, job_dir: Path, value: str, path: KeyPath) -> None:
    try:
        resolve_inside(job_dir.resolve(), value, what=_dotted(path))
    except PathOutsideProjectError:
        report.add(
            "job.path_outside_job",
            f"{value!r} points outside the job folder; paths are relative to the job folder",
            path,
        )


def _check_cycles(report: _Report, by_id: dict[str, Step], step_index: dict[str, int]) -> None:
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    reported: set[frozenset[str]] = set()

    def visit(step_id: str, trail: list[str]) -> None:
        state[step_id] = 1
        trail.append(step_id)
        for dependency in by_id[step_id].dependencies:
            if dependency == step_id or dependency not in by_id:
                continue
            if state.get(dependency) == 1:
                cycle = [*trail[trail.index(dependency) :], dependency]
                if frozenset(cycle) not in reported:
                    reported.add(frozenset(cycle))
                    report.add(
                        "job.dependency_cycle",
                        f"circular dependency: {' -> '.join(cycle)}",
                        ("steps", step_index[step_id], "dependencies"),
                    )
            elif state.get(dependency) is None:
                visit(dependency, trail)
        trail.pop()
        state[step_id] = 2

    for step_id in by_id:
        if step_id not in state:
            visit(step_id, [])


def _check_workflows(
    report: _Report,
    workflows: list[Workflow],
    by_id: dict[str, Step],
    known_ids: set[str],
    data: dict[str, Any],
) -> None:
    seen_names: set[str] = set()
    for workflow in workflows:
        index = _index_of(data, "workflows", "name", workflow.name)
        if index is None:
            continue
        base: KeyPath = ("workflows", index)
        if workflow.name in seen_names:
            report.add(
                "job.duplicate_workflow",
                f"workflow name {workflow.name!r} is used twice",
                (*base, "name"),
            )
            continue
        seen_names.add(workflow.name)

        position_of: dict[str, int] = {}
        for entry_position, entry in enumerate(workflow.entries):
            path: KeyPath = (*base, "steps", entry_position)
            outputs_in_group: dict[str, str] = {}
            for step_id in entry:
                if step_id not in known_ids:
                    report.add(
                        "job.unknown_workflow_step",
                        f"workflow {workflow.name!r} names step {step_id!r}, which does not exist",
                        path,
                    )
                    continue
                if step_id in position_of:
                    report.add(
                        "job.duplicate_workflow_step",
                        f"step {step_id!r} appears more than once in workflow {workflow.name!r}",
                        path,
                    )
                    continue
                position_of[step_id] = entry_position
                step = by_id.get(step_id)
                if step is not None and len(entry) > 1:
                    for output_name in step.outputs:
                        other = outputs_in_group.setdefault(output_name, step_id)
                        if other != step_id:
                            report.add(
                                "job.duplicate_group_output",
                                f"steps {other!r} and {step_id!r} run concurrently and both "
                                f"declare output {output_name!r}; names must be unique in a group",
                                path,
                            )

        for step_id, entry_position in position_of.items():
            step = by_id.get(step_id)
            if step is None:
                continue
            for dependency in step.dependencies:
                dep_position = position_of.get(dependency)
                if dep_position is not None and dep_position >= entry_position:
                    report.add(
                        "job.workflow_order",
                        f"workflow {workflow.name!r} runs {step_id!r} "
                        f"{'together with' if dep_position == entry_position else 'before'} "
                        f"{dependency!r}, which it depends on",
                        (*base, "steps", entry_position),
                    )


def format_problems(problems: Iterable[Problem]) -> str:
    """One `file:line: code: message` line per problem."""
    return "\n".join(str(problem) for problem in problems)


def load_job(job_dir: Path, *, expected_name: str | None = None) -> JobDefinition:
    """Parse and return a valid definition, or raise `JobInvalidError` with every error."""
    return parse_job_dir(job_dir, expected_name=expected_name).require()
