"""Reading `job.yml`: shape validation and every cross-reference check of docs/job-format.md.

`parse_job_dir()` never stops at the first problem: it reports every shape error (from the
pydantic model) and every semantic error it can still check, each with file, line, step and key.
Codes are stable (tests and tools match on them):

shape — `job.missing_key`, `job.unknown_key`, `job.wrong_type`, `job.pattern_mismatch`,
`job.too_short`, `job.too_long`, `job.invalid_value`, `job.invalid_input`,
`job.invalid_hook_action`;
semantics — `job.duplicate_step_id`, `job.unknown_dependency`, `job.dependency_cycle` (a
self-dependency included), `job.unknown_from_step`, `job.input_not_dependency`,
`job.unknown_input_file`, `job.invalid_run_each`, `job.path_outside_job`,
`job.unknown_workflow_step`, `job.duplicate_workflow_step`, `job.duplicate_workflow`,
`job.workflow_order`, `job.duplicate_group_output`, `job.name_mismatch`; warning —
`job.unreachable_step`; files (`check_job_files`) — `job.file_missing`; reading — `yaml.*`
(see `deepwork_core.yamlio`), `yaml.empty`, `yaml.not_mapping`.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from deepwork_core.errors import (
    JobInvalidError,
    PathOutsideProjectError,
    Problem,
    Severity,
    YamlError,
)
from deepwork_core.identifiers import resolve_inside
from deepwork_core.layout import JOB_FILE
from deepwork_core.models import (
    HookAction,
    JobDefinition,
    OutputSpec,
    Review,
    Step,
    StepHooks,
    StepInput,
    Workflow,
)
from deepwork_core.yamlio import KeyPath, YamlDocument, parse_yaml, read_limited

HOOK_EVENTS = ("after_agent", "before_tool", "before_prompt")


@dataclass(frozen=True)
class ParsedJob:
    """The outcome of reading one job folder: a definition when it is valid, and the findings."""

    job_dir: Path
    definition: JobDefinition | None
    problems: tuple[Problem, ...] = field(default=())
    #: Line of each key path of job.yml: empty when the YAML could not be read, and in the
    #: jobs the catalog keeps (see `without_lines`; every problem already carries its line).
    lines: Mapping[KeyPath, int] = field(default_factory=dict, repr=False, compare=False)

    @property
    def job_file(self) -> Path:
        return self.job_dir / JOB_FILE

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity is Severity.WARNING]

    @property
    def ok(self) -> bool:
        return self.definition is not None

    def without_lines(self) -> ParsedJob:
        """This outcome without its line map, which only serves to report problems.

        Long-lived caches keep these: the map is most of a parsed job's memory. `check_job_files`
        reads the lines again from job.yml if it has a problem to report.
        """
        return replace(self, lines={}) if self.lines else self

    def require(self) -> JobDefinition:
        """The definition, or `JobInvalidError` carrying every error."""
        if self.definition is None:
            raise JobInvalidError(
                f"job in {self.job_dir} is invalid: {summarize(self.errors)}", self.errors
            )
        return self.definition


def summarize(problems: Sequence[Problem]) -> str:
    """A one-line summary of `problems` (the first five, then a count)."""
    if not problems:
        return "no problems"
    head = "; ".join(
        f"line {p.line}: {p.message}" if p.line is not None else p.message for p in problems[:5]
    )
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    return f"{len(problems)} problem(s): {head}{more}"


def parse_job_dir(job_dir: Path, *, expected_name: str | None = None) -> ParsedJob:
    """Read `job_dir/job.yml` and check it.

    `expected_name` is the folder name discovery found the job under; a different `name` in the
    file is an error (one identity for listing and lookup).
    """
    try:
        raw = read_limited(job_dir / JOB_FILE)
    except YamlError as exc:
        return ParsedJob(job_dir, None, (Problem(exc.code, exc.message, job_dir / JOB_FILE),))
    return parse_job_source(raw, job_dir=job_dir, expected_name=expected_name)


def parse_job_source(
    raw: bytes | str, *, job_dir: Path, expected_name: str | None = None
) -> ParsedJob:
    """Check the content of a `job.yml` that lives (or would live) in `job_dir`."""
    try:
        document = parse_yaml(raw)
    except YamlError as exc:
        problem = Problem(exc.code, exc.message, job_dir / JOB_FILE, exc.line)
        return ParsedJob(job_dir, None, (problem,))
    return parse_job_document(document, job_dir=job_dir, expected_name=expected_name)


def parse_job_document(
    document: YamlDocument, *, job_dir: Path, expected_name: str | None = None
) -> ParsedJob:
    """Check an already parsed `job.yml` document (see `parse_job_dir`)."""
    report = _Report(job_dir / JOB_FILE, document)
    data = document.data
    if data is None:
        report.add("yaml.empty", "job.yml is empty", ())
        return report.result(job_dir, None)
    if not isinstance(data, dict):
        report.add(
            "yaml.not_mapping", f"the top level must be a mapping, not {type(data).__name__}", ()
        )
        return report.result(job_dir, None)

    definition: JobDefinition | None = None
    try:
        definition = JobDefinition.model_validate(data)
    except ValidationError as exc:
        report.add_validation_errors(exc.errors(include_url=False))

    if definition is not None:
        steps = list(enumerate(definition.steps))
        workflows = list(enumerate(definition.workflows))
    else:
        steps = _salvage(data, "steps", Step)
        workflows = _salvage(data, "workflows", Workflow)
    _check_semantics(report, steps, workflows, data, job_dir)

    name = data.get("name")
    if expected_name is not None and isinstance(name, str) and name != expected_name:
        report.add(
            "job.name_mismatch",
            f"{name!r} differs from the folder name {expected_name!r}; they must be equal",
            ("name",),
        )
    return report.result(job_dir, None if report.has_errors else definition)


def check_job_files(parsed: ParsedJob) -> list[Problem]:
    """Problems with the files a valid job refers to (instruction and hook files must exist)."""
    definition = parsed.definition
    if definition is None:
        return []
    missing = [
        (value, path)
        for index, step in enumerate(definition.steps)
        for value, path in _step_file_refs(step, ("steps", index))
        if not (parsed.job_dir / value).is_file()
    ]
    if not missing:
        return []
    lines = parsed.lines or _lines_of(parsed.job_file)
    report = _Report(parsed.job_file, YamlDocument(None, lines), steps=definition.steps)
    for value, path in missing:
        report.add("job.file_missing", f"file {value!r} does not exist in {parsed.job_dir}", path)
    return report.problems


def _lines_of(job_file: Path) -> Mapping[KeyPath, int]:
    """The line map of `job_file` read again (empty if it no longer parses)."""
    try:
        return parse_yaml(read_limited(job_file)).lines
    except YamlError:
        return {}


def format_problems(problems: Iterable[Problem]) -> str:
    """One `file:line: code: message` line per problem."""
    return "\n".join(str(problem) for problem in problems)


def load_job(job_dir: Path, *, expected_name: str | None = None) -> JobDefinition:
    """Parse and return a valid definition, or raise `JobInvalidError` with every error."""
    return parse_job_dir(job_dir, expected_name=expected_name).require()


# --- reporting -------------------------------------------------------------------------------


_SHAPE_CODES = {
    "missing": "job.missing_key",
    "extra_forbidden": "job.unknown_key",
    "string_pattern_mismatch": "job.pattern_mismatch",
    "string_too_short": "job.too_short",
    "too_short": "job.too_short",
    "string_too_long": "job.too_long",
    "too_long": "job.too_long",
    "input_shape": "job.invalid_input",
    "hook_action_shape": "job.invalid_hook_action",
}


class _Report:
    """Collects problems for one job.yml, naming file, line, step and key of each."""

    def __init__(
        self, job_file: Path, document: YamlDocument, *, steps: Sequence[Step] | None = None
    ) -> None:
        self.job_file = job_file
        self.document = document
        self.problems: list[Problem] = []
        raw_steps = document.data.get("steps") if isinstance(document.data, dict) else None
        if steps is not None:
            self._step_ids: list[str | None] = [step.id for step in steps]
        elif isinstance(raw_steps, list):
            self._step_ids = [
                s.get("id") if isinstance(s, dict) and isinstance(s.get("id"), str) else None
                for s in raw_steps
            ]
        else:
            self._step_ids = []

    @property
    def has_errors(self) -> bool:
        return any(p.severity is Severity.ERROR for p in self.problems)

    def result(self, job_dir: Path, definition: JobDefinition | None) -> ParsedJob:
        return ParsedJob(job_dir, definition, tuple(self.problems), self.document.lines)

    def add(
        self, code: str, message: str, path: KeyPath, *, severity: Severity = Severity.ERROR
    ) -> None:
        key = _dotted(path) or None
        step = self._step_at(path)
        where = key or ""
        if step is not None:
            where = f"step {step!r} ({key})" if key else f"step {step!r}"
        self.problems.append(
            Problem(
                code,
                f"{where}: {message}" if where else message,
                self.job_file,
                self.document.line_of(path),
                step,
                key,
                severity,
            )
        )

    def add_validation_errors(self, errors: list[ErrorDetails]) -> None:
        """Turn pydantic's errors into problems, folding the noise of union alternatives."""
        cleaned = [
            (*_clean_loc(self.document.data, error["loc"], error["type"] == "missing"), error)
            for error in errors
        ]
        by_site: dict[KeyPath, list[tuple[KeyPath, ErrorDetails]]] = {}
        for path, site, error in cleaned:
            if site is not None:
                by_site.setdefault(site, []).append((path, error))
        for path, site, error in cleaned:
            if site is None:
                self._add_shape(path, error)
        for site, alternatives in by_site.items():
            # A union (a workflow entry is a step id or a list of ids): a "wrong type" error at
            # the site only means "this alternative did not apply" when another one explains more.
            specific = [
                (path, error)
                for path, error in alternatives
                if not (path == site and error["type"].endswith("_type"))
            ]
            if specific:
                for path, error in specific:
                    self._add_shape(path, error)
            else:
                expected = " or ".join(
                    str(error["msg"]).removeprefix("Input should be ") for _, error in alternatives
                )
                if len(site) == 4 and site[0] == "workflows" and site[2] == "steps":
                    expected = "a step id or a list of step ids (run concurrently)"
                got = type(alternatives[0][1]["input"]).__name__
                self.add("job.wrong_type", f"should be {expected} (got {got})", site)

    def _add_shape(self, path: KeyPath, error: ErrorDetails) -> None:
        kind = error["type"]
        ctx = error.get("ctx") or {}
        value = error.get("input")
        code = _SHAPE_CODES.get(kind)
        message = str(error["msg"])
        if kind == "missing":
            message = "required key is missing"
        elif kind == "extra_forbidden":
            message = f"unknown key {path[-1]!r}{_allowed_keys_hint(path)}"
        elif kind == "string_pattern_mismatch":
            message = f"{value!r} does not match the pattern {ctx.get('pattern')}"
            if ctx.get("pattern") == r"^[a-z][a-z0-9_]*$":
                message += " (lowercase letters, digits and underscores, starting with a letter)"
        elif kind in ("string_too_short", "too_short") and ctx.get("min_length") == 1:
            message = "must not be empty"
        elif kind == "string_too_long" and isinstance(value, str):
            message = f"is {len(value)} characters long; at most {ctx.get('max_length')} allowed"
        elif code is None and (kind.endswith(("_type", "_parsing")) or kind == "model_attributes"):
            code = "job.wrong_type"
            message = f"{message} (got {type(value).__name__})"
        self.add(code or "job.invalid_value", message, path)

    def _step_at(self, path: KeyPath) -> str | None:
        if len(path) >= 2 and path[0] == "steps" and isinstance(path[1], int):
            if 0 <= path[1] < len(self._step_ids):
                return self._step_ids[path[1]] or f"#{path[1]}"
            return f"#{path[1]}"
        return None


