"""`deepwork serve`: run the MCP server for a project.

Settings come from `.deepwork/config.yml` (`docs/config.md`); every flag given on the command line
wins over the file. Help texts quote the defaults of `DeepWorkConfig`, their one source. stdout
is the protocol channel on stdio, so logs go to stderr only.
"""

from __future__ import annotations

import gc
import logging
import os
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from deepwork_core import DeepWorkConfig
from deepwork_core.base.config import (
    EXTERNAL_RUNNERS,
    MAX_ATTEMPTS_LIMIT,
    PLATFORMS,
    TIMEOUT_LIMIT_S,
)

from deepwork_mcp.approvals.launch import launch_prefix, parent_argv
from deepwork_mcp.cli.options import cli_error

if TYPE_CHECKING:
    from types import FrameType

    from fastmcp import FastMCP

    from deepwork_mcp.telemetry.recorder import Telemetry

ADDITIONAL_JOBS_ENV = "DEEPWORK_ADDITIONAL_JOBS_FOLDERS"
HTTP_TOKEN_ENV = "DEEPWORK_HTTP_TOKEN"  # noqa: S105 - the variable's name, not a secret
#: The shortest bearer token accepted for a remote server.
MIN_TOKEN_LENGTH = 16
_DEFAULTS = DeepWorkConfig()
_GATE = _DEFAULTS.quality_gate


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--path",
    "project_path",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Project root directory (default: the client's first MCP root, else the working "
    "directory).",
)
@click.option(
    "--no-quality-gate",
    is_flag=True,
    default=False,
    help="Disable the quality gate (default: config quality_gate.enabled, else "
    f"{'on' if _GATE.enabled else 'off'}).",
)
@click.option(
    "--transport",
    type=click.Choice(["stdio", "sse", "http"]),
    default="stdio",
    show_default=True,
    help="MCP transport; http is Streamable HTTP at /mcp, sse is at /sse.",
)
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Bind address for http and sse."
)
@click.option("--port", type=int, default=8000, show_default=True, help="Port for http and sse.")
@click.option(
    "--allow-remote",
    is_flag=True,
    default=False,
    help="Allow --host other than loopback; requires a bearer token in "
    f"{HTTP_TOKEN_ENV} (see docs/security.md).",
)
@click.option(
    "--external-runner",
    type=click.Choice([*EXTERNAL_RUNNERS, "none"]),
    default=None,
    help="Quality-gate reviewer: 'claude' runs the Claude CLI, 'codex' runs codex exec, "
    "'gemini' runs the Gemini CLI headless, 'none' means self-review "
    "(default: config quality_gate.external_runner, else self-review).",
)
@click.option(
    "--platform",
    type=click.Choice(PLATFORMS),
    default=None,
    help="Platform the review tools format for "
    f"(default: the first of config platforms, else {_DEFAULTS.platform}).",
)
@click.option(
    "--max-quality-attempts",
    type=click.IntRange(min=1, max=MAX_ATTEMPTS_LIMIT),
    default=None,
    help="Failed external reviews allowed before finished_step errors "
    f"(default: config quality_gate.max_attempts, else {_GATE.max_attempts}).",
)
@click.option(
    "--quality-gate-timeout",
    type=click.IntRange(min=1, max=TIMEOUT_LIMIT_S),
    default=None,
    help="Seconds per external review task, plus 30 per file beyond five "
    f"(default: config quality_gate.timeout_seconds, else {_GATE.timeout_seconds}).",
)
@click.option(
    "--no-branch",
    is_flag=True,
    default=False,
    help="Do not create a git branch per top-level workflow (default: config git.create_branch).",
)
@click.option(
    "--headless",
    is_flag=True,
    default=False,
    help="No person attends: a human gate parks the run instead of waiting (docs/headless.md; "
    "implied by CI=true and inside `deepwork run`).",
)
def serve(
    project_path: Path | None,
    no_quality_gate: bool,
    transport: str,
    host: str,
    port: int,
    allow_remote: bool,
    external_runner: str | None,
    platform: str | None,
    max_quality_attempts: int | None,
    quality_gate_timeout: int | None,
    no_branch: bool,
    headless: bool,
) -> None:
    """Run the DeepWork MCP server for a project."""
    # Importing FastMCP and our models creates hundreds of thousands of objects; the cyclic GC
    # rescanning them while they are still being created cost about 100 ms of cold start
    # (benchmarks/). Freeze them out of later scans once started. A full collection first would
    # cost another 100 ms of the first answer to free a few thousand objects (well under 1 MiB).
    token = None if transport == "stdio" else _http_token(host, allow_remote)
    sock = None if transport == "stdio" else _listen(host, port)
    gc.disable()
    from deepwork_core import DeepWorkError, load_config

    _configure_logging()
    root = (project_path or Path.cwd()).resolve()
    # FastMCP is imported only now: `deepwork --version` and `--help` stay cheap.
    import fastmcp

    fastmcp.settings.check_for_updates = "off"
    try:
        config = apply_flags(
            load_config(root),
            no_quality_gate=no_quality_gate,
            external_runner=external_runner,
            platform=platform,
            max_quality_attempts=max_quality_attempts,
            quality_gate_timeout=quality_gate_timeout,
            no_branch=no_branch,
        )
        server = _server(root, config, follow_client_roots=project_path is None, headless=headless)
    except DeepWorkError as exc:
        if sock is not None:
            sock.close()
        raise cli_error(exc) from None
    finally:
        gc.freeze()
        gc.enable()
    _stop_children_on_exit()
    if sock is None:
        server.run(transport="stdio", show_banner=False)
        return
    _warn_if_remote(host)
    _run_on(server, transport, sock, host, token)


