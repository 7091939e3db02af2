"""DeepWork's MCP server and command line.

`create_server()` builds the FastMCP server; importing this package does not import FastMCP.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from deepwork_core import DeepWorkConfig
    from fastmcp import FastMCP

__all__ = ["create_server"]


def create_server(
    project_root: Path | str,
    config: DeepWorkConfig | None = None,
    *,
    additional_jobs_folders: Sequence[Path] = (),
) -> FastMCP:
    """Build the DeepWork FastMCP server of `project_root` (see `deepwork_mcp.server`).

    FastMCP is imported on the first call, so the CLI and the hooks never pay for it.
    """
    from deepwork_mcp.server import create_server as build

    return build(project_root, config, additional_jobs_folders=additional_jobs_folders)
