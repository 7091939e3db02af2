"""Options and error handling shared by the `deepwork` sub-commands."""

from __future__ import annotations

from pathlib import Path

import click
from deepwork_core import DeepWorkError
from deepwork_core.base.escaping import printable

#: `--path DIR`: the project folder, passed to the command as `project`.
project_option = click.option(
    "--path",
    "project",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=".",
    show_default="current directory",
    help="The project folder (the one holding .deepwork/).",
)


def cli_error(exc: DeepWorkError) -> click.ClickException:
    """The command-line failure for a DeepWork error: `<code>: <message>`, exit status 1.

    The message is escaped (docs/security.md): it often quotes what an agent or a file gave.
    """
    return click.ClickException(printable(f"{exc.code}: {exc.message}"))
