"""`deepwork jobs add NAME`: copy a job of the DeepWork library into a project;
`deepwork jobs add --list`: the library, one line per job (its name and summary).

The library (docs/job-library.md) ships inside this package as `deepwork_mcp/library_jobs/`, a
copy of the repository's `library/jobs/` kept identical by `tools/copy_library.py`, so the
command works from an installed wheel as well as from a clone. The job lands in
`<path>/.deepwork/jobs/NAME/`; an existing folder of that name is replaced only with `--force`.
"""

from __future__ import annotations

import shutil
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

import click
from deepwork_core import DeepWorkError
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.escaping import printable
from deepwork_core.base.layout import JOB_FILE, PROJECT_JOBS_DIR
from deepwork_core.base.yamlio import parse_yaml

from deepwork_mcp.cli.options import cli_error

#: The folder of this package that holds the library jobs.
LIBRARY_PACKAGE_DIR = "library_jobs"


class LibraryJobUnknownError(DeepWorkError):
    """No job of that name is in the library; the message lists the ones that are."""

    code = ErrorCode.LIBRARY_UNKNOWN_JOB
    agent_fixable = True


class LibraryJobExistsError(DeepWorkError):
    """The project already has a job folder of that name; nothing was written."""

    code = ErrorCode.LIBRARY_JOB_EXISTS
    agent_fixable = True


def library_root() -> Traversable:
    """The packaged library folder (one sub-folder per job)."""
    return files("deepwork_mcp").joinpath(LIBRARY_PACKAGE_DIR)


def library_job_names() -> list[str]:
    """The names of the library's jobs, sorted."""
    return sorted(
        entry.name
        for entry in library_root().iterdir()
        if entry.is_dir() and entry.joinpath(JOB_FILE).is_file()
    )


def library_listing() -> list[str]:
    """One line per library job: its name, then its `summary` (escaped for the terminal)."""
    lines = []
    for name in library_job_names():
        raw = library_root().joinpath(name, JOB_FILE).read_text(encoding="utf-8")
        data = parse_yaml(raw).data
        summary = data.get("summary") if isinstance(data, dict) else None
        text = " ".join(str(summary).split()) if summary else "(no summary)"
        lines.append(printable(f"{name:<24} {text}"))
    return lines


def _copy_tree(source: Traversable, target: Path) -> int:
    """Copy every file under `source` to `target`, byte for byte; the number of files."""
    target.mkdir(parents=True, exist_ok=True)
    copied = 0
    for entry in sorted(source.iterdir(), key=lambda item: item.name):
        if entry.is_dir():
            copied += _copy_tree(entry, target / entry.name)
        elif entry.is_file():
            (target / entry.name).write_bytes(entry.read_bytes())
            copied += 1
    return copied


def add_library_job(project_root: Path, name: str, *, force: bool = False) -> Path:
    """Copy library job `name` into `project_root/.deepwork/jobs/name`; its folder.

    Raises `LibraryJobUnknownError` for a name the library does not have and
    `LibraryJobExistsError` when the folder exists and `force` is false; both before any write.
    """
    available = library_job_names()
    if name not in available:
        raise LibraryJobUnknownError(
            f"the library has no job {name!r}; available: {', '.join(available)}"
        )
    job_dir = project_root / PROJECT_JOBS_DIR / name
    if job_dir.exists() or job_dir.is_symlink():
        if not force:
            raise LibraryJobExistsError(
                f"{job_dir} already exists; nothing was changed (--force replaces it with the "
                "library's version, losing your edits to it)"
            )
        if job_dir.is_symlink() or not job_dir.is_dir():
            job_dir.unlink()
        else:
            shutil.rmtree(job_dir)
    _copy_tree(library_root().joinpath(name), job_dir)
    return job_dir


@click.command("add")
@click.argument("name", required=False)
@click.option("--list", "list_only", is_flag=True, help="List the library's jobs and add none.")
@click.option(
    "--path",
    "project_root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    help="Project root (an existing folder); the job goes to <path>/.deepwork/jobs/NAME.",
)
@click.option(
    "--force", is_flag=True, help="Replace an existing .deepwork/jobs/NAME (your edits are lost)."
)
def add(name: str | None, project_root: Path, force: bool, list_only: bool) -> None:
    """Copy the library job NAME into the project's .deepwork/jobs/ (docs/job-library.md).

    With --list, print the library instead: one line per job, its name and summary.
    """
    if list_only:
        for line in library_listing():
            click.echo(line)
        return
    if name is None:
        raise click.UsageError("give a library job NAME, or --list to see them")
    try:
        job_dir = add_library_job(project_root, name, force=force)
    except DeepWorkError as exc:
        raise cli_error(exc) from None
    click.echo(f"Added {name} to {job_dir}")
    click.echo(
        f"Check it with `deepwork jobs validate {job_dir}`; read its README.md for how to run it. "
        "The copy is yours to adapt."
    )
