"""Reading `job.yml` in either format, with every check of docs/job-format.md.

`parse_job_dir()` tells the format by its shape (`step_arguments`, or `workflows` as a mapping,
mean the 0.10 format), never stops at the first problem, and reports every shape error (from the
pydantic models) and every semantic error it can still check, each with file, line, step and key.
Both formats end in the same `JobDefinition`. Codes are stable (tests and tools match on them):

shape — `job.missing_key`, `job.unknown_key`, `job.wrong_type`, `job.pattern_mismatch`,
`job.too_short`, `job.too_long`, `job.invalid_value`, `job.invalid_input`,
`job.invalid_hook_action`, `job.invalid_step_body`;
semantics — see `deepwork_core.jobs.checks` (both formats) and `deepwork_core.jobs.formats.v010`
(the 0.10 format), and `job.name_mismatch`; files (`check_job_files`) — `job.file_missing`;
reading — `yaml.*` (see `deepwork_core.base.yamlio`), `yaml.empty`, `yaml.not_mapping`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import Problem, Severity, YamlError
from deepwork_core.base.layout import JOB_FILE
from deepwork_core.base.yamlio import KeyPath, YamlDocument, parse_yaml, read_limited
from deepwork_core.jobs.checks import check_fan_out, check_semantics, salvage, step_file_refs
from deepwork_core.jobs.errors import JobCode, JobInvalidError
from deepwork_core.jobs.formats import v09
from deepwork_core.jobs.formats.v010 import read_v010
from deepwork_core.jobs.formats.v010_model import is_v010_shape
from deepwork_core.jobs.model import JobDefinition, Step, Workflow
from deepwork_core.jobs.report import JobReport

JobFormat = Literal["0.9", "0.10"]


@dataclass(frozen=True)
class ParsedJob:
    """The outcome of reading one job folder: a definition when it is valid, and the findings."""

    job_dir: Path
    definition: JobDefinition | None
    problems: tuple[Problem, ...] = field(default=())
    #: Line of each key path of job.yml: empty when the YAML could not be read, and in the
    #: jobs the catalog keeps (see `without_lines`; every problem already carries its line).
    lines: Mapping[KeyPath, int] = field(default_factory=dict, repr=False, compare=False)
    #: Which file format the job is written in.
    format: JobFormat = "0.9"
    #: Step id -> key path of the step in job.yml, for jobs whose steps are not `steps[i]`.
    origins: Mapping[str, KeyPath] = field(default_factory=dict, repr=False, compare=False)

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
    job_file = job_dir / JOB_FILE
    data = document.data
    if data is None or not isinstance(data, dict):
        report = JobReport(job_file, document)
        if data is None:
            report.add(ErrorCode.YAML_EMPTY, "job.yml is empty", ())
        else:
            kind = type(data).__name__
            report.add(
                ErrorCode.YAML_NOT_MAPPING, f"the top level must be a mapping, not {kind}", ()
            )
        return ParsedJob(job_dir, None, tuple(report.problems), document.lines)

    job_format: JobFormat = "0.10" if is_v010_shape(data) else "0.9"
    origins: Mapping[str, KeyPath] = {}
    if job_format == "0.10":
        report, definition, origins = read_v010(document, job_file)
    else:
        report, definition = _read_v09(document, data, job_dir)

    if definition is not None:
        check_fan_out(report, definition, origins)
    name = data.get("name")
    if expected_name is not None and isinstance(name, str) and name != expected_name:
        report.add(
            JobCode.JOB_NAME_MISMATCH,
            f"{name!r} differs from the folder name {expected_name!r}; they must be equal",
            ("name",),
        )
    return ParsedJob(
        job_dir,
        None if report.has_errors else definition,
        tuple(report.problems),
        document.lines,
        job_format,
        origins,
    )


def _read_v09(
    document: YamlDocument, data: dict[str, Any], job_dir: Path
) -> tuple[JobReport, JobDefinition | None]:
    report = JobReport(job_dir / JOB_FILE, document, allowed_keys=v09.allowed_keys_v09)
    for code, message, path in v09.check_v09_subset(data):
        report.add(code, message, path)
    job: v09.JobFileV09 | None = None
    try:
        job = v09.JobFileV09.model_validate(data)
    except ValidationError as exc:
        report.add_validation_errors(exc.errors(include_url=False))
    steps: list[tuple[int, Step]]
    if job is not None:
        steps = list(enumerate(job.steps))
        workflows = list(enumerate(job.workflows))
    else:
        steps = list(salvage(data, "steps", v09.StepV09))
        workflows = salvage(data, "workflows", Workflow)
        # `check_job_files` runs on a valid job only: name the missing files here too.
        for index, step in steps:
            for value, path in step_file_refs(step, ("steps", index)):
                if not (job_dir / value).is_file():
                    message = f"file {value!r} does not exist in {job_dir}"
                    report.add(JobCode.JOB_FILE_MISSING, message, path)
    check_semantics(report, steps, workflows, data, job_dir)
    return report, None if job is None else v09.to_definition(job)


def check_job_files(parsed: ParsedJob) -> list[Problem]:
    """Problems with the files a valid job refers to (instruction and hook files must exist)."""
    definition = parsed.definition
    if definition is None:
        return []
    missing = _missing_files(parsed, definition.steps)
    if not missing:
        return []
    if parsed.format == "0.10":  # steps are named from the file's data: read it again
        document = _document_of(parsed.job_file)
    elif any("hooks" in path for _, path in missing):
        # A 0.9 step's `stop_hooks` are among its hooks in the model: name them as the file does.
        document = _document_of(parsed.job_file)
        missing = _missing_files(parsed, v09.file_steps(document.data) or definition.steps)
    else:
        document = YamlDocument(None, parsed.lines or _document_of(parsed.job_file).lines)
    report = JobReport(parsed.job_file, document, step_ids=[s.id for s in definition.steps])
    for value, path in missing:
        report.add(
            JobCode.JOB_FILE_MISSING, f"file {value!r} does not exist in {parsed.job_dir}", path
        )
    return report.problems


def _missing_files(parsed: ParsedJob, steps: Sequence[Step]) -> list[tuple[str, KeyPath]]:
    """Each job-relative file the steps name that does not exist, with its key path."""
    return [
        (value, path)
        for index, step in enumerate(steps)
        for value, path in step_file_refs(step, parsed.origins.get(step.id, ("steps", index)))
        if not (parsed.job_dir / value).is_file()
    ]


def _document_of(job_file: Path) -> YamlDocument:
    """`job_file` read again (empty if it no longer parses)."""
    try:
        return parse_yaml(read_limited(job_file))
    except YamlError:
        return YamlDocument(None, {})


def format_problems(problems: Iterable[Problem]) -> str:
    """One `file:line: code: message` line per problem."""
    return "\n".join(str(problem) for problem in problems)


def load_job(job_dir: Path, *, expected_name: str | None = None) -> JobDefinition:
    """Parse and return a valid definition, or raise `JobInvalidError` with every error."""
    return parse_job_dir(job_dir, expected_name=expected_name).require()
