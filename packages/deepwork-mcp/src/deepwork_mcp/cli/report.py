"""`deepwork report SESSION --html OUT.html`: one run as a self-contained HTML file.

The same run page the dashboard shows (docs/dashboard.md), with the stylesheet and the workflow
SVG inline, no script, no buttons and nothing fetched from the network: a file to attach to a
pull request. Meant for a finished run; an active one is written as it stands.
"""

from __future__ import annotations

from pathlib import Path

import click
from deepwork_core import DeepWorkError
from deepwork_core.base.escaping import printable
from deepwork_core.base.fsutil import atomic_write_text
from deepwork_core.base.identifiers import parse_session_id
from deepwork_core.state.sessions import SessionStore, session_not_found

from deepwork_mcp.cli.options import cli_error, existing_project_store, project_option
from deepwork_mcp.dashboard.run_page import run_page
from deepwork_mcp.dashboard.views import session_page_view


@click.command()
@click.argument("session_id")
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="The HTML file to write.",
)
@project_option
def report(session_id: str, html_path: Path, project: Path) -> None:
    """Write the run SESSION_ID as one self-contained HTML page."""
    root = project.resolve()
    try:
        parsed = parse_session_id(session_id)
        with existing_project_store(root) as store:
            if store is None:  # no store, so no run at all
                raise session_not_found(parsed)
            page = session_page_view(SessionStore(store, root), parsed)
    except DeepWorkError as exc:
        raise cli_error(exc) from None
    atomic_write_text(html_path, run_page(page, token=None))
    click.echo(printable(f"wrote {html_path}"))
