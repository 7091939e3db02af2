"""`deepwork review`: print the review tasks for the changed files of a project.

The tasks quote file names and rule files; what they print is escaped (docs/security.md).
"""

from __future__ import annotations

import io
import os
import selectors
import sys
import time
from pathlib import Path
from typing import IO

import click
from deepwork_core import DeepWorkError
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import YamlError
from deepwork_core.base.escaping import printable
from deepwork_core.base.yamlio import read_yaml_file
from deepwork_review import PLATFORMS, run_review

#: How long to wait for the first byte of a file list on stdin before ignoring stdin.
STDIN_FIRST_BYTE_SECONDS = 1.0
#: How long a file list on stdin may take in total once it started.
STDIN_TOTAL_SECONDS = 30.0


def default_platform(project_root: Path) -> str:
    """`platforms[0]` of `.deepwork/config.yml` when the file names one, else `claude`.

    Only this key is read here; the full settings loader belongs to `deepwork_core`.
    """
    path = project_root / ".deepwork" / "config.yml"
    if not path.is_file():
        return "claude"
    try:
        data = read_yaml_file(path).data
    except YamlError:
        return "claude"
    platforms = data.get("platforms") if isinstance(data, dict) else None
    if isinstance(platforms, list) and platforms and isinstance(platforms[0], str):
        return platforms[0]
    return "claude"


def read_stdin_paths(stream: IO[str]) -> list[str] | None:
    """A newline-separated file list from `stream`, or None when nothing arrives in time.

    Never blocks for long: an agent's shell may hand us a pipe that is never written or closed.
    """
    try:
        fd = stream.fileno()
    except (io.UnsupportedOperation, AttributeError, ValueError):
        text = stream.read()  # an in-memory stream (tests) cannot block
        return _paths(text) if text.strip() else None
    chunks: list[bytes] = []
    start = time.monotonic()
    # select(), unlike epoll, accepts every kind of descriptor (pipes, files, /dev/null).
    with selectors.SelectSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            limit = STDIN_FIRST_BYTE_SECONDS if not chunks else STDIN_TOTAL_SECONDS
            remaining = start + limit - time.monotonic()
            if remaining <= 0 or not selector.select(remaining):
                if not chunks:
                    return None
                raise click.ClickException(
                    f"{ErrorCode.REVIEW_STDIN_TIMEOUT}: the file list on stdin did not end within "
                    f"{STDIN_TOTAL_SECONDS:g} s"
                )
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    text = b"".join(chunks).decode("utf-8", "surrogateescape")
    return _paths(text) if text.strip() else None


def _paths(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


@click.command()
@click.option(
    "--instructions-for",
    "platform",
    type=click.Choice(PLATFORMS),
    default=None,
    help="Format the tasks for this platform (default: platforms[0] of .deepwork/config.yml, "
    "else claude).",
)
@click.option("--base-ref", default=None, help="Compare against REF instead of the default branch.")
@click.option(
    "--path",
    "project_path",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=Path(),
    show_default=True,
    help="The project folder.",
)
@click.option(
    "--files",
    "files",
    multiple=True,
    help="Review this file (relative to the project folder) instead of the changed files; "
    "repeatable. A newline-separated list on stdin works too.",
)
def review(
    platform: str | None, base_ref: str | None, project_path: Path, files: tuple[str, ...]
) -> None:
    """Print review tasks for the changed files, from the project's .deepreview rules."""
    project_root = project_path.resolve()
    explicit: list[str] | None = list(files) if files else None
    if explicit is None and sys.stdin is not None and not sys.stdin.isatty():
        explicit = read_stdin_paths(sys.stdin)
    try:
        run = run_review(
            project_root,
            platform=platform or default_platform(project_root),
            files=explicit,
            base_ref=base_ref,
        )
    except DeepWorkError as exc:
        click.echo(printable(f"Error: {exc.code}: {exc}"), err=True)
        sys.exit(1)
    click.echo(printable(run.text.rstrip("\n"), keep="\n\t"))
