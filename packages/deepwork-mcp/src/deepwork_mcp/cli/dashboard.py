"""`deepwork dashboard`: the runs, approvals and stats of a project in the browser.

Serves on 127.0.0.1 only, unless `--host` names another address, behind a token made at each
start; prints exactly one line, the URL with the token, and opens it unless `--no-open`, through
a 0600 redirect file so that the token is never on the browser's command line. Runs until
interrupted. See docs/dashboard.md ("Beyond this machine": `--host`, `--public-url`, TLS).
"""

from __future__ import annotations

import html
import os
import sys
import tempfile
import webbrowser
from pathlib import Path
from urllib.parse import urlsplit

import click
from deepwork_core import DeepWorkError
from deepwork_core.engine.headless.parking import refuse_inside_run

from deepwork_mcp.cli.options import cli_error, project_option
from deepwork_mcp.dashboard.guard import new_token
from deepwork_mcp.dashboard.serving import LOOPBACK, bind_loopback, dashboard_url, serve_dashboard

_WILDCARDS = ("0.0.0.0", "::", "")  # noqa: S104 - names refused without --public-url


@click.command()
@project_option
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="The port on 127.0.0.1 (0: any free one).",
)
@click.option(
    "--host",
    default=LOOPBACK,
    show_default=True,
    help="The address to listen on. Anything but 127.0.0.1 serves beyond this machine: "
    "the token is still required; put a TLS proxy in front (docs/dashboard.md).",
)
@click.option(
    "--public-url",
    default=None,
    help="The https:// address a TLS proxy serves this dashboard at (the printed URL, and the "
    "only other Host and Origin accepted).",
)
@click.option("--no-open", is_flag=True, help="Print the address; do not open a browser.")
def dashboard(project: Path, port: int, host: str, public_url: str | None, no_open: bool) -> None:
    """Serve the runs, approvals and stats of the project on 127.0.0.1 until interrupted."""
    _check_public_url(host, public_url)
    try:
        refuse_inside_run(os.environ)  # its decisions would come from inside the run
        sock = bind_loopback(port, host)
    except DeepWorkError as exc:
        raise cli_error(exc) from None
    token = new_token()
    url = dashboard_url(sock, token, public_url)
    click.echo(url)
    sys.stdout.flush()
    if no_open:
        serve_dashboard(project.resolve(), sock, token, public_url)
        return
    with tempfile.TemporaryDirectory(prefix="deepwork-dashboard-") as folder:
        webbrowser.open(redirect_file(Path(folder), url).as_uri())
        serve_dashboard(project.resolve(), sock, token, public_url)


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


def _check_public_url(host: str, public_url: str | None) -> None:
    if public_url is not None:
        parts = urlsplit(public_url)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
            raise click.UsageError("--public-url must be http(s)://HOST[:PORT] with no path")
    elif host in _WILDCARDS:
        raise click.UsageError(
            f"--host {host} listens on every address: give --public-url, the one address "
            "browsers use, so requests for any other name are refused"
        )
