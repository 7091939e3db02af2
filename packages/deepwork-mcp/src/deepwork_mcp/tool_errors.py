"""The one mapping from DeepWork errors to MCP tool errors: the `ToolErrors` middleware.

Tool adapters let every exception escape; the middleware maps it. A `DeepWorkError` becomes a
`ToolError` (an `isError` result the agent can read and act on) whose text starts with the error's
stable code. Arguments that do not match a tool's input schema (FastMCP rejects them before the
tool runs) become `arguments.invalid`. Anything else is a bug: its traceback goes to the server
log on stderr and the agent gets a generic `internal.error`, never a crashed server or internals.
"""

from __future__ import annotations

import logging

from deepwork_core import DeepWorkError
from deepwork_core.base.error_codes import ErrorCode
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
        f"{ErrorCode.ARGUMENTS_INVALID}: {tool}: {listed}. Call it again with arguments that "
        "match its input schema."
    )


def map_tool_exception(tool: str, exc: BaseException) -> ToolError:
    """The `ToolError` the agent gets for `exc` raised by `tool` (see module docstring)."""
    if isinstance(exc, ToolError):
        return exc
    if isinstance(exc, DeepWorkError):
        return tool_error(exc)
    logger.error("tool %s failed unexpectedly", tool, exc_info=exc)
    return ToolError(
        f"{ErrorCode.INTERNAL_ERROR}: {tool} failed unexpectedly (details are in the server log). "
        "Retry once; if it fails again, report it."
    )


class _ExpectedErrors(logging.Filter):
    """Keeps FastMCP from logging a traceback for every `DeepWorkError`: those are answers."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, DeepWorkError)


_EXPECTED_ERRORS = _ExpectedErrors()


class ToolErrors(Middleware):
    """Maps whatever a tool raised: schema mismatches to `arguments.invalid`, the rest through
    `map_tool_exception` (FastMCP hands it over wrapped in a masked `ToolError`)."""

    def __init__(self) -> None:
        logging.getLogger("fastmcp.server.server").addFilter(_EXPECTED_ERRORS)

    async def on_call_tool(
        self,
        context: MiddlewareContext[CallToolRequestParams],
        call_next: CallNext[CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        tool = context.message.name
        try:
            return await call_next(context)
        except ValidationError as exc:
            raise argument_error(tool, exc) from None
        except ToolError as exc:
            cause = exc.__cause__
            if cause is None:
                raise
            raise map_tool_exception(tool, cause) from None
        except Exception as exc:
            raise map_tool_exception(tool, exc) from None
