"""`deepwork calibrate`: how often a reviewer CLI is wrong, measured on cases whose right
verdicts are known (docs/quality-gate.md, "Calibration").

It runs DeepWork's calibration set (shipped in this package as `library_calibration/`, from
`library/calibration/`) and the project's own cases (`.deepwork/calibration/`, a project case
replacing a shipped one of the same id) through the reviewer of `--runner`, prints false passes
and false fails by kind of case with what the calls cost, and keeps the report in the project's
store, where `deepwork stats` and the dashboard show each runner's latest.
"""

from __future__ import annotations

import shutil
from importlib.resources import as_file, files
from pathlib import Path
from typing import TYPE_CHECKING, get_args

import click
from deepwork_core import DeepWorkError

from deepwork_mcp.cli.options import cli_error, project_option, project_store

if TYPE_CHECKING:
    from deepwork_core.state.calibration.report import CalibrationReport, Rates

#: The package folder of the shipped cases.
LIBRARY_PACKAGE_DIR = "library_calibration"
DEPTHS = ("light", "standard", "thorough")


@click.command()
@click.option(
    "--runner",
    type=click.Choice(["claude", "codex", "gemini"]),
    required=True,
    help="The reviewer CLI to measure.",
)
@click.option(
    "--depth",
    type=click.Choice(DEPTHS),
    default=None,
    help="The review depth (default: quality_gate.review_depth of the project).",
)
@click.option("--case", "only", multiple=True, help="Only this case id; repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@project_option
def calibrate(
    runner: str, depth: str | None, only: tuple[str, ...], as_json: bool, project: Path
) -> None:
    """Run the calibration cases through a reviewer CLI: false passes and false fails by kind
    of case, with cost; the report is kept for `deepwork stats`."""
    from deepwork_core.base.config import ReviewDepth, load_config
    from deepwork_core.base.error_codes import ErrorCode
    from deepwork_core.base.layout import CALIBRATION_DIR
    from deepwork_core.gate.calibration.cases import CalibrationError, load_cases
    from deepwork_core.gate.calibration.judging import judge_cases
    from deepwork_core.state.calibration.report import build_report
    from deepwork_core.state.calibration.rows import save_report

    from deepwork_mcp.reviewers.cli import CliReviewer

    root = project.resolve()
    if shutil.which(runner) is None:
        raise click.ClickException(
            f"{ErrorCode.QUALITY_GATE_NOT_INSTALLED}: the reviewer command {runner!r} was not "
            f"found on PATH; install the {runner} CLI to calibrate it"
        )
    try:
        settings = load_config(root).quality_gate
        chosen: ReviewDepth = next(
            (d for d in get_args(ReviewDepth) if d == depth), settings.review_depth
        )
        with as_file(files("deepwork_mcp").joinpath(LIBRARY_PACKAGE_DIR)) as library:
            cases = load_cases([(Path(library), "library"), (root / CALIBRATION_DIR, "project")])
        if only:
            cases = [case for case in cases if case.id in only]
        if not cases:
            raise CalibrationError(
                "no calibration case to run" + (f" named {', '.join(only)}" if only else ""),
                code=ErrorCode.CALIBRATION_NO_CASES,
            )
        results = judge_cases(CliReviewer(runner), cases, settings, chosen)
        report = build_report(runner, settings.models.for_depth(chosen), chosen, _now(), results)
        with project_store(root) as store:
            save_report(store, report)
    except DeepWorkError as exc:
        raise cli_error(exc) from None
    if as_json:
        click.echo(report.model_dump_json(indent=2))
        return
    click.echo(report_text(report))


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat()


def report_text(report: CalibrationReport) -> str:
    """The report as `deepwork calibrate` prints it."""
    total = report.total
    model = report.model or "its default model"
    lines = [
        f"deepwork calibrate: {report.runner} ({model}), depth {report.depth}: {total.cases} "
        f"case(s), {total.judged} criteria judged, {total.errors} case(s) without a verdict",
        f"{'kind':<28} {'cases':>5}  {'false passes':<16} {'false fails':<16} {'cost':>12}",
    ]
    for kind in report.kinds:
        lines.append(_row(kind.kind, kind))
    lines.append(_row("total", total))
    lines += [f"error: {r.case}: {r.error}" for r in report.results if r.error]
    warning = rates_warning(report)
    if warning:
        lines.append(warning)
    return "\n".join(lines)


def rates_warning(report: CalibrationReport) -> str | None:
    """The warning when more than 10 % of the criteria that should fail passed."""
    if not report.warns:
        return None
    rate = report.total.false_pass_rate or 0.0
    return (
        f"warning: {report.runner} passed {rate * 100:.0f}% of the criteria it should have "
        "failed (more than 10%): its passes are not to be trusted alone"
    )


def _row(name: str, rates: Rates) -> str:
    passes = _share(rates.false_passes, rates.should_fail)
    fails = _share(rates.false_fails, rates.should_pass)
    return f"{name:<28} {rates.cases:>5}  {passes:<16} {fails:<16} {rates.cost_text:>12}"


def _share(count: int, of: int) -> str:
    return f"{count} of {of} ({count / of * 100:.0f}%)" if of else f"{count} of 0 (-)"
