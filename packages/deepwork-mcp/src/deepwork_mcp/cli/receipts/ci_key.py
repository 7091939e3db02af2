"""`deepwork ci-key NAME`: make the CI key `deepwork verify --rereview` countersigns with
(docs/verify.md, "Keys").

It writes the public half to `.deepwork/ci_keys/NAME.pub` (commit it to the base branch) and
prints the secret, `deepwork-ci-key NAME <base64 seed>`, once on stdout: store it as the CI
secret `DEEPWORK_CI_KEY` and nowhere else. The secret is never written to a file.
"""

from __future__ import annotations

from pathlib import Path

import click
from deepwork_core import DeepWorkError

from deepwork_mcp.cli.options import cli_error, project_option


@click.command()
@click.argument("name")
@project_option
def ci_key(name: str, project: Path) -> None:
    """Make a CI key NAME: list its public half, print its secret for DEEPWORK_CI_KEY."""
    from deepwork_core.base.fsutil import atomic_write_text
    from deepwork_core.receipts.keys import CiKey

    try:
        key = CiKey.new(name)
    except DeepWorkError as exc:
        raise cli_error(exc) from None
    listing = project.resolve() / key.pub_path
    if listing.exists() or listing.is_symlink():
        raise click.ClickException(
            f"{key.pub_path} exists already: choose another name, or delete it to replace "
            "that key (receipts it countersigned stop verifying)"
        )
    listing.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(listing, key.public_line())
    click.echo(f"wrote {key.pub_path}: commit it to the base branch", err=True)
    click.echo("store this line as the CI secret DEEPWORK_CI_KEY, and nowhere else:", err=True)
    click.echo(key.secret_line())
