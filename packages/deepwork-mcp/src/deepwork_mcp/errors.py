"""The one mapping from DeepWork errors to MCP tool errors.

A `DeepWorkError` becomes a `ToolError` (an `isError` result the agent can read and act on) whose
text starts with the error's stable code. Arguments that do not match a tool's input schema (FastMCP
rejects them before the tool runs) become `arguments.invalid`. Anything else is a bug: its
traceback goes to the server log on stderr and the agent gets a generic `internal.error`, never a
crashed server or internals.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from deepwork_core.errors import DeepWorkError
from fastmcp.exceptions import ToolError, ValidationError
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import ToolResult
from mcp.types import CallToolRequestParams
from pydantic import ValidationError as PydanticValidationError

logger = logging.getLogger("deepwork.mcp")


def tool_error(exc: DeepWorkError) -> ToolError:
    """`<code>: <message>`: the message says what to do next."""
    return ToolError(f"{exc.code}: {exc.message}")


#: At most this many argument problems are listed (the rest are counted).
_MAX_ARGUMENT_PROBLEMS = 5


def argument_error(tool: str, exc: ValidationError) -> ToolError:
    """`arguments.invalid: <tool>: <where>: <what>; …` without echoing the (maybe huge) values."""
    cause = exc.__cause__
    if isinstance(cause, PydanticValidationError):
        problems = [
            f"{'.'.join(str(part) for part in error['loc']) or '<arguments>'}: {error['msg']}"
            for error in cause.errors(include_input=False, include_url=False)
        ]
    else:
        problems = [str(exc)[:300]]
    listed = "; ".join(problems[:_MAX_ARGUMENT_PROBLEMS])
    if len(problems) > _MAX_ARGUMENT_PROBLEMS:
        listed += f"; and {len(problems) - _MAX_ARGUMENT_PROBLEMS} more"
    return ToolError(
        f"arguments.invalid: {tool}: {listed}. Call it again with arguments that match its "
        "input schema."
    )


class ArgumentErrors(Middleware):
    """Gives tool calls whose arguments fail schema validation the `arguments.invalid` code."""

    async def on_call_tool(
        self,
        context: MiddlewareContext[CallToolRequestParams],
        call_next: CallNext[CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        try:
            return await call_next(context)
        except ValidationError as exc:
            raise argument_error(context.message.name, exc) from None


@contextlib.contextmanager
def tool_errors(tool: str) -> Iterator[None]:
    """Turn every exception raised in the block into a `ToolError` (see module docstring)."""
    try:
        yield
    except ToolError:
        raise
    except DeepWorkError as exc:
        raise tool_error(exc) from None
    except Exception:
        logger.exception("tool %s failed unexpectedly", tool)
        raise ToolError(
            f"internal.error: {tool} failed unexpectedly (details are in the server log). "
            "Retry once; if it fails again, report it."
        ) from None
