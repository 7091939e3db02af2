"""What a tool call works with, handed to the tools in the server's lifespan state.

`create_server` puts one `ToolServices` into the lifespan state; each tool function asks
`services()` for it and takes from it the project of the call (`ProjectServices`: its catalog
and its engine), how the user runs DeepWork, and the platform the review tasks are written for.
The tools are plain module functions: nothing they need is captured in a closure
(docs/architecture.md, "The path of a checkpoint"). A tool declares a `Context` parameter only
when it talks to the client (progress, elicitation): FastMCP resolves such a parameter on every
call, so the others find the call's context without one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fastmcp import Context, FastMCP
from fastmcp.server.dependencies import get_context

from deepwork_mcp.tools.answers import ListingCache

if TYPE_CHECKING:
    from deepwork_mcp.roots import ProjectServices

#: The key of the services in the lifespan state.
SERVICES_KEY = "deepwork"

Lifespan = Callable[[FastMCP[Any]], AbstractAsyncContextManager[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class ToolServices:
    """The services of one server: `project()` gives the current call's project."""

    project: Callable[[], ProjectServices]
    #: How the user runs DeepWork (`uvx deepwork==1.0.0`, `deepwork`): approval answers name it.
    launch: str = "deepwork"
    #: The platform review task instructions are written for (`claude`, `gemini` …).
    platform: str = "claude"
    listing: ListingCache = field(default_factory=ListingCache)


def lifespan(tool_services: ToolServices) -> Lifespan:
    """The server lifespan whose state holds `tool_services`."""

    @asynccontextmanager
    async def serving(_server: FastMCP[Any]) -> AsyncIterator[dict[str, Any]]:
        yield {SERVICES_KEY: tool_services}

    return serving


def services(ctx: Context | None = None) -> ToolServices:
    """The services of the server serving this call (`ctx`: its context, when the tool has it)."""
    found = (ctx or get_context()).lifespan_context.get(SERVICES_KEY)
    if not isinstance(found, ToolServices):
        raise RuntimeError("the DeepWork tools run only on a server made by create_server")
    return found
