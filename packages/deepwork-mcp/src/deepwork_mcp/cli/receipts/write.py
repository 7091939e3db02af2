"""`deepwork receipt SESSION`: write the receipt of a completed run again (docs/verify.md).

The server writes it when the run completes; this command writes it when that failed (the
completion answer said why: `receipt.*`), or after the receipt was deleted. It signs with this
machine's gate key, from the state folder `deepwork serve` and `deepwork approve` use.
"""

from __future__ import annotations

import os
from pathlib import Path

import click
from deepwork_core import DeepWorkError

from deepwork_mcp.cli.options import cli_error, existing_project_store, project_option


@click.command()
@click.argument("session_id")
@project_option
def receipt(session_id: str, project: Path) -> None:
    """Write the receipt of the completed run SESSION_ID into .deepwork/receipts/."""
    from deepwork_core.base.escaping import printable
    from deepwork_core.base.identifiers import parse_session_id
    from deepwork_core.jobs.discovery import JobCatalog, parse_folder_list
    from deepwork_core.receipts.writer import ReceiptWriter, commit_advice
    from deepwork_core.state.sessions import SessionStore, session_not_found

    from deepwork_mcp.approvals.keys import gate_key, state_dir
    from deepwork_mcp.cli.serve import ADDITIONAL_JOBS_ENV

    root = project.resolve()
    try:
        parsed = parse_session_id(session_id)
        additional = parse_folder_list(os.environ.get(ADDITIONAL_JOBS_ENV))
        catalog = JobCatalog.for_project(root, additional)
        with existing_project_store(root) as store:
            if store is None:
                raise session_not_found(parsed)
            key = gate_key(state_dir(os.environ))
            writer = ReceiptWriter(root, catalog, SessionStore(store, root), key)
            note = writer.write(parsed)
    except DeepWorkError as exc:
        raise cli_error(exc) from None
    if note.error:
        raise click.ClickException(printable(note.error))
    click.echo(f"wrote {note.path}, signed by the gate key {note.key}")
    click.echo(commit_advice([note]) or "")
