"""`deepwork dashboard`: the runs, approvals and stats of a project in the browser.

Serves on 127.0.0.1 only, behind a token made at each start; prints exactly one line, the URL
with the token, and opens it unless `--no-open`. Runs until interrupted. See docs/dashboard.md.
"""

from __future__ import annotations

import sys
import webbrowser
from pathlib import Path

import click
from deepwork_core import DeepWorkError

from deepwork_mcp.cli.options import cli_error, project_option
from deepwork_mcp.dashboard.guard import new_token
from deepwork_mcp.dashboard.serving import bind_loopback, dashboard_url, serve


@click.command()
@project_option
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="The port on 127.0.0.1 (0: any free one).",
)
@click.option("--no-open", is_flag=True, help="Print the address; do not open a browser.")
def dashboard(project: Path, port: int, no_open: bool) -> None:
    """Serve the runs, approvals and stats of the project on 127.0.0.1 until interrupted."""
    try:
        sock = bind_loopback(port)
    except DeepWorkError as exc:
        raise cli_error(exc) from None
    token = new_token()
    url = dashboard_url(sock, token)
    click.echo(url)
    sys.stdout.flush()
    if not no_open:
        webbrowser.open(url)
    serve(project.resolve(), sock, token)
