"""The one mapping from DeepWork errors to MCP tool errors.

A `DeepWorkError` becomes a `ToolError` (an `isError` result the agent can read and act on) whose
text starts with the error's stable code. Anything else is a bug: its traceback goes to the server
log on stderr and the agent gets a generic `internal.error`, never a crashed server or internals.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from deepwork_core.errors import DeepWorkError
from fastmcp.exceptions import ToolError

logger = logging.getLogger("deepwork.mcp")


def tool_error(exc: DeepWorkError) -> ToolError:
    """`<code>: <message>`: the message says what to do next."""
    return ToolError(f"{exc.code}: {exc.message}")


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
