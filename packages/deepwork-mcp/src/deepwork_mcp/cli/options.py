"""Options, error handling and the project's store, shared by the `deepwork` sub-commands.

Each command is a composition root: it opens the project's store once (`project_store`, or
`existing_project_store` for a command that only reads), hands it down, and closes it when it
ends. Which store is chosen here, the same way for every command and the server:
`DEEPWORK_STORE_URL`, else `store.url` of the project's `.deepwork/config.yml`, else the
project's SQLite file (docs/runtime-layout.md).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click
from deepwork_core import DeepWorkError
from deepwork_core.base.errors import SessionError
from deepwork_core.base.escaping import printable

if TYPE_CHECKING:
    from deepwork_core.state.store.port import Store

#: `--path DIR`: the project folder, passed to the command as `project`.
project_option = click.option(
    "--path",
    "project",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=".",
    show_default="current directory",
    help="The project folder (the one holding .deepwork/).",
)


class CommandGroup(click.Group):
    """A `deepwork` group whose list of commands shows each one's first sentence whole.

    click cuts a command's summary at about 45 characters, mid-sentence ("Copy the library job
    NAME into the project's .deepwork/jobs/..."); here it wraps instead.
    """

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=_WHOLE)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


#: A summary longer than this is cut all the same (none is near it).
_WHOLE = 1_000


def cli_error(exc: DeepWorkError) -> click.ClickException:
    """The command-line failure for a DeepWork error: `<code>: <message>`, exit status 1.

    The message is escaped (docs/security.md): it often quotes what an agent or a file gave.
    """
    message = exc.message
    if isinstance(exc, SessionError) and exc.session_id is not None:  # session.not_found
        message = (
            f"there is no session {exc.session_id!r} in this project's store; `deepwork "
            "status` lists the active runs (`deepwork status --all` every project's)"
        )
    return click.ClickException(printable(f"{exc.code}: {message}"))


def store_url(project: Path) -> str | None:
    """The URL of the project's store (None: its SQLite file), from `DEEPWORK_STORE_URL`, else
    `store.url` of its config."""
    from deepwork_core.state.store.opening import choose_store_url
    from deepwork_core.state.store.url import STORE_URL_ENV

    return choose_store_url(project, os.environ.get(STORE_URL_ENV))


def show_notices(store: Store | None) -> None:
    """Print the store's warnings of its opening (an old file set aside) on stderr, once."""
    if store is None:
        return
    for notice in store.notices:
        click.echo(printable(f"warning: {notice}"), err=True)
    store.notices.clear()


@contextmanager
def project_store(project: Path) -> Iterator[Store]:
    """The project's store for this command (made when it has none yet), closed at the end.
    Raises the store's errors (`store.unavailable`, …)."""
    from deepwork_core.state.store.opening import open_store

    with open_store(store_url(project), project) as store:
        show_notices(store)
        yield store


@contextmanager
def existing_project_store(project: Path) -> Iterator[Store | None]:
    """`project_store` for a command that only reads: None when the project has no store yet,
    so reading an empty project creates nothing."""
    from deepwork_core.state.store.opening import open_existing_store

    store = open_existing_store(store_url(project), project)
    show_notices(store)
    try:
        yield store
    finally:
        if store is not None:
            store.close()
