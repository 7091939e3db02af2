"""`deepwork serve`: run the MCP server for a project.

Settings come from `.deepwork/config.yml` (`docs/config.md`); every flag given on the command line
wins over the file. Help texts quote the defaults of `DeepWorkConfig`, their one source. stdout
is the protocol channel on stdio, so logs go to stderr only.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
from pathlib import Path
from typing import Any

import click
from deepwork_core import EXTERNAL_RUNNERS, DeepWorkConfig

ADDITIONAL_JOBS_ENV = "DEEPWORK_ADDITIONAL_JOBS_FOLDERS"
_DEFAULTS = DeepWorkConfig()
_GATE = _DEFAULTS.quality_gate


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--path",
    "project_path",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    help="Project root directory.",
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
    "--external-runner",
    type=click.Choice([*EXTERNAL_RUNNERS, "none"]),
    default=None,
    help="Quality-gate reviewer: 'claude' runs the Claude CLI, 'none' means self-review "
    "(default: config quality_gate.external_runner, else self-review).",
)
@click.option(
    "--platform",
    default=None,
    help="Platform the review tools format for, e.g. claude or gemini "
    f"(default: the first of config platforms, else {_DEFAULTS.platform}).",
)
@click.option(
    "--max-quality-attempts",
    type=click.IntRange(min=1),
    default=None,
    help="Failed external reviews allowed before finished_step errors "
    f"(default: config quality_gate.max_attempts, else {_GATE.max_attempts}).",
)
@click.option(
    "--quality-gate-timeout",
    type=click.IntRange(min=1),
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
def serve(
    project_path: Path,
    no_quality_gate: bool,
    transport: str,
    host: str,
    port: int,
    external_runner: str | None,
    platform: str | None,
    max_quality_attempts: int | None,
    quality_gate_timeout: int | None,
    no_branch: bool,
) -> None:
    """Run the DeepWork MCP server for a project."""
    # Importing FastMCP and our models creates hundreds of thousands of objects; the cyclic GC
    # rescanning them while they are still being created cost about 100 ms of cold start
    # (benchmarks/). Collect once after start-up and freeze the survivors out of later scans.
    gc.disable()
    from deepwork_core import DeepWorkError, load_config, parse_folder_list

    _configure_logging()
    root = project_path.resolve()
    # FastMCP is imported only now: `deepwork --version` and `--help` stay cheap.
    import fastmcp

    from deepwork_mcp.server import create_server

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
        server = create_server(
            root,
            config,
            additional_jobs_folders=parse_folder_list(os.environ.get(ADDITIONAL_JOBS_ENV)),
        )
    except DeepWorkError as exc:
        raise click.ClickException(f"{exc.code}: {exc.message}") from None
    finally:
        gc.collect()
        gc.freeze()
        gc.enable()
    if transport == "stdio":
        server.run(transport="stdio", show_banner=False)
    else:
        server.run(transport=transport, host=host, port=port, show_banner=False)  # type: ignore[arg-type]


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
