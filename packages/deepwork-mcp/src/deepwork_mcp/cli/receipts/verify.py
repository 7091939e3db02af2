"""`deepwork verify`: check the receipts of a change against the base ref (docs/verify.md).

Exit 0 when every check holds, 1 when one fails (each failure printed as a finding with its
code), 2 on a usage error. It opens no store and uses no network.
"""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import click

from deepwork_mcp.cli.options import project_option


@click.command()
@project_option
@click.option(
    "--base",
    metavar="REF",
    help="The ref whose keys and policy are trusted, and the change is measured from "
    "(default: origin/HEAD, else main, else master).",
)
@click.option(
    "--all", "everything", is_flag=True, help="Check every receipt, not only the change's."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "github"]),
    default="text",
    show_default=True,
    help="text for people, json one finding per line, github annotations.",
)
def verify_command(project: Path, base: str | None, everything: bool, fmt: str) -> None:
    """Check the receipts the change adds or touches: signatures by keys trusted on the base
    ref, outputs and job definition unchanged since the run, and the base ref's policy."""
    from deepwork_core.receipts.findings import OutputFormat, render_findings
    from deepwork_core.receipts.verify import verify as run_verify

    chosen: OutputFormat = next(f for f in get_args(OutputFormat) if f == fmt)
    report = run_verify(project.resolve(), base, everything=everything)
    text = render_findings(report.findings, len(report.receipts), chosen)
    click.echo(text, nl=False)
    raise SystemExit(0 if report.passed else 1)
