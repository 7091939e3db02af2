"""A tidier `tools/list`: the same schemas in fewer bytes.

Every tool description and schema is sent to the model on each `tools/list`, so its size is a
cost paid in every conversation. This middleware rewrites the listed schemas into equivalent,
shorter JSON Schema: `default: null` goes (the `required` list already says which arguments may
be left out), and descriptions inside output schemas go (the tool description carries the
meaning). Optional values stay `anyOf: [X, {type: null}]` rather than `type: [X, "null"]`:
strict clients warn on type lists and single-type dialects (Gemini function declarations) read
`anyOf` with null better. Argument validation is unaffected: it uses the tool's own signature,
not the listed schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mcp.types as mt
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import Tool


class CompactToolListing(Middleware):
    async def on_list_tools(
        self,
        context: MiddlewareContext[mt.ListToolsRequest],
        call_next: CallNext[mt.ListToolsRequest, Sequence[Tool]],
    ) -> Sequence[Tool]:
        tools = await call_next(context)
        return [
            tool.model_copy(
                update={
                    "parameters": tidy_schema(tool.parameters, keep_descriptions=True),
                    "output_schema": (
                        tidy_schema(tool.output_schema, keep_descriptions=False)
                        if tool.output_schema is not None
                        else None
                    ),
                }
            )
            for tool in tools
        ]


def tidy_schema(node: Any, *, keep_descriptions: bool) -> Any:
    """`node` rewritten as described in the module docstring (a new object)."""
    if isinstance(node, list):
        return [tidy_schema(item, keep_descriptions=keep_descriptions) for item in node]
    if not isinstance(node, dict):
        return node
    tidied: dict[str, Any] = {}
    for key, value in node.items():
        if key == "default" and value is None:
            continue
        if key == "description" and not keep_descriptions and isinstance(value, str):
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):
            tidied[key] = {
                name: tidy_schema(item, keep_descriptions=keep_descriptions)
                for name, item in value.items()
            }
        else:
            tidied[key] = tidy_schema(value, keep_descriptions=keep_descriptions)
    return tidied
