"""`deepwork approver init`: make this user's approver key pair and have the project trust it.

The private key goes to the user's state directory (`<state>/approvers/<name>.key`, mode 0600);
the public key to `.deepwork/approvers/<name>.pub` in the project, to be committed and merged into
the base branch: keys are trusted only as committed there. Once the base branch trusts any key,
decisions count only when a trusted approver signed them (docs/team.md).
"""

from __future__ import annotations

import getpass
import os
from pathlib import Path

import click
from deepwork_core import DeepWorkError
from deepwork_core.base.escaping import printable
from deepwork_core.base.fsutil import atomic_write_text
from deepwork_core.base.layout import APPROVERS_DIR
from deepwork_core.evidence.trusted_keys import public_line
from deepwork_core.state.approvals.signatures import ApproverSigner

from deepwork_mcp.approvals.keys import approver_path, state_dir
from deepwork_mcp.cli.options import CommandGroup, cli_error, project_option


@click.group(cls=CommandGroup)
def approver() -> None:
    """Set up the key with which you sign approvals."""


@approver.command()
@click.option("--name", default=None, help="Your approver name (default: your user name).")
@click.option(
    "--no-trust", is_flag=True, help="Only make the key; do not write the project's .pub file."
)
@project_option
def init(name: str | None, no_trust: bool, project: Path) -> None:
    """Make your approver key (once per user) and add its public half to the project."""
    chosen = name or _user()
    try:
        signer = ApproverSigner(chosen, approver_path(state_dir(os.environ), chosen))
        made = signer.create()
        line = public_line(signer.public_key())
        target = project.resolve() / APPROVERS_DIR / f"{signer.name}.pub"
        if not no_trust:
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(target, line)
    except DeepWorkError as exc:
        raise cli_error(exc) from None
    except OSError as exc:
        raise click.ClickException(printable(f"cannot write the public key: {exc}")) from None
    click.echo(f"{'Made' if made else 'Kept'} your private key {signer.path} (mode 0600).")
    if no_trust:
        click.echo(printable(f"Public key: {line.strip()}"))
        return
    click.echo(
        printable(f"Wrote {target}; commit it and merge it into the base branch. ")
        + "It counts once it is on the base branch (approvals.trusted_ref, else origin/HEAD, "
        "main or master); from then on this project counts only approvals signed by a "
        "trusted approver."
    )


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())
