"""`deepwork verify`: check the receipts of a change against the base ref (docs/verify.md).

Exit 0 when every check holds, 1 when one fails (each failure printed as a finding with its
code), 2 on a usage error: an unknown option or format, `--runner` or `--verdict-cache` without
`--rereview`, or `--rereview` without a valid CI key in `DEEPWORK_CI_KEY`. It opens no store and,
without `--rereview`, uses no network; `--rereview` runs the reviewer CLI of `--runner` on each
review whose verdict the CI-signed entries of `--verdict-cache` do not already hold.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, get_args

import click

from deepwork_mcp.cli.options import project_option

if TYPE_CHECKING:
    from deepwork_core.receipts.rereview import Rereview

#: The environment variable holding the CI key `--rereview` countersigns with.
CI_KEY_ENV = "DEEPWORK_CI_KEY"
RUNNERS = ("claude", "codex", "gemini")


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
@click.option(
    "--rereview",
    is_flag=True,
    help="Judge each receipt's reviews again against the committed bytes and countersign "
    f"those that pass with the CI key in {CI_KEY_ENV} (run it in CI).",
)
@click.option(
    "--runner",
    type=click.Choice(RUNNERS),
    default=None,
    help="The reviewer CLI of --rereview (default: claude).",
)
@click.option(
    "--verdict-cache",
    "verdict_cache",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    metavar="DIR",
    help="A folder only CI writes: --rereview keeps each verdict there, signed with the CI key, "
    "and reuses an entry whose reuse key matches (quality_gate.reuse of the base ref).",
)
def verify_command(
    project: Path,
    base: str | None,
    everything: bool,
    fmt: str,
    rereview: bool,
    runner: str | None,
    verdict_cache: Path | None,
) -> None:
    """Check the receipts the change adds or touches: signatures by keys trusted on the base
    ref, outputs and job definition unchanged since the run, and the base ref's policy."""
    from deepwork_core.receipts.findings import OutputFormat, render_findings
    from deepwork_core.receipts.verify import verify as run_verify

    if runner is not None and not rereview:
        raise click.UsageError("--runner chooses the reviewer of --rereview; add --rereview")
    if verdict_cache is not None and not rereview:
        raise click.UsageError("--verdict-cache keeps the verdicts of --rereview; add --rereview")
    chosen: OutputFormat = next(f for f in get_args(OutputFormat) if f == fmt)
    judge = _rereview(runner or "claude", verdict_cache) if rereview else None
    report = run_verify(project.resolve(), base, everything=everything, rereview=judge)
    text = render_findings(report.findings, len(report.receipts), chosen)
    click.echo(text, nl=False)
    if judge is not None and fmt != "json":
        click.echo(
            f"deepwork verify --rereview: {judge.calls} reviewer call(s) with {judge.reviewer.name}"
            f" (${judge.cost_usd:.4f} reported), {len(report.countersigned)} receipt(s) "
            f"countersigned by {judge.key.name}"
            + "".join(f"\n  {path}" for path in report.countersigned)
        )
        _cache_lines(judge)
    raise SystemExit(0 if report.passed else 1)


def _cache_lines(judge: Rereview) -> None:
    """What the verdict cache gave: each reused verdict, each entry not trusted, each verdict
    that could not be written."""
    if judge.cache is None:
        return
    click.echo(
        f"deepwork verify --rereview: {len(judge.reused)} verdict(s) reused from "
        f"{judge.cache.folder}, {len(judge.cache.refused)} cache entr(ies) not trusted"
        + "".join(
            f"\n  {line}" for line in [*judge.reused, *judge.cache.refused, *judge.cache.unwritten]
        )
    )


def _rereview(runner: str, verdict_cache: Path | None) -> Rereview:
    """What `--rereview` judges and signs with; a usage error (exit 2) without a CI key."""
    from deepwork_core import DeepWorkError
    from deepwork_core.base.escaping import printable
    from deepwork_core.receipts.keys import CiKey
    from deepwork_core.receipts.rereview import Rereview
    from deepwork_core.receipts.verdict_cache import VerdictCache
    from deepwork_review import GateRules

    from deepwork_mcp.reviewers.cli import CliReviewer

    try:
        key = CiKey.parse(os.environ.get(CI_KEY_ENV))
    except DeepWorkError as exc:
        raise click.UsageError(printable(f"{exc.code}: {exc.message}")) from None
    cache = None if verdict_cache is None else VerdictCache(verdict_cache.resolve())
    return Rereview(reviewer=CliReviewer(runner), key=key, rules=GateRules(), cache=cache)
