"""DeepWork's MCP server and command line.

`create_server()` builds the FastMCP server (`deepwork_mcp.server.create_server`, loaded on first
use): importing this package does not import FastMCP, so the CLI and the hooks never pay for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deepwork_core.base.lazy import lazy_exports

if TYPE_CHECKING:
    from deepwork_mcp.server import create_server as create_server

_HOMES = {"deepwork_mcp.server": ("create_server",)}

__all__ = ["create_server"]

__getattr__ = lazy_exports(__name__, _HOMES)
