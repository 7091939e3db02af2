"""Compact JSON schemas for `tools/list`: the one schema compactor of the server.

Every tool description and schema is sent to the model on each `tools/list`, so its size is a
cost paid in every conversation. `output_schema` describes a response model down to a chosen
depth; `tidy_schema` (applied to every listed schema by `CompactToolListing`) rewrites a schema
into equivalent, shorter JSON Schema: `default: null` goes (the `required` list already says
which arguments may be left out), and descriptions inside output schemas go (the tool
description carries the meaning). Optional values stay `anyOf: [X, {type: null}]` rather than
`type: [X, "null"]`: strict clients warn on type lists and single-type dialects (Gemini function
declarations) read `anyOf` with null better. FastMCP's empty `_meta` (no tags) is left out.
Argument validation is unaffected: it uses the tool's own signature, not the listed schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mcp.types as mt
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import Tool
from pydantic import BaseModel

#: The JSON Schema keys an output schema keeps; titles, defaults and descriptions go.
_OUTPUT_KEYS = ("type", "enum", "anyOf", "properties", "additionalProperties", "items")


def output_schema(model: type[BaseModel], *, detail_depth: int = 1) -> dict[str, Any]:
    """A compact `outputSchema` for `model`: fields down to `detail_depth` levels are spelled
    out; deeper objects are just `object`. References are inlined, and the result is tidied
    (`X | None` stays `anyOf: [X, {type: null}]`).
    """
    schema = model.model_json_schema(mode="serialization")
    trimmed = _trim(schema, schema.get("$defs", {}), 0, detail_depth)
    tidied: dict[str, Any] = tidy_schema(trimmed, keep_descriptions=False)
    return tidied


def _trim(node: dict[str, Any], defs: dict[str, Any], depth: int, limit: int) -> dict[str, Any]:
    """`node` with references inlined, only `_OUTPUT_KEYS`, and no detail below `limit`."""
    if "$ref" in node:
        node = defs[node["$ref"].rsplit("/", 1)[-1]]
    out: dict[str, Any] = {}
    for key in _OUTPUT_KEYS:
        if key not in node:
            continue
        value = node[key]
        if key == "anyOf":
            out[key] = [_trim(option, defs, depth, limit) for option in value]
        elif key == "properties" and depth < limit:
            out[key] = {name: _trim(item, defs, depth + 1, limit) for name, item in value.items()}
        elif key == "additionalProperties" and isinstance(value, dict) and depth < limit:
            if "properties" not in node:
                out[key] = _trim(value, defs, depth + 1, limit)
        elif key == "items" and depth < limit:
            out[key] = _trim(value, defs, depth, limit)
        elif key in ("type", "enum"):
            out[key] = value
    return out


class CompactToolListing(Middleware):
    async def on_list_tools(
        self,
        context: MiddlewareContext[mt.ListToolsRequest],
        call_next: CallNext[mt.ListToolsRequest, Sequence[Tool]],
    ) -> Sequence[Tool]:
        tools = await call_next(context)
        return [_without_empty_meta(_tidied(tool)) for tool in tools]


def _tidied(tool: Tool) -> Tool:
    return tool.model_copy(
        update={
            "parameters": optional_without_null(
                tidy_schema(tool.parameters, keep_descriptions=True)
            ),
            "output_schema": (
                tidy_schema(tool.output_schema, keep_descriptions=False)
                if tool.output_schema is not None
                else None
            ),
        }
    )


def _without_empty_meta(tool: Tool) -> Tool:
    """`tool` listed without FastMCP's `_meta: {fastmcp: {tags: []}}` when it says nothing.

    FastMCP adds that object to every tool (30 bytes each, in every conversation); our tools have
    no tags, version or metadata, so there is nothing for a client to read in it.
    """
    if tool.tags or tool.meta or tool.version is not None:
        return tool
    object.__setattr__(tool, "get_meta", _no_meta)  # the listing's only source of `_meta`
    return tool


def _no_meta() -> None:
    return None


def optional_without_null(schema: dict[str, Any]) -> dict[str, Any]:
    """An input schema whose optional arguments drop `null` from `anyOf: [X, {type: null}]`.

    Leaving an optional argument out already means "none", so the listed schema says just `X`:
    one type per argument, which single-type dialects (Gemini function declarations) need, in
    fewer bytes. A client that still sends null is accepted: validation uses the signature.
    """
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return schema
    required = set(schema.get("required", ()))
    rewritten = dict(properties)
    for name, node in properties.items():
        options = node.get("anyOf") if isinstance(node, dict) else None
        if name in required or not isinstance(options, list) or {"type": "null"} not in options:
            continue
        others = [option for option in options if option != {"type": "null"}]
        if len(others) == 1 and isinstance(others[0], dict):
            rest = {key: value for key, value in node.items() if key != "anyOf"}
            rewritten[name] = {**others[0], **rest}
    return {**schema, "properties": rewritten}


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
