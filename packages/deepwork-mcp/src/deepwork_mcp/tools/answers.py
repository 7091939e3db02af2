"""How a tool's answer goes out: compact JSON text and the same data as structured content, and
the `get_workflows` answer kept while no job changes."""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

from fastmcp.tools.base import ToolResult
from mcp.types import TextContent
from pydantic import BaseModel

from deepwork_mcp.responses import GetWorkflowsResponse

if TYPE_CHECKING:
    from deepwork_core.jobs.discovery import JobCatalog


def structured(model: BaseModel) -> ToolResult:
    """`model` as text and structured content.

    The tools return this rather than the model: FastMCP would otherwise build a second, unused
    output schema from the return annotation at start-up and serialise every answer twice. Some
    tools are listed without an output schema (the schema of `begin_step` is already in
    start_workflow's; listing it again costs every conversation about 1.5 kB).
    """
    return tool_result(model.model_dump(mode="json"))


def tool_result(data: dict[str, Any]) -> ToolResult:
    """`data` as compact JSON text (what `model_dump_json` writes) and as structured content."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return ToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


class ListingCache:
    """The serialised `get_workflows` answer, reused while no job changed (catalog fingerprint).

    With a thousand jobs, building and serialising the response costs more than scanning the
    job folders, so the finished tool result (text and structured content) is what is cached.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cached: tuple[JobCatalog, int, ToolResult] | None = None

    def get(self, jobs: JobCatalog) -> ToolResult:
        catalog = jobs.scan()
        with self._lock:
            cached = self._cached
        if cached is None or cached[0] is not jobs or cached[1] != catalog.fingerprint:
            # The text is the same compact JSON as `model_dump_json`, written from the dict so
            # the response model is gone before the text exists (a lower first-call peak).
            data = GetWorkflowsResponse.model_validate(catalog).model_dump(mode="json")
            cached = (jobs, catalog.fingerprint, tool_result(data))
            with self._lock:
                self._cached = cached
        return cached[2].model_copy()
