"""`deepwork store`: the store of run state (docs/runtime-layout.md).

`deepwork store export SESSION_ID` prints one run's event log as JSON Lines, one event a line,
exactly as the records are stored (the lines the old `events/<id>.jsonl` files held), for people
who grep. `deepwork store info` names the store a project uses and its schema version.
"""

from __future__ import annotations

from pathlib import Path

import click
from deepwork_core import DeepWorkError
from deepwork_core.base.identifiers import parse_session_id
from deepwork_core.state.sessions import SessionStore, session_not_found
from deepwork_core.state.store.url import parse_store_url

from deepwork_mcp.cli.options import (
    CommandGroup,
    cli_error,
    existing_project_store,
    project_option,
    store_url,
)


@click.group(cls=CommandGroup)
def store() -> None:
    """The store of run state: where it is, and exporting a run."""


@store.command()
@project_option
@click.argument("session_id")
def export(project: Path, session_id: str) -> None:
    """Print the event log of SESSION_ID as JSON Lines (one event a line)."""
    try:
        parsed = parse_session_id(session_id)
        root = project.resolve()
        with existing_project_store(root) as opened:  # a read never creates a store
            if opened is None:
                raise session_not_found(parsed)
            with opened.read() as tx:
                rows = tx.execute(
                    "SELECT body FROM events WHERE project_id = ? AND session_id = ? ORDER BY seq",
                    (opened.project.project_id, parsed),
                )
            if not rows:  # no log: session.not_found unless the session exists
                SessionStore(opened, root).load(parsed)
    except DeepWorkError as exc:
        raise cli_error(exc) from None
    for (body,) in rows:
        click.echo(str(body))


@store.command()
@project_option
def info(project: Path) -> None:
    """Name the project's store (password masked) and its schema version."""
    root = project.resolve()
    try:
        with existing_project_store(root) as opened:  # a read never creates a store
            if opened is None:
                where = parse_store_url(store_url(root), root)
                click.echo(f"{where.kind} {where.display} (not created yet: the first run does)")
                return
            with opened.read() as tx:
                [(version,)] = tx.execute(
                    "SELECT value FROM store_meta WHERE key = 'schema_version'"
                )
    except DeepWorkError as exc:
        raise cli_error(exc) from None
    click.echo(f"{opened.kind} {opened.display} (schema version {version})")
