"""The mechanical check of a `job.yml` that a `deepwork_jobs` step submits (docs/quality-gate.md).

Before any reviewer is asked, every `job.yml` among the file outputs of a checkpoint of the
`deepwork_jobs` job is validated exactly as `deepwork jobs validate` does, run from the project
root. Any problem, warning included, comes back as `needs_work` with one
`file:line: code: message` line per problem, the lines the command prints; no review runs and no
attempt is counted. The steps that write a job before its instruction files exist (`define`,
`record`) are not held to the files the job names: the next step writes them.

The entry point is `submitted_job_feedback`; the engine calls it once per real or dry-run
checkpoint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from deepwork_core.base.errors import Problem, Severity
from deepwork_core.base.escaping import printable
from deepwork_core.base.layout import JOB_FILE
from deepwork_core.jobs.model import Step
from deepwork_core.jobs.parser import check_job_files, parse_job_dir
from deepwork_core.state.sessions import OutputValue

#: The job whose submitted `job.yml` outputs are checked.
JOBS_JOB = "deepwork_jobs"
#: Steps of `JOBS_JOB` that write a job.yml before the files it names exist.
BEFORE_INSTRUCTION_FILES = frozenset({"define", "record"})


def problem_line(problem: Problem, base: Path) -> str:
    """`file:line: [warning: ]code: message`, the file relative to `base` when inside it.

    The one spelling of a job problem: `deepwork jobs validate` prints it (with the working
    directory as `base`) and the checkpoint answers it (with the project root).
    """
    location = "<unknown>"
    if problem.file is not None:
        try:
            location = str(problem.file.relative_to(base))
        except ValueError:
            location = str(problem.file)
    if problem.line is not None:
        location = f"{location}:{problem.line}"
    marker = "warning: " if problem.severity is Severity.WARNING else ""
    return printable(f"{location}: {marker}{problem.code}: {problem.message}")


def submitted_job_feedback(
    project_root: Path,
    job_name: str,
    steps: Sequence[Step],
    outputs: Mapping[str, OutputValue],
) -> str | None:
    """The `needs_work` feedback for the invalid job.yml files among `outputs`; None when valid.

    `outputs` are the checkpoint's validated outputs (project-relative paths for file outputs).
    Only checkpoints of the `deepwork_jobs` job are checked.
    """
    if job_name != JOBS_JOB:
        return None
    root = project_root.resolve()
    with_files = not any(step.id in BEFORE_INSTRUCTION_FILES for step in steps)
    lines = [
        problem_line(problem, root)
        for job_file in _submitted_job_files(steps, outputs)
        for problem in _problems(root / job_file, with_files=with_files)
    ]
    if not lines:
        return None
    return (
        "The submitted job.yml does not validate; no review ran and no attempt was counted. "
        "Fix every problem below (as `deepwork jobs validate` prints them), then call "
        "finished_step again with the same outputs:\n" + "\n".join(lines)
    )


def _submitted_job_files(steps: Sequence[Step], outputs: Mapping[str, OutputValue]) -> list[str]:
    """The project-relative `job.yml` paths among the file outputs, each once, in order."""
    found: list[str] = []
    for step in steps:
        for name, spec in step.outputs.items():
            value = outputs.get(name)
            if value is None or not spec.type.is_file:
                continue
            for path in [value] if isinstance(value, str) else value:
                if Path(path).name == JOB_FILE and path not in found:
                    found.append(path)
    return found


def _problems(job_file: Path, *, with_files: bool) -> list[Problem]:
    folder = job_file.parent
    parsed = parse_job_dir(folder, expected_name=folder.name)
    problems = [*parsed.problems, *(check_job_files(parsed) if with_files else [])]
    return sorted(problems, key=lambda p: p.line or 0)
