"""The framework floor: a FastMCP server with one trivial tool, started like `deepwork serve`.

The cold-start figures of `deepwork serve` are compared with this server in the same run, so the
comparison shows what DeepWork adds on top of importing and starting FastMCP.
"""

from __future__ import annotations

from fastmcp import FastMCP

mcp = FastMCP("floor")


@mcp.tool(annotations={"readOnlyHint": True, "openWorldHint": False})
def ping() -> str:
    """Answer at once."""
    return "pong"


if __name__ == "__main__":
    mcp.run(transport="stdio", show_banner=False)
