"""Creating a new job folder that validates at once (`deepwork jobs new`).

The skeleton comes from the `deepwork_jobs` standard job's templates, the same files the
`new_job` workflow shows agents, so there is one skeleton to maintain. Placeholders are written
`{{name}}` and filled by plain substitution (core does not use a template engine).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError
from deepwork_core.base.identifiers import check_name
from deepwork_core.base.layout import JOB_FILE
from deepwork_core.base.yamlio import parse_yaml
from deepwork_core.jobs.discovery import STANDARD_JOBS_DIR
from deepwork_core.jobs.errors import JobCode, JobInvalidError
from deepwork_core.jobs.parser import parse_job_document, summarize

TEMPLATES_DIR = STANDARD_JOBS_DIR / "deepwork_jobs" / "templates"
JOB_TEMPLATE = TEMPLATES_DIR / "job.yml.template"
STEP_TEMPLATE = TEMPLATES_DIR / "step_instruction.md.template"


class JobExistsError(DeepWorkError):
    """The folder for a new job is already there; scaffolding never overwrites."""

    code = JobCode.JOB_ALREADY_EXISTS
    agent_fixable = True


def scaffold_job(
    jobs_dir: Path,
    name: str,
    *,
    summary: str | None = None,
    step_id: str = "first_step",
) -> Path:
    """Create `jobs_dir/name/` with `job.yml`, one step, its instructions and a workflow.

    The workflow is named like the job. Raises `identifier.invalid` for a bad job or step name,
    `job.already_exists` when the folder exists, and `job.invalid` when the given texts would
    not make a valid job (for example a summary over 200 characters); nothing is written then.
    Returns the new job folder.
    """
    check_name(name, kind="job name")
    check_name(step_id, kind="step id")
    job_dir = jobs_dir / name
    if job_dir.exists():
        raise JobExistsError(f"{job_dir} already exists; choose another name or edit that job")

    values = {
        "job_name": name,
        # JSON strings are valid YAML double-quoted scalars: any text stays one safe value.
        "summary": json.dumps(
            summary if summary is not None else f"Describe in one line what {name} produces",
            ensure_ascii=False,
        ),
        "step_id": step_id,
        "step_name": step_id.replace("_", " ").capitalize(),
    }
    job_text = _fill(JOB_TEMPLATE, values)
    step_text = _fill(STEP_TEMPLATE, values)

    parsed = parse_job_document(parse_yaml(job_text), job_dir=job_dir, expected_name=name)
    if parsed.problems:
        raise JobInvalidError(
            f"the new job would not be valid: {summarize(parsed.problems)}", parsed.problems
        )

    jobs_dir.mkdir(parents=True, exist_ok=True)
    try:
        job_dir.mkdir()
    except FileExistsError as exc:  # created by someone else since the check above
        raise JobExistsError(f"{job_dir} already exists; choose another name") from exc
    try:
        (job_dir / JOB_FILE).write_text(job_text, encoding="utf-8")
        instructions = job_dir / "steps" / f"{step_id}.md"
        instructions.parent.mkdir()
        instructions.write_text(step_text, encoding="utf-8")
    except BaseException:
        shutil.rmtree(job_dir, ignore_errors=True)  # never leave a half-made job behind
        raise
    return job_dir


def _fill(template: Path, values: dict[str, str]) -> str:
    text = template.read_text(encoding="utf-8")
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    if "{{" in text:  # a template gained a placeholder this module does not know
        raise DeepWorkError(
            f"{template} has an unknown placeholder", code=ErrorCode.SCAFFOLD_TEMPLATE
        )
    return text
