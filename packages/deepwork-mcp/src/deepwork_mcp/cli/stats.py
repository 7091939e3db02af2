"""`deepwork stats`: quality-gate figures per job, step and criterion, from the event logs.

Names and errors from the logs are shown escaped (docs/security.md).
"""

from __future__ import annotations

from pathlib import Path

import click
from deepwork_core import DeepWorkError
from deepwork_core.base.escaping import printable
from deepwork_core.state.stats import DEFAULT_RUNS, Stats, StatsWindow, StepStats, collect_stats
from deepwork_core.state.usage.pair import RunUsage, cost_text, tokens_text
from deepwork_core.state.usage.totals import ReviewCostRow

from deepwork_mcp.cli.options import cli_error, existing_project_store, project_option

#: The most runs `--runs` counts; `--all` counts every one.
MAX_RUNS = 100_000

#: What the two pass rates count, said under the figures (the Stats page says the same).
RATE_LEGEND = (
    "  first-try pass: per step, the share of its reviewed runs whose first round of reviews "
    "passed all of them\n"
    "  first-attempt pass: per job, step or review, the share of the reviewer calls made on a "
    "first attempt that passed; each review is a call of its own, so a step with three reviews "
    "counts three"
)


@click.command()
@click.option("--job", default=None, help="Only this job.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option(
    "--runs",
    type=click.IntRange(1, MAX_RUNS),
    default=DEFAULT_RUNS,
    show_default=True,
    help="Count the newest this many runs (by their start).",
)
@click.option("--all", "every", is_flag=True, help="Count every run (grows with the history).")
@project_option
def stats(job: str | None, as_json: bool, runs: int, every: bool, project: Path) -> None:
    """Runs, first-try pass rate, mean attempts, overrides, criterion failures, median time,
    and what reviews cost per job, step and review (most expensive first).

    Use them to find criteria that are too strict (often failed, often overridden) or too loose
    (never failed). See docs/evidence.md for how each figure is counted.
    """
    try:
        with existing_project_store(project.resolve()) as store:
            figures = collect_stats(store, job=job, runs=None if every else runs)
    except DeepWorkError as exc:
        raise cli_error(exc) from None
    if as_json:
        click.echo(printable(figures.model_dump_json(indent=2), keep="\n"))
        return
    _print_table(figures, job)


def window_line(window: StatsWindow) -> str:
    """Which runs the figures are over, when older ones were left out."""
    return (
        f"Over the newest {window.read:,} of {window.total:,} runs "
        "(--runs N counts more, --all every one)."
    )


def _print_table(figures: Stats, only: str | None = None) -> None:
    if figures.window is not None:
        click.echo(window_line(figures.window))
    if not figures.jobs and only is not None:
        click.echo(
            f"No runs of job {printable(only)!r} recorded yet in this project's store "
            "(`deepwork stats` without --job shows every job's)."
        )
    elif not figures.jobs:
        click.echo("No workflow runs recorded yet in this project's store.")
    for job in figures.jobs:
        click.echo(
            f"{printable(job.job)}: {job.sessions} session(s), {job.completed} completed, "
            f"{job.aborted} aborted"
        )
        for step in job.steps:
            click.echo(f"  {printable(step.step)}: {_step_line(step)}")
            for criterion in step.criteria:
                click.echo(
                    f"    {printable(criterion.criterion)}: failed {criterion.failures} of "
                    f"{criterion.evaluations} ({_percent(criterion.failure_rate)})"
                )
    costs = figures.review_costs
    for title, rows in (
        ("Review costs per job", costs.jobs),
        ("Review costs per step", costs.steps),
        ("Review costs per review, most expensive first", costs.reviews),
    ):
        if rows:
            click.echo(f"{title}:")
        for row in rows:
            where = "/".join(part for part in (row.job, row.step, row.review) if part is not None)
            click.echo(f"  {printable(where)}: {_cost_line(row)}")
    if figures.jobs or any(rows for rows in (costs.jobs, costs.steps, costs.reviews)):
        click.echo(f"How the pass rates are counted (docs/evidence.md):\n{RATE_LEGEND}")
    _print_calibration(figures)
    for skipped in figures.skipped:
        click.echo(printable(f"skipped {skipped.session_id}: {skipped.error}"), err=True)


def _print_calibration(figures: Stats) -> None:
    """Each runner's latest `deepwork calibrate` rates, with the warning above 10 % false
    passes."""
    from deepwork_mcp.cli.calibrate import rates_warning

    if figures.calibration:
        click.echo("Reviewer calibration (latest `deepwork calibrate` per runner):")
    for report in figures.calibration:
        total = report.total
        click.echo(
            printable(
                f"  {report.runner} ({report.model or 'default model'}, {report.depth}, "
                f"{report.at[:10]}): false passes {_percent(total.false_pass_rate)} "
                f"({total.false_passes} of {total.should_fail}), false fails "
                f"{_percent(total.false_fail_rate)} ({total.false_fails} of "
                f"{total.should_pass}), {total.cases} case(s), {total.cost_text}"
            )
        )
        warning = rates_warning(report)
        if warning:
            click.echo(f"  {printable(warning)}")


def _cost_line(row: ReviewCostRow) -> str:
    usage, mean = row.usage, "-" if row.mean_seconds is None else f"{row.mean_seconds:.1f} s"
    return (
        f"{cost_text(usage)}, {tokens_text(usage)}, {usage.calls} call(s), "
        f"{usage.self_reviews} self-review(s), {_reused(usage)}mean {mean}, "
        f"first-attempt pass {_percent(row.first_attempt_pass_rate)}"
    )


def _reused(usage: RunUsage) -> str:
    """`3 reused (saved 0.0600 USD), ` or nothing: verdicts reused cost 0 and add no call."""
    if not usage.reused_verdicts:
        return ""
    return f"{usage.reused_verdicts} reused (saved {usage.saved_usd:.4f} USD), "


def _step_line(step: StepStats) -> str:
    median = "-" if step.median_seconds is None else f"{step.median_seconds:.1f} s"
    attempts = "-" if step.mean_attempts is None else f"{step.mean_attempts:.2f}"
    return (
        f"{step.runs} run(s), first-try pass {_percent(step.first_try_pass_rate)}, "
        f"mean attempts {attempts}, {step.overrides} override(s), median {median}"
    )


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"
