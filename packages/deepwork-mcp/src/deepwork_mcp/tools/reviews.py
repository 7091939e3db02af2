"""The review tools: `get_review_instructions`, `get_configured_reviews`, `mark_review_as_passed`.

Each tool is a module function: it takes the call's project folder and the platform from
`services()` (`deepwork_mcp.tools.services`), runs the review pipeline in a worker thread (it
calls git and reads files) and builds its response. Errors are mapped by the
`deepwork_mcp.tool_errors.ToolErrors` middleware.
"""

from __future__ import annotations

import json
from functools import cache, partial
from pathlib import Path
from typing import Annotated

from anyio import to_thread
from fastmcp import FastMCP
from fastmcp.tools.base import Tool, ToolResult
from mcp.types import TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from deepwork_mcp.tools.answers import structured
from deepwork_mcp.tools.schemas import listed, load_output_schemas
from deepwork_mcp.tools.services import services

_READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
# readOnlyHint defaults to false: not listed.
_RECORDS = ToolAnnotations(destructive_hint=False, idempotent_hint=True, open_world_hint=False)


NO_CONFIGURED_RULES = (
    "No review rules are configured: no .deepreview file defines a rule"
    " (or none matches the given files)."
)


class ReviewPassRecorded(BaseModel):
    review_id: str
    passed: bool = True
    reason: str | None = None
    message: str


async def get_review_instructions(
    files: Annotated[
        list[str] | None,
        Field(description="Default: the files changed vs the default branch."),
    ] = None,
) -> str:
    """Review tasks to run in parallel for the changed files, per `.deepreview` rules."""
    from deepwork_review import run_review

    found = services()
    call = partial(run_review, found.project().folder, platform=found.platform, files=files)
    run = await to_thread.run_sync(call)
    return run.text


async def get_configured_reviews(
    only_rules_matching_files: Annotated[
        list[str] | None,
        Field(description="Only rules matching one of these paths."),
    ] = None,
) -> ToolResult:
    """List `.deepreview` rules (files with problems appear as `PARSE_ERROR`)."""
    call = partial(_rule_listing, services().project().folder, only_rules_matching_files)
    return await to_thread.run_sync(call)


async def mark_review_as_passed(
    review_id: Annotated[str, Field(description="From the task's instruction file.")],
    reason: Annotated[str | None, Field(description="Why findings were declined.")] = None,
) -> ToolResult:
    """Record a review as passed (no issues, or declined: give `reason`) until its rule or
    files change."""
    from deepwork_review import mark_review_passed

    folder = services().project().folder
    await to_thread.run_sync(partial(mark_review_passed, folder, review_id, reason))
    recorded = ReviewPassRecorded(
        review_id=review_id,
        reason=" ".join((reason or "").split()) or None,
        message="Recorded as passed; this review will not be handed out again until its "
        "rule or files change.",
    )
    return structured(recorded)


def register_review_tools(mcp: FastMCP) -> None:
    """List the three review tools on `mcp` (their folder and platform: `services()`)."""
    for tool in review_tools():
        mcp.add_tool(tool)


@cache
def review_tools() -> tuple[Tool, ...]:
    """The review tools, built once per process (as `workflow_tools`)."""
    listing = load_output_schemas()["get_configured_reviews"]
    return (
        # The instructions are a long text: no output schema, so they go out once (as text)
        # and not a second time as structured content `{"result": ...}`.
        listed(get_review_instructions, _READ_ONLY, None),
        listed(get_configured_reviews, _READ_ONLY, listing),
        # Listed without an output schema (its answer is four plain fields, and the bytes of a
        # schema are paid in every conversation); the answer still carries them as structured
        # content.
        listed(mark_review_as_passed, _RECORDS, None),
    )


def _rule_listing(project_root: Path, only_rules_matching_files: list[str] | None) -> ToolResult:
    """The answer of `get_configured_reviews`."""
    from deepwork_review import configured_rules  # the review package loads on first use

    listing = configured_rules(project_root, only_rules_matching_files=only_rules_matching_files)
    rules = [rule.model_dump(mode="json") for rule in (*listing.rules, *listing.parse_errors)]
    # Never an empty answer: clients show the text, and "[]" alone explains nothing.
    text = json.dumps(rules, ensure_ascii=False) if rules else NO_CONFIGURED_RULES
    return ToolResult(
        content=[TextContent(type="text", text=text)], structured_content={"result": rules}
    )
