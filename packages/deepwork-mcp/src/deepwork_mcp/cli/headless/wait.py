"""`deepwork wait SESSION [--timeout S]`: block until the person a run waits for acted.

It returns as soon as the run no longer waits for a person (`awaits_person`: the open approval
was decided, or the run was resumed or ended): on PostgreSQL woken by the store's notification
of the run's next event, on SQLite by reading the run again every quarter second. Exit 0 when
the wait is over, 3 when the run still waits at the timeout (docs/headless.md).
"""

from __future__ import annotations

from pathlib import Path

import click
from deepwork_core import DeepWorkError
from deepwork_core.base.identifiers import parse_session_id

from deepwork_mcp.cli.headless.exits import RunExit
from deepwork_mcp.cli.options import cli_error, existing_project_store, project_option

#: The longest `--timeout`: a day.
MAX_TIMEOUT_S = 86_400


@click.command()
@click.argument("session_id")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, max=MAX_TIMEOUT_S),
    default=3600.0,
    show_default=True,
    help="Seconds to wait before giving up with exit status 3.",
)
@project_option
def wait(session_id: str, timeout: float, project: Path) -> None:
    """Wait until the person SESSION_ID waits for has decided (exit 0), or exit 3 at --timeout."""
    from deepwork_core.engine.headless.parking import wait_for_person
    from deepwork_core.state.sessions import SessionStore, session_not_found

    root = project.resolve()
    try:
        parsed = parse_session_id(session_id)
        with existing_project_store(root) as store:
            if store is None:
                raise session_not_found(parsed)
            done = wait_for_person(SessionStore(store, root), parsed, timeout)
    except DeepWorkError as exc:
        raise cli_error(exc) from None
    if done:
        click.echo(f"Session {session_id} no longer waits for a person.")
        return
    click.echo(f"Session {session_id} still waits for a person after {timeout:g} s.")
    raise click.exceptions.Exit(RunExit.PARKED)
