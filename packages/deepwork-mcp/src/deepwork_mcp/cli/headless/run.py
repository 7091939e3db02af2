"""`deepwork run JOB --agent claude|codex|gemini` and `deepwork run --resume SESSION`: a job run
by an agent no person attends (docs/headless.md).

It starts the agent's CLI non-interactively with a headless DeepWork server configured for it
(`agents`), marks the agent's environment (`DEEPWORK_RUN`), follows the run in the store while
the agent works (`follow`), and exits 0 complete, 3 parked for a person, 4 the gate's attempts
or budget exhausted, 5 the agent failed, hung or timed out, 2 usage. `--resume` first takes
over a run another checkout of the project served (`deepwork_core.engine.headless.adoption`),
checks the completed steps' outputs (`run.output_changed`) and clears the parked mark, then
starts the agent at the current step. Under GitHub Actions it also writes `$GITHUB_STEP_SUMMARY` and
`$GITHUB_OUTPUT` (`github`).
"""

from __future__ import annotations

import contextlib
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click
from deepwork_core import DeepWorkError
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import SessionError
from deepwork_core.base.escaping import printable
from deepwork_core.base.identifiers import SessionId, parse_session_id

from deepwork_mcp.cli.headless.agents import AGENTS, agent_argv, agent_home
from deepwork_mcp.cli.headless.display import Display, is_live
from deepwork_mcp.cli.headless.exits import RunExit
from deepwork_mcp.cli.headless.follow import Follower, Outcome
from deepwork_mcp.cli.options import cli_error, project_option, project_store

if TYPE_CHECKING:
    from deepwork_core.state.approvals.store import ApprovalStore
    from deepwork_core.state.sessions import SessionStore

#: The longest `--timeout`: a day.
MAX_TIMEOUT_S = 86_400


@click.command()
@click.argument("job", required=False)
@click.option("--workflow", default=None, help="The workflow (default: the job's only one).")
@click.option("--goal", default=None, help="What the run is for (default: run JOB).")
@click.option(
    "--input", "inputs", multiple=True, metavar="KEY=VALUE", help="A start input (repeatable)."
)
@click.option("--agent", type=click.Choice(AGENTS), required=True, help="The agent's CLI.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=1, max=MAX_TIMEOUT_S),
    default=3600.0,
    show_default=True,
    help="Seconds before the agent is ended (exit status 5).",
)
@click.option("--resume", "resume_id", default=None, metavar="SESSION", help="Continue a run.")
@project_option
def run(
    job: str | None,
    workflow: str | None,
    goal: str | None,
    inputs: tuple[str, ...],
    agent: str,
    timeout: float,
    resume_id: str | None,
    project: Path,
) -> None:
    """Run JOB with an agent no person attends; --resume SESSION continues a parked run."""
    if (job is None) == (resume_id is None):
        raise click.UsageError("name a JOB to run, or --resume SESSION (not both)")
    if resume_id is not None and (workflow or goal or inputs):
        raise click.UsageError("--resume continues a run as it was started: no --workflow, "
                               "--goal or --input")  # fmt: skip
    start = None if job is None else _start_arguments(job, workflow, goal, inputs)
    root = project.resolve()
    try:
        outcome = _run(root, agent, timeout, start, resume_id)
    except DeepWorkError as exc:
        raise cli_error(exc) from None
    _report(outcome, root)
    raise click.exceptions.Exit(int(outcome.exit))


def _start_arguments(
    job: str, workflow: str | None, goal: str | None, inputs: tuple[str, ...]
) -> dict[str, object]:
    given: dict[str, str] = {}
    for item in inputs:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.UsageError(f"--input {item!r} is not KEY=VALUE")
        given[key.strip()] = value
    arguments: dict[str, object] = {
        "job_name": job,
        "workflow_name": workflow or job,
        "goal": goal or f"run {job}",
    }
    if given:
        arguments["inputs"] = given
    return arguments


def _run(
    root: Path, agent: str, timeout: float, start: dict[str, object] | None, resume_id: str | None
) -> Outcome:
    from deepwork_core.engine.headless.adoption import resume_anywhere
    from deepwork_core.state.approvals.store import ApprovalStore
    from deepwork_core.state.sessions import SessionStore

    from deepwork_mcp.approvals.keys import approval_key, state_dir, trusted_approvers
    from deepwork_mcp.cli.headless.agents import resume_prompt, start_prompt

    display = Display(sys.stdout, live=is_live(sys.stdout, os.environ))
    with project_store(root) as store:
        sessions = SessionStore(store, root)
        follower = Follower(sessions, lambda line: display.line(printable(line)))
        if display.live:
            follower.status = display.status
        key = approval_key(state_dir(os.environ), root)
        approvals = ApprovalStore(store, root, key, trusted=trusted_approvers(root, os.environ))
        if resume_id is not None:
            session_id = parse_session_id(resume_id)
            prompt = resume_prompt(session_id)
            argv = agent_argv(agent, root, prompt, agent_home(os.environ))
            resume_anywhere(sessions, approvals, session_id, lambda: datetime.now(UTC))
            follower.session_id = session_id
        else:
            assert start is not None
            _refuse_a_busy_stack(sessions, agent)
            argv = agent_argv(agent, root, start_prompt(start), agent_home(os.environ))
        try:
            outcome = follower.run(argv, root, timeout)
        finally:
            display.close()
        if outcome.exit is RunExit.PARKED and outcome.session_id is not None:
            _where_to_decide(outcome, outcome.session_id, approvals, root)
        return outcome


