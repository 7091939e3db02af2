"""`deepwork jobs new NAME`: scaffold a job folder that validates at once."""

from __future__ import annotations

from pathlib import Path

import click
from deepwork_core import DeepWorkError
from deepwork_core.base.layout import PROJECT_JOBS_DIR
from deepwork_core.jobs.scaffold import scaffold_job

from deepwork_mcp.cli.options import cli_error


@click.command("new")
@click.argument("name")
@click.option(
    "--path",
    "project_root",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    help="Project root; the job goes to <path>/.deepwork/jobs/NAME.",
)
@click.option(
    "--summary", default=None, help="One-line summary of the job (at most 200 characters)."
)
def new(name: str, project_root: Path, summary: str | None) -> None:
    """Create a new job NAME with one step, its instructions and a workflow."""
    try:
        job_dir = scaffold_job(project_root / PROJECT_JOBS_DIR, name, summary=summary)
    except DeepWorkError as exc:
        raise cli_error(exc) from None
    click.echo(f"Created {job_dir}")
    click.echo(
        "Edit job.yml and steps/first_step.md, then check with `deepwork jobs validate`. "
        "For a guided design, run the deepwork_jobs new_job workflow through your agent."
    )
