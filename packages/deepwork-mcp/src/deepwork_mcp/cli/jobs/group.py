"""`deepwork jobs …`: list and validate the jobs of a project.

The only layer that reads flags, `DEEPWORK_ADDITIONAL_JOBS_FOLDERS` and the working directory;
everything it calls in `deepwork_core` takes explicit arguments. Names, paths, summaries and
messages read from job folders are shown escaped (docs/security.md).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import click
from deepwork_core import JobCatalog, parse_job_dir
from deepwork_core.base.errors import Problem, Severity
from deepwork_core.base.escaping import indented, printable
from deepwork_core.base.layout import JOB_FILE, PROJECT_JOBS_DIR
from deepwork_core.gate.job_check import problem_line
from deepwork_core.jobs.discovery import JobFolder, parse_folder_list
from deepwork_core.jobs.errors import JobCode
from deepwork_core.jobs.parser import ParsedJob, check_job_files

from deepwork_mcp.cli.jobs.add import add
from deepwork_mcp.cli.jobs.convert import convert
from deepwork_mcp.cli.jobs.graph import graph
from deepwork_mcp.cli.jobs.new import new
from deepwork_mcp.cli.options import CommandGroup, project_option

ADDITIONAL_FOLDERS_ENV = "DEEPWORK_ADDITIONAL_JOBS_FOLDERS"


@click.group(cls=CommandGroup)
def jobs() -> None:
    """DeepWork jobs: list, validate, new, add (from the library), graph, convert."""


@jobs.command("list")
@project_option
def list_jobs(project: Path) -> None:
    """Every job with its workflows and the folder it came from, then load errors.

    Exits with status 1 when any job could not be loaded (its agent could not start it).
    """
    project = project.resolve()
    additional = [p.expanduser().resolve() for p in parse_folder_list(_env_folders())]
    # A one-shot command: keep every definition, so each job is parsed once.
    catalog = JobCatalog.for_project(project, additional, keep=None)
    scan = catalog.scan()
    if not scan.jobs and not scan.errors:
        click.echo(f"No jobs found (searched: {_searched(catalog.folders)}).")
        return
    for listed in scan.jobs:
        job = catalog.get(listed.name)
        definition = job.definition
        version = definition.version or "(0.10 format)"
        click.echo(printable(f"{job.name} {version}  [{job.source.kind.value}] {job.job_dir}"))
        click.echo(indented(definition.summary, "  "))
        if not definition.workflows:
            click.echo("  (no workflows: its steps cannot be started through MCP)")
        for workflow in definition.workflows:
            order = " -> ".join(
                entry[0] if len(entry) == 1 else "[" + ", ".join(entry) + "]"
                for entry in workflow.entries
            )
            click.echo(printable(f"  workflow {workflow.name}: {workflow.summary}"))
            click.echo(printable(f"    steps: {order}"))
    if scan.errors:
        click.echo("")
        click.echo(f"Load errors ({len(scan.errors)}):")
        for error in scan.errors:
            kind = _kind_of(error.job_dir, catalog.folders)
            click.echo(printable(f"  {error.job_name}  [{kind}] {error.job_dir}"))
            click.echo(indented(error.error, "    "))
        click.echo(
            f"{len(scan.errors)} job(s) could not be loaded; `deepwork jobs validate` names "
            "each problem by file and line.",
            err=True,
        )
        raise click.exceptions.Exit(1)


@jobs.command("validate")
@click.argument(
    "job_paths",
    metavar="[PATH]...",
    nargs=-1,
    type=click.Path(path_type=Path),
)
@project_option
def validate(job_paths: tuple[Path, ...], project: Path) -> None:
    """Validate job folders (default: every job in the project's .deepwork/jobs/).

    Prints each problem as `file:line: code: message`, warnings marked as such, and exits with
    status 1 when there is any error.
    """
    if job_paths:
        folders = [path.parent if path.name == JOB_FILE else path for path in job_paths]
    else:
        jobs_dir = project.resolve() / PROJECT_JOBS_DIR
        folders = sorted(p.parent for p in jobs_dir.glob(f"*/{JOB_FILE}") if p.is_file())
        if not folders:
            click.echo(f"No jobs in {jobs_dir}.")
            return
    errors = warnings = 0
    for folder in folders:
        # In file order, so the output reads top to bottom like the file.
        problems = sorted(_validate_folder(folder.resolve()), key=lambda p: p.line or 0)
        for problem in problems:
            click.echo(_format(problem))
        errors += sum(p.severity is Severity.ERROR for p in problems)
        warnings += sum(p.severity is Severity.WARNING for p in problems)
    click.echo(
        f"{len(folders)} job(s) checked: {errors} error(s), {warnings} warning(s).",
        err=True,
    )
    if errors:
        raise click.exceptions.Exit(1)


jobs.add_command(new)
jobs.add_command(add)
jobs.add_command(graph)
jobs.add_command(convert)


def _validate_folder(folder: Path) -> list[Problem]:
    if not (folder / JOB_FILE).is_file():
        return [
            Problem(
                JobCode.JOB_NOT_FOUND,
                f"no {JOB_FILE} in {folder}; give a job folder",
                folder / JOB_FILE,
            )
        ]
    parsed: ParsedJob = parse_job_dir(folder, expected_name=folder.name)
    return [*parsed.problems, *check_job_files(parsed)]


def _format(problem: Problem) -> str:
    """`file:line: code: message` with the file relative to the working directory if inside."""
    return problem_line(problem, Path.cwd())


def _env_folders() -> str | None:
    return os.environ.get(ADDITIONAL_FOLDERS_ENV)


def _kind_of(job_dir: Path, folders: Iterable[JobFolder]) -> str:
    for folder in folders:
        if job_dir.parent == folder.path:
            return folder.kind.value
    return "?"


def _searched(folders: Iterable[JobFolder]) -> str:
    return ", ".join(str(folder.path) for folder in folders)