def _where_to_decide(
    outcome: Outcome, session_id: SessionId, approvals: ApprovalStore, root: Path
) -> None:
    """Who may decide the parked run's open request, and its page on the team's dashboard."""
    from deepwork_core import load_config
    from deepwork_core.state.approvals.policy import who_may_decide

    record = approvals.load(session_id)
    outcome.deciders = who_may_decide(None if record is None else record.request.policy)
    with contextlib.suppress(DeepWorkError):  # a bad config is reported by the webhook's reading
        base = load_config(root).notify.dashboard_url
        if base is not None:
            page = f"/run/{session_id}?project={approvals.project_id}"
            outcome.dashboard_url = base.rstrip("/") + page


def _refuse_a_busy_stack(sessions: SessionStore, agent: str) -> None:
    """`run.busy` when the main stack holds a run: the agent's workflow would be nested in it
    (and, once done, hand the agent that run's step), and this run would not be followed."""
    busy = sessions.stack()
    if not busy:
        return
    run = busy[0]
    state = "parked" if run.parked is not None else "active"
    raise SessionError(
        f"this checkout already has a run on its stack: {run.session_id} ({run.job_name}/"
        f"{run.workflow_name}, {state} at step {', '.join(run.current_step_ids)}); a new run "
        f"would be nested inside it. Continue it with `deepwork run --resume {run.session_id} "
        f"--agent {agent}`, or abort it first (docs/headless.md)",
        code=ErrorCode.RUN_BUSY,
    )


def _report(outcome: Outcome, root: Path) -> None:
    """The last lines: how the run ended and, parked, who may decide and how."""
    from deepwork_mcp.cli.headless.github import write_github_files

    session_id = outcome.session_id or "-"
    click.echo(f"deepwork run: {outcome.summary} (session {session_id}, exit {outcome.exit})")
    if outcome.exit is RunExit.PARKED:
        click.echo(f"Who may decide: {outcome.deciders or 'any trusted approver'}")
        click.echo(f"A person decides outside this run: deepwork approve {session_id}")
        where = outcome.dashboard_url or "deepwork dashboard (Approvals)"
        click.echo(f"or in the dashboard: {where}")
        click.echo(f"then: deepwork run --resume {session_id} --agent <agent>")
    if outcome.tail:
        shown = "\n".join(printable(line) for line in outcome.tail.splitlines())
        click.echo("The agent's last output:\n" + shown, err=True)
    write_github_files(os.environ, outcome, root)
    _notify(outcome, root)


def _notify(outcome: Outcome, root: Path) -> None:
    """`notify.webhook`, waited for at most `webhook.WAIT_S` (docs/headless.md)."""
    from deepwork_core import load_config

    from deepwork_mcp.cli.headless import webhook
    from deepwork_mcp.cli.headless.github import outputs_of

    try:
        config = load_config(root).notify.webhook
    except DeepWorkError as exc:
        click.echo(f"warning: notify.webhook not sent: {exc.code}: {exc.message}", err=True)
        return
    if config is None:
        return
    session = outcome.session
    values = outputs_of(outcome)
    payload: dict[str, object] = {
        "status": values["status"],
        "summary": outcome.summary,
        "project": str(root),
        "run": values["session"],
        "job": None if session is None else session.job_name,
        "workflow": None if session is None else session.workflow_name,
        "step": [] if session is None else list(session.current_step_ids),
        "asks": _asks(outcome),
        "approve_command": values["approve-command"] or None,
        "who_may_decide": outcome.deciders,
        "dashboard": outcome.dashboard_url or f"deepwork dashboard --path {root}",
    }
    warn = lambda text: click.echo(text, err=True)  # noqa: E731
    webhook.post(config, payload, os.environ, warn).join(webhook.WAIT_S)


def _asks(outcome: Outcome) -> str | None:
    """What the person is asked, for a parked or exhausted run."""
    session = outcome.session
    parked = None if session is None else session.parked
    if parked is None:
        return None
    if outcome.exit is RunExit.PARKED:
        return f"approve step {', '.join(parked.step_ids)}"
    return parked.feedback or parked.reason.value