def _server(
    root: Path, config: DeepWorkConfig, *, follow_client_roots: bool, headless: bool
) -> FastMCP:
    """The server for `root` with the settings the environment adds: additional job folders,
    telemetry, the approval keys' folder, how the user launches DeepWork, and whether a person
    attends (`--headless`, `CI=true`, inside `deepwork run`: docs/headless.md)."""
    from deepwork_core.engine.headless.parking import headless_from_env
    from deepwork_core.jobs.discovery import parse_folder_list

    from deepwork_mcp.approvals.keys import state_dir
    from deepwork_mcp.server import create_server

    additional = parse_folder_list(os.environ.get(ADDITIONAL_JOBS_ENV))
    telemetry = _start_telemetry(config.platform, additional)
    return create_server(
        root,
        config,
        additional_jobs_folders=additional,
        follow_client_roots=follow_client_roots,
        state_dir=state_dir(os.environ),
        launch=launch_prefix(parent_argv()),
        trace_env=None if telemetry is None else telemetry.reviewer_env,
        headless=headless or headless_from_env(os.environ),
    )


def _start_telemetry(platform: str, additional_jobs_folders: list[Path]) -> Telemetry | None:
    """OpenTelemetry export when the environment asks for it (docs/telemetry.md); flushed
    when the server stops."""
    from deepwork_mcp.telemetry.switch import start_telemetry

    telemetry = start_telemetry(
        os.environ,
        platform=platform,
        warn=lambda text: click.echo(text, err=True),
        additional_jobs_folders=additional_jobs_folders,
    )
    if telemetry is not None:
        import atexit

        atexit.register(telemetry.shutdown)
    return telemetry


def _listen(host: str, port: int) -> socket.socket:
    """The socket http and sse are served on, bound before anything is said about it
    (`serve.bind_failed`, exit status 1, when the port is in use or not allowed)."""
    from deepwork_core import DeepWorkError
    from deepwork_core.base.error_codes import ErrorCode

    from deepwork_mcp.listening import cannot_listen, listen

    try:
        return listen(host, port)
    except OSError as exc:
        failed = DeepWorkError(cannot_listen(host, port, exc), code=ErrorCode.SERVE_BIND_FAILED)
        raise cli_error(failed) from None