def _clean_loc(
    data: Any, loc: tuple[int | str, ...], missing: bool
) -> tuple[KeyPath, KeyPath | None]:
    """The key path of a pydantic error location, and where a union alternative was tried.

    Pydantic inserts the name of each union alternative (`'constrained-str'`,
    `'list[constrained-str]'`) into the location; walking the data tells them apart from keys.
    """
    node: Any = data
    path: list[str | int] = []
    site: KeyPath | None = None
    for position, part in enumerate(loc):
        in_list = isinstance(part, int) and isinstance(node, list) and 0 <= part < len(node)
        if in_list or (isinstance(node, dict) and part in node):
            path.append(part)
            node = node[part]
        elif missing and isinstance(node, dict) and position == len(loc) - 1:
            path.append(part)  # the missing key
            node = None
        elif part == "[key]":
            continue  # the problem is the mapping key itself, already the last path element
        elif site is None:
            site = tuple(path)
    return tuple(path), site


def _model_at(path: KeyPath) -> type[BaseModel] | None:
    """The model that validates the object at `path` (for listing its allowed keys)."""
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


def _allowed_keys_hint(path: KeyPath) -> str:
    model = _model_at(path[:-1])
    if model is None:
        return ""
    allowed = list(model.model_fields)
    close = difflib.get_close_matches(str(path[-1]), allowed, n=1)
    suggestion = f"; did you mean {close[0]!r}?" if close else ""
    return f" (allowed here: {', '.join(allowed)}){suggestion}"


