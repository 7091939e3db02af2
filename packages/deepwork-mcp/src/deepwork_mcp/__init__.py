"""DeepWork's MCP server and command line.

`create_server()` builds the FastMCP server; importing this package does not import FastMCP.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastmcp import FastMCP

__all__ = ["create_server"]


def create_server(*args: Any, **kwargs: Any) -> FastMCP:
    """Build the DeepWork FastMCP server (see `deepwork_mcp.server.create_server`)."""
    # Imported by name so this package type-checks before and after `server` exists, and so
    # that importing `deepwork_mcp` (the CLI, hooks) never pays for FastMCP.
    server_module = importlib.import_module("deepwork_mcp.server")
    server: FastMCP = server_module.create_server(*args, **kwargs)
    return server