def _run_on(
    server: FastMCP, transport: str, sock: socket.socket, host: str, token: str | None
) -> None:
    """Serve http or sse on the bound `sock`, behind the Host/Origin/token guard."""
    from starlette.middleware import Middleware

    from deepwork_mcp.http_guard import HostGuard

    guard = Middleware(HostGuard, bind_host=host, token=token)
    server.run(
        transport=transport,  # type: ignore[arg-type]
        host=host,
        port=sock.getsockname()[1],
        show_banner=False,
        middleware=[guard],
        sockets=[sock],
    )


def _http_token(host: str, allow_remote: bool) -> str | None:
    """The bearer token every http/sse request must carry (None: loopback without token).

    A bind address other than loopback exposes the project to the network: it needs
    `--allow-remote` and a token in DEEPWORK_HTTP_TOKEN (`_warn_if_remote` says so once the
    server is about to listen there; a refused one is refused without the warning).
    """
    from deepwork_mcp.http_guard import is_loopback

    token = os.environ.get(HTTP_TOKEN_ENV) or None
    if is_loopback(host):
        return token
    if not allow_remote:
        raise click.UsageError(
            f"--host {host} is not loopback: it makes this server reachable from other "
            f"machines; pass --allow-remote (and a token in {HTTP_TOKEN_ENV}) to confirm"
        )
    if token is None or len(token) < MIN_TOKEN_LENGTH:
        raise click.UsageError(
            f"--allow-remote needs a bearer token of at least {MIN_TOKEN_LENGTH} characters "
            f"in {HTTP_TOKEN_ENV}"
        )
    return token


def _warn_if_remote(host: str) -> None:
    """The warning of a server that listens beyond this machine, given once it is bound."""
    from deepwork_mcp.http_guard import is_loopback

    if not is_loopback(host):
        click.echo(
            f"warning: --host {host} makes this server reachable from other machines; anyone "
            "who can reach it and holds the token can run workflows and read review files of "
            "this project",
            err=True,
        )


def _stop_children_on_exit() -> None:
    """Kill every child process group still running when the server stops or is terminated."""
    import atexit
    import signal

    from deepwork_core.base.process import kill_all_children

    atexit.register(kill_all_children)

    previous = signal.getsignal(signal.SIGTERM)

    def on_term(signum: int, frame: FrameType | None) -> None:
        kill_all_children()
        if callable(previous):  # a handler installed before ours (coverage saves its data)
            previous(signum, frame)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    signal.signal(signal.SIGTERM, on_term)


def apply_flags(
    config: DeepWorkConfig,
    *,
    no_quality_gate: bool = False,
    external_runner: str | None = None,
    platform: str | None = None,
    max_quality_attempts: int | None = None,
    quality_gate_timeout: int | None = None,
    no_branch: bool = False,
) -> DeepWorkConfig:
    """`config` with every flag that was given applied over it (`.deepwork/config.yml` loses)."""
    gate: dict[str, Any] = {}
    if no_quality_gate:
        gate["enabled"] = False
    if external_runner is not None:
        gate["external_runner"] = None if external_runner == "none" else external_runner
    if max_quality_attempts is not None:
        gate["max_attempts"] = max_quality_attempts
    if quality_gate_timeout is not None:
        gate["timeout_seconds"] = quality_gate_timeout
    update: dict[str, Any] = {"quality_gate": config.quality_gate.model_copy(update=gate)}
    if platform:
        update["platforms"] = [platform, *(p for p in config.platforms if p != platform)]
    if no_branch:
        update["git"] = config.git.model_copy(update={"create_branch": False})
    return config.model_copy(update=update)


def _configure_logging() -> None:
    """DeepWork's log lines go to stderr (stdout carries the protocol on stdio)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    log = logging.getLogger("deepwork")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