def _dotted(path: KeyPath) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


# --- semantic checks -------------------------------------------------------------------------

_M = TypeVar("_M", bound=BaseModel)


def _salvage(data: dict[str, Any], key: str, model: type[_M]) -> list[tuple[int, _M]]:
    """The items of `data[key]` that are valid on their own, so semantic checks still run."""
    items = data.get(key)
    valid: list[tuple[int, _M]] = []
    for index, raw in enumerate(items if isinstance(items, list) else []):
        try:
            valid.append((index, model.model_validate(raw)))
        except ValidationError:
            continue
    return valid


def _raw_step_ids(data: dict[str, Any]) -> set[str]:
    """Every step id written in the file, also of steps whose shape is invalid."""
    steps = data.get("steps")
    if not isinstance(steps, list):
        return set()
    return {s["id"] for s in steps if isinstance(s, dict) and isinstance(s.get("id"), str)}


def _step_file_refs(step: Step, base: KeyPath) -> list[tuple[str, KeyPath]]:
    """Every job-relative file a step names, with its key path."""
    refs: list[tuple[str, KeyPath]] = [(step.instructions_file, (*base, "instructions_file"))]
    actions: list[tuple[HookAction, KeyPath]] = [
        (action, (*base, "hooks", event, position))
        for event in HOOK_EVENTS
        for position, action in enumerate(getattr(step.hooks, event, None) or [])
    ]
    actions.extend(
        (action, (*base, "stop_hooks", position)) for position, action in enumerate(step.stop_hooks)
    )
    for action, path in actions:
        if action.prompt_file is not None:
            refs.append((action.prompt_file, (*path, "prompt_file")))
        if action.script is not None:
            refs.append((action.script, (*path, "script")))
    return refs


