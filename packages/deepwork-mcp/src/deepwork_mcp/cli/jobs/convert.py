"""`deepwork jobs convert JOB --to 0.9|0.10`: write a job in the other `job.yml` format.

`--to 0.14` is still accepted, unlisted, as the older spelling of `--to 0.10`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from deepwork_core import DeepWorkError, parse_job_dir
from deepwork_core.base.layout import JOB_FILE, PROJECT_JOBS_DIR
from deepwork_core.jobs.errors import JobCode
from deepwork_core.jobs.formats.convert import convert_job, write_conversion
from deepwork_core.jobs.parser import JobFormat

from deepwork_mcp.cli.options import cli_error, project_option

#: Older spellings of a format, accepted by `--to` but not listed in `--help`.
FORMAT_ALIASES = {"0.14": "0.10"}


class _FormatChoice(click.Choice[str]):
    """`0.9` or `0.10`; an alias of FORMAT_ALIASES is read as the format it names."""

    def __init__(self) -> None:
        super().__init__(["0.9", "0.10"])

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        return str(super().convert(FORMAT_ALIASES.get(value, value), param, ctx))


@click.command("convert")
@click.argument("job")
@click.option(
    "--to",
    "target",
    type=_FormatChoice(),
    required=True,
    help="The format to write: the 0.9 format, or the 0.10 format (DeepWork 0.10 to 0.14).",
)
@click.option(
    "--in-place",
    is_flag=True,
    help="Replace job.yml (the original is kept as job.yml.<format>.bak).",
)
@project_option
def convert(job: str, target: str, in_place: bool, project: Path) -> None:
    """Convert JOB (a job folder, its job.yml, or a job name) to the other format.

    Without --in-place the result is written next to the job as job.converted-<format>.yml.
    Each construct the target format cannot express is named in a warning.
    """
    job_dir = _job_dir(job, project)
    fmt: JobFormat = "0.10" if target == "0.10" else "0.9"
    try:
        conversion = convert_job(parse_job_dir(job_dir), fmt)
        written = write_conversion(job_dir, conversion, in_place=in_place)
    except DeepWorkError as exc:
        raise cli_error(exc) from exc
    for warning in conversion.warnings:
        click.echo(f"warning: {warning}", err=True)
    for path in written:
        click.echo(f"wrote {path}")
    click.echo(
        f"{len(conversion.warnings)} construct(s) could not be carried over exactly.", err=True
    )


def _job_dir(job: str, project: Path) -> Path:
    candidate = Path(job)
    if candidate.name == JOB_FILE and candidate.is_file():
        return candidate.parent.resolve()
    if (candidate / JOB_FILE).is_file():
        return candidate.resolve()
    named = project.resolve() / PROJECT_JOBS_DIR / job
    if (named / JOB_FILE).is_file():
        return named
    raise click.ClickException(f"{JobCode.JOB_NOT_FOUND}: no {JOB_FILE} at {candidate} or {named}")
