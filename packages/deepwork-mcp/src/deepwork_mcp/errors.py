"""How DeepWork errors reach an MCP client: a tool error whose text starts with the code."""

from __future__ import annotations

from deepwork_core.errors import DeepWorkError
from fastmcp.exceptions import ToolError


def tool_error(exc: DeepWorkError) -> ToolError:
    """`ToolError("<code>: <message>")` for `exc`; raise it `from exc`."""
    return ToolError(f"{exc.code}: {exc}")