def _check_semantics(
    report: _Report,
    steps: list[tuple[int, Step]],
    workflows: list[tuple[int, Workflow]],
    data: dict[str, Any],
    job_dir: Path,
) -> None:
    known_ids = _raw_step_ids(data)
    raw_steps = data.get("steps")
    seen_ids: set[str] = set()
    for position, raw in enumerate(raw_steps if isinstance(raw_steps, list) else []):
        if isinstance(raw, dict) and isinstance(raw.get("id"), str):
            if raw["id"] in seen_ids:
                report.add(
                    "job.duplicate_step_id",
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
        _check_step(report, step, step_index[step_id], by_id, known_ids, job_dir)
    _check_cycles(report, by_id, step_index)
    _check_workflows(report, workflows, by_id, known_ids)

    listed = {step_id for _, workflow in workflows for step_id in workflow.step_ids}
    for step_id, index in step_index.items():
        if step_id not in listed:
            report.add(
                "job.unreachable_step",
                "the step is in no workflow, so agents cannot run it through MCP",
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
    resolved_job_dir = job_dir.resolve()
    for value, path in _step_file_refs(step, base):
        try:
            resolve_inside(resolved_job_dir, value, what=_dotted(path))
        except PathOutsideProjectError:
            report.add(
                "job.path_outside_job",
                f"{value!r} points outside the job folder; paths are relative to the job folder",
                path,
            )

    for position, dependency in enumerate(step.dependencies):
        path = (*base, "dependencies", position)
        if dependency == step.id:
            report.add("job.dependency_cycle", "a step cannot depend on itself", path)
        elif dependency not in known_ids:
            report.add(
                "job.unknown_dependency",
                f"depends on {dependency!r}, which is not a step of this job",
                path,
            )

    for position, item in enumerate(step.inputs):
        if item.from_step is None:
            continue
        path = (*base, "inputs", position, "from_step")
        source_id = item.from_step
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


def _check_cycles(report: _Report, by_id: dict[str, Step], step_index: dict[str, int]) -> None:
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
                        "job.dependency_cycle",
                        f"circular dependency: {' -> '.join(cycle)}",
                        ("steps", step_index[current], "dependencies"),
                    )
                continue
            trail.append(dependency)
            on_trail.add(dependency)
            pending.append(list(by_id[dependency].dependencies))


def _check_workflows(
    report: _Report,
    workflows: list[tuple[int, Workflow]],
    by_id: dict[str, Step],
    known_ids: set[str],
) -> None:
    seen_names: set[str] = set()
    for index, workflow in workflows:
        base: KeyPath = ("workflows", index)
        if workflow.name in seen_names:
            report.add(
                "job.duplicate_workflow",
                f"workflow name {workflow.name!r} is used by more than one workflow",
                (*base, "name"),
            )
            continue
        seen_names.add(workflow.name)

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
                        "job.unknown_workflow_step",
                        f"workflow {workflow.name!r} names step {step_id!r}, which does not exist",
                        member_path,
                    )
                    continue
                if step_id in position_of:
                    report.add(
                        "job.duplicate_workflow_step",
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
                            "job.duplicate_group_output",
                            f"steps {other!r} and {step_id!r} run concurrently in workflow "
                            f"{workflow.name!r} and both declare output {output_name!r}; "
                            "output names must be unique in a concurrent group",
                            member_path,
                        )

        for step_id, entry_position in position_of.items():
            step = by_id.get(step_id)
            if step is None:
                continue
            for dependency in step.dependencies:
                dep_position = position_of.get(dependency)
                if dep_position is not None and dep_position >= entry_position:
                    order = "together with" if dep_position == entry_position else "before"
                    report.add(
                        "job.workflow_order",
                        f"workflow {workflow.name!r} runs {step_id!r} {order} "
                        f"{dependency!r}, which it depends on",
                        (*base, "steps", entry_position),
                    )
