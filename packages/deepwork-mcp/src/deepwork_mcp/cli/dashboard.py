"""`deepwork dashboard`: the runs, approvals and stats of a project in the browser.

Serves on 127.0.0.1 only, behind a token made at each start; prints exactly one line, the URL
with the token, and opens it unless `--no-open`, through a 0600 redirect file so that the token
is never on the browser's command line. Runs until interrupted. See docs/dashboard.md.
"""

from __future__ import annotations

import html
import os
import sys
import tempfile
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
    if no_open:
        serve(project.resolve(), sock, token)
        return
    with tempfile.TemporaryDirectory(prefix="deepwork-dashboard-") as folder:
        webbrowser.open(redirect_file(Path(folder), url).as_uri())
        serve(project.resolve(), sock, token)


def redirect_file(folder: Path, url: str) -> Path:
    """A page only its owner can read (0600) that sends the browser on to `url`.

    The browser is started with this file's name, not with the URL: a command line is visible
    to every user of the machine (`ps`), and the URL carries the token.
    """
    path = folder / "open-dashboard.html"
    target = html.escape(url, quote=True)
    page = (
        '<!DOCTYPE html><html><head><meta charset="utf-8">'
        f'<meta http-equiv="refresh" content="0;url={target}"><title>DeepWork</title></head>'
        f'<body><a href="{target}">Open the DeepWork dashboard</a></body></html>'
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(page)
    return path
