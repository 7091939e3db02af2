"""DeepWork's MCP server and command line.

`create_server()` builds the FastMCP server; importing this package does not import FastMCP.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastmcp import FastMCP

__all__ = ["create_server"]


def create_server(*args: Any, **kwargs: Any) -> FastMCP:
    """Build the DeepWork FastMCP server (see `deepwork_mcp.server.create_server`)."""
    from deepwork_mcp.server import create_server as _create_server

    return _create_server(*args, **kwargs)
