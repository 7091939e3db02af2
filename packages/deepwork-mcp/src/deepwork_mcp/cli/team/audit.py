"""`deepwork audit export SESSION [--out FILE]` and `deepwork audit verify FILE` (docs/team.md,
"An audit record").

`export` reads the run's chain of approvals from the project's store (each request with the
paths and hashes it showed, each decision with its signer, signature and time, what the
decision caused) and writes it as one JSON document signed with this machine's gate key.
`verify` checks such a file offline: no store, no network, only the public keys committed on the
base ref (`--base`, else origin/HEAD, main or master). Exit 0 when it holds, 1 on any finding
(each printed with its `audit.*` code), 2 on a usage error.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import click
from deepwork_core import DeepWorkError

from deepwork_mcp.cli.options import (
    CommandGroup,
    cli_error,
    existing_project_store,
    project_option,
)

#: An audit record larger than this is refused by `verify`.
MAX_RECORD_BYTES: Final = 64 * 1024 * 1024


@click.group(cls=CommandGroup)
def audit() -> None:
    """Export a run's approvals as one signed record, and check such a record offline."""


@audit.command("export")
@click.argument("session_id")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the record to FILE (default: standard output).",
)
@project_option
def audit_export(session_id: str, out: Path | None, project: Path) -> None:
    """Write the audit record of the run SESSION_ID: its approval requests and decisions."""
    import os

    from deepwork_core.base.fsutil import atomic_write_text
    from deepwork_core.base.identifiers import parse_session_id
    from deepwork_core.receipts.audit_record import export_record
    from deepwork_core.state.sessions import SessionStore, session_not_found

    from deepwork_mcp.approvals.keys import gate_key, state_dir

    root = project.resolve()
    try:
        parsed = parse_session_id(session_id)
        with existing_project_store(root) as store:
            if store is None:
                raise session_not_found(parsed)
            SessionStore(store, root).load(parsed)  # session.not_found for another id
            text = export_record(store, parsed, gate_key(state_dir(os.environ)), datetime.now(UTC))
        if out is None:
            sys.stdout.write(text)
        else:
            atomic_write_text(out, text)
    except DeepWorkError as exc:
        raise cli_error(exc) from None
    except OSError as exc:
        raise click.ClickException(f"cannot write {out}: {exc.strerror}") from None
    if out is not None:
        click.echo(f"wrote the audit record of run {session_id} to {out}", err=True)


@audit.command("verify")
@click.argument("record", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--base",
    metavar="REF",
    help="The ref whose keys are trusted (default: origin/HEAD, else main, else master).",
)
@project_option
def audit_verify(record: Path, base: str | None, project: Path) -> None:
    """Check the audit record RECORD offline against the keys committed on the base ref."""
    from deepwork_core.base.errors import FileReadError
    from deepwork_core.base.escaping import printable
    from deepwork_core.base.fsutil import read_bytes_file
    from deepwork_core.receipts.audit_record import verify_record
    from deepwork_core.receipts.codes import ReceiptCode
    from deepwork_core.receipts.repository import Repository

    root = project.resolve()
    try:
        raw = read_bytes_file(record, limit=MAX_RECORD_BYTES)
    except FileReadError as exc:
        raise cli_error(exc) from None
    commit = Repository.find_base(root, base)
    if commit is None:
        named = base or "origin/HEAD, main or master"
        click.echo(f"{ReceiptCode.AUDIT_BASE_MISSING}: no base ref {named} in {root}", err=True)
        raise SystemExit(1)
    findings = verify_record(raw, Repository(root, commit, base))
    for finding in findings:
        click.echo(printable(f"{finding.code}: {record}: {finding.message}"))
    if findings:
        raise SystemExit(1)
    click.echo(f"{record}: the audit record holds (keys of {base or 'the base ref'})")
